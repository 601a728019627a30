"""Which paths hold references to which collections, found by looking the
sampled values up in the other collections' ``_id`` index (cheap: one
``$in`` query per candidate path and collection).

A path is a reference when at least :data:`HIT_RATIO` of up to
:data:`PROBE_VALUES` distinct sampled values are ``_id`` values of the
target. ObjectIds are probed at any path; strings and numbers only at paths
named like references (``user_id``, ``parts``' ``_id``, ``authorId``),
where a coincidence is unlikely. A string that spells an ObjectId is probed
as the ObjectId too, so a reference stored with the wrong type is still
recognised (and reported by the mixed-types rule).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from bson import ObjectId

from foliodb.advisor.sampling import CollectionProfile, FieldStats, type_name

HIT_RATIO = 0.8
PROBE_VALUES = 50
MIN_DISTINCT_SCALARS = 20  # fewer distinct numbers or strings match small integer _ids by chance
HOT_IDS = 10  # most-referenced targets checked for being outliers themselves
REFERENCE_NAME = re.compile(r"(^|\.)(_?id|parent|parents|children|ancestors|host)$|_ids?$|Ids?$")


@dataclass
class Relation:
    """``source.path`` holds ``_id`` values of ``target``."""

    source: str
    path: str
    target: str
    many: bool  # several references per document: an array of ids, or ids inside an array
    value_types: Counter[str]
    hot: list[tuple[Any, int]]  # the most frequently referenced ids in the sample, with their counts

    @property
    def self_reference(self) -> bool:
        return self.source == self.target


def find_relations(database: Any, profiles: dict[str, CollectionProfile]) -> list[Relation]:
    found = []
    for profile in profiles.values():
        for stats in profile.fields.values():
            if stats.path == "_id":
                continue
            relation = _probe(database, profile, stats, profiles)
            if relation is not None:
                found.append(relation)
    return found


def _probe(
    database: Any, profile: CollectionProfile, stats: FieldStats, profiles: dict[str, CollectionProfile]
) -> Relation | None:
    named = bool(REFERENCE_NAME.search(stats.path))
    probe: list[Any] = []
    for value in stats.values:
        if isinstance(value, ObjectId):
            probe.append(value)
        elif named and isinstance(value, str) and ObjectId.is_valid(value) and len(value) == 24:
            probe.append(ObjectId(value))
        elif named and isinstance(value, (str, int)) and not isinstance(value, bool):
            probe.append(value)
    distinct = list(dict.fromkeys(probe))[:PROBE_VALUES]
    if not distinct or (not any(isinstance(v, ObjectId) for v in distinct) and len(distinct) < MIN_DISTINCT_SCALARS):
        return None
    best: tuple[int, str] | None = None
    for target, other in profiles.items():
        id_types = other.fields["_id"].types if "_id" in other.fields else Counter()
        if not any(type_name(v) in id_types for v in distinct):
            continue
        # distinct reads the _id index alone (a count may read the documents, a celebrity's among them)
        hits = len(database[target].distinct("_id", {"_id": {"$in": distinct}}))
        if hits >= HIT_RATIO * len(distinct) and (best is None or hits > best[0]):
            best = (hits, target)
    if best is None:
        return None
    hot = Counter(v for v in stats.values if isinstance(v, (ObjectId, str, int)))
    types = Counter(stats.types)
    types.update(stats.element_types)
    types.pop("array", None)
    types.pop("object", None)
    return Relation(
        source=profile.name,
        path=stats.path,
        target=best[1],
        many=stats.under_array or bool(stats.array_lengths),
        value_types=types,
        hot=hot.most_common(HOT_IDS),
    )
