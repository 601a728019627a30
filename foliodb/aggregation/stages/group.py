"""Grouping stages: $group $count $sortByCount.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/group/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/count/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/sortByCount/

Groups are keyed by the KeyString bytes of the evaluated ``_id`` (so 1, 1.0
and NumberLong(1) share a group, whose ``_id`` is the first one seen; a
missing ``_id`` groups as null). Group state is counted against
``LIMITS.group_bytes``; past it, with ``allowDiskUse``, every partial group
is written to a temporary SQLite database (one *run* per spill, pickled
accumulator states), and at the end the runs are read back in key order and
the partial states of each key merged in run order, which is input order, so
``$first``/``$push`` keep MongoDB's meaning. Without ``allowDiskUse`` the stage
fails with QueryExceededMemoryLimitNoDiskUseAllowed (292). Output order is
the order groups were first seen, or key order after a spill (MongoDB
promises none).
"""

from __future__ import annotations

import pickle
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from bson import Int64

from foliodb import interrupt
from foliodb.aggregation.accumulators import Accumulator, State, compile_accumulator
from foliodb.aggregation.pipeline import LIMITS, STAGES, Docs, Stage, Where, approx_size, memory_exceeded
from foliodb.errors import location
from foliodb.query import keystring
from foliodb.query.bsontypes import INT32_MAX, is_string
from foliodb.query.collation import key_encoder
from foliodb.query.compare import is_number
from foliodb.query.expr import Expr
from foliodb.query.paths import MISSING

Group = tuple[Any, list[State]]


class SpillFile:
    """Partial groups on disk: ``(key bytes, run number, pickled group)``."""

    def __init__(self) -> None:
        self.db = sqlite3.connect("")  # a private temporary database, deleted on close
        self.db.execute("CREATE TABLE runs (key BLOB, run INTEGER, data BLOB)")
        self.runs = 0

    def write(self, groups: dict[bytes, Group]) -> None:
        run = self.runs
        self.db.executemany(
            "INSERT INTO runs VALUES (?, ?, ?)",
            ((key, run, pickle.dumps(group, pickle.HIGHEST_PROTOCOL)) for key, group in groups.items()),
        )
        self.runs += 1

    def merged(self) -> Iterator[Group]:
        try:
            current_key: bytes | None = None
            current: Group | None = None
            for key, data in self.db.execute("SELECT key, data FROM runs ORDER BY key, run"):
                group: Group = pickle.loads(data)
                if current is not None and key == current_key:
                    for state, later in zip(current[1], group[1], strict=True):
                        state.merge(later)
                    continue
                if current is not None:
                    yield current
                current_key, current = key, group
            if current is not None:
                yield current
        finally:
            self.db.close()


def group_documents(
    docs: Docs,
    key_of: Expr,
    accumulators: list[Accumulator],
    vars_for: Callable[[Any], dict[str, Any]],
    allow_disk_use: bool,
    stage: str = "$group",
    encode: Callable[[Any], bytes] = keystring.encode,
) -> Iterator[Group]:
    """(group key, accumulator states) for every group of ``docs``; keys are
    one group when ``encode`` (the collation's key, under one) makes them equal."""
    groups: dict[bytes, Group] = {}
    used = 0
    spill: SpillFile | None = None
    per_group = 64 + 48 * len(accumulators)
    for n, doc in enumerate(docs):
        if not n & 255:
            interrupt.check()
        vars = vars_for(doc)
        key = key_of(doc, vars)
        if key is MISSING:
            key = None
        kb = encode(key)
        group = groups.get(kb)
        if group is None:
            key_vars = vars_for(key)
            group = (key, [acc.start(key, key_vars) for acc in accumulators])
            groups[kb] = group
            used += per_group + approx_size(key)
        for acc, state in zip(accumulators, group[1], strict=True):
            used += state.add(acc.input(doc, vars))
        if used > LIMITS.group_bytes:
            if not allow_disk_use:
                raise memory_exceeded(stage)
            if spill is None:
                spill = SpillFile()
            spill.write(groups)
            groups = {}
            used = 0
    if spill is None:
        yield from groups.values()
        return
    spill.write(groups)
    groups = {}
    yield from spill.merged()


@STAGES.register("$group")
def stage_group(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise location(15947, "a group's fields must be specified in an object")
    key_of: Expr | None = None
    names: list[str] = []
    accumulators: list[Accumulator] = []
    for name, value in spec.items():
        if name == "_id":
            key_of = _group_key(value, where)
        else:
            accumulators.append(compile_accumulator(name, value, where.scope))
            names.append(name)
    if key_of is None:
        raise location(15955, "a group specification must include an _id")
    # pymongo's count_documents: {_id: 1, n: {$sum: 1}}. Nothing a document holds can matter.
    counting = _constant(spec["_id"]) and all(
        isinstance(value, Mapping) and list(value) == ["$sum"] and is_number(value["$sum"])
        for name, value in spec.items()
        if name != "_id"
    )
    vars_for = where.variables()
    allow_disk_use = where.env.allow_disk_use
    grouping = key_of
    encode = key_encoder(where.scope.collator)

    def run(docs: Docs) -> Docs:
        if counting:  # one group, each document adding the same numbers: count them, then add
            n = sum(1 for _ in docs)
            if not n:
                return
            vars = vars_for({})
            key = grouping({}, vars)
            out = {"_id": None if key is MISSING else key}
            key_vars = vars_for(out["_id"])
            for name, acc in zip(names, accumulators, strict=True):
                state, value = acc.start(out["_id"], key_vars), acc.input({}, vars)
                for _ in range(n):  # as many adds as documents: the same sum and type as the general path
                    state.add(value)
                result = state.result()
                out[name] = None if result is MISSING else result
            yield out
            return
        for key, states in group_documents(docs, grouping, accumulators, vars_for, allow_disk_use, "$group", encode):
            out = {"_id": key}
            for name, state in zip(names, states, strict=True):
                result = state.result()
                out[name] = None if result is MISSING else result
            yield out

    return Stage("$group", spec, run)


def _constant(spec: Any) -> bool:
    """A literal the ``_id`` expression is (no field path, variable, operator or object)."""
    return spec is None or is_number(spec) or spec.__class__ is bool or (is_string(spec) and not spec.startswith("$"))


def _group_key(spec: Any, where: Where) -> Expr:
    """The ``_id`` expression. An object of one field groups on that field's expression, a
    missing value as null (``{_id: {a: "$a"}}`` gives ``{a: null}`` for a document without
    ``a``), as mongod's GroupProcessorBase splits an object ``_id`` into its fields' expressions
    and computes a lone one's key as any single ``_id`` (missing: null)."""
    expr = where.expression(spec)
    if not (isinstance(spec, Mapping) and len(spec) == 1):
        return expr
    ((name, inner),) = spec.items()
    if not is_string(name) or name.startswith("$"):
        return expr
    field = where.expression(inner)

    def one_field(doc: Any, vars: dict[str, Any]) -> Any:
        value = field(doc, vars)
        return {name: None if value is MISSING else value}

    return one_field


@STAGES.register("$count")
def stage_count(spec: Any, where: Where) -> Stage:
    if not is_string(spec):
        raise location(40156, "the count field must be a non-empty string")
    if not spec:
        raise location(40157, "the count field must be a non-empty string")
    if spec.startswith("$"):
        raise location(40158, "the count field cannot be a $-prefixed path")
    if "." in spec:
        raise location(40160, "the count field cannot contain '.'")

    def run(docs: Docs) -> Docs:
        n = sum(1 for _ in docs)
        if n:
            yield {spec: n if n <= INT32_MAX else Int64(n)}

    return Stage("$count", spec, run)


@STAGES.register("$sortByCount")
def stage_sortByCount(spec: Any, where: Where) -> list[Stage]:
    message = "the sortByCount field must be defined as a $-prefixed path or an expression inside an object"
    if isinstance(spec, Mapping):
        if not spec or not next(iter(spec)).startswith("$"):
            raise location(40147, message)
    elif is_string(spec):
        if len(spec) < 2 or not spec.startswith("$"):
            raise location(40148, message)
    else:
        raise location(40149, "the sortByCount field must be specified as a string or as an object")
    group = stage_group({"_id": spec, "count": {"$sum": 1}}, where)
    return [group, STAGES.get("$sort")({"count": -1}, where)]  # type: ignore[list-item]
