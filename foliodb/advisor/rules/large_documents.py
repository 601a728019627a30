"""Documents on their way to the 16 MiB limit: move what makes them big into
its own collection (split before 16 MiB).

A document over :data:`LARGE_DOCUMENT` is copied whole by every read and
update of it; at :data:`NEAR_LIMIT` (half the limit) one more doubling fails
its writes. Manual: https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/bloated-documents/
and https://www.mongodb.com/docs/manual/reference/limits/#mongodb-limit-BSON-Document-Size
"""

from __future__ import annotations

from collections.abc import Iterator

import bson

from foliodb.advisor.context import Context
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.shell import call, size

LIMIT = 16 * 1024 * 1024
LARGE_DOCUMENT = 2 * 1024 * 1024  # an eighth of the limit
NEAR_LIMIT = LIMIT // 2


def rule_large_document(ctx: Context) -> Iterator[Finding]:
    for profile in ctx.profiles.values():
        largest = profile.largest
        if largest is None or largest.value < LARGE_DOCUMENT:
            continue
        sizes = largest.parts
        if sizes is None:  # measured in a pass of maxima only: read the document
            doc = ctx.database[profile.name].find_one({"_id": largest.document_id})
            if doc is None:
                continue
            sizes = {k: len(bson.encode({"v": v})) - 5 for k, v in doc.items() if k != "_id"}
        parts = sorted(((n, k) for k, n in sizes.items()), reverse=True)
        heaviest = parts[0][1] if parts else None
        share = parts[0][0] / largest.value if parts else 0.0
        over = sum(1 for s in profile.sizes if s >= LARGE_DOCUMENT)
        target = f"{profile.name}_{heaviest}"
        yield Finding(
            collection=profile.name,
            path=None,
            problem="large-document",
            recommendation="separate-collection",
            severity="critical" if largest.value >= NEAR_LIMIT else "high",
            summary=(
                f"The largest document ({largest.document_id}) is {size(largest.value)}, "
                f"{largest.value / LIMIT:.0%} of the 16 MiB limit; {heaviest} holds {share:.0%} of it."
            ),
            evidence={
                "document_id": largest.document_id,
                "bytes": largest.value,
                "share_of_limit": round(largest.value / LIMIT, 3),
                "heaviest_fields": {name: n for n, name in parts[:3]},
                "avg_bytes": round(profile.avg_bytes),
                "sampled_over_threshold": over,
                "exact": profile.exhaustive,
            },
            change=Change(
                f"Move {heaviest} into a collection of its own, {target}, in pieces well under 1 MiB that "
                f"hold the parent's _id; keep in {profile.name} only what is read with it.",
                [call(target, "createIndex", {f"{profile.name}_id": 1, "n": 1})],
                {f"{profile.name}_id": largest.document_id, "n": 0, heaviest: "..."},
            ),
            effect=(
                f"Reads and updates of {profile.name} stop copying {size(parts[0][0] if parts else 0)}; "
                f"the document no longer approaches the limit."
            ),
        )
