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

A mix something explains is left alone (:mod:`foliodb.advisor.kinds`: a
key beside it naming the value's kind, a version or kind field, queries
that rely on it); so is null beside missing when a version or kind field
tells the documents that have the field from the others. A mix of shapes (a sub-document in some documents, a
string in others) with nothing to tell them apart is a schema mid-way
between two versions: the change marks each document with its version
(``schema_versioning``) instead of converting one shape into the other,
which would fail (``$toString`` of a document: ConversionFailure, 241) or
undo the migration.

Manual: https://www.mongodb.com/docs/manual/tutorial/query-for-null-fields/ and
https://www.mongodb.com/docs/manual/reference/operator/aggregation/convert/
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from bson import ObjectId

from foliodb.advisor.context import Context
from foliodb.advisor.kinds import explain_absence, explain_mix
from foliodb.advisor.relations import REFERENCE_NAME
from foliodb.advisor.report import Affected, Change, Finding
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


_STRUCTURE = frozenset({"object", "array"})
VERSION_FIELD = "schema_version"


def rule_mixed_types(ctx: Context) -> Iterator[Finding]:
    for profile in ctx.profiles.values():
        for stats in profile.fields.values():
            kinds = Counter({t: n for t, n in stats.types.items() if t != "null"})
            if stats.array_lengths:
                continue  # an array's elements are judged at their own path
            if len(kinds) >= 2 and not set(kinds) <= _MIXED_OK:
                if explain_mix(profile, stats.path, ctx.workload.on(profile.name)) is not None:
                    continue
                if set(kinds) & _STRUCTURE:
                    yield _shapes(ctx, profile, stats, kinds)
                else:
                    yield _mixed(ctx, profile, stats)
            elif (
                "." not in stats.path
                and stats.types["null"]
                and stats.present < len(profile.documents)
                and explain_absence(profile, stats.path) is None
            ):
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
    width = _code_width(stats) if wanted == "string" else None
    commands = []
    if converter and "." not in stats.path:
        for stray in strays:
            commands.append(
                call(
                    profile.name,
                    "updateMany",
                    {stats.path: {"$type": stray}},
                    [{"$set": {stats.path: _converted(converter, f"${stats.path}", width)}}],
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
                                    "in": {
                                        "$mergeObjects": [
                                            "$$this",
                                            {leaf: _converted(converter, f"$$this.{leaf}", width)},
                                        ]
                                    },
                                }
                            }
                        }
                    }
                ],
            )
        )
    stray_text = ", ".join(f"{count(n)} {t}" for t, n in strays.items())
    padded = f" zero-padded to {width} digits as the strings are" if width else ""
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
        change=Change(
            f"Convert the {stray_text} values to {wanted}{padded}, and write {wanted} from now on.",
            commands,
            None,
            [
                Affected(
                    profile.name,
                    [stats.path],
                    f"the converted values are {wanted}s: queries by a {wanted} find those documents too",
                    gains=True,
                )
            ],
        ),
        effect=f"Every {profile.name} document answers queries on {stats.path} by {wanted} value.",
    )


MIN_CODES = 5  # sampled strings before their width is taken for a format


def _code_width(stats: FieldStats) -> int | None:
    """The width of the path's strings when they are fixed-width digit codes (zip codes, account
    numbers: "02134"), whose numeric copies lost their leading zeros: a plain ``$toString`` of 2134
    gives "2134", which no query for "02134" finds."""
    strings = [v for v in stats.values if isinstance(v, str)]
    widths = {len(v) for v in strings}
    if len(strings) < MIN_CODES or len(widths) != 1 or not all(v.isascii() and v.isdigit() for v in strings):
        return None
    width = widths.pop()
    return width if width > 1 else None


def _converted(converter: str, source: str, width: int | None) -> Any:
    """``source`` converted; to a string of at least ``width`` characters, zeros first, when given."""
    if width is None:
        return {converter: source}
    pad = {"$max": [0, {"$subtract": [width, {"$strLenCP": "$$text"}]}]}
    return {
        "$let": {
            "vars": {"text": {"$toString": source}},
            "in": {"$concat": [{"$substrCP": ["0" * width, 0, pad]}, "$$text"]},
        }
    }


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
            [
                Affected(
                    profile.name,
                    [stats.path],
                    f"the null {stats.path} fields are removed; {{{stats.path}: null}} still matches those documents",
                )
            ],
        ),
        effect=f"{{{stats.path}: {{$exists: false}}}} and {{{stats.path}: null}} select the same documents.",
    )


def _shapes(ctx: Context, profile: CollectionProfile, stats: FieldStats, kinds: Counter[str]) -> Finding:
    """A field holding a sub-document in some documents and a scalar in others, nothing saying which."""
    exact = _exact_types(ctx, profile, stats)
    types = Counter({t: n for t, n in (exact if exact is not None else kinds).items() if t not in ("missing", "null")})
    order = _oldest_first(ctx, profile, stats.path, list(types))
    field = VERSION_FIELD if VERSION_FIELD not in profile.fields else f"{stats.path.replace('.', '_')}_version"
    steps = [
        call(
            profile.name,
            "updateMany",
            {stats.path: {"$type": kind}, field: {"$exists": False}},
            {"$set": {field: version}},
        )
        for version, kind in enumerate(order, 1)
    ]
    text = ", ".join(f"{count(types[k])} {k}" for k in order)
    return Finding(
        collection=profile.name,
        path=stats.path,
        problem="mixed-types",
        recommendation="schema-versioning",
        severity="medium",
        summary=(
            f"{stats.path} has two shapes ({text}) and no field says which a document has: a schema "
            "between versions, read by guessing."
        ),
        evidence={
            "types": dict(types),
            "exact": exact is not None,
            "oldest_first": order,
            "examples": _examples(profile, stats.path, set(types)),
        },
        change=Change(
            f"Mark each document with its shape's version ({field}: 1 for {order[0]}, "
            f"{len(order)} for {order[-1]}); write the newest from now on, read by {field}, and migrate the "
            "older documents when convenient. Converting one shape into the other is not proposed: it would "
            "undo the migration, or fail.",
            steps,
            {field: len(order), stats.path: f"<{order[-1]}>"},
        ),
        effect=f"Every {profile.name} document says which shape its {stats.path} has; nothing is converted.",
    )


def _oldest_first(ctx: Context, profile: CollectionProfile, path: str, kinds: list[str]) -> list[str]:
    """The kinds of ``path``'s values, oldest first: the kind the recorded writes write is the newest;
    the others by their oldest document (ObjectId time, else sample order)."""
    written: Counter[str] = Counter()
    for op in ctx.workload.on(profile.name):
        for value in _written(op, path):
            written[type_name(value)] += 1
    first: dict[str, Any] = {}
    for position, doc in enumerate(profile.documents):
        value = _at(doc, path)
        if value is None:
            continue
        kind = type_name(value)
        oid = doc.get("_id")
        when = oid.generation_time.timestamp() if isinstance(oid, ObjectId) else position
        first[kind] = min(first.get(kind, when), when)
    newest = written.most_common(1)[0][0] if written else None
    return sorted(kinds, key=lambda k: (k == newest, first.get(k, float("inf")), k))


def _written(op: Any, path: str) -> Iterator[Any]:
    """The values an insert or update recorded in the profile writes at ``path``."""
    if op.kind == "insert" and isinstance(op.update, list):
        for doc in op.update:
            value = _at(doc, path)
            if value is not None:
                yield value
    elif op.kind in ("update", "findAndModify") and isinstance(op.update, dict):
        for spec in (op.update.get("$set"), op.update.get("$setOnInsert"), op.update):
            if isinstance(spec, dict) and path in spec and not str(path).startswith("$"):
                yield spec[path]


def _at(doc: Any, path: str) -> Any:
    value: Any = doc
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


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
