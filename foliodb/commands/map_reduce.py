"""mapReduce (deprecated in MongoDB, still served): JavaScript map, reduce and finalize.

Manual: https://www.mongodb.com/docs/manual/reference/command/mapReduce/

The input is the collection's documents matching ``query``, in ``sort``
order, at most ``limit`` of them (the aggregate machinery reads them, so
the planner and indexes apply). ``map`` runs with ``this`` the document and
calls ``emit(key, value)``; values are grouped by key under BSON equality;
``reduce(key, values)`` folds each key's values (never called for a key with
a single value, as the manual says); ``finalize(key, value)``, when given,
makes each output value. ``scope`` holds globals every function sees.

Output, per ``out``:

* ``{inline: 1}``: ``{results: [{_id: key, value}...]}`` in key order;
* a name or ``{replace: name}``: the collection's contents are replaced;
* ``{merge: name}``: each key's document replaces the one with its ``_id``;
* ``{reduce: name}``: a key already there is reduced again with the existing
  value, ``reduce(key, [existing, new])``, then stored;
* ``db`` names another database for the three collection modes.

The reply is ``{result: name}`` (``{result: {db, collection}}`` with ``db``);
``verbose: true`` adds ``timeMillis`` and ``counts`` (input, emit, reduce,
output). Map and reduce run in batches, one JavaScript call per batch.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from bson import Code

from foliodb import javascript
from foliodb.commands import collation, params
from foliodb.commands.aggregate import EngineEnv
from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.engine.engine import validate_collection_name
from foliodb.errors import CommandError, ErrorCode
from foliodb.interrupt import check
from foliodb.query import keystring
from foliodb.query.bsontypes import is_string, type_name

if TYPE_CHECKING:
    from foliodb.javascript.runtime import Runtime

_BATCH = 512  # documents mapped, or keys reduced, per call into JavaScript

FIELDS = {
    "map": params.ANY,
    "reduce": params.ANY,
    "out": params.ANY,
    "query": "object",
    "sort": "object",
    "limit": "integer",
    "finalize": params.ANY,
    "scope": "object",
    "jsMode": "bool",
    "verbose": "bool",
    "bypassDocumentValidation": "bool",
    "collation": "object",
}
_MODES = ("inline", "replace", "merge", "reduce")


def _code(fields: Mapping[str, Any], name: str, required: bool = True) -> str | None:
    value = fields.get(name)
    if value is None:
        if required:
            raise CommandError(
                ErrorCode.FailedToParse, f"BSON field 'mapReduce.{name}' is missing but a required field"
            )
        return None
    if not isinstance(value, str):  # a string, or Code (a str subclass)
        raise CommandError(
            ErrorCode.TypeMismatch,
            f"BSON field 'mapReduce.{name}' is the wrong type '{type_name(value)}', "
            "expected types '[string, javascript]'",
        )
    return str(value)


def _target(coll: str, db: str) -> tuple[str, str]:
    # mongod writes mapReduce's output through $out or $merge: no system collection.
    if coll.startswith("system."):
        raise CommandError(ErrorCode.InvalidNamespace, f"Invalid collection name: {coll}")
    validate_collection_name(db, coll)
    return coll, db


def _out(value: Any, db: str) -> tuple[str, str | None, str]:
    """(mode, collection or None for inline, database)."""
    if is_string(value):
        return ("replace", *_target(value, db))
    if not isinstance(value, Mapping) or not value:
        raise CommandError(ErrorCode.BadValue, "'out' has to be a string or an object")
    mode = next(iter(value))
    if mode not in _MODES:
        raise CommandError(ErrorCode.BadValue, f"'out' mode must be one of [replace|merge|reduce|inline], found {mode}")
    for name in value:
        if name not in (mode, "db", "sharded", "nonAtomic"):
            raise CommandError(ErrorCode.BadValue, f"BSON field 'mapReduce.out.{name}' is an unknown field.")
    if mode == "inline":
        if "db" in value:
            raise CommandError(ErrorCode.BadValue, "'out.db' cannot be given with inline output")
        return mode, None, db
    coll = value[mode]
    if not is_string(coll) or not coll:
        raise CommandError(ErrorCode.BadValue, f"'out.{mode}' must be a non-empty collection name")
    out_db = value.get("db", db)
    if not is_string(out_db) or not out_db:
        raise CommandError(ErrorCode.BadValue, "'out.db' must be a non-empty database name")
    return (mode, *_target(coll, out_db))


def _batches(docs: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) == _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _each(js: Runtime, fn: Any, pairs: list[list[Any]]) -> list[Any]:
    out: list[Any] = []
    for start in range(0, len(pairs), _BATCH):
        check()
        out.extend(js.each(fn, pairs[start : start + _BATCH]))
    return out


@COMMANDS.register("mapReduce", "mapreduce")  # mongod's alias, which the 4.2 shell sends
def cmd_mapReduce(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    source = cmd[next(iter(cmd))]
    if not is_string(source) or not source:
        raise CommandError(ErrorCode.InvalidNamespace, f"Invalid namespace specified '{request.db}.{source}'")
    fields = params.parse(cmd, "mapReduce", FIELDS)
    map_code, reduce_code = _code(fields, "map"), _code(fields, "reduce")
    finalize_code = _code(fields, "finalize", required=False)
    if "out" not in fields:
        raise CommandError(ErrorCode.FailedToParse, "BSON field 'mapReduce.out' is missing but a required field")
    mode, out_coll, out_db = _out(fields["out"], request.db)
    collator = collation.resolve(request, source, cmd.get("collation"), "mapReduce")
    info = request.engine.catalog.get(request.db, source)
    if info is not None and info.is_view:
        raise CommandError(
            ErrorCode.CommandNotSupportedOnView, f"Namespace {request.db}.{source} is a view, not a collection"
        )
    limit = fields.get("limit")
    if limit is not None and limit < 0:
        raise CommandError(ErrorCode.BadValue, f"Invalid limit: {limit}")
    stages: list[Mapping[str, Any]] = [{"$match": fields.get("query") or {}}]
    if fields.get("sort"):
        stages.append({"$sort": fields["sort"]})
    if limit:
        stages.append({"$limit": limit})

    scope = dict(fields.get("scope") or {})
    if isinstance(cmd["map"], Code) and cmd["map"].scope:
        scope.update(cmd["map"].scope)
    js = javascript.new_runtime(scope, stored=True)
    map_fn = js.function(map_code or "")
    reduce_fn = js.function(reduce_code or "")
    finalize_fn = js.function(finalize_code) if finalize_code is not None else None

    env = EngineEnv(request, request.context(None, collator), True)
    groups: dict[bytes, tuple[Any, list[Any]]] = {}
    inputs = emits = 0
    for batch in _batches(env.source(source, stages)):
        check()
        inputs += len(batch)
        for key, value in js.map(map_fn, batch):
            emits += 1
            kb = keystring.encode(key)
            group = groups.get(kb)
            if group is None:
                groups[kb] = (key, [value])
            else:
                group[1].append(value)

    ordered = [groups[kb] for kb in sorted(groups)]
    to_reduce = [[key, values] for key, values in ordered if len(values) > 1]
    reduced = iter(_each(js, reduce_fn, to_reduce))
    results = [[key, next(reduced) if len(values) > 1 else values[0]] for key, values in ordered]
    if finalize_fn is not None:
        results = [[key, value] for (key, _), value in zip(results, _each(js, finalize_fn, results), strict=True)]
    docs = [{"_id": key, "value": value} for key, value in results]

    reply: dict[str, Any]
    if out_coll is None:
        reply = {"results": docs}
    else:
        _write(env, js, reduce_fn, mode, out_coll, out_db, docs)
        reply = {"result": out_coll if out_db == request.db else {"db": out_db, "collection": out_coll}}
    if fields.get("verbose"):
        reply["timeMillis"] = int((time.perf_counter() - started) * 1000)
        reply["counts"] = {"input": inputs, "emit": emits, "reduce": len(to_reduce), "output": len(docs)}
    reply["ok"] = 1.0
    return reply


def _write(
    env: EngineEnv, js: Runtime, reduce_fn: Any, mode: str, coll: str, db: str, docs: list[dict[str, Any]]
) -> None:
    storage = env.engine.storage
    if mode == "replace":
        with storage.write():
            env.replace_collection(coll, docs, db)
        return
    existing = [env.find_one(coll, {"_id": doc["_id"]}, db) for doc in docs] if env.collection_exists(coll, db) else []
    if mode == "reduce" and existing:
        again = [i for i, old in enumerate(existing) if old is not None]
        pairs = [[docs[i]["_id"], [existing[i]["value"], docs[i]["value"]]] for i in again]  # type: ignore[index]
        for i, value in zip(again, _each(js, reduce_fn, pairs), strict=True):
            docs[i] = {"_id": docs[i]["_id"], "value": value}
    with storage.write():
        for i, doc in enumerate(docs):
            if existing and existing[i] is not None:
                env.replace(coll, {"_id": doc["_id"]}, doc, db)
            else:
                env.insert(coll, doc, db)
