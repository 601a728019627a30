"""Application-level joins found in the profile: a read of collection A,
then, in the same request within :data:`JOIN_WINDOW` of it (or of the
previous lookup of a chain), finds or counts on collection B that filter on
one field by ids that A's documents hold.

A request is a run of consecutive operations of one identity
(:attr:`foliodb.advisor.workload.Operation.request`: over the wire one
connection, embedded one client thread, and the comment when the
application sets one), never of a whole client: requests served at the same
time by one process interleave, and a lookup of one must not be taken for
the follow-up of another's read.

Which field links them comes from the relations (:mod:`foliodb.advisor.relations`):
a lookup of ``B._id`` follows a reference ``A.path -> B``; a lookup of
``B.f`` follows a parent reference ``B.f -> A``. A join pattern is kept when
at least one of its joins checks out against the data: some document the
read selects holds the ids looked up (``{$and: [read filter, {path: {$in:
ids}}]}`` matches).
"""

from __future__ import annotations

import datetime
import itertools
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from foliodb.advisor.relations import Relation
from foliodb.advisor.workload import Operation, Workload, predicates

JOIN_WINDOW = datetime.timedelta(milliseconds=250)  # one request's queries, not the next request's
LOOK_BACK = 5  # operations of the same client searched for the read a lookup follows
CHECKED_JOINS = 3  # joins of a pattern checked against the data
MAX_IDS = 100


@dataclass
class Join:
    relation: Relation
    first: str  # the collection read first
    second: str  # the collection looked up
    by: str  # the field of ``second`` the lookups filter on
    read_shape: tuple[Any, ...]
    reads: int = 0  # runs of the read's shape in the profile
    joined: int = 0  # of those, the runs followed by lookups
    lookups: int = 0
    ids: int = 0  # ids asked for over all lookups
    longest_chain: int = 0  # most lookups after one read
    counts: int = 0  # lookups that counted instead of reading
    paged: int = 0  # lookups with a sort or a limit: the application pages through a growing list
    projected: set[str] | None = field(default_factory=set)  # fields lookups read; None when whole documents
    read_returned: int = 0  # documents the joined reads returned, over all of them
    read_example: dict[str, Any] = field(default_factory=dict)
    lookup_example: dict[str, Any] = field(default_factory=dict)
    checked: list[tuple[dict[str, Any], list[Any]]] = field(default_factory=list)

    @property
    def per_id(self) -> bool:
        """Lookups one id at a time, several per read: N+1 queries."""
        return self.lookups >= 2 * self.joined and self.ids <= self.lookups

    @property
    def several_per_read(self) -> bool:
        """Whether one read can hold several ids to look up (an array of references, or reads
        returning several documents): only then can one ``$in`` replace the lookups."""
        return self.relation.many or self.read_returned > self.joined


def read_shape(op: Operation) -> tuple[Any, ...]:
    tests = predicates(op.filter)
    return (op.collection, op.kind, tuple(sorted(tests.equality)), tuple(sorted(tests.ranges)), tuple(op.sort))


def _lookup(op: Operation) -> tuple[str, list[Any]] | None:
    """(field, ids) when ``op`` finds or counts by one field's values."""
    if op.kind not in ("find", "count") or len(op.filter) != 1:
        return None
    name, condition = next(iter(op.filter.items()))
    if name.startswith("$"):
        return None
    if isinstance(condition, dict):
        if set(condition) == {"$in"} and isinstance(condition["$in"], list):
            return name, list(condition["$in"])
        if set(condition) == {"$eq"}:
            return name, [condition["$eq"]]
        return None
    return name, [condition]


def requests(workload: Workload) -> Iterator[list[Operation]]:
    """The requests of the workload: each identity's operations, cut where one is further than
    :data:`JOIN_WINDOW` from the one before."""
    sessions: dict[tuple[str, str], list[Operation]] = {}
    for op in workload.operations:
        if op.ts is not None:
            sessions.setdefault(op.request, []).append(op)
    for ops in sessions.values():
        current = [ops[0]]
        for previous, op in itertools.pairwise(ops):
            assert op.ts is not None and previous.ts is not None
            if op.ts - previous.ts > JOIN_WINDOW:
                yield current
                current = []
            current.append(op)
        yield current


def find_joins(database: Any, workload: Workload, relations: list[Relation]) -> list[Join]:
    reads = Counter(read_shape(op) for op in workload.operations if op.kind in ("find", "aggregate"))
    patterns: dict[tuple[Any, ...], Join] = {}
    sessions: dict[tuple[str, str], list[Operation]] = {}
    for op in workload.operations:
        sessions.setdefault(op.request, []).append(op)
    for ops in sessions.values():
        _scan_session(ops, relations, patterns)
    kept = []
    for join in patterns.values():
        join.reads = reads[join.read_shape]
        if _checks_out(database, join):
            kept.append(join)
    return kept


@dataclass
class _Chain:
    join: Join
    last: datetime.datetime
    lookups: int
    ids: list[Any]


def _scan_session(ops: list[Operation], relations: list[Relation], patterns: dict[tuple[Any, ...], Join]) -> None:
    chains: dict[tuple[str, str], _Chain] = {}  # (second, field) -> the chain of lookups under way
    for i, op in enumerate(ops):
        found = _lookup(op)
        if op.ts is None:
            continue
        if found is not None:
            chain = chains.get((op.collection, found[0]))
            if chain is not None and op.ts - chain.last <= JOIN_WINDOW:
                chain.last = op.ts
                chain.lookups += 1
                chain.ids.extend(found[1])
                chain.join.longest_chain = max(chain.join.longest_chain, chain.lookups)
                _count_lookup(chain.join, op, found[1])
                continue
        if op.kind in ("find", "aggregate"):
            # A new read of a chain's first collection starts the next request: its chains are over.
            for ended in [k for k, c in chains.items() if c.join.first == op.collection]:
                del chains[ended]
        if found is None:
            continue
        anchor = _anchor(ops, i, found[0], relations)
        if anchor is None:
            continue
        read, relation = anchor
        key = (read_shape(read), op.collection, found[0], relation.path)
        join = patterns.setdefault(key, Join(relation, read.collection, op.collection, found[0], read_shape(read)))
        join.joined += 1
        join.read_returned += read.returned
        join.longest_chain = max(join.longest_chain, 1)
        join.read_example = join.read_example or {"filter": read.filter, "sort": read.sort, "limit": read.limit}
        join.lookup_example = join.lookup_example or {"filter": op.filter, "projection": op.projection}
        chain = _Chain(join, op.ts, 1, list(found[1]))
        if len(join.checked) < CHECKED_JOINS:
            join.checked.append((read.filter, chain.ids))
        chains[(op.collection, found[0])] = chain
        _count_lookup(join, op, found[1])


def _count_lookup(join: Join, op: Operation, ids: list[Any]) -> None:
    join.lookups += 1
    join.ids += len(ids)
    if op.kind == "count":
        join.counts += 1
    if op.sort or op.limit:
        join.paged += 1
    fields = {k for k, v in op.projection.items() if v and k != "_id"}
    if join.projected is not None:
        join.projected = join.projected | fields if fields else None


def _anchor(ops: list[Operation], i: int, name: str, relations: list[Relation]) -> tuple[Operation, Relation] | None:
    """The read that lookup ``ops[i]`` (by ``name``) follows, and the relation that links them."""
    lookup = ops[i]
    assert lookup.ts is not None
    for back in range(i - 1, max(i - 1 - LOOK_BACK, -1), -1):
        read = ops[back]
        if read.ts is None or lookup.ts - read.ts > JOIN_WINDOW:
            return None
        previous = _lookup(read)
        if read.kind not in ("find", "aggregate") or (
            read.collection == lookup.collection and previous is not None and previous[0] == name
        ):
            continue  # not a read, or an earlier lookup of the same kind
        for relation in relations:
            if name == "_id" and relation.target == lookup.collection and relation.source == read.collection:
                return read, relation
            if name == relation.path and relation.source == lookup.collection and relation.target == read.collection:
                return read, relation
    return None


def _checks_out(database: Any, join: Join) -> bool:
    for read_filter, ids in join.checked:
        path = join.relation.path if join.by == "_id" else "_id"
        test = {path: {"$in": ids[:MAX_IDS]}}
        probe = {"$and": [read_filter, test]} if read_filter else test
        if database[join.first].count_documents(probe, limit=1):
            return True
    return False
