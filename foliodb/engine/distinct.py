"""Run a distinct: through a DISTINCT_SCAN when an index serves it
(:mod:`foliodb.engine.planner.distinct`), else from a find's documents.

Values are kept once each, by key (1 and 1.0 are one value: the first a
collection scan meets, which the DISTINCT_SCAN keeps too), and sorted in
BSON order.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from foliodb.engine.planner.distinct import distinct_scan
from foliodb.engine.planner.distinct_scan import DistinctScan
from foliodb.engine.query import ExecStats
from foliodb.engine.records import CollectionStore
from foliodb.query.collation import key_encoder
from foliodb.query.context import Context
from foliodb.query.filter import compile_filter
from foliodb.query.paths import MISSING, leaf_values, split


class DistinctExecution:
    """One distinct command's plan and its execution (:meth:`values`)."""

    def __init__(
        self,
        store: CollectionStore | None,
        key: str,
        filter_spec: Mapping[str, Any] | None,
        hint: Any,
        ctx: Context,
        documents: Callable[[], Iterator[dict[str, Any]]],
    ) -> None:
        self.key = key
        self.filter = dict(filter_spec or {})
        self.documents = documents
        self.stats = ExecStats()
        self.n_values = 0
        self.scan: DistinctScan | None = None
        self.collator = ctx.collator
        if store is not None and ctx.collator is None:
            # A DISTINCT_SCAN reads values off binary keys: under a collation
            # the values are found in documents and folded by the collation.
            self.scan = distinct_scan(store, key, filter_spec, lambda: compile_filter(filter_spec, ctx), hint)

    def values(self) -> list[Any]:
        self.stats.started = time.perf_counter()
        if self.scan is not None:
            found: Iterator[Any] = self.scan.values()
        else:
            parts = split(self.key)
            found = (v for doc in self.documents() for v in leaf_values(doc, parts) if v is not MISSING)
        seen: set[bytes] = set()
        values: list[Any] = []
        encode = key_encoder(self.collator)
        for value in found:
            k = encode(value)
            if k not in seen:
                seen.add(k)
                # A document or array may be the document cache's own (FindSpec.reads_only): a copy.
                values.append(copy.deepcopy(value) if value.__class__ in (dict, list) else value)
        values.sort(key=encode)
        self.n_values = len(values)
        self.stats.finished = time.perf_counter()
        return values


def explain_distinct(run: DistinctExecution, ns: str, verbosity: str) -> dict[str, Any]:
    """The explain document of a distinct through a DISTINCT_SCAN:
    PROJECTION_COVERED over it when the keys hold the values, FETCH between
    them when documents give them (mongod's shapes)."""
    scan = run.scan
    assert scan is not None
    executed = verbosity in ("executionStats", "allPlansExecution")
    if executed:
        run.values()

    def tree(with_stats: bool) -> dict[str, Any]:
        node = scan.explain()
        if with_stats:
            node.update(nReturned=run.n_values, keysExamined=scan.keys_examined)
        if not scan.from_keys:
            node = {"stage": "FETCH", "inputStage": node}
            if with_stats:
                node.update(nReturned=run.n_values, docsExamined=scan.docs_examined)
        stage = "PROJECTION_COVERED" if scan.from_keys else "PROJECTION_SIMPLE"
        node = {"stage": stage, "transformBy": {"_id": 0, run.key: 1}, "inputStage": node}
        if with_stats:
            node.update(nReturned=run.n_values, executionTimeMillisEstimate=run.stats.millis)
        return node

    planner: dict[str, Any] = {
        "namespace": ns,
        "parsedQuery": run.filter,
        "indexFilterSet": False,
        "maxIndexedOrSolutionsReached": False,
        "maxIndexedAndSolutionsReached": False,
        "maxScansToExplodeReached": False,
        "winningPlan": tree(False),
        "rejectedPlans": [],
    }
    out: dict[str, Any] = {"explainVersion": "1", "queryPlanner": planner}
    if executed:
        out["executionStats"] = {
            "executionSuccess": True,
            "nReturned": run.n_values,
            "executionTimeMillis": run.stats.millis,
            "totalKeysExamined": scan.keys_examined,
            "totalDocsExamined": scan.docs_examined,
            "executionStages": tree(True),
        }
    return out
