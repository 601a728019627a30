"""Application-level joins on every read (found by :mod:`foliodb.advisor.joins`),
and what the texts do instead, tried in this order:

* a tree walked one level a query (a self-reference, a parent reference or
  an array of children, followed in chains of two or more lookups): keep
  each node's ancestors in it (``tree-ancestors``), so a path is one read
  and a subtree one query;
* few small children read whole with their parent (at most :data:`FEW`
  per parent, :data:`SMALL_CHILD` bytes on average, no other reads of
  them, never paged through with a sort or a limit, which is how a growing
  list such as a user's orders is read): ``embed`` (one-to-few);
* a lookup that reads at most :data:`FEW_FIELDS` fields of a read-mostly
  collection (at most :data:`READ_MOSTLY` updates of those fields per
  join): copy them beside the reference (``extended-reference``), with the
  fan-out it costs when the source changes;
* per-id finds, several per read, when one read holds several ids (an
  array of references, or reads that return several documents): one
  ``$in`` over them (``reference-array``, the texts' one-to-many read).

A join of whole documents with one ``$in`` is the texts' recommended
one-to-many read and is left alone. A pattern counts when it ran at least
:data:`foliodb.advisor.context.MIN_RUNS` times and follows at least
:data:`JOINED_SHARE` of the runs of its read.

Manual: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/data-access-patterns/extended-reference-pattern/
and https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-ancestors-array/
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from foliodb.advisor.context import MIN_RUNS, Context
from foliodb.advisor.joins import Join, read_shape
from foliodb.advisor.measure import per_value
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.shell import call, count
from foliodb.advisor.workload import touched_paths

JOINED_SHARE = 0.5
FEW = 20  # "one-to-few (tens)"
SMALL_CHILD = 1024
FEW_FIELDS = 3
READ_MOSTLY = 0.05
SNAPSHOT = re.compile(r"price|cost|amount|total|pricing|retail|sale", re.IGNORECASE)


def rule_join_on_read(ctx: Context) -> Iterator[Finding]:
    for join in ctx.joins:
        if join.counts or join.joined < MIN_RUNS or join.joined < JOINED_SHARE * join.reads:
            continue
        evidence: dict[str, Any] = {
            "reads": join.reads,
            "reads_joined": join.joined,
            "lookups": join.lookups,
            "ids_per_lookup": round(join.ids / max(join.lookups, 1), 1),
            "longest_chain": join.longest_chain,
            "read_example": join.read_example,
            "lookup_example": join.lookup_example,
        }
        if join.relation.self_reference and join.by == "_id":
            if join.longest_chain >= 2:
                yield _tree(join, evidence)
            continue
        if join.by != "_id":
            finding = _embed(ctx, join, evidence)
        elif join.projected and len(join.projected) <= FEW_FIELDS:
            finding = _extended_reference(ctx, join, evidence)
        elif join.per_id and join.several_per_read:
            finding = _reference_array(join, evidence)
        else:
            finding = None
        if finding is not None:
            yield finding


def _tree(join: Join, evidence: dict[str, Any]) -> Finding:
    name = join.second
    path = join.relation.path
    # Up the tree: a parent reference is followed to the parent; an array of children is searched for
    # the node's own _id (the parent is the node listing it).
    if join.relation.many:
        walk = {"startWith": "$_id", "connectFromField": "_id", "connectToField": path}
        way = f"down {path}"
    else:
        walk = {"startWith": f"${path}", "connectFromField": path, "connectToField": "_id"}
        way = f"up {path}"
    return Finding(
        collection=name,
        path=path,
        problem="join-on-read",
        recommendation="tree-ancestors",
        severity="medium",
        summary=(
            f"{count(join.joined)} reads of {name} walked {way} one query per level "
            f"(up to {join.longest_chain} levels, {count(join.lookups)} lookups)."
        ),
        evidence=evidence,
        change=Change(
            f"Store in each {name} document its ancestors, root first ({{_id, name, slug}}), and read a "
            f"node with its path in one query; find a subtree with {{'ancestors._id': id}}.",
            [
                call(
                    name,
                    "aggregate",
                    [
                        {
                            "$graphLookup": {
                                "from": name,
                                **walk,
                                "as": "ancestors",
                                "depthField": "depth",
                            }
                        },
                        {"$set": {"ancestors": {"$sortArray": {"input": "$ancestors", "sortBy": {"depth": -1}}}}},
                        {
                            "$set": {
                                "ancestors": {
                                    "$map": {"input": "$ancestors", "in": {"_id": "$$this._id", "name": "$$this.name"}}
                                }
                            }
                        },
                        {"$merge": {"into": name, "whenMatched": "merge"}},
                    ],
                ),
                call(name, "createIndex", {"ancestors._id": 1}),
            ],
            {
                "_id": "<id>",
                path: ["<child>"] if join.relation.many else "<parent>",
                "ancestors": [{"_id": "<root>", "name": "..."}, {"_id": "<parent>", "name": "..."}],
            },
        ),
        effect=(
            f"A {'subtree' if join.relation.many else 'breadcrumb'} is one read instead of up to "
            f"{join.longest_chain + 1}."
        ),
    )


def _embed(ctx: Context, join: Join, evidence: dict[str, Any]) -> Finding | None:
    children = ctx.profiles[join.second]
    if join.paged or children.avg_bytes > SMALL_CHILD:
        return None
    alone = [
        op
        for op in ctx.workload.on(join.second)
        if op.kind in ("find", "aggregate") and read_shape(op)[2] != (join.by,)
    ]
    if alone:
        return None
    spread = per_value(ctx, join.second, join.by)  # an aggregation: only once the cheap tests pass
    if spread.max > FEW:
        return None
    evidence |= {
        "children_per_parent_max": spread.max,
        "children_per_parent_avg": spread.avg,
        "child_bytes": round(children.avg_bytes),
    }
    return Finding(
        collection=join.second,
        path=join.by,
        problem="join-on-read",
        recommendation="embed",
        severity="medium",
        summary=(
            f"Every read of {join.first} reads its {join.second} too ({count(join.joined)} times); each has at "
            f"most {spread.max} of about {round(children.avg_bytes)} bytes, never read alone: one-to-few."
        ),
        evidence=evidence,
        change=Change(
            f"Embed {join.second} in {join.first} as an array {join.second} and drop the collection.",
            [
                call(
                    join.first,
                    "aggregate",
                    [
                        {
                            "$lookup": {
                                "from": join.second,
                                "localField": "_id",
                                "foreignField": join.by,
                                "as": join.second,
                            }
                        },
                        {
                            "$set": {
                                join.second: {
                                    "$map": {
                                        "input": f"${join.second}",
                                        "in": {"$unsetField": {"field": join.by, "input": "$$this"}},
                                    }
                                }
                            }
                        },
                        {"$merge": {"into": join.first, "whenMatched": "merge"}},
                    ],
                )
            ],
            {"_id": "<id>", join.second: [{k: "..." for k in _fields(children.documents, join.by)}]},
        ),
        effect=f"One query per {join.first} read instead of two; {join.second} disappears.",
    )


def _extended_reference(ctx: Context, join: Join, evidence: dict[str, Any]) -> Finding | None:
    fields = sorted(join.projected or ())
    writes = [op for op in ctx.updates(join.second) if sets_any(op.update, fields)]
    if len(writes) > READ_MOSTLY * join.joined:
        return None
    path = join.relation.path
    fan = per_value(ctx, join.first, path)
    prefix, _, leaf = path.rpartition(".")
    stem = leaf[: -len("_id")] if leaf.endswith("_id") else leaf.rstrip("s")
    base = f"{prefix}." if prefix else ""
    snapshot = all(SNAPSHOT.search(f) for f in fields) or (bool(prefix) and any(SNAPSHOT.search(f) for f in fields))
    copies = {f: (f"{base}{f}" if prefix else f"{stem}_{f}") for f in fields}
    evidence |= {
        "fields_read": fields,
        "source_updates_recorded": len(writes),
        "copies_per_source_avg": fan.avg,
        "copies_per_source_max": fan.max,
        "fan_out_exact": fan.exact,
    }
    if snapshot:
        description = (
            f"Copy {', '.join(fields)} from {join.second} into each {prefix or join.first} element at purchase time "
            f"({', '.join(copies.values())}) and never update them: a snapshot of what was bought."
        )
        commands = [
            call(join.first, "insertOne", {path: "<id>", **{c: f"<{join.second}.{f}>" for f, c in copies.items()}})
        ]
        effect = (
            f"Reads of {join.first} stop querying {join.second}: {count(join.lookups)} lookups fewer in the window."
        )
    else:
        first_copy = next(iter(copies.values()))
        description = (
            f"Copy {', '.join(fields)} from {join.second} beside {path} ({', '.join(copies.values())}); when "
            f"one changes, update the copies (on average {fan.avg:g} {join.first} documents, at most {fan.max})."
        )
        commands = [
            call(
                join.first,
                "aggregate",
                [
                    {"$lookup": {"from": join.second, "localField": path, "foreignField": "_id", "as": "_source"}},
                    {"$set": {c: {"$first": f"$_source.{f}"} for f, c in copies.items()}},
                    {"$unset": "_source"},
                    {"$merge": {"into": join.first, "whenMatched": "merge"}},
                ],
            ),
            call(join.first, "updateMany", {path: "<id>"}, {"$set": {first_copy: "<new value>"}}),
        ]
        effect = (
            f"Reads of {join.first} stop querying {join.second} ({count(join.lookups)} lookups fewer in the "
            f"window); each change of {', '.join(fields)} costs an updateMany of about {fan.avg:g} documents."
        )
    return Finding(
        collection=join.first,
        path=path,
        problem="join-on-read",
        recommendation="extended-reference",
        severity="medium",
        summary=(
            f"{count(join.joined)} of {count(join.reads)} reads of {join.first} were followed by a lookup of "
            f"{join.second} for {', '.join(fields)} ({count(join.lookups)} lookups); {join.second} changed "
            f"those fields {len(writes)} times."
        ),
        evidence=evidence,
        change=Change(description, commands, {path: "<id>", **{c: "..." for c in copies.values()}}),
        effect=effect,
    )


def _reference_array(join: Join, evidence: dict[str, Any]) -> Finding:
    path = join.relation.path
    return Finding(
        collection=join.first,
        path=path,
        problem="join-on-read",
        recommendation="reference-array",
        severity="medium",
        summary=(
            f"After each read of {join.first}, {join.second} was read one id at a time: {count(join.lookups)} "
            f"finds for {count(join.joined)} reads, up to {join.longest_chain} per read."
        ),
        evidence=evidence,
        change=Change(
            f"Read the referenced {join.second} with one query over the array of references.",
            [call(join.second, "find", {"_id": {"$in": f"<{join.first}.{path}>"}})],
            None,
        ),
        effect=f"One round trip per read instead of up to {join.longest_chain}.",
    )


def sets_any(update: Any, fields: list[str]) -> bool:
    touched = touched_paths(update)
    if "replace" in touched:
        return True
    return any(p == f or p.startswith(f + ".") for paths in touched.values() for p in paths for f in fields)


def _fields(documents: list[dict[str, Any]], parent_field: str) -> list[str]:
    names: dict[str, None] = {}
    for doc in documents[:20]:
        names.update(dict.fromkeys(k for k in doc if k not in ("_id", parent_field)))
    return list(names)
