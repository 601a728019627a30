"""An index over every document for a field only a few of them have: each
document without the field still gets an entry (for null), so the index is
mostly entries no query looks for. A partial index (``{field: {$exists:
true}}``) holds only the documents that have it.

Fires on an ascending or descending index (not unique, TTL, sparse or
partial) of a collection of
at least :data:`foliodb.advisor.context.MIN_DOCS` documents whose first
field is in at most :data:`SPARSE` of them, when every recorded query
testing that field asks for values it has (equality to a value, a range, a
regex, ``$in`` without null, ``$exists: true``) and no recorded query
sorts by it without testing it: those are the queries a partial index
serves. (An index no query uses is the unused-index rule's.)

Manual: https://www.mongodb.com/docs/manual/core/index-partial/ and
https://www.mongodb.com/docs/manual/core/index-sparse/
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from foliodb.advisor.context import MIN_DOCS, Context
from foliodb.advisor.kinds import tests
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.sampling import CollectionProfile
from foliodb.advisor.shell import call, count, size
from foliodb.advisor.workload import index_used

SPARSE = 0.1
_NARROW = ("unique", "expireAfterSeconds", "sparse", "partialFilterExpression", "hidden")
_VALUED = frozenset({"$eq", "$gt", "$gte", "$lt", "$lte", "$regex", "$options", "$all", "$elemMatch", "$size"})


def rule_sparse_field_index(ctx: Context) -> Iterator[Finding]:
    for profile in ctx.profiles.values():
        if profile.count < MIN_DOCS:
            continue
        ops = ctx.workload.on(profile.name)
        sampled = max(len(profile.documents), 1)
        for index in profile.indexes:
            if index.get("name") == "_id_" or any(option in index for option in _NARROW):
                continue
            if not all(direction in (1, -1) for direction in index["key"].values()):
                continue  # text, hashed, geo and wildcard indexes: not partial-index material here
            first = next(iter(index["key"]))
            stats = profile.fields.get(first)
            present = stats.present if stats else 0
            if present > SPARSE * sampled or not index_used(index, [op.plan for op in ops]):
                continue
            if all(_valued(op, first) for op in ops):
                yield _finding(ctx, profile, index, first, present / sampled)


def _valued(op: Any, field: str) -> bool:
    """Whether ``op`` can use a partial index of documents that have ``field``."""
    conditions = [c for path, c in tests(op.filter, "") if path == field]
    if field in op.sort and not conditions:
        return False
    return all(_has_value(c) for c in conditions)


def _has_value(condition: Any) -> bool:
    if condition is None:
        return False
    if not isinstance(condition, Mapping) or not condition or not all(str(k).startswith("$") for k in condition):
        return True
    for name, value in condition.items():
        if name == "$exists":
            if not value:
                return False
        elif name == "$in":
            if not isinstance(value, list) or None in value:
                return False
        elif name not in _VALUED or (name == "$eq" and value is None):
            return False
    return True


def _finding(ctx: Context, profile: CollectionProfile, index: dict[str, Any], field: str, share: float) -> Finding:
    exact = None
    if ctx.exact(profile.name):
        exact = ctx.database[profile.name].count_documents({field: {"$exists": True}})
    having = exact if exact is not None else round(share * profile.count)
    name = f"{index['name']}_partial"
    bytes_now = profile.index_sizes.get(index["name"])
    return Finding(
        collection=profile.name,
        path=field,
        problem="sparse-field-index",
        recommendation="partial-index",
        severity="low",
        summary=(
            f"Index {index['name']} holds an entry for each of the {count(profile.count)} documents, and "
            f"{count(having)} of them have {field}; every recorded query of {field} asks for a value."
        ),
        evidence={
            "index": dict(index["key"]),
            "documents": profile.count,
            "having_field": having,
            "exact": exact is not None,
            "bytes": bytes_now,
        },
        change=Change(
            f"Index only the documents that have {field} (a partial index), then drop {index['name']}.",
            [
                call(
                    profile.name,
                    "createIndex",
                    dict(index["key"]),
                    {"name": name, "partialFilterExpression": {field: {"$exists": True}}},
                ),
                call(profile.name, "dropIndex", index["name"]),
            ],
            {"key": dict(index["key"]), "partialFilterExpression": {field: {"$exists": True}}},
        ),
        effect=(
            f"The index holds {count(having)} entries instead of {count(profile.count)}"
            + (f" (about {size(bytes_now * having / max(profile.count, 1))} of {size(bytes_now)})" if bytes_now else "")
            + "; writes of documents without the field skip it."
        ),
    )
