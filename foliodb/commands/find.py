"""Read commands: find, count, distinct.

Manual: https://www.mongodb.com/docs/manual/reference/command/find/
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import bson
from bson import Int64
from bson.raw_bson import RawBSONDocument

from foliodb.commands import collation, oplog_rs, params
from foliodb.commands.accesses import counted
from foliodb.commands.cursors import DEFAULT_FIRST_BATCH, Lookahead, cursor_reply, over_the_wire
from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.commands.tailable import tail_source
from foliodb.commands.views import is_view, view_documents
from foliodb.commands.write import collection_name
from foliodb.engine import usage
from foliodb.engine.catalog import CODEC, RAW
from foliodb.engine.count import CountExecution
from foliodb.engine.distinct import DistinctExecution
from foliodb.engine.planner import id_hack_keys
from foliodb.engine.query import FindExecution, FindSpec
from foliodb.errors import CommandError, ErrorCode, location

FIND_FIELDS = {
    "filter": "object",
    "projection": "object",
    "sort": "object",
    "hint": params.ANY,
    "skip": "integer",
    "limit": "integer",
    "batchSize": "integer",
    "singleBatch": "bool",
    "max": "object",
    "min": "object",
    "returnKey": "bool",
    "showRecordId": "bool",
    "tailable": "bool",
    "oplogReplay": "bool",
    "noCursorTimeout": "bool",
    "awaitData": "bool",
    "allowPartialResults": "bool",
    "collation": "object",
    "allowDiskUse": "bool",
    "let": "object",
    "readOnce": "bool",
    "allowSpeculativeMajorityRead": "bool",
    "requestResumeToken": "bool",
    "resumeAfter": "object",
    "$recordId": params.ANY,
    "term": params.ANY,
}


def find_spec(cmd: Mapping[str, Any], command: str = "find") -> FindSpec:
    return parse_find(cmd, command)[0]


def parse_find(cmd: Mapping[str, Any], command: str = "find") -> tuple[FindSpec, dict[str, Any]]:
    """The find's spec and all its checked fields."""
    fields = params.parse(cmd, command, FIND_FIELDS)
    if "collation" in fields:
        collation.given(cmd, command)  # checked now: a bad one fails before any plan
    skip = fields.get("skip", 0)
    if skip < 0:
        raise CommandError(ErrorCode.BadValue, f"BSON field 'skip' value must be >= 0, actual value '{skip}'")
    limit = fields.get("limit", 0)
    if limit < 0:
        raise CommandError(ErrorCode.BadValue, f"BSON field 'limit' value must be >= 0, actual value '{limit}'")
    min_key, max_key = fields.get("min"), fields.get("max")
    if min_key and max_key and list(min_key) != list(max_key):
        raise CommandError(51176, "min and max must have the same field names")
    spec = FindSpec(
        filter=fields.get("filter"),
        projection=fields.get("projection"),
        sort=fields.get("sort"),
        skip=skip,
        limit=limit or None,
        first_batch=fields.get("batchSize"),
        hint=fields.get("hint"),
        min_key=min_key,
        max_key=max_key,
        allow_disk_use=fields.get("allowDiskUse", True),
        show_record_id=fields.get("showRecordId", False),
        return_key=fields.get("returnKey", False),
        collation=fields.get("collation"),
    )
    return spec, fields


def execution(request: Request, name: str, spec: FindSpec, let: Mapping[str, Any] | None = None) -> FindExecution:
    store = request.engine.store(request.db, name)
    ctx = request.context(let, collation.resolve(request, name, spec.collation, "find"))
    return counted(request, store, FindExecution(store, spec, ctx))


def documents(
    request: Request, name: str, spec: FindSpec, let: Mapping[str, Any] | None = None
) -> Iterator[dict[str, Any]]:
    """The documents a find returns, from a collection or a view."""
    if is_view(request, name):
        return view_documents(request, name, spec, let)
    run = execution(request, name, spec, let)
    # A reached limit ends the cursor with its batch, as mongod's LIMIT stage is then EOF.
    return Lookahead(iter(run), ended=lambda: run.limit_reached)


# find_one by _id as drivers send it ({find, filter: {_id: v}, limit: 1, singleBatch: true}), with
# the session, routing and Stable API fields the executor has already handled: all a point read has.
_POINT_FIELDS = frozenset(
    {
        "find", "filter", "limit", "singleBatch", "readConcern", "lsid", "txnNumber", "autocommit",
        "startTransaction", "$db", "$clusterTime", "$readPreference", "apiVersion", "apiStrict",
        "apiDeprecationErrors",
    }
)  # fmt: skip


def point_find(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any] | None:
    """The reply to a find of one document by ``_id`` (mongod's IDHACK), read
    without a spec, a plan or a cursor; None when the general path must answer
    (any other field, a view, a default collation, the profiler on, the oplog).
    Its reply, counters and errors are the general path's: the read goes
    through the same record store, the ``_id`` index counts one access."""
    if not cmd.keys() <= _POINT_FIELDS or cmd.get("limit") != 1 or cmd.get("singleBatch") is not True:
        return None
    filter_spec, name, db = cmd.get("filter"), cmd["find"], request.db
    if type(filter_spec) is not dict or type(name) is not str or db == "local" or type(cmd["limit"]) is not int:
        return None
    engine = request.executor.engine
    info = engine.catalog.get(db, name)
    if info is None or info.is_view or "collation" in info.options:
        return None
    store = engine.store_of(info)
    keys = id_hack_keys(store, filter_spec, None)  # no collation: the collection has no default
    if keys is None:
        return None
    profiling = engine.profiling.get(db) if engine.profiling else None
    if profiling is not None and profiling.level:
        return None
    if "readConcern" in cmd:
        params.read_concern(cmd, request.executor.replica_set is not None)
    usage.id_lookup_used(engine.usage, store)
    row = store.row_by_id_key(keys[0])
    batch = [] if row is None else [_point_document(request, row[1])]
    return {"cursor": {"firstBatch": batch, "id": Int64(0), "ns": f"{db}.{name}"}, "ok": 1.0}


def _point_document(request: Request, data: bytes) -> Any:
    """The document of a point read as its reply carries it: a dict to an embedded caller; over
    the wire the stored BSON as it is (the reply is only encoded, and decoding the document to
    encode it again was two thirds of a server's BSON work on a find_one), as the general path's
    batches over the wire hold their documents' BSON (commands/cursors.py)."""
    return RawBSONDocument(data, RAW) if over_the_wire(request) else bson.decode(data, CODEC)


@COMMANDS.register("find")
def cmd_find(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    point = point_find(request, cmd)
    if point is not None:
        return point
    name = collection_name(cmd, "find")
    spec, fields = parse_find(cmd)
    params.read_concern(cmd, request.executor.replica_set is not None)
    batch_size = fields.get("batchSize")
    if batch_size is not None and batch_size < 0:
        raise CommandError(
            ErrorCode.BadValue, f"BSON field 'batchSize' value must be >= 0, actual value '{batch_size}'"
        )
    single_batch = fields.get("singleBatch", False)
    if fields.get("awaitData") and not fields.get("tailable"):
        raise CommandError(ErrorCode.FailedToParse, "Cannot set 'awaitData' without also setting 'tailable'")
    run: Iterator[dict[str, Any]]
    if oplog_rs.is_oplog(request.db, name):
        run = oplog_rs.oplog_find(
            request.engine, spec, request.context(fields.get("let")), bool(fields.get("tailable"))
        )
    elif fields.get("tailable"):
        db = request.db
        run = tail_source(
            lambda: request.engine.store(db, name), f"{db}.{name}", spec, request.context(fields.get("let"))
        )
    else:
        spec.raw = over_the_wire(request)  # the reply is only encoded: stored documents go out as they are
        run = documents(request, name, spec, fields.get("let"))
    if batch_size is None:
        batch_size = DEFAULT_FIRST_BATCH
    if spec.limit is not None and (batch_size == 0 or spec.limit < batch_size) and single_batch:
        batch_size = spec.limit
    ns = f"{request.db}.{name}"
    options = {
        "no_timeout": fields.get("noCursorTimeout", False),
        "tailable": bool(fields.get("tailable")),
        "await_data": bool(fields.get("awaitData")),
    }
    if batch_size == 0:
        # batchSize 0: open the cursor, return nothing yet.
        source = run
        cursor = request.cursors.open(ns, source, **options)
        return {"cursor": {"firstBatch": [], "id": cursor.id, "ns": ns}, "ok": 1.0}
    return cursor_reply(request, ns, run, batch_size, single_batch, **options)


# count's fields (mongod's count.idl); "fields" is accepted and ignored, as mongod does.
COUNT_FIELDS = {
    "query": "object",
    "limit": "integer",
    "skip": "integer",
    "hint": params.ANY,
    "collation": "object",
    "fields": params.ANY,
}


def count_execution(request: Request, name: str, cmd: Mapping[str, Any]) -> CountExecution:
    """The count command's execution (its fields checked)."""
    fields = params.parse(cmd, "count", COUNT_FIELDS)
    params.read_concern(cmd, request.executor.replica_set is not None)
    collator = collation.resolve(request, name, cmd.get("collation"), "count")
    query, hint = fields.get("query"), fields.get("hint")
    skip, limit = fields.get("skip", 0), fields.get("limit", 0)
    if skip < 0:
        raise location(51024, f"BSON field 'skip' value must be >= 0, actual value '{skip}'")
    store = request.engine.store(request.db, name)
    run = CountExecution(store, query, skip, abs(limit) or None, hint, request.context(None, collator))
    if run.find is not None:
        request.track(run.find)
    return run


@COMMANDS.register("count")
def cmd_count(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "count")
    if is_view(request, name) or oplog_rs.is_oplog(request.db, name):
        fields = params.parse(cmd, "count", COUNT_FIELDS)
        query, skip, limit = fields.get("query"), fields.get("skip", 0), fields.get("limit", 0)
        if skip < 0:
            raise location(51024, f"BSON field 'skip' value must be >= 0, actual value '{skip}'")
        if not is_view(request, name):
            return {
                "n": oplog_rs.oplog_count(request.engine, query, skip, abs(limit) or None, request.context()),
                "ok": 1.0,
            }
        spec = FindSpec(
            filter=query,
            skip=skip,
            limit=abs(limit) or None,
            hint=fields.get("hint"),
            collation=fields.get("collation"),
        )
        return {"n": sum(1 for _ in view_documents(request, name, spec, None)), "ok": 1.0}
    return {"n": count_execution(request, name, cmd).count(), "ok": 1.0}


def distinct_execution(request: Request, name: str, cmd: Mapping[str, Any]) -> DistinctExecution:
    """The distinct command's execution (its fields checked)."""
    key = params.field(cmd, "key", "string", "distinct")
    if key is None:
        raise CommandError(ErrorCode.FailedToParse, "BSON field 'distinct.key' is missing but a required field")
    query = params.field(cmd, "query", "object", "distinct")
    params.read_concern(cmd, request.executor.replica_set is not None)
    own = params.field(cmd, "collation", "object", "distinct")
    collator = collation.resolve(request, name, own, "distinct")
    hint = cmd.get("hint")
    view = is_view(request, name)
    store = None if view else request.engine.store(request.db, name)
    # A collection's documents are only read for their values (a view's pipeline may change its own).
    spec = FindSpec(filter=query, hint=hint, collation=own, reads_only=not view)
    ctx = request.context(None, collator)
    return DistinctExecution(store, key, query, hint, ctx, lambda: documents(request, name, spec))


@COMMANDS.register("distinct")
def cmd_distinct(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "distinct")
    return {"values": distinct_execution(request, name, cmd).values(), "ok": 1.0}
