"""A find's explain document, in MongoDB's classic-engine shape.

``queryPlanner`` shows the winning plan's stage tree (access stage, then SORT,
SKIP, LIMIT, PROJECTION_* as :class:`~foliodb.engine.query.FindExecution` runs
them), the rejected plans of the trial, and the query's shape hashes
(``queryHash``, ``planCacheKey``: :mod:`foliodb.engine.plan_cache`).
``executionStats`` adds what each stage counted while running (documents
returned, keys and documents examined); ``allPlansExecution`` the trial's
counts per candidate. The access part: COLLSCAN with the filter inside,
IDHACK, COUNT_SCAN, FETCH (the filter's residual) over IXSCAN or OR, or a
covered IXSCAN with the residual checked on its keys. Explaining never
changes what the find returns.
"""

from __future__ import annotations

from typing import Any

from foliodb.engine.geo_keys import GEO_KINDS
from foliodb.engine.plan_cache import plan_cache_key, query_hash, shape_of
from foliodb.engine.planner.plans import AccessStage, ClusteredScan, CollScan, IdLookup, IndexScan, OrScan
from foliodb.engine.query import SORT_MEMORY_LIMIT, FindExecution
from foliodb.query.sort import compile_sort


def explain_find(run: FindExecution, ns: str, verbosity: str, run_it: bool = True) -> dict[str, Any]:
    """The explain document of a find, in MongoDB's classic-engine shape
    (``run_it`` False: the caller has run it, as far as it needed)."""
    executed = verbosity in ("executionStats", "allPlansExecution")
    if executed and run_it:
        for _ in run:
            pass
    winning, stats_tree = _stage_tree(run, executed)
    planner: dict[str, Any] = {
        "namespace": ns,
        "parsedQuery": dict(run.spec.filter or {}),
        "indexFilterSet": run.plan is not None and run.plan.index_filter_set,
    }
    if run.store is not None:
        sort = compile_sort(run.spec.sort, collator=run.ctx.collator).fields if run.spec.sort else None
        shape = shape_of(run.spec.filter, sort, run.spec.projection, run.ctx.collator)
        planner["queryHash"] = query_hash(shape)
        planner["planCacheKey"] = plan_cache_key(shape, list(run.store.info.indexes))
    planner |= {
        "maxIndexedOrSolutionsReached": False,
        "maxIndexedAndSolutionsReached": False,
        "maxScansToExplodeReached": False,
        "winningPlan": winning,
        "rejectedPlans": [access_explain(stage, run, False) for stage in (run.plan.rejected if run.plan else [])],
    }
    out: dict[str, Any] = {"explainVersion": "1", "queryPlanner": planner}
    if executed:
        access = run.plan.access if run.plan else None
        execution: dict[str, Any] = {
            "executionSuccess": True,
            "nReturned": run.stats.n_returned,
            "executionTimeMillis": run.stats.millis,
            "totalKeysExamined": access.keys_examined if access else 0,
            "totalDocsExamined": access.docs_examined if access else 0,
            "executionStages": stats_tree,
        }
        if verbosity == "allPlansExecution":
            execution["allPlansExecution"] = [
                {
                    "nReturned": produced,
                    "executionTimeMillisEstimate": 0,
                    "totalKeysExamined": stage.keys_examined,
                    "totalDocsExamined": stage.docs_examined,
                    "executionStages": stage.explain(),
                    "works": works,
                }
                for stage, produced, works in (run.plan.trials if run.plan else [])
            ]
        out["executionStats"] = execution
    return out


def access_explain(stage: AccessStage, run: FindExecution, executed: bool) -> dict[str, Any]:
    """The access part of a plan: COLLSCAN (filter inside), IDHACK, or
    FETCH (filter) over IXSCAN."""
    node = stage.explain()
    filter_spec = dict(run.spec.filter or {})
    if isinstance(stage, ClusteredScan) or (isinstance(stage, IdLookup) and stage.clustered):
        # A scan of the records themselves, with the whole filter (its bounds are inclusive).
        if filter_spec:
            node["filter"] = filter_spec
        if executed:
            node.update(nReturned=run.stats.n_matched, docsExamined=stage.docs_examined, works=stage.docs_examined + 1)
        return node
    if isinstance(stage, IndexScan) and run.count_bounds is not None and run.plan and stage is run.plan.access:
        node = {k: v for k, v in node.items() if k != "direction"}
        node.update(stage="COUNT_SCAN", indexBounds=run.count_bounds)
        if executed:
            node.update(nReturned=run.stats.n_matched, keysExamined=stage.keys_examined)
        return node
    if isinstance(stage, IndexScan):
        if executed:
            node.update(nReturned=stage.docs_examined, keysExamined=stage.keys_examined, works=stage.keys_examined + 1)
        # A geo index's keys are cells, never the predicate: FETCH re-checks it, as mongod shows.
        exact_keys = stage.index.kind not in GEO_KINDS
        residual = {k: v for k, v in filter_spec.items() if k not in stage.index.key or not exact_keys}
        if stage.covered:
            if residual:
                node["filter"] = residual  # checked on the keys, as mongod does
            return node
        fetch: dict[str, Any] = {"stage": "FETCH"}
        if residual:
            fetch["filter"] = residual
        if executed:
            fetch.update(nReturned=run.stats.n_matched, docsExamined=stage.docs_examined)
        fetch["inputStage"] = node
        return fetch
    if isinstance(stage, OrScan):
        fetch = {
            "stage": "FETCH",
            "filter": filter_spec,
            "inputStage": {"stage": "OR", "inputStages": [scan.explain() for scan in stage.scans]},
        }
        if executed:
            fetch.update(nReturned=run.stats.n_matched, docsExamined=stage.docs_examined)
        return fetch
    if isinstance(stage, CollScan):
        if filter_spec:
            node["filter"] = filter_spec
        if executed:
            node.update(nReturned=run.stats.n_matched, docsExamined=stage.docs_examined, works=stage.docs_examined + 1)
    elif executed:
        node.update(nReturned=run.stats.n_matched, keysExamined=stage.keys_examined, docsExamined=stage.docs_examined)
    return node


def _stage_tree(run: FindExecution, executed: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """(winningPlan, executionStages) of a find."""
    if run.plan is None:
        empty = {"stage": "EOF"}
        return empty, dict(empty, nReturned=0)

    def build(with_stats: bool) -> dict[str, Any]:
        assert run.plan is not None
        node = access_explain(run.plan.access, run, with_stats)
        spec = run.spec
        if run.sort is not None:
            node = {
                "stage": "SORT",
                "sortPattern": dict(spec.sort or {}),
                "memLimit": SORT_MEMORY_LIMIT,
                "type": "simple",
                "inputStage": node,
            }
            if spec.limit is not None:
                node["limitAmount"] = spec.skip + spec.limit
            if with_stats:
                node["nReturned"] = (
                    run.stats.n_returned + spec.skip
                    if spec.limit is None
                    else min(run.stats.n_matched, spec.skip + spec.limit)
                )
        if spec.skip:
            node = {"stage": "SKIP", "skipAmount": spec.skip, "inputStage": node}
        if spec.limit is not None and run.sort is None:
            node = {"stage": "LIMIT", "limitAmount": spec.limit, "inputStage": node}
        if run.projection is not None:
            kind = "PROJECTION_SIMPLE" if not run.projection.is_exclusion else "PROJECTION_DEFAULT"
            # Keys answer a clustered scan too, but mongod reads its records: no covered projection there.
            if run.covered is not None and not isinstance(run.plan.access, ClusteredScan):
                kind = "PROJECTION_COVERED"
            node = {"stage": kind, "transformBy": dict(spec.projection or {}), "inputStage": node}
        if with_stats:
            node["nReturned"] = run.stats.n_returned
            node["executionTimeMillisEstimate"] = run.stats.millis
        return node

    return build(False), build(executed)
