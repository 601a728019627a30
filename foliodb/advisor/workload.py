"""The workload, as the profiler recorded it: ``system.profile`` entries
(FolioDB's, or a real mongod's) turned into operations, query shapes and
index usage; ``$indexStats`` for what the profile window does not show.

An entry's ``command`` is the command as sent (``find`` with ``filter``,
``sort``, ``projection``; ``aggregate`` with ``pipeline``; one update or
delete statement ``{q, u, multi}``); ``planSummary`` names the access path
(``COLLSCAN``, ``IXSCAN { user_id: 1, created_at: -1 }``, ``IDHACK``...);
``ts`` is when it finished; who ran it is ``client`` (a driver's address
and port: one connection), ``appName``, FolioDB's ``connectionId`` (an
embedded client's thread) and the command's ``comment`` when the
application marks its requests with one. Operations of one request are
consecutive operations of one such identity (:attr:`Operation.request`).

A query shape is a collection plus the fields a filter tests, by kind of
test (equality, range, regex), and its sort: MongoDB's notion of a shape
(values dropped), which is what an index serves.

Manual: https://www.mongodb.com/docs/manual/reference/database-profiler/
"""

from __future__ import annotations

import datetime
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bson import json_util
from bson.regex import Regex
from pymongo.errors import OperationFailure

PROFILE = "system.profile"
_RANGE = frozenset({"$gt", "$gte", "$lt", "$lte", "$ne", "$nin", "$exists", "$type", "$elemMatch", "$size", "$all"})
_EQUALITY = frozenset({"$eq", "$in"})
_INDEX_IN_PLAN = re.compile(r"IXSCAN \{ ([^}]*) \}")
_ID_PLANS = ("IDHACK", "EXPRESS", "CLUSTERED_IXSCAN")


@dataclass
class Operation:
    collection: str
    kind: str  # find, count, distinct, aggregate, update, delete, findAndModify, insert
    filter: dict[str, Any]
    sort: dict[str, Any]
    projection: dict[str, Any]
    limit: int
    update: Any  # the update document or pipeline of an update; the documents of an insert
    plan: str
    docs_examined: int
    keys_examined: int
    returned: int
    millis: int
    ts: datetime.datetime | None
    session: str  # who ran it: client address, appName and connection (an embedded client's thread)
    sort_stage: bool | None  # mongod's hasSortStage, when the entry has it
    pipeline: list[dict[str, Any]] = field(default_factory=list)  # an aggregate's stages, as sent
    comment: str = ""  # the command's comment: a request marker when the application sets one
    skip: int = 0

    @property
    def request(self) -> tuple[str, str]:
        """What tells this operation's request from concurrent ones: the session and the comment."""
        return (self.session, self.comment)

    @property
    def is_read(self) -> bool:
        return self.kind in ("find", "count", "distinct", "aggregate")


@dataclass
class Workload:
    operations: list[Operation]
    index_stats: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # $indexStats rows per collection

    def on(self, collection: str) -> list[Operation]:
        return [op for op in self.operations if op.collection == collection]

    @property
    def window(self) -> tuple[datetime.datetime, datetime.datetime] | None:
        times = [op.ts for op in self.operations if op.ts is not None]
        return (min(times), max(times)) if times else None


def read_workload(database: Any, collections: list[str]) -> Workload:
    operations: list[Operation] = []
    if PROFILE in database.list_collection_names():
        for entry in database[PROFILE].find():
            op = operation(entry)
            if op is not None and op.collection in collections:
                operations.append(op)
    # Entries are written when operations finish; the sort is stable, so equal times keep the profile's order.
    operations.sort(key=lambda op: op.ts or datetime.datetime.min)
    stats: dict[str, list[dict[str, Any]]] = {}
    for name in collections:
        try:
            stats[name] = list(database[name].aggregate([{"$indexStats": {}}]))
        except OperationFailure:  # not permitted, or not a collection: the profile alone decides
            continue
    return Workload(operations, stats)


def operation(entry: Mapping[str, Any]) -> Operation | None:
    """The operation a profile entry records, or None for what the advisor does not read (getMore, commands)."""
    command = entry.get("command") or {}
    if not isinstance(command, Mapping) or "$truncated" in command:
        return None
    collection = str(entry.get("ns", "")).partition(".")[2]
    if not collection or collection == "$cmd" or collection.startswith("system."):
        return None
    parts = _parts(str(entry.get("op", "")), command)
    if parts is None:
        return None
    kind, filter_spec, sort, projection, limit, update = parts
    ts = entry.get("ts")
    pipeline = command.get("pipeline") if "aggregate" in command else None
    comment = command.get("comment")
    identity = "/".join(str(entry.get(key, "")) for key in ("client", "appName", "connectionId"))
    return Operation(
        collection=collection,
        kind=kind,
        filter=dict(filter_spec) if isinstance(filter_spec, Mapping) else {},
        sort=dict(sort) if isinstance(sort, Mapping) else {},
        projection=dict(projection) if isinstance(projection, Mapping) else {},
        limit=int(limit) if isinstance(limit, int) else 0,
        update=update,
        plan=str(entry.get("planSummary", "")),
        docs_examined=int(entry.get("docsExamined", 0) or 0),
        keys_examined=int(entry.get("keysExamined", 0) or 0),
        returned=int(entry.get("nreturned", entry.get("nMatched", 0)) or 0),
        millis=int(entry.get("millis", 0) or 0),
        ts=ts if isinstance(ts, datetime.datetime) else None,
        session=identity,
        sort_stage=entry.get("hasSortStage") if isinstance(entry.get("hasSortStage"), bool) else None,
        pipeline=[dict(s) for s in pipeline if isinstance(s, Mapping)] if isinstance(pipeline, list) else [],
        comment="" if comment is None else json_util.dumps(comment),
        skip=int(command["skip"]) if isinstance(command.get("skip"), int) else 0,
    )


def _parts(op: str, command: Mapping[str, Any]) -> tuple[str, Any, Any, Any, Any, Any] | None:
    if op == "query" or "find" in command:
        return "find", command.get("filter"), command.get("sort"), command.get("projection"), command.get("limit"), None
    if op == "update":
        return "update", command.get("q"), None, None, None, command.get("u")
    if op == "remove":
        return "delete", command.get("q"), None, None, None, None
    if op == "insert":  # the documents written stand where an update's change does: what was written
        return "insert", None, None, None, None, command.get("documents")
    if "count" in command:
        return "count", command.get("query"), None, None, None, None
    if "distinct" in command:
        return "distinct", command.get("query"), None, None, None, None
    if "findAndModify" in command or "findandmodify" in command:
        return "findAndModify", command.get("query"), command.get("sort"), None, None, command.get("update")
    if "aggregate" in command:
        return _aggregate_parts(command.get("pipeline") or [])
    return None


def _aggregate_parts(pipeline: Any) -> tuple[str, Any, Any, Any, Any, Any]:
    """A leading $match (and $sort, $limit) is what an index can serve; a count_documents is a count."""
    stages = [s for s in pipeline if isinstance(s, Mapping) and len(s) == 1] if isinstance(pipeline, list) else []
    filter_spec: Any = None
    sort: Any = None
    limit: Any = None
    rest = list(stages)
    if rest and "$match" in rest[0]:
        filter_spec = rest.pop(0)["$match"]
    if rest and "$sort" in rest[0]:
        sort = rest.pop(0)["$sort"]
    if rest and "$limit" in rest[0]:
        limit = rest.pop(0)["$limit"]
    counting = (
        len(rest) == 1
        and "$group" in rest[0]
        and isinstance(rest[0]["$group"], Mapping)
        and list(rest[0]["$group"].values())[1:] == [{"$sum": 1}]
    )
    return ("count" if counting else "aggregate"), filter_spec, sort, None, limit, None


# -- filters and shapes ----------------------------------------------------------------------


@dataclass
class Predicates:
    """What a filter tests, field by field."""

    equality: dict[str, Any] = field(default_factory=dict)  # field -> value, or the list of an $in
    ranges: list[str] = field(default_factory=list)
    regex: dict[str, str] = field(default_factory=dict)  # field -> pattern (with its options, /i)
    text: bool = False
    other: bool = False  # $where, $expr, $or of plain tests...: no single index order serves them


def predicates(filter_spec: Mapping[str, Any]) -> Predicates:
    out = Predicates()
    _collect(filter_spec, out, in_or=False)
    return out


def _collect(filter_spec: Mapping[str, Any], out: Predicates, in_or: bool) -> None:
    for name, condition in filter_spec.items():
        if name == "$and" and isinstance(condition, list):
            for part in condition:
                if isinstance(part, Mapping):
                    _collect(part, out, in_or)
        elif name in ("$or", "$nor") and isinstance(condition, list):
            for part in condition:
                if isinstance(part, Mapping):
                    _collect(part, out, in_or=True)
        elif name == "$text":
            out.text = True
        elif name.startswith("$"):
            out.other = True
        elif (pattern := regex_of(condition)) is not None:
            out.regex[name] = pattern
        elif in_or:
            out.other = True
        elif isinstance(condition, Mapping) and condition and all(str(k).startswith("$") for k in condition):
            ops = set(condition)
            if ops <= _EQUALITY:
                out.equality[name] = condition.get("$in", condition.get("$eq"))
            elif ops & _RANGE:
                out.ranges.append(name)
            else:
                out.other = True
        else:
            out.equality[name] = condition


def regex_of(condition: Any) -> str | None:
    """``/pattern/flags`` of a regular-expression test, else None."""
    if isinstance(condition, Regex):
        return f"/{condition.pattern}/{_flags(condition.flags)}"
    if isinstance(condition, re.Pattern):
        return f"/{condition.pattern}/{'i' if condition.flags & re.IGNORECASE else ''}"
    if isinstance(condition, Mapping) and "$regex" in condition:
        inner = condition["$regex"]
        if isinstance(inner, (Regex, re.Pattern)):
            return regex_of(inner)
        return f"/{inner}/{condition.get('$options', '')}"
    return None


def _flags(flags: int | str) -> str:
    if isinstance(flags, str):
        return flags
    return "i" if flags & re.IGNORECASE else ""


@dataclass
class Shape:
    collection: str
    equality: tuple[str, ...]
    sort: tuple[tuple[str, int], ...]
    ranges: tuple[str, ...]
    runs: int = 0
    docs_examined: int = 0
    keys_examined: int = 0
    returned: int = 0
    millis: int = 0
    plans: Counter[str] = field(default_factory=Counter)
    sort_stages: int = 0  # runs known (or inferred) to have sorted in memory
    values: dict[str, Counter[str]] = field(default_factory=dict)  # equality field -> values seen (Extended JSON)
    example: dict[str, Any] = field(default_factory=dict)

    def index_key(self) -> list[tuple[str, int]]:
        """Equality fields, then the sort, then range fields: the ESR guideline."""
        key: list[tuple[str, int]] = [(name, 1) for name in self.equality]
        key += [(name, d) for name, d in self.sort if name not in self.equality]
        key += [(name, 1) for name in self.ranges if name not in dict(key)]
        return key


def shapes(workload: Workload) -> list[Shape]:
    """The query shapes of the reads, updates and deletes that filter (not by _id alone, not $text, no regex)."""
    found: dict[tuple[Any, ...], Shape] = {}
    for op in workload.operations:
        if op.kind == "insert":
            continue
        tests = predicates(op.filter)
        if tests.text or tests.regex or tests.other or set(tests.equality) == {"_id"}:
            continue
        sort = tuple((str(k), 1 if v == 1 else -1) for k, v in op.sort.items() if isinstance(v, int))
        if not tests.equality and not tests.ranges and not sort:
            continue
        key = (op.collection, tuple(sorted(tests.equality)), sort, tuple(sorted(set(tests.ranges))))
        shape = found.setdefault(key, Shape(*key))
        shape.runs += 1
        shape.docs_examined += op.docs_examined
        shape.keys_examined += op.keys_examined
        shape.returned += op.returned
        shape.millis += op.millis
        shape.plans[op.plan] += 1
        if sort and sorts_in_memory(op, tests):
            shape.sort_stages += 1
        for name, value in tests.equality.items():
            shape.values.setdefault(name, Counter())[json_util.dumps(value)] += 1
        shape.example = shape.example or {"filter": op.filter, "sort": op.sort}
    return list(found.values())


def plan_indexes(plan: str) -> list[dict[str, Any]]:
    """The index keys a planSummary names (``IXSCAN { a: 1, b: -1 }``, ``IDHACK`` as ``{_id: 1}``)."""
    keys: list[dict[str, Any]] = []
    for match in _INDEX_IN_PLAN.finditer(plan):
        key: dict[str, Any] = {}
        for part in match.group(1).split(", "):
            name, _, direction = part.rpartition(": ")
            key[name.strip('"')] = _direction(direction)
        keys.append(key)
    if any(marker in plan for marker in _ID_PLANS):
        keys.append({"_id": 1})
    return keys


def _direction(text: str) -> Any:
    try:
        return int(float(text))
    except ValueError:
        return text.strip('"')


def sorts_in_memory(op: Operation, tests: Predicates) -> bool:
    """Whether the operation sorted in memory: mongod says so (hasSortStage); otherwise no index
    in its plan gives the order once the equality fields are fixed."""
    if op.sort_stage is not None:
        return op.sort_stage
    wanted = [(str(k), 1 if v == 1 else -1) for k, v in op.sort.items() if isinstance(v, int)]
    for key in plan_indexes(op.plan):
        rest = [(name, d) for name, d in key.items() if name not in tests.equality and isinstance(d, int)]
        head = rest[: len(wanted)]
        if head == wanted or head == [(name, -d) for name, d in wanted]:
            return False
    return True


def index_used(index: Mapping[str, Any], plans: Iterator[str] | list[str]) -> bool:
    """Whether any of the plan summaries used ``index`` (a listIndexes entry)."""
    key = dict(index.get("key", {}))
    text = "_fts" in key
    for plan in plans:
        if text and "TEXT" in plan:
            return True
        if any(list(found.items()) == list(key.items()) for found in plan_indexes(plan)):
            return True
    return False


_POSITIONAL = re.compile(r"\.(\$(\[[^\]]*\])?|\d+)(?=\.|$)")


def touched_paths(update: Any) -> dict[str, set[str]]:
    """Operator -> the paths an update changes, positional parts dropped (``comments.$.text`` ->
    ``comments.text``); a replacement document is ``{"replace": {"*"}}``, a pipeline ``{"pipeline": ...}``."""
    out: dict[str, set[str]] = {}
    if isinstance(update, list):
        for stage in update:
            if isinstance(stage, Mapping):
                for spec in stage.values():
                    if isinstance(spec, Mapping):
                        out.setdefault("pipeline", set()).update(str(k) for k in spec)
        return out
    if not isinstance(update, Mapping):
        return out
    if not any(str(k).startswith("$") for k in update):
        return {"replace": {"*"}}
    for operator, spec in update.items():
        if isinstance(spec, Mapping):
            out.setdefault(str(operator), set()).update(_POSITIONAL.sub("", str(k)) for k in spec)
    return out


def positional(update: Any) -> bool:
    """Whether an update changes elements of an embedded array in place (``items.$.quantity``)."""
    if not isinstance(update, Mapping):
        return False
    return any(isinstance(spec, Mapping) and any(".$" in str(k) for k in spec) for spec in update.values())
