"""Extended references whose copies drifted from their source: the texts
accept copying a read-mostly field (``author_name`` beside ``author_id``,
``author: {_id, name}``) only with the update fan-out that keeps it true.

Copies are the fields beside a reference named after the source's fields
(``author_name`` for ``users.name`` next to ``author_id``; ``name`` next to
``_id`` or ``product_id`` inside a subdocument). Up to :data:`COMPARED`
sampled documents are compared with their sources, read by ``_id``. Money
fields (price, cost, total...) are snapshots frozen at purchase, as the
texts' orders keep them, and are not compared.

Manual: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/data-access-patterns/extended-reference-pattern/
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from foliodb.advisor.context import Context
from foliodb.advisor.measure import per_value
from foliodb.advisor.relations import Relation
from foliodb.advisor.report import Affected, Change, Finding
from foliodb.advisor.rules.joins import SNAPSHOT
from foliodb.advisor.sampling import CollectionProfile
from foliodb.advisor.shell import call, count
from foliodb.advisor.workload import touched_paths

COMPARED = 200
EXAMPLES = 3


def rule_stale_copy(ctx: Context) -> Iterator[Finding]:
    for relation in ctx.relations:
        if relation.self_reference:
            continue
        source = ctx.profiles[relation.source]
        copies = copied_fields(source, relation, ctx.profiles[relation.target])
        copies = {local: field for local, field in copies.items() if not SNAPSHOT.search(field)}
        if not copies:
            continue
        pairs = list(_pairs(source.documents[:COMPARED], relation.path, copies))
        ids = list({repr(i): i for i, _ in pairs}.values())
        targets = {
            repr(d["_id"]): d
            for d in ctx.database[relation.target].find({"_id": {"$in": ids}}, dict.fromkeys(copies.values(), 1))
        }
        compared = 0
        stale: Counter[str] = Counter()
        examples: list[dict[str, Any]] = []
        for target_id, values in pairs:
            current = targets.get(repr(target_id))
            if current is None:
                continue
            compared += 1
            for local, value in values.items():
                if current.get(copies[local]) != value:
                    stale[local] += 1
                    if len(examples) < EXAMPLES:
                        examples.append(
                            {
                                "source_id": target_id,
                                "field": local,
                                "copy": value,
                                "source": current.get(copies[local]),
                            }
                        )
        if not stale:
            continue
        yield _finding(ctx, relation, copies, compared, stale, examples)


def copied_fields(profile: CollectionProfile, relation: Relation, target: CollectionProfile) -> dict[str, str]:
    """Local path -> the target's field it copies, for the fields beside the reference."""
    prefix, _, leaf = relation.path.rpartition(".")
    base = f"{prefix}." if prefix else ""
    siblings = [p[len(base) :] for p in profile.fields if p.startswith(base) and "." not in p[len(base) :]]
    names = {p for p in target.fields if "." not in p and p != "_id"}
    out: dict[str, str] = {}
    stem = leaf[: -len("_id")] if leaf.endswith("_id") else leaf[: -len("Id")] if leaf.endswith("Id") else None
    for name in siblings:
        if name == leaf:
            continue
        if stem and name.startswith(stem + "_") and name[len(stem) + 1 :] in names:
            out[base + name] = name[len(stem) + 1 :]
        elif prefix and name in names and (leaf in ("_id", "id") or stem):
            out[base + name] = name
    return out


def _pairs(documents: list[dict[str, Any]], path: str, copies: dict[str, str]) -> Iterator[tuple[Any, dict[str, Any]]]:
    """(referenced id, {local path: copied value}) for each copy in the documents."""
    prefix, _, leaf = path.rpartition(".")
    for doc in documents:
        for holder in _holders(doc, prefix):
            if leaf in holder:
                values = {
                    local: holder[local.rsplit(".", 1)[-1]] for local in copies if local.rsplit(".", 1)[-1] in holder
                }
                if values:
                    yield holder[leaf], values


def _holders(doc: dict[str, Any], prefix: str) -> Iterator[dict[str, Any]]:
    if not prefix:
        yield doc
        return
    head, _, rest = prefix.partition(".")
    value = doc.get(head)
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict):
            yield from _holders(item, rest)


def _finding(
    ctx: Context,
    relation: Relation,
    copies: dict[str, str],
    compared: int,
    stale: Counter[str],
    examples: list[dict[str, Any]],
) -> Finding:
    worst, stale_count = stale.most_common(1)[0]
    fan = per_value(ctx, relation.source, relation.path)
    sourced = [op for op in ctx.updates(relation.target) if any(f in _set_paths(op.update) for f in copies.values())]
    kept = [op for op in ctx.updates(relation.source) if any(c in _set_paths(op.update) for c in copies)]
    commands = [
        call(relation.source, "updateMany", {relation.path: e["source_id"]}, {"$set": {e["field"]: e["source"]}})
        for e in examples
    ]
    if "." not in relation.path:
        commands.append(
            call(
                relation.source,
                "aggregate",
                [
                    {
                        "$lookup": {
                            "from": relation.target,
                            "localField": relation.path,
                            "foreignField": "_id",
                            "as": "_source",
                        }
                    },
                    {"$set": {local: {"$first": f"$_source.{field}"} for local, field in copies.items()}},
                    {"$unset": "_source"},
                    {"$merge": {"into": relation.source, "whenMatched": "merge"}},
                ],
            )
        )
    return Finding(
        collection=relation.source,
        path=worst,
        problem="stale-copy",
        recommendation="extended-reference",
        severity="high",
        summary=(
            f"{count(stale_count)} of {count(compared)} sampled copies of {relation.target}."
            f"{copies[worst]} in {worst} differ from the source ({stale_count / compared:.0%} drift)."
        ),
        evidence={
            "compared": compared,
            "stale": dict(stale),
            "drift": round(sum(stale.values()) / max(compared * len(copies), 1), 3),
            "copies": copies,
            "examples": examples,
            "copies_per_source_avg": fan.avg,
            "copies_per_source_max": fan.max,
            "source_updates_recorded": len(sourced),
            "copy_updates_recorded": len(kept),
        },
        change=Change(
            f"Repair the stale copies now, then update {worst} in {relation.source} (about {fan.avg:g} documents "
            f"per {relation.target} document, at most {fan.max}) in the same operation that changes "
            f"{relation.target}.{copies[worst]}.",
            commands,
            None,
            [Affected(relation.source, list(copies), "the stale copies show the source's current values again")],
        ),
        effect=f"Reads of {relation.source} show the current {copies[worst]} again without a join.",
    )


def _set_paths(update: Any) -> set[str]:
    touched = touched_paths(update)
    return touched.get("$set", set()) | touched.get("pipeline", set()) | touched.get("replace", set())
