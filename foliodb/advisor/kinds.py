"""What explains a field's mix of types, so that the advisor leaves a
deliberate mix alone (first, do no harm):

* **a key beside it that names the value's kind**: the attribute pattern's
  ``{k: "ram_gb", v: 32}`` beside ``{k: "color", v: "red"}``, where ``k``
  tells which type ``v`` has;
* **a version or kind field of the document**: ``schema_version`` (schema
  versioning: version 1 holds the address as a string, version 2 as an
  object), ``type`` or ``kind`` (a polymorphic collection), including the
  field's absence (documents written before it existed);
* **the queries**: a profiled query that tests the field's type
  (``$type``), or compares it with values of two types, relies on the mix.

A key explains the mix when, over the sampled holders of the field (the
documents, or the array elements or sub-documents that hold it), each of
its values goes with one type (:data:`CONSISTENT` of them at least), at
least two of its values go with different types, and it has few values for
the holders it is seen in (a key with a value per document explains
anything by chance): at most :data:`KIND_VALUES` for a document-level key,
at most a third of the observations for a key in the same sub-document
(attribute names are many, but each names many values).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from foliodb.advisor.sampling import CollectionProfile, type_name
from foliodb.advisor.workload import Operation

CONSISTENT = 0.99
KIND_VALUES = 20
MISSING = "(missing)"


@dataclass
class Explanation:
    by: str  # the key's path, or "queries"
    how: str  # "sibling key", "document field", "queries"
    kinds: dict[str, str]  # key value -> the type that goes with it (a few, for the evidence)


def explain_mix(profile: CollectionProfile, path: str, operations: list[Operation]) -> Explanation | None:
    """What explains the mix of types at ``path`` in the sample, or None when nothing does."""
    found = _by_key(profile, path)
    if found is not None:
        return found
    return _by_queries(path, operations)


def explain_absence(profile: CollectionProfile, path: str) -> Explanation | None:
    """What explains a top-level field null in some documents and missing in others: a document field
    (a version, its absence included) that tells the documents that have it from the others."""
    return _by_key(profile, path, presence=True)


def _holders(value: Any, parts: list[str]) -> Iterator[Mapping[str, Any]]:
    """The sub-documents at the path ``parts`` (arrays transparent)."""
    if isinstance(value, list):
        for item in value:
            yield from _holders(item, parts)
        return
    if not isinstance(value, Mapping):
        return
    if not parts:
        yield value
        return
    yield from _holders(value.get(parts[0]), parts[1:])


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def _by_key(profile: CollectionProfile, path: str, presence: bool = False) -> Explanation | None:
    """A key whose values tell the types of ``path`` apart (with ``presence``, whether the
    documents have the field at all: "missing" against "present")."""
    *prefix, leaf = path.split(".")
    observations: list[tuple[dict[str, Any], dict[str, Any], str]] = []  # (siblings, document fields, type)
    for doc in profile.documents:
        top = {k: v for k, v in doc.items() if _scalar(v) and k != leaf}
        if presence:
            observations.append(({}, top, "present" if leaf in doc else MISSING))
            continue
        for holder in _holders(doc, prefix):
            if leaf not in holder or holder[leaf] is None:
                continue
            siblings = {k: v for k, v in holder.items() if k != leaf and _scalar(v)} if prefix else {}
            observations.append((siblings, top, type_name(holder[leaf])))
    if len({t for *_, t in observations}) < 2:
        return None
    candidates: list[tuple[str, str, int]] = []  # (key, how, limit on distinct values)
    sibling_keys = {k for siblings, _, _ in observations for k in siblings}
    candidates += [(k, "sibling key", max(2, len(observations) // 3)) for k in sorted(sibling_keys)]
    document_keys = {k for _, top, _ in observations for k in top} - {"_id"}
    candidates += [
        (k, "document field", min(KIND_VALUES, max(2, len(observations) // 5))) for k in sorted(document_keys)
    ]
    for key, how, limit in candidates:
        groups: dict[str, Counter[str]] = {}
        for siblings, top, kind in observations:
            fields = siblings if how == "sibling key" else top
            value = repr(fields[key]) if key in fields else MISSING
            groups.setdefault(value, Counter())[kind] += 1
        if len(groups) > limit or len(groups) < 2:
            continue
        consistent = sum(max(c.values()) for c in groups.values())
        majority = {value: c.most_common(1)[0][0] for value, c in groups.items()}
        if consistent >= CONSISTENT * len(observations) and len(set(majority.values())) >= 2:
            prefix_path = ".".join(prefix)
            where = f"{prefix_path}.{key}" if how == "sibling key" and prefix_path else key
            return Explanation(where, how, dict(list(majority.items())[:8]))
    return None


def _by_queries(path: str, operations: list[Operation]) -> Explanation | None:
    """The queries rely on the mix: they test the path's type, or compare it with values of two types."""
    kinds: set[str] = set()
    for op in operations:
        for tested, condition in tests(op.filter, ""):
            if tested != path:
                continue
            if isinstance(condition, Mapping) and "$type" in condition:
                return Explanation("queries", "queries", {"$type": repr(condition["$type"])})
            for value in _values(condition):
                kinds.add(type_name(value))
    kinds.discard("null")
    if len(kinds) >= 2:
        return Explanation("queries", "queries", {t: t for t in sorted(kinds)})
    return None


def tests(filter_spec: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """(path, condition) for each field a filter tests, through $and/$or/$nor and $elemMatch."""
    if not isinstance(filter_spec, Mapping):
        return
    for name, condition in filter_spec.items():
        name = str(name)
        if name in ("$and", "$or", "$nor") and isinstance(condition, list):
            for part in condition:
                yield from tests(part, prefix)
        elif name.startswith("$"):
            continue
        else:
            path = f"{prefix}{name}"
            if isinstance(condition, Mapping) and "$elemMatch" in condition:
                inner = condition["$elemMatch"]
                if isinstance(inner, Mapping) and not any(str(k).startswith("$") for k in inner):
                    yield from tests(inner, path + ".")
                    continue
            yield path, condition


def _values(condition: Any) -> Iterator[Any]:
    if isinstance(condition, Mapping) and condition and all(str(k).startswith("$") for k in condition):
        for op, value in condition.items():
            if op in ("$in", "$nin", "$all") and isinstance(value, list):
                yield from value
            elif op in ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte"):
                yield value
    else:
        yield condition
