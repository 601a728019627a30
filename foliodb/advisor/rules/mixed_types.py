"""One field, several types: a string id never matches an ObjectId ``_id``,
and ``{f: null}`` matches both null and a missing field (the texts'
pitfalls). Normalize the values to one type, or to one way of saying
"none".

Fires when the sampled values of a path have two kinds or more (numbers of
any width are one kind; null does not count), or, at a top-level path,
when some documents hold null and others lack the field. Counts are exact
(``$group`` by ``$type``) for top-level paths of collections cheap to pass
over, else the sample's. A reference, or a field named like one, mixed is
``high``: its queries silently miss documents.

Manual: https://www.mongodb.com/docs/manual/tutorial/query-for-null-fields/ and
https://www.mongodb.com/docs/manual/reference/operator/aggregation/convert/
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from foliodb.advisor.context import Context
from foliodb.advisor.relations import REFERENCE_NAME
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.sampling import CollectionProfile, FieldStats, type_name
from foliodb.advisor.shell import call, count

_CONVERT = {
    "objectId": "$toObjectId",
    "string": "$toString",
    "number": "$toDouble",
    "date": "$toDate",
    "bool": "$toBool",
}
_MIXED_OK = frozenset({"object", "array"})  # documents and arrays of them: structure, not a scalar's type


def rule_mixed_types(ctx: Context) -> Iterator[Finding]:
    for profile in ctx.profiles.values():
        for stats in profile.fields.values():
            kinds = Counter({t: n for t, n in stats.types.items() if t != "null"})
            if stats.array_lengths:
                continue  # an array's elements are judged at their own path
            if len(kinds) >= 2 and not set(kinds) <= _MIXED_OK:
                yield _mixed(ctx, profile, stats)
            elif "." not in stats.path and stats.types["null"] and stats.present < len(profile.documents):
                yield _null_and_missing(ctx, profile, stats)


def _exact_types(ctx: Context, profile: CollectionProfile, stats: FieldStats) -> Counter[str] | None:
    if "." in stats.path or not ctx.exact(profile.name):
        return None
    rows = ctx.database[profile.name].aggregate([{"$group": {"_id": {"$type": f"${stats.path}"}, "n": {"$sum": 1}}}])
    out: Counter[str] = Counter()
    for row in rows:
        name = str(row["_id"])
        out["number" if name in ("int", "long", "double", "decimal") else name] += int(row["n"])
    return out


def _mixed(ctx: Context, profile: CollectionProfile, stats: FieldStats) -> Finding:
    exact = _exact_types(ctx, profile, stats)
    types = exact if exact is not None else Counter(stats.types)
    types.pop("missing", None)
    relation = ctx.relation(profile.name, stats.path)
    target_type = None
    if relation is not None:
        target_type = ctx.profiles[relation.target].fields["_id"].types.most_common(1)[0][0]
    wanted = target_type or max((t for t in types if t != "null"), key=types.__getitem__)
    strays = {t: n for t, n in types.items() if t not in (wanted, "null")}
    referencing = relation is not None or bool(REFERENCE_NAME.search(stats.path))
    converter = _CONVERT.get(wanted)
    commands = []
    if converter and "." not in stats.path:
        for stray in strays:
            commands.append(
                call(
                    profile.name,
                    "updateMany",
                    {stats.path: {"$type": stray}},
                    [{"$set": {stats.path: {converter: f"${stats.path}"}}}],
                )
            )
    elif converter:
        array, _, leaf = stats.path.rpartition(".")
        commands.append(
            call(
                profile.name,
                "updateMany",
                {stats.path: {"$type": next(iter(strays))}},
                [
                    {
                        "$set": {
                            array: {
                                "$map": {
                                    "input": f"${array}",
                                    "in": {"$mergeObjects": ["$$this", {leaf: {converter: f"$$this.{leaf}"}}]},
                                }
                            }
                        }
                    }
                ],
            )
        )
    stray_text = ", ".join(f"{count(n)} {t}" for t, n in strays.items())
    return Finding(
        collection=profile.name,
        path=stats.path,
        problem="mixed-types",
        recommendation="normalize-type",
        severity="high" if referencing else "medium",
        summary=(
            f"{stats.path} holds {count(types[wanted])} {wanted} and {stray_text} values"
            + (f": queries by {relation.target}._id ({wanted}) miss the others." if relation else ".")
        ),
        evidence={
            "types": dict(types),
            "exact": exact is not None,
            "references": relation.target if relation else None,
            "examples": _examples(profile, stats.path, set(strays)),
        },
        change=Change(f"Convert the {stray_text} values to {wanted}, and write {wanted} from now on.", commands, None),
        effect=f"Every {profile.name} document answers queries on {stats.path} by {wanted} value.",
    )


def _null_and_missing(ctx: Context, profile: CollectionProfile, stats: FieldStats) -> Finding:
    exact = _exact_types(ctx, profile, stats)
    nulls = exact["null"] if exact is not None else stats.types["null"]
    missing = exact["missing"] if exact is not None else len(profile.documents) - stats.present
    return Finding(
        collection=profile.name,
        path=stats.path,
        problem="mixed-types",
        recommendation="normalize-type",
        severity="low",
        summary=(
            f"{stats.path} is null in {count(nulls)} documents and missing in {count(missing)}: "
            f"{{{stats.path}: null}} matches both, {{$exists}} tells them apart."
        ),
        evidence={"null": nulls, "missing": missing, "exact": exact is not None, "types": dict(exact or stats.types)},
        change=Change(
            f"Say 'none' one way: remove the null {stats.path} fields (or set every missing one to null).",
            [call(profile.name, "updateMany", {stats.path: {"$type": "null"}}, {"$unset": {stats.path: ""}})],
            None,
        ),
        effect=f"{{{stats.path}: {{$exists: false}}}} and {{{stats.path}: null}} select the same documents.",
    )


def _examples(profile: CollectionProfile, path: str, types: set[str]) -> list[Any]:
    out = []
    for doc in profile.documents:
        value: Any = doc
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None and type_name(value) in types:
            out.append({"_id": doc.get("_id"), path: value})
        if len(out) == 3:
            break
    return out
