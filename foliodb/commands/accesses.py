"""The plans commands run, counted where they are chosen: each operation's
access path adds one to the accesses of the indexes it reads
(:mod:`foliodb.engine.usage`, shown by ``$indexStats``), and each find is
tracked for the profiler.

An explain runs no operation, so it counts none, as in mongod.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/indexStats/
"""

from __future__ import annotations

from foliodb.commands.executor import Request
from foliodb.engine import usage
from foliodb.engine.planner.plans import AccessStage
from foliodb.engine.query import FindExecution
from foliodb.engine.records import CollectionStore


def counted(request: Request, store: CollectionStore | None, run: FindExecution) -> FindExecution:
    """``run``, its plan counted and tracked for the profiler."""
    if store is not None and run.plan is not None:
        count_plan(request, store, run.plan.access)
    return request.track(run)


def count_plan(request: Request, store: CollectionStore, access: AccessStage) -> None:
    """Count the indexes ``access`` reads (a write's access path, or a find's)."""
    if request.command_name != "explain":
        usage.plan_used(request.engine.usage, store, access)
