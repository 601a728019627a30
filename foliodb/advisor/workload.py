"""Index advice from the queries that ran: the profiler's ``system.profile``
entries (MongoDB's, or FolioDB's), grouped by query shape.

A shape that scans (``COLLSCAN``, or far more documents examined than
returned) gets an index in MongoDB's ESR order: the fields it tests for
equality, then the fields it sorts on, then the fields it tests by range.

Manual: https://www.mongodb.com/docs/manual/tutorial/equality-sort-range-guideline/
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from foliodb.advisor.rules import Recommendation

EXAMINED_PER_RETURNED = 10  # a query examining more than this per document returned wants an index
_RANGE = frozenset({"$gt", "$gte", "$lt", "$lte", "$ne", "$nin", "$regex", "$exists"})


@dataclass
class Shape:
    collection: str
    equality: tuple[str, ...]
    sort: tuple[tuple[str, int], ...]
    ranges: tuple[str, ...]
    runs: int = 0
    examined: int = 0
    returned: int = 0
    millis: int = 0
    example: dict[str, Any] = field(default_factory=dict)

    def index_key(self) -> list[tuple[str, int]]:
        key: list[tuple[str, int]] = [(name, 1) for name in self.equality]
        key += [(name, direction) for name, direction in self.sort if name not in self.equality]
        key += [(name, 1) for name in self.ranges if name not in dict(key)]
        return key


def query_shape(collection: str, filter_spec: Mapping[str, Any], sort: Mapping[str, Any] | None) -> Shape:
    equality: list[str] = []
    ranges: list[str] = []
    for name, condition in filter_spec.items():
        if name.startswith("$"):
            continue  # $and/$or/$expr: no single index order to propose
        operators = set(condition) if isinstance(condition, Mapping) and condition else set()
        if operators and all(op.startswith("$") for op in operators):
            if operators <= {"$eq", "$in"}:
                equality.append(name)
            elif operators & _RANGE:
                ranges.append(name)
        else:
            equality.append(name)
    sort_key = tuple((str(k), 1 if v == 1 else -1) for k, v in (sort or {}).items() if isinstance(v, int))
    return Shape(collection, tuple(sorted(equality)), sort_key, tuple(sorted(ranges)))


def shapes_from_profile(database: Any) -> list[Shape]:
    """Query shapes of the profiler's find, count, update, delete and aggregate entries in ``database``."""
    if "system.profile" not in database.list_collection_names():
        return []
    shapes: dict[tuple[Any, ...], Shape] = {}
    for entry in database["system.profile"].find({"op": {"$in": ["query", "update", "remove", "command"]}}):
        for collection, filter_spec, sort in _queries(entry):
            shape = query_shape(collection, filter_spec, sort)
            key = (shape.collection, shape.equality, shape.sort, shape.ranges)
            current = shapes.setdefault(key, shape)
            current.runs += 1
            current.examined += int(entry.get("docsExamined", 0))
            current.returned += int(entry.get("nreturned", entry.get("nMatched", 0)) or 0)
            current.millis += int(entry.get("millis", 0))
            current.example = current.example or {"filter": dict(filter_spec), "sort": dict(sort or {})}
    return list(shapes.values())


def _queries(entry: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any], Mapping[str, Any] | None]]:
    command = entry.get("command") or {}
    ns = str(entry.get("ns", ""))
    collection = ns.partition(".")[2]
    if "find" in command:
        yield collection, command.get("filter") or {}, command.get("sort")
    elif "count" in command:
        yield collection, command.get("query") or {}, None
    elif "aggregate" in command:
        pipeline = command.get("pipeline") or []
        if pipeline and isinstance(pipeline[0], Mapping) and "$match" in pipeline[0]:
            sort = pipeline[1].get("$sort") if len(pipeline) > 1 and isinstance(pipeline[1], Mapping) else None
            yield collection, pipeline[0]["$match"], sort
    elif "q" in command:  # an update or delete statement
        yield collection, command.get("q") or {}, None


def index_advice(database: Any, shapes: list[Shape]) -> Iterator[Recommendation]:
    """One index per collection and key, leaving out keys that a longer proposed key starts with."""
    wanted: dict[tuple[str, tuple[tuple[str, int], ...]], list[Shape]] = {}
    for shape in shapes:
        key = tuple(shape.index_key())
        if key and shape.examined > EXAMINED_PER_RETURNED * max(shape.returned, 1):
            wanted.setdefault((shape.collection, key), []).append(shape)
    keys = list(wanted)
    for collection, key in keys:
        longer = [k for c, k in keys if c == collection and len(k) > len(key) and k[: len(key)] == key]
        if longer:
            wanted[(collection, longer[0])] += wanted.pop((collection, key))
    for (collection, key), served in sorted(wanted.items(), key=lambda item: -sum(s.examined for s in item[1])):
        existing = [tuple(index["key"].items()) for index in database[collection].list_indexes()]
        if any(index[: len(key)] == key for index in existing):
            continue
        runs = sum(s.runs for s in served)
        examined = sum(s.examined for s in served)
        returned = sum(s.returned for s in served)
        spec = ", ".join(f'"{name}": {direction}' for name, direction in key)
        yield Recommendation(
            "index",
            collection,
            f"{runs} queries of {len(served)} shape(s), such as {served[0].example}, examined {examined} "
            f"documents to return {returned}: an index in equality-sort-range order serves them.",
            {
                "runs": runs,
                "docs_examined": examined,
                "returned": returned,
                "millis": sum(s.millis for s in served),
                "shapes": [
                    {"equality": list(s.equality), "sort": [list(x) for x in s.sort], "range": list(s.ranges)}
                    for s in served
                ],
            },
            action=f"db.{collection}.createIndex({{{spec}}})",
        )
