"""What every rule reads: the collections' profiles, the relations between
them, the workload and what was derived from it. Built once per database
by :func:`foliodb.advisor.advise`; rules only read it (a rule that needs a
number the context lacks asks the database, cheaply: by ``_id`` or with a
bounded ``$in``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from foliodb.advisor.joins import Join
from foliodb.advisor.relations import Relation
from foliodb.advisor.sampling import EXACT_SCAN_DOCS, CollectionProfile
from foliodb.advisor.workload import Operation, Shape, Workload

MIN_DOCS = 1_000  # below this a collection scan costs less than a millisecond or two: no index advice
MIN_RUNS = 10  # runs of a query shape (or joins of a pattern) before the workload counts as evidence


@dataclass
class Context:
    database: Any
    profiles: dict[str, CollectionProfile]
    relations: list[Relation]
    workload: Workload
    shapes: list[Shape]
    joins: list[Join]

    def relation(self, collection: str, path: str) -> Relation | None:
        return next((r for r in self.relations if r.source == collection and r.path == path), None)

    def reads(self, collection: str) -> list[Operation]:
        """The recorded reads of ``collection`` (an aggregation's filter is its leading $match)."""
        return [op for op in self.workload.operations if op.collection == collection and op.is_read]

    def updates(self, collection: str) -> list[Operation]:
        return [op for op in self.workload.operations if op.collection == collection and op.kind == "update"]

    def exact(self, collection: str) -> bool:
        """Whether a pass over ``collection`` is cheap enough for an exact number."""
        return self.profiles[collection].count <= EXACT_SCAN_DOCS
