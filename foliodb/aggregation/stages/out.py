"""Writing stages: $out $merge.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/out/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/

Both must be last (checked by the pipeline compiler), output no documents,
and do their work as the pipeline is drained. ``$out`` hands the whole
result to ``env.replace_collection`` (atomic replacement). ``$merge`` looks
each document up in the target by its ``on`` fields (which need a unique
index, 51183) and then, per ``whenMatched``/``whenNotMatched``: replaces,
keeps, merges top-level fields, fails (the insert's duplicate-key error),
or runs an update pipeline with ``$$new`` (and the ``let`` variables) bound
to the incoming document; inserts, discards, or fails (13113). Documents
without ``_id`` get an ObjectId on insert (before the lookup when ``on``
holds ``_id``); a replacement keeps the target's. As mongod's batched
unordered writes, a failing document does not stop the others of its batch
(16 MiB or 100,000 documents), and the writes done stay when the stage fails
(the aggregate command commits them, see :mod:`foliodb.commands.aggregate`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import bson
from bson import ObjectId

from foliodb.aggregation.pipeline import (
    STAGES,
    Docs,
    Pipeline,
    ScopedEnv,
    Stage,
    Where,
    compile_stages,
    stage_entry,
)
from foliodb.engine.records import MAX_BSON_SIZE
from foliodb.errors import INTERRUPTIONS, CommandError, ErrorCode, location
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.expr.core import check_variable_name
from foliodb.query.idl import check_fields, missing_field, wrong_type
from foliodb.query.paths import MISSING
from foliodb.query.render import render
from foliodb.query.reshape import split_path


def _with_id(doc: dict[str, Any]) -> dict[str, Any]:
    if "_id" in doc:
        return doc
    return {"_id": ObjectId(), **doc}


def _check_collection_name(coll: str, stage: str) -> None:
    if not coll:
        raise CommandError(ErrorCode.InvalidNamespace, "Invalid namespace specified: collection name is empty")
    if "\x00" in coll:
        raise CommandError(ErrorCode.InvalidNamespace, f"Invalid collection name: {coll}")
    if coll.startswith("system.") or "$" in coll:
        # NamespaceString::isSpecial: document_source_out.cpp (17385), document_source_merge.cpp (51180).
        if stage == "$out":
            raise location(17385, f"Can't $out to special collection: {coll}")
        raise location(51180, f"Cannot $merge into special collection: '{coll}'")


@STAGES.register("$out")
def stage_out(spec: Any, where: Where) -> Stage:
    db: str | None = None
    timeseries: Any = None
    if is_string(spec):
        coll = spec
    elif isinstance(spec, Mapping):
        check_fields(spec, "$out", ("db", "coll", "timeseries"))
        timeseries = spec.get("timeseries")
        for key in ("db", "coll"):
            if key not in spec:
                raise missing_field("$out", key)
            if not is_string(spec[key]):
                raise wrong_type(f"$out.{key}", spec[key], "string")
        db, coll = spec["db"], spec["coll"]
    else:
        raise location(16990, f"$out only supports a string or object argument, but found {type_name(spec)}")
    _check_collection_name(coll, "$out")
    env = where.env

    def run(docs: Docs) -> Docs:
        if timeseries is not None:
            # Measurements get their _id as a time-series insert gives it (last).
            env.replace_collection(coll, docs, db=db, timeseries=timeseries)
        else:
            env.replace_collection(coll, (_with_id(doc) for doc in docs), db=db)
        yield from ()

    # Explain shows mongod's serialization: the target as {db, coll} (DocumentSourceOutSpec).
    shown: dict[str, Any] = {"db": db if db is not None else env.db, "coll": coll}
    if timeseries is not None:
        shown["timeseries"] = timeseries
    return Stage("$out", shown, run)


# ---------------------------------------------------------------------------

_MATCHED_MODES = ("replace", "keepExisting", "merge", "fail")
_NOT_MATCHED_MODES = ("insert", "discard", "fail")
_UPDATE_STAGES = frozenset({"$addFields", "$set", "$project", "$unset", "$replaceRoot", "$replaceWith"})


def _into(value: Any) -> tuple[str | None, str]:
    if is_string(value):
        return None, value
    if isinstance(value, Mapping):
        check_fields(value, "$merge.into", ("db", "coll"))
        coll = value.get("coll")
        db = value.get("db")
        if not is_string(coll) or (db is not None and not is_string(db)):
            raise location(
                51178,
                f"$merge 'into' field must specify a 'coll' that is not empty, null or undefined: {render(value)}",
            )
        return db, coll
    raise location(51178, f"$merge 'into' field  must be either a string or an object, but found {type_name(value)}")


def _on_fields(value: Any) -> list[str]:
    """``on`` as mongod's mergeOnFieldsParseFromBSON checks it."""
    names = [value] if is_string(value) else value
    if not isinstance(names, list):
        raise location(
            51186, f"$merge 'on' field  must be either a string or an array of strings, but found {type_name(value)}"
        )
    for name in names:
        if not is_string(name):
            raise location(51134, f"$merge 'on' array elements must be strings, but found {type_name(name)}")
    if not names:
        raise location(51187, "If explicitly specifying $merge 'on', must include at least one field")
    if len(set(names)) != len(names):
        raise location(31465, "Found a duplicate field in the $merge 'on' list")
    for name in names:
        split_path(name)
    return names


@STAGES.register("$merge")
def stage_merge(spec: Any, where: Where) -> Stage:
    if is_string(spec):
        spec = {"into": spec}
    if not isinstance(spec, Mapping):
        raise location(51182, f"$merge only supports a string or object argument, but found {type_name(spec)}")
    known = ("into", "on", "let", "whenMatched", "whenNotMatched", "targetCollectionVersion")
    check_fields(spec, "$merge", known, ("into",))
    db, coll = _into(spec["into"])
    _check_collection_name(coll, "$merge")
    on = _on_fields(spec.get("on", "_id"))
    matched = spec.get("whenMatched", "merge")
    not_matched = spec.get("whenNotMatched", "insert")
    if is_string(matched) and matched not in _MATCHED_MODES:
        raise CommandError(
            ErrorCode.BadValue, f"Enumeration value '{matched}' for field 'whenMatched' is not a valid value."
        )
    if not isinstance(matched, (str, list)):
        raise CommandError(
            ErrorCode.TypeMismatch, f"BSON field '$merge.whenMatched' is the wrong type '{type_name(matched)}'"
        )
    if not is_string(not_matched) or not_matched not in _NOT_MATCHED_MODES:
        raise CommandError(
            ErrorCode.BadValue,
            f"Enumeration value '{render(not_matched)}' for field 'whenNotMatched' is not a valid value.",
        )
    if matched == "fail" and not_matched != "insert":
        raise location(51181, f"Combination of {{whenMatched: fail, whenNotMatched: {not_matched}}} is not supported")
    let = spec.get("let")
    if let is not None and not isinstance(matched, list):
        raise location(51199, f"Cannot use 'let' variables with 'whenMatched: {matched}' mode")
    if let is not None and not isinstance(let, Mapping):
        raise CommandError(
            ErrorCode.TypeMismatch,
            f"BSON field '$merge.let' is the wrong type '{type_name(let)}', expected type 'object'",
        )
    env = where.env
    if on != ["_id"] and not env.unique_index_on(coll, on, db=db):
        raise location(51183, "Cannot find index to verify that join fields will be unique")

    update: Pipeline | None = None
    let_exprs: list[tuple[str, Any]] = []
    variables: dict[str, Any] = {}
    if isinstance(matched, list):
        for name, value in (let if let is not None else {"new": "$$ROOT"}).items():
            check_variable_name(name)
            let_exprs.append((name, where.expression(value)))
        for stage in matched:
            name = stage_entry(stage)[0]
            if name not in _UPDATE_STAGES:
                raise CommandError(ErrorCode.InvalidOptions, f"{name} is not allowed to be used within an update")
        scoped = ScopedEnv(env, dict.fromkeys(name for name, _ in let_exprs))
        variables = scoped.ctx.variables  # rebound for each incoming document
        inner = Where(scoped, where.scope.with_vars(*variables))
        update = Pipeline(compile_stages(matched, inner))
    vars_for = where.variables()
    on_parts = [tuple(name.split(".")) for name in on]

    def key_filter(doc: dict[str, Any]) -> dict[str, Any]:
        """The target's lookup by the ``on`` fields, as mongod's extractMergeOnFieldsFromDoc: the
        value at each path (an array along the way reaches nothing) is an array (51185), missing
        or null (51132)."""
        out = {}
        for name, parts in zip(on, on_parts, strict=True):
            value: Any = doc
            for part in parts:
                value = value.get(part, MISSING) if isinstance(value, dict) else MISSING
            if isinstance(value, list):
                raise location(51185, f"$merge write error: 'on' field '{name}' is an array")
            if value is MISSING or value is None:
                raise location(
                    51132, f"$merge write error: 'on' field '{name}' cannot be missing, null, undefined or an array"
                )
            out[name] = value
        return out

    def updated(existing: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any] | None:
        if matched == "replace":
            return doc if "_id" in doc else {"_id": existing["_id"], **doc}
        if matched == "merge":
            return {**existing, **doc}
        assert update is not None
        vars = vars_for(doc)
        for name, fn in let_exprs:
            value = fn(doc, vars)
            variables[name] = None if value is MISSING else value
        return next(update.run(iter([existing])), None)

    def write(doc: dict[str, Any]) -> None:
        if "_id" in on:  # mongod's makeBatchObject generates the _id an 'on' field needs
            doc = _with_id(doc)
        match = key_filter(doc)
        if matched == "fail":
            env.insert(coll, _with_id(doc), db=db)
            return
        existing = env.find_one(coll, match, db=db)
        if existing is None:
            if not_matched == "insert":
                env.insert(coll, _with_id(doc), db=db)
            elif not_matched == "fail":
                raise location(
                    13113,
                    "$merge could not find a matching document in the target collection for at least one document "
                    "in the source collection",
                )
            return
        if matched == "keepExisting":
            return
        new = updated(existing, doc)
        if new is None:
            return
        if "_id" in new and new["_id"] != existing["_id"]:
            raise CommandError(
                ErrorCode.ImmutableField,
                "$merge failed to update the matching document, did you attempt to modify the _id or the shard key? "
                ":: caused by :: Performing an update on the path '_id' would modify the immutable field '_id'",
            )
        env.replace(coll, {"_id": existing["_id"]}, new, db=db)

    def run(docs: Docs) -> Docs:
        # mongod writes batches (DocumentSourceWriter: up to 16 MiB of documents, at most
        # maxWriteBatchSize of them) as unordered write commands: every document of a batch is
        # tried, and the batch's first error fails the stage before the next batch.
        failure: CommandError | None = None
        buffered = count = 0
        for doc in docs:
            size = len(bson.encode(doc))
            buffered += size
            if count and (buffered > MAX_BSON_SIZE or count >= MAX_WRITE_BATCH_SIZE):
                if failure is not None:
                    raise failure
                buffered, count = size, 0
            count += 1
            try:
                write(doc)
            except CommandError as error:
                if error.code in INTERRUPTIONS:
                    raise
                failure = failure or error
        if failure is not None:
            raise failure
        yield from ()

    return Stage("$merge", _merge_shown(spec, db or env.db, coll, on, let, matched, not_matched), run)


def _merge_shown(
    spec: Mapping[str, Any],
    db: str,
    coll: str,
    on: list[str],
    let: Mapping[str, Any] | None,
    matched: Any,
    not_matched: str,
) -> dict[str, Any]:
    """How explain shows a $merge: mongod's DocumentSourceMerge::serialize, with every default
    filled in, 'into' as {db, coll}, 'on' sorted (a std::set) and a string when it is one field,
    and a pipeline's 'let' defaulting to {new: "$$ROOT"}."""
    fields = sorted(on)
    shown: dict[str, Any] = {"into": {"db": db, "coll": coll}, "on": fields[0] if len(fields) == 1 else fields}
    if isinstance(matched, list):
        shown["let"] = dict(let) if let is not None else {"new": "$$ROOT"}
    shown["whenMatched"] = matched
    shown["whenNotMatched"] = not_matched
    if "targetCollectionVersion" in spec:
        shown["targetCollectionVersion"] = spec["targetCollectionVersion"]
    return shown


MAX_WRITE_BATCH_SIZE = 100_000  # mongod's maxWriteBatchSize
