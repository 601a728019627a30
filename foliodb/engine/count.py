"""Run a count: the record count, a count of index keys, or of documents.

For an empty filter without a hint the collection's record count answers
(mongod's RECORD_STORE_FAST_COUNT). Otherwise the filter is planned as a
find; when the plan's index bounds are exactly the filter
(:mod:`foliodb.engine.planner.counting`) its keys are counted without a
document read (COUNT_SCAN, or a keys-only IXSCAN under COUNT), else its
matching documents (or covered keys) are. Skip and limit apply to the
count, as in mongod's COUNT stage.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from foliodb.engine.find_explain import access_explain
from foliodb.engine.planner.counting import exact_scan, single_interval
from foliodb.engine.planner.plans import AccessStage, ClusteredScan, IndexScan
from foliodb.engine.query import ExecStats, FindExecution, FindSpec
from foliodb.engine.records import CollectionStore
from foliodb.query.context import Context


class CountExecution:
    """One count command's plan and its execution (:meth:`count`)."""

    def __init__(
        self,
        store: CollectionStore | None,
        filter_spec: Mapping[str, Any] | None,
        skip: int,
        limit: int | None,
        hint: Any,
        ctx: Context,
    ) -> None:
        self.store = store
        self.filter = dict(filter_spec or {})
        self.skip = skip
        self.limit = limit
        self.find: FindExecution | None = None
        self.exact = False  # the scan's keys are exactly the matches
        self.n_counted = 0
        self.n_skipped = 0
        self.stats = ExecStats()
        if store is None and self.filter:
            # No collection counts nothing, but the filter is still parsed (mongod's getExecutorCount).
            FindExecution(None, FindSpec(filter=filter_spec, count_only=True), ctx)
        elif store is not None and (any(k != "$comment" for k in self.filter) or hint is not None):
            self.find = FindExecution(store, FindSpec(filter=filter_spec, hint=hint, count_only=True), ctx)
            access = self.find.plan.access if self.find.plan is not None else None
            if isinstance(access, IndexScan) and exact_scan(filter_spec, access):
                self.exact = True
                access.covered = True  # keys only
                if single_interval(access) is not None:
                    access.stage = "COUNT_SCAN"

    @property
    def access(self) -> AccessStage | None:
        return self.find.plan.access if self.find is not None and self.find.plan is not None else None

    def count(self) -> int:
        self.stats.started = time.perf_counter()
        access = self.access
        if self.store is None:
            found = 0
        elif self.find is None:
            found = self.store.count()
        elif self.exact:
            assert isinstance(access, IndexScan)
            found = access.count()
        else:
            # Only as many as skip + limit need.
            enough = None if self.limit is None else self.skip + self.limit
            found = 0
            for _ in self.find:
                found += 1
                if found == enough:
                    break
        self.n_skipped = min(self.skip, found)
        left = found - self.n_skipped
        self.n_counted = left if self.limit is None else min(left, self.limit)
        self.stats.finished = time.perf_counter()
        return self.n_counted


def explain_count(run: CountExecution, ns: str, verbosity: str) -> dict[str, Any]:
    """The explain document of a count, in mongod's shapes: COUNT over
    COUNT_SCAN, over a keys-only IXSCAN or over the find's access stages;
    RECORD_STORE_FAST_COUNT alone for an empty filter."""
    executed = verbosity in ("executionStats", "allPlansExecution")
    if executed:
        run.count()
    planner: dict[str, Any] = {
        "namespace": ns,
        "parsedQuery": run.filter,
        "indexFilterSet": run.find is not None and run.find.plan is not None and run.find.plan.index_filter_set,
        "maxIndexedOrSolutionsReached": False,
        "maxIndexedAndSolutionsReached": False,
        "maxScansToExplodeReached": False,
        "winningPlan": _count_tree(run, False),
        "rejectedPlans": [],
    }
    out: dict[str, Any] = {"explainVersion": "1", "queryPlanner": planner}
    if executed:
        access = run.access
        out["executionStats"] = {
            "executionSuccess": True,
            "nReturned": 0,
            "executionTimeMillis": run.stats.millis,
            "totalKeysExamined": access.keys_examined if access else 0,
            "totalDocsExamined": access.docs_examined if access else 0,
            "executionStages": _count_tree(run, True),
        }
    return out


def _count_tree(run: CountExecution, executed: bool) -> dict[str, Any]:
    counts = {"nReturned": 0, "executionTimeMillisEstimate": run.stats.millis} if executed else {}
    tallies = {"nCounted": run.n_counted, "nSkipped": run.n_skipped} if executed else {}
    access = run.access
    if run.find is None or access is None:
        return {"stage": "RECORD_STORE_FAST_COUNT", **counts, **tallies}
    # A clustered collection's _id index stands for its clustered index, which has no COUNT_SCAN.
    if run.exact and not isinstance(access, ClusteredScan):
        assert isinstance(access, IndexScan)
        node = access.explain()
        bounds = single_interval(access)
        if bounds is not None:
            node = {k: v for k, v in node.items() if k != "direction"}
            node.update(stage="COUNT_SCAN", indexBounds=bounds)
        if executed:
            node.update(nReturned=run.n_skipped + run.n_counted, keysExamined=access.keys_examined)
    else:
        node = access_explain(access, run.find, executed)
    return {"stage": "COUNT", **counts, **tallies, "inputStage": node}
