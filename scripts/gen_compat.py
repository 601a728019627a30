"""Generate docs/compatibility.md: what FolioDB supports of each MongoDB family.

    python scripts/gen_compat.py           # rewrite docs/compatibility.md
    python scripts/gen_compat.py --check   # exit 1 when the committed file is stale

A family's rows are the names MongoDB 8.0's manual lists on the family's
index page (kept below, one tuple per family) together with every name
FolioDB's registry for the family holds. A name's status comes from the
registry: registered means supported, listed as unbuilt means "not yet"
(FolioDB answers NotImplemented, 238). A documented name in neither list is
run once through the real command path against an in-memory database: the
family's own "unknown" error means missing, 238 means not yet, and any other
answer means FolioDB handles the name outside the registry (``$text`` is
taken out of the filter by the engine's text stage) and it counts as
supported.

Families without a registry (projection operators, update modifiers and
positional operators, index kinds and properties, collection options) are
probed: each name has a small example whose MongoDB-documented effect is
checked, so a feature that is accepted but has no effect shows as "accepted
but ignored" instead of "supported".

Deterministic: rows are sorted by name, probes use fixed documents, and no
time, ObjectId or error message reaches the output.
"""

from __future__ import annotations

import datetime
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pymongo.errors import DuplicateKeyError, OperationFailure  # noqa: E402

import foliodb  # noqa: E402
from foliodb.aggregation.accumulators import ACCUMULATORS, GROUP_ONLY  # noqa: E402
from foliodb.aggregation.pipeline import STAGES  # noqa: E402
from foliodb.aggregation.window import WINDOW_FUNCTIONS  # noqa: E402
from foliodb.commands.registry import COMMANDS  # noqa: E402
from foliodb.errors import CommandError, ErrorCode  # noqa: E402
from foliodb.query.expr import EXPR_OPS  # noqa: E402
from foliodb.query.filter import FIELD_OPS, TOP_OPS  # noqa: E402
from foliodb.query.registry import Registry  # noqa: E402
from foliodb.query.update_ops import UPDATE_OPS  # noqa: E402
from foliodb.query.update_ops.pipeline import STAGES as UPDATE_STAGES  # noqa: E402

OUTPUT = ROOT / "docs" / "compatibility.md"
MANUAL = "https://www.mongodb.com/docs/manual"

SUPPORTED = "supported"
NOT_YET = "not yet (NotImplemented 238)"
MISSING = "missing"
IGNORED = "accepted but ignored"
REFUSED = "refused (no server-side JavaScript)"

# Query operators that run JavaScript. FolioDB registers them only to refuse them as
# mongod does with scripting disabled (BadValue, 2); their probe checks that they refuse.
JAVASCRIPT_QUERY_OPERATORS = ("$where",)

# ---------------------------------------------------------------------------
# MongoDB 8.0's documented names, per family (the manual's index pages).

QUERY_OPERATORS = (
    # comparison
    "$eq", "$gt", "$gte", "$in", "$lt", "$lte", "$ne", "$nin",
    # logical
    "$and", "$not", "$nor", "$or",
    # element
    "$exists", "$type",
    # evaluation
    "$expr", "$jsonSchema", "$mod", "$regex", "$text", "$where",
    # geospatial, and the geometry specifiers
    "$geoIntersects", "$geoWithin", "$near", "$nearSphere",
    "$box", "$center", "$centerSphere", "$geometry", "$maxDistance", "$minDistance", "$polygon",
    # array
    "$all", "$elemMatch", "$size",
    # bitwise
    "$bitsAllClear", "$bitsAllSet", "$bitsAnyClear", "$bitsAnySet",
    # miscellaneous
    "$comment",
)  # fmt: skip

UPDATE_OPERATORS = (
    "$currentDate", "$inc", "$min", "$max", "$mul", "$rename", "$set", "$setOnInsert", "$unset",
    "$addToSet", "$pop", "$pull", "$push", "$pullAll",
    "$bit",
)  # fmt: skip

UPDATE_PIPELINE_STAGES = ("$addFields", "$set", "$project", "$unset", "$replaceRoot", "$replaceWith")

AGGREGATION_STAGES = (
    # db.collection.aggregate()
    "$addFields", "$bucket", "$bucketAuto", "$changeStream", "$changeStreamSplitLargeEvent", "$collStats",
    "$count", "$densify", "$documents", "$facet", "$fill", "$geoNear", "$graphLookup", "$group", "$indexStats",
    "$limit", "$listSampledQueries", "$listSearchIndexes", "$listSessions", "$lookup", "$match", "$merge", "$out",
    "$planCacheStats", "$project", "$querySettings", "$redact", "$replaceRoot", "$replaceWith", "$sample",
    "$search", "$searchMeta", "$set", "$setWindowFields", "$shardedDataDistribution", "$skip", "$sort",
    "$sortByCount", "$unionWith", "$unset", "$unwind", "$vectorSearch",
    # db.aggregate() only
    "$currentOp", "$listLocalSessions", "$queryStats",
)  # fmt: skip

EXPRESSION_OPERATORS = (
    # arithmetic
    "$abs", "$add", "$ceil", "$divide", "$exp", "$floor", "$ln", "$log", "$log10", "$mod", "$multiply", "$pow",
    "$round", "$sqrt", "$subtract", "$trunc",
    # array
    "$arrayElemAt", "$arrayToObject", "$concatArrays", "$filter", "$first", "$firstN", "$in", "$indexOfArray",
    "$isArray", "$last", "$lastN", "$map", "$maxN", "$minN", "$objectToArray", "$range", "$reduce",
    "$reverseArray", "$size", "$slice", "$sortArray", "$zip",
    # bitwise
    "$bitAnd", "$bitNot", "$bitOr", "$bitXor",
    # boolean
    "$and", "$not", "$or",
    # comparison
    "$cmp", "$eq", "$gt", "$gte", "$lt", "$lte", "$ne",
    # conditional
    "$cond", "$ifNull", "$switch",
    # custom
    "$function",
    # data size
    "$binarySize", "$bsonSize",
    # date
    "$dateAdd", "$dateDiff", "$dateFromParts", "$dateFromString", "$dateSubtract", "$dateToParts",
    "$dateToString", "$dateTrunc", "$dayOfMonth", "$dayOfWeek", "$dayOfYear", "$hour", "$isoDayOfWeek",
    "$isoWeek", "$isoWeekYear", "$millisecond", "$minute", "$month", "$second", "$toDate", "$week", "$year",
    # literal
    "$literal",
    # miscellaneous
    "$getField", "$rand", "$sampleRate", "$toHashedIndexKey",
    # object
    "$mergeObjects", "$setField", "$unsetField",
    # set
    "$allElementsTrue", "$anyElementTrue", "$setDifference", "$setEquals", "$setIntersection", "$setIsSubset",
    "$setUnion",
    # string
    "$concat", "$indexOfBytes", "$indexOfCP", "$ltrim", "$regexFind", "$regexFindAll", "$regexMatch",
    "$replaceOne", "$replaceAll", "$rtrim", "$split", "$strLenBytes", "$strLenCP", "$strcasecmp", "$substr",
    "$substrBytes", "$substrCP", "$toLower", "$toString", "$trim", "$toUpper",
    # text
    "$meta",
    # timestamp
    "$tsIncrement", "$tsSecond",
    # trigonometry
    "$sin", "$cos", "$tan", "$asin", "$acos", "$atan", "$atan2", "$asinh", "$acosh", "$atanh", "$sinh", "$cosh",
    "$tanh", "$degreesToRadians", "$radiansToDegrees",
    # type
    "$convert", "$isNumber", "$toBool", "$toDecimal", "$toDouble", "$toInt", "$toLong", "$toObjectId", "$type",
    "$toUUID",
    # accumulators usable in other stages
    "$avg", "$max", "$median", "$min", "$percentile", "$stdDevPop", "$stdDevSamp", "$sum",
    # variables
    "$let",
)  # fmt: skip

GROUP_ACCUMULATORS = (
    "$accumulator", "$addToSet", "$avg", "$bottom", "$bottomN", "$count", "$first", "$firstN", "$last", "$lastN",
    "$max", "$maxN", "$median", "$mergeObjects", "$min", "$minN", "$percentile", "$push", "$stdDevPop",
    "$stdDevSamp", "$sum", "$top", "$topN",
)  # fmt: skip

WINDOW_OPERATORS = (
    "$addToSet", "$avg", "$bottom", "$bottomN", "$count", "$covariancePop", "$covarianceSamp", "$denseRank",
    "$derivative", "$documentNumber", "$expMovingAvg", "$first", "$firstN", "$integral", "$last", "$lastN",
    "$linearFill", "$locf", "$max", "$maxN", "$median", "$min", "$minN", "$percentile", "$push", "$rank",
    "$shift", "$stdDevPop", "$stdDevSamp", "$sum", "$top", "$topN",
)  # fmt: skip

# The user-facing commands of the manual's command index (replication,
# sharding and internal commands left out, except a few users meet).
COMMANDS_DOCUMENTED = (
    # aggregation
    "aggregate", "count", "distinct", "mapReduce",
    # query and write operations
    "bulkWrite", "delete", "find", "findAndModify", "getMore", "insert", "update",
    # query plan cache
    "planCacheClear", "planCacheClearFilters", "planCacheListFilters", "planCacheSetFilter",
    # sessions and transactions
    "abortTransaction", "commitTransaction", "endSessions", "killAllSessions", "killAllSessionsByPattern",
    "killSessions", "refreshSessions", "startSession",
    # administration
    "cloneCollectionAsCapped", "collMod", "compact", "convertToCapped", "create", "createIndexes", "currentOp",
    "drop", "dropDatabase", "dropIndexes", "fsync", "getParameter", "killCursors", "killOp", "listCollections",
    "listDatabases", "listIndexes", "renameCollection", "setParameter", "shutdown",
    # diagnostics
    "buildInfo", "collStats", "connectionStatus", "dbHash", "dbStats", "explain", "getCmdLineOpts", "getLog",
    "hello", "hostInfo", "listCommands", "ping", "profile", "serverStatus", "top", "validate", "whatsmyuri",
    # authentication, users and roles
    "authenticate", "logout", "createUser", "dropUser", "updateUser", "usersInfo", "createRole", "dropRole",
    "rolesInfo",
    # Atlas Search indexes
    "createSearchIndexes", "dropSearchIndex", "updateSearchIndex",
    # replication and sharding, as drivers and tools call them
    "isMaster", "replSetGetStatus", "replSetInitiate", "shardCollection",
)  # fmt: skip

# ---------------------------------------------------------------------------
# Probes through the command path.


class IgnoredError(Exception):
    """The request was accepted but did not have MongoDB's effect."""


@dataclass
class Probe:
    """An in-memory database that probes run against, one at a time."""

    client: Any

    def fresh(self) -> Any:
        self.client.drop_database("probe")
        db = self.client.probe
        db.c.insert_one({"_id": 0, "a": 1, "t": "probe text"})
        return db


class InconclusiveProbeError(Exception):
    """A probe of a registry family failed for a reason other than the
    family's "unknown" error: the example is wrong, not the status."""


def outcome(run: Callable[[], object], unknown: CommandError | None = None) -> str:
    """The status of a name from running its example. With ``unknown`` (the
    family's error for an unknown name) only that error means missing, and
    any other error makes the probe inconclusive; without it (the probed
    families) any error or unmet expectation means missing."""
    try:
        run()
    except IgnoredError:
        return IGNORED
    except OperationFailure as exc:
        if exc.code == ErrorCode.NotImplemented:
            return NOT_YET
        if unknown is None:
            return MISSING
        message = (exc.details or {}).get("errmsg", str(exc))
        if exc.code == unknown.code and unknown.errmsg in message:
            return MISSING
        raise InconclusiveProbeError(f"{message} (code {exc.code})") from None
    except AssertionError:
        return MISSING
    return SUPPORTED


def unknown_error(registry: Registry[Any], name: str) -> CommandError:
    try:
        registry.get(name)
    except CommandError as exc:
        return exc
    raise AssertionError(f"{name} is registered")


def registry_status(name: str, registries: Iterable[Registry[Any]], unbuilt: Iterable[Registry[Any]]) -> str | None:
    if any(name in registry for registry in registries):
        return SUPPORTED
    if any(name in registry.unbuilt for registry in unbuilt):
        return NOT_YET
    return None


# -- registry families --------------------------------------------------------------


# Shape specifiers live inside $geoWithin/$geoIntersects, not in a registry.
GEO_SHAPES: dict[str, Any] = {
    "$box": [[0, 0], [1, 1]],
    "$center": [[0, 0], 1],
    "$centerSphere": [[0, 0], 0.1],
    "$polygon": [[0, 0], [1, 0], [0, 1]],
    "$geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [0, 1], [0, 0]]]},
}


def query_status(probe: Probe, name: str) -> str:
    if name in JAVASCRIPT_QUERY_OPERATORS:
        return javascript_status(probe, name)
    if name in GEO_SHAPES:
        db = probe.fresh()
        return outcome(lambda: db.c.find_one({"a": {"$geoWithin": {name: GEO_SHAPES[name]}}}))
    found = registry_status(name, (FIELD_OPS, TOP_OPS), (FIELD_OPS, TOP_OPS))
    if found is not None:
        return found
    db = probe.fresh()
    db.c.create_index([("t", "text")])
    top = outcome(lambda: db.c.find_one({name: {"$search": "probe"}}), unknown_error(TOP_OPS, name))
    if top != MISSING:
        return top
    return outcome(lambda: db.c.find_one({"a": {name: 1}}), unknown_error(FIELD_OPS, name))


def javascript_status(probe: Probe, name: str) -> str:
    db = probe.fresh()
    try:
        db.c.find_one({name: "true"})
    except OperationFailure as exc:
        if exc.code == ErrorCode.BadValue:
            return REFUSED
        raise InconclusiveProbeError(f"{name}: {exc} (code {exc.code})") from None
    return SUPPORTED


def update_status(probe: Probe, name: str) -> str:
    found = registry_status(name, (UPDATE_OPS,), (UPDATE_OPS,))
    if found is not None:
        return found
    db = probe.fresh()
    return outcome(lambda: db.c.update_one({}, {name: {"a": 1}}), unknown_error(UPDATE_OPS, name))


def update_stage_status(probe: Probe, name: str) -> str:
    found = registry_status(name, (UPDATE_STAGES,), (UPDATE_STAGES,))
    if found is not None:
        return found
    db = probe.fresh()
    return outcome(lambda: db.c.update_one({}, [{name: {}}]), unknown_error(UPDATE_STAGES, name))


def stage_status(probe: Probe, name: str) -> str:
    found = registry_status(name, (STAGES,), (STAGES,))
    if found is not None:
        return found
    db = probe.fresh()
    return outcome(lambda: list(db.c.aggregate([{name: {}}])), unknown_error(STAGES, name))


def expression_status(probe: Probe, name: str) -> str:
    found = registry_status(name, (EXPR_OPS,), (EXPR_OPS,))
    if found is not None:
        return found
    db = probe.fresh()
    # $expr compiles its argument as an expression and nothing else.
    return outcome(lambda: db.c.find_one({"$expr": {name: 1}}), unknown_error(EXPR_OPS, name))


def accumulator_status(probe: Probe, name: str) -> str:
    found = registry_status(name, (ACCUMULATORS,), (ACCUMULATORS,))
    if found is not None:
        return found
    db = probe.fresh()
    pipeline = [{"$group": {"_id": None, "x": {name: "$a"}}}]
    return outcome(lambda: list(db.c.aggregate(pipeline)), unknown_error(ACCUMULATORS, name))


def window_status(probe: Probe, name: str) -> str:
    # Every $group accumulator but the group-only ones is also a window function.
    if name not in GROUP_ONLY:
        found = registry_status(name, (WINDOW_FUNCTIONS, ACCUMULATORS), (WINDOW_FUNCTIONS,))
        if found is not None:
            return found
    db = probe.fresh()
    pipeline = [{"$setWindowFields": {"sortBy": {"a": 1}, "output": {"x": {name: {}}}}}]
    return outcome(lambda: list(db.c.aggregate(pipeline)), unknown_error(WINDOW_FUNCTIONS, name))


def command_status(probe: Probe, name: str) -> str:
    found = registry_status(name, (COMMANDS,), (COMMANDS,))
    if found is not None:
        return found
    # Only an unregistered name gets here, so no handler runs.
    return outcome(lambda: probe.client.admin.command(name), unknown_error(COMMANDS, name))


# -- probed families ------------------------------------------------------------------


def _expect(condition: bool) -> None:
    if not condition:
        raise AssertionError


def _ignored_unless(condition: bool) -> None:
    if not condition:
        raise IgnoredError


def _uses_index(cursor: Any, name: str) -> bool:
    def walk(stage: dict[str, Any]) -> bool:
        if stage.get("indexName") == name:
            return True
        children = [stage.get("inputStage"), *stage.get("inputStages", [])]
        return any(walk(child) for child in children if child)

    return walk(cursor.explain()["queryPlanner"]["winningPlan"])


def projection_positional(db: Any) -> None:
    db.c.insert_one({"_id": 1, "a": [{"b": 1}, {"b": 2}]})
    _expect(db.c.find_one({"a.b": 2}, {"a.$": 1}) == {"_id": 1, "a": [{"b": 2}]})


def projection_elem_match(db: Any) -> None:
    db.c.insert_one({"_id": 1, "a": [{"b": 1}, {"b": 2}]})
    _expect(db.c.find_one({"_id": 1}, {"a": {"$elemMatch": {"b": 2}}}) == {"_id": 1, "a": [{"b": 2}]})


def projection_slice(db: Any) -> None:
    db.c.insert_one({"_id": 1, "a": [1, 2, 3]})
    _expect(db.c.find_one({"_id": 1}, {"a": {"$slice": -2}}) == {"_id": 1, "a": [2, 3]})


def projection_meta(db: Any) -> None:
    db.c.create_index([("t", "text")])
    found = db.c.find_one({"$text": {"$search": "probe"}}, {"s": {"$meta": "textScore"}})
    _expect(found is not None and found["s"] > 0)


def _push(db: Any, update: dict[str, Any], expected: list[Any], **options: Any) -> None:
    db.c.insert_one({"_id": 1, "a": [3, 1]})
    db.c.update_one({"_id": 1}, update, **options)
    _expect(db.c.find_one({"_id": 1})["a"] == expected)


def modifier_each(db: Any) -> None:
    _push(db, {"$push": {"a": {"$each": [4, 5]}}}, [3, 1, 4, 5])


def modifier_position(db: Any) -> None:
    _push(db, {"$push": {"a": {"$each": [4], "$position": 0}}}, [4, 3, 1])


def modifier_slice(db: Any) -> None:
    _push(db, {"$push": {"a": {"$each": [4], "$slice": -2}}}, [1, 4])


def modifier_sort(db: Any) -> None:
    _push(db, {"$push": {"a": {"$each": [2], "$sort": 1}}}, [1, 2, 3])


def positional_first(db: Any) -> None:
    db.c.insert_one({"_id": 1, "a": [{"b": 1, "q": 0}, {"b": 2, "q": 0}]})
    db.c.update_one({"a.b": 2}, {"$set": {"a.$.q": 5}})
    _expect(db.c.find_one({"_id": 1})["a"] == [{"b": 1, "q": 0}, {"b": 2, "q": 5}])


def positional_all(db: Any) -> None:
    _push(db, {"$inc": {"a.$[]": 10}}, [13, 11])


def positional_filtered(db: Any) -> None:
    _push(db, {"$inc": {"a.$[x]": 10}}, [13, 1], array_filters=[{"x": {"$gt": 2}}])


def index_single(db: Any) -> None:
    name = db.c.create_index("a")
    _expect(_uses_index(db.c.find({"a": 1}), name))


def index_compound(db: Any) -> None:
    name = db.c.create_index([("a", 1), ("t", -1)])
    _expect(_uses_index(db.c.find({"a": 1}).sort("t", -1), name))


def index_multikey(db: Any) -> None:
    name = db.c.create_index("m")
    db.c.insert_one({"_id": 1, "m": [5, 6]})
    cursor = db.c.find({"m": 6})
    _expect(_uses_index(cursor, name) and [d["_id"] for d in cursor] == [1])


def index_text(db: Any) -> None:
    db.c.create_index([("t", "text")])
    _expect(db.c.find_one({"$text": {"$search": "probe"}}) is not None)


def index_compound_text(db: Any) -> None:
    db.c.create_index([("a", 1), ("t", "text")])
    _expect(db.c.find_one({"a": 1, "$text": {"$search": "probe"}}) is not None)


def index_wildcard(db: Any) -> None:
    name = db.c.create_index([("$**", 1)])
    db.c.insert_one({"_id": 1, "w": {"x": 7}})
    cursor = db.c.find({"w.x": 7})
    _expect(_uses_index(cursor, name) and [d["_id"] for d in cursor] == [1])


def index_compound_wildcard(db: Any) -> None:
    name = db.c.create_index([("w.$**", 1), ("a", 1)])
    _expect(_uses_index(db.c.find({"w.x": 7, "a": 1}), name))


def index_hashed(db: Any) -> None:
    name = db.c.create_index([("a", "hashed")])
    _expect(_uses_index(db.c.find({"a": 1}), name))


def index_compound_hashed(db: Any) -> None:
    name = db.c.create_index([("a", 1), ("t", "hashed")])
    _expect(_uses_index(db.c.find({"a": 1, "t": "probe text"}), name))


def index_2d(db: Any) -> None:
    name = db.c.create_index([("loc", "2d")])
    db.c.insert_one({"loc": [1, 1]})
    _expect(_uses_index(db.c.find({"loc": {"$geoWithin": {"$box": [[0, 0], [2, 2]]}}}), name))


def index_2dsphere(db: Any) -> None:
    name = db.c.create_index([("loc", "2dsphere")])
    db.c.insert_one({"loc": {"type": "Point", "coordinates": [1, 1]}})
    _expect(_uses_index(db.c.find({"loc": {"$geoWithin": {"$centerSphere": [[0, 0], 0.1]}}}), name))


def index_unique(db: Any) -> None:
    db.c.create_index("u", unique=True)
    db.c.insert_one({"u": 1})
    try:
        db.c.insert_one({"u": 1})
    except DuplicateKeyError:
        return
    raise IgnoredError


def index_sparse(db: Any) -> None:
    # A unique sparse index admits any number of documents without the field.
    db.c.create_index("u", unique=True, sparse=True)
    db.c.insert_many([{"x": 1}, {"x": 2}])


def index_partial(db: Any) -> None:
    # Uniqueness holds only among the documents the filter selects.
    db.c.create_index("u", unique=True, partialFilterExpression={"open": True})
    db.c.insert_many([{"u": 1, "open": False}, {"u": 1, "open": False}, {"u": 1, "open": True}])
    try:
        db.c.insert_one({"u": 1, "open": True})
    except DuplicateKeyError:
        return
    raise IgnoredError


def index_ttl(db: Any) -> None:
    db.client.admin.command("setParameter", 1, ttlMonitorSleepSecs=1)
    db.c.create_index("at", expireAfterSeconds=0)
    db.c.insert_one({"_id": 1, "at": datetime.datetime(2000, 1, 1)})
    deadline = time.monotonic() + 10
    while db.c.find_one({"_id": 1}) is not None:
        if time.monotonic() > deadline:
            raise IgnoredError
        time.sleep(0.1)


def index_hidden(db: Any) -> None:
    name = db.c.create_index("a", hidden=True)
    _ignored_unless(not _uses_index(db.c.find({"a": 1}), name))


def index_collation(db: Any) -> None:
    # With strength 2, "A" and "a" are the same key of a unique index.
    db.c.create_index("s", unique=True, collation={"locale": "en", "strength": 2})
    db.c.insert_one({"s": "A"})
    try:
        db.c.insert_one({"s": "a"})
    except DuplicateKeyError:
        return
    raise IgnoredError


def collection_validator(db: Any) -> None:
    db.create_collection("v", validator={"n": {"$type": "int"}})
    try:
        db.v.insert_one({"n": "x"})
    except OperationFailure as exc:
        _expect(exc.code == ErrorCode.DocumentValidationFailure)
        return
    raise IgnoredError


def collection_view(db: Any) -> None:
    db.create_collection("v", viewOn="c", pipeline=[{"$match": {"a": 1}}])
    _expect([d["_id"] for d in db.v.find()] == [0])


def collection_capped(db: Any) -> None:
    db.create_collection("v", capped=True, size=4096, max=2)
    db.v.insert_many([{"i": i} for i in range(3)])
    _ignored_unless([d["i"] for d in db.v.find()] == [1, 2])


def collection_timeseries(db: Any) -> None:
    db.create_collection("v", timeseries={"timeField": "at"})
    _ignored_unless(next(db.list_collections(filter={"name": "v"}))["type"] == "timeseries")


def collection_clustered(db: Any) -> None:
    db.create_collection("v", clusteredIndex={"key": {"_id": 1}, "unique": True})
    _ignored_unless(next(db.v.list_indexes()).get("clustered") is True)


def collection_collation(db: Any) -> None:
    db.create_collection("v", collation={"locale": "en", "strength": 2})
    db.v.insert_one({"s": "ABC"})
    _ignored_unless(db.v.find_one({"s": "abc"}) is not None)


PROJECTION_PROBES = {
    "$": projection_positional,
    "$elemMatch": projection_elem_match,
    "$meta": projection_meta,
    "$slice": projection_slice,
}

UPDATE_MODIFIER_PROBES = {
    "$each": modifier_each,
    "$position": modifier_position,
    "$slice": modifier_slice,
    "$sort": modifier_sort,
    "$ (positional)": positional_first,
    "$[] (all positional)": positional_all,
    "$[<identifier>] (filtered positional)": positional_filtered,
}

INDEX_PROBES = {
    "single field": index_single,
    "compound": index_compound,
    "multikey": index_multikey,
    "text": index_text,
    "text, compound with other keys": index_compound_text,
    "wildcard": index_wildcard,
    "wildcard, compound": index_compound_wildcard,
    "hashed": index_hashed,
    "hashed, compound": index_compound_hashed,
    "2d": index_2d,
    "2dsphere": index_2dsphere,
    "unique": index_unique,
    "sparse": index_sparse,
    "partial": index_partial,
    "TTL": index_ttl,
    "hidden": index_hidden,
    "case-insensitive (collation)": index_collation,
}

COLLECTION_PROBES = {
    "validator": collection_validator,
    "viewOn (views)": collection_view,
    "capped": collection_capped,
    "timeseries": collection_timeseries,
    "clusteredIndex": collection_clustered,
    "collation (default collation)": collection_collation,
}

# ---------------------------------------------------------------------------
# The document.


@dataclass
class Family:
    title: str
    manual: str
    rows: list[tuple[str, str, bool]]  # (name, status, on the manual's index page)
    note: str = ""


def registry_family(
    probe: Probe,
    title: str,
    manual: str,
    documented: Iterable[str],
    registries: Iterable[Registry[Any]],
    status: Callable[[Probe, str], str],
    note: str = "",
    extra: Iterable[str] = (),
) -> Family:
    documented = set(documented)
    names = set(documented) | set(extra)
    for registry in registries:
        names.update(registry.names())
        names.update(registry.unbuilt)
    rows = [(name, status(probe, name), name in documented) for name in sorted(names, key=_order)]
    return Family(title, manual, rows, note)


ProbeFn = Callable[[Any], None]


def probed_family(probe: Probe, title: str, manual: str, probes: Mapping[str, ProbeFn]) -> Family:
    rows = [(name, outcome(_runner(probe, fn)), True) for name, fn in probes.items()]
    return Family(title, manual, rows)


def _runner(probe: Probe, fn: ProbeFn) -> Callable[[], None]:
    return lambda: fn(probe.fresh())


def _order(name: str) -> tuple[str, str]:
    return (name.lower(), name)


def families(probe: Probe) -> list[Family]:
    return [
        registry_family(
            probe,
            "Query operators",
            f"{MANUAL}/reference/operator/query/",
            QUERY_OPERATORS,
            (FIELD_OPS, TOP_OPS),
            query_status,
            "" if "$text" in TOP_OPS else "`$text` is run by the text index stage, outside the filter registries.",
        ),
        probed_family(
            probe, "Projection operators (find)", f"{MANUAL}/reference/operator/projection/", PROJECTION_PROBES,
        ),
        registry_family(
            probe, "Update operators", f"{MANUAL}/reference/operator/update/", UPDATE_OPERATORS, (UPDATE_OPS,),
            update_status,
        ),
        probed_family(
            probe, "Update modifiers and positional operators", f"{MANUAL}/reference/operator/update-array/",
            UPDATE_MODIFIER_PROBES,
        ),
        registry_family(
            probe,
            "Update pipeline stages",
            f"{MANUAL}/tutorial/update-documents-with-aggregation-pipeline/",
            UPDATE_PIPELINE_STAGES,
            (UPDATE_STAGES,),
            update_stage_status,
        ),
        registry_family(
            probe, "Aggregation stages", f"{MANUAL}/reference/operator/aggregation-pipeline/", AGGREGATION_STAGES,
            (STAGES,), stage_status,
        ),
        registry_family(
            probe, "Expression operators", f"{MANUAL}/reference/operator/aggregation/", EXPRESSION_OPERATORS,
            (EXPR_OPS,), expression_status,
        ),
        registry_family(
            probe, "Accumulators ($group, $bucket, $bucketAuto)", f"{MANUAL}/reference/operator/aggregation/group/",
            GROUP_ACCUMULATORS, (ACCUMULATORS,), accumulator_status,
        ),
        registry_family(
            probe,
            "Window functions ($setWindowFields)",
            f"{MANUAL}/reference/operator/aggregation/setWindowFields/",
            WINDOW_OPERATORS,
            (WINDOW_FUNCTIONS,),
            window_status,
            "Every `$group` accumulator FolioDB builds also works as a window function, except `$accumulator`.",
            ACCUMULATORS.names(),
        ),
        registry_family(
            probe, "Commands", f"{MANUAL}/reference/command/", COMMANDS_DOCUMENTED, (COMMANDS,), command_status,
        ),
        probed_family(probe, "Index kinds and properties", f"{MANUAL}/indexes/", INDEX_PROBES),
        probed_family(probe, "Collection options (create)", f"{MANUAL}/reference/command/create/", COLLECTION_PROBES),
    ]  # fmt: skip


HEADER = """\
# Compatibility with MongoDB 8.0

<!-- Generated by scripts/gen_compat.py from FolioDB's registries: do not edit by hand.
     Regenerate with `python scripts/gen_compat.py`; tests/unit/test_docs.py fails when it is stale. -->

What FolioDB supports of each family of MongoDB names. Statuses:

- **supported**: FolioDB builds it (a name registered in the family's registry, or a probe
  whose documented effect was checked);
- **not yet (NotImplemented 238)**: a known MongoDB name that FolioDB answers with error
  238 `NotImplemented`, so it can be told apart from a typo;
- **missing**: a documented MongoDB name FolioDB treats as unknown (the family's usual
  "unrecognized" error);
- **accepted but ignored**: the request succeeds but does not have MongoDB's effect.
  These are bugs; see [differences.md](differences.md);
- **refused (no server-side JavaScript)**: a name FolioDB knows and refuses with
  `BadValue` (2), as `mongod` does with server-side JavaScript disabled.

A name marked † is not on the MongoDB 8.0 manual's index page for the family: an
alias, an internal name, a name MongoDB has removed, or one from a later release.
How each status is decided is in the script's docstring.
"""


def render_family(family: Family) -> str:
    counts = {status: 0 for status in (SUPPORTED, NOT_YET, MISSING, IGNORED, REFUSED)}
    for _, status, _ in family.rows:
        counts[status] += 1
    summary = ", ".join(f"{n} {status.split(' (')[0]}" for status, n in counts.items() if n)
    lines = [f"## {family.title}", "", f"Manual: <{family.manual}>. {summary}.", ""]
    if family.note:
        lines += [family.note, ""]
    lines += ["| name | status |", "|---|---|"]
    for name, status, documented in family.rows:
        lines.append(f"| `{name}`{'' if documented else ' †'} | {status} |")
    return "\n".join(lines) + "\n"


def render() -> str:
    # The index probes look for index scans in explain, so they need the
    # planner's index paths even when the test suite runs without them.
    switch = os.environ.pop("FOLIODB_NO_INDEXES", None)
    client = foliodb.MongoClient(":memory:")
    try:
        parts = [render_family(family) for family in families(Probe(client))]
    finally:
        client.close()
        if switch is not None:
            os.environ["FOLIODB_NO_INDEXES"] = switch
    return HEADER + "\n" + "\n".join(parts)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUTPUT.exists() or OUTPUT.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT.relative_to(ROOT)} is stale: run python scripts/gen_compat.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
