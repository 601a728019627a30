"""The workloads, the interface every contender implements, and the timing.

One run of :func:`run_contender` measures one contender at one collection
size, in this order (each step leaves the collection the next one expects)::

    insert_many     all N documents in batches of 1,000 into an empty collection
    insert_one      further documents, one write each, into the populated one
    find_one        by _id, distinct random existing ids
    find_unindexed  {"payment.txn_id": x}: a full scan that returns one document
    find_user       {"user_id": u}: a full scan (no index on user_id) returning a customer's orders
    sort_limit      find({}).sort("total", -1).limit(10): the 10 largest totals, no index on total
    update_one      by _id, {"$inc": {"total": 1}, "$set": {"status": "shipped"}}
    delete_one      by _id, distinct random existing ids

Invariants:

* every contender gets the same documents, ids and query values, in the same
  order (all seeded); conversions a contender needs (TinyDB's JSON has no
  ObjectId) happen before the clock starts;
* a workload stops at its operation count or at the time budget, whichever
  comes first (``find_user`` and ``sort_limit`` run once untimed first, so
  that each store's caches are warm); a result that stopped early is marked ``partial`` and its rate
  is computed from the operations that completed;
* if ``insert_many`` stops early, the rest of the documents are loaded
  untimed in one call, so every later workload runs on a collection of
  exactly N documents, never on a smaller one;
* every answer is checked (a found document, one match, one update, one
  delete) and wrong answers are counted in ``errors``: a fast wrong answer
  is not a result.
"""

from __future__ import annotations

import cProfile
import gc
import io
import os
import pstats
import random
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bson import ObjectId

from benchmarks.data import SEED, orders

WORKLOADS = (
    "insert_many",
    "insert_one",
    "find_one",
    "find_unindexed",
    "find_user",
    "sort_limit",
    "update_one",
    "delete_one",
)
UNITS = {
    "insert_many": "docs/s",
    "insert_one": "ops/s",
    "find_one": "ops/s",
    "find_unindexed": "queries/s",
    "find_user": "queries/s",
    "sort_limit": "queries/s",
    "update_one": "ops/s",
    "delete_one": "ops/s",
}
BATCH = 1000
# Workloads run once, untimed, before their clock starts: the scans, measured with whatever a
# store caches warm (FolioDB's document cache, TinyDB's query cache).
WARMED = ("find_user", "sort_limit")
FIND_PATH = "payment.txn_id"
USER_PATH = "user_id"
SORT_FIELD = "total"  # sort_limit: descending, the first SORT_LIMIT
SORT_LIMIT = 10


def field_getter(path: str) -> Callable[[dict[str, Any]], Any]:
    """Plain nested-dict access for a dotted path (no array rules: the path has none)."""
    parts = path.split(".")

    def get(doc: dict[str, Any]) -> Any:
        value: Any = doc
        for part in parts:
            if not isinstance(value, dict):
                return None
            value = value.get(part)
        return value

    return get


class Contender(ABC):
    """One store in one mode. Subclasses implement the six operations.

    ``prepare`` and ``key`` translate the shared documents and ids into the
    contender's own representation once, before any clock starts.
    """

    name = ""
    storage = ""  # "disk" or "memory"
    package = ""  # the distribution whose version the results record

    def prepare(self, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return docs

    def key(self, _id: ObjectId) -> Any:
        return _id

    def value(self, value: Any) -> Any:
        return value

    @abstractmethod
    def open(self, workdir: str) -> None: ...

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def insert_many(self, docs: list[dict[str, Any]]) -> None: ...

    @abstractmethod
    def insert_one(self, doc: dict[str, Any]) -> None: ...

    @abstractmethod
    def find_one_by_id(self, key: Any) -> dict[str, Any] | None: ...

    @abstractmethod
    def find_equal(self, path: str, value: Any) -> list[dict[str, Any]]: ...

    @abstractmethod
    def find_sorted(self, field: str, limit: int) -> list[dict[str, Any]]:
        """The ``limit`` documents with the largest ``field`` (a number), largest first."""
        ...

    @abstractmethod
    def update_one_by_id(self, key: Any) -> int:
        """Apply {$inc: {total: 1}, $set: {status: "shipped"}}; return the matched count."""
        ...

    @abstractmethod
    def delete_one_by_id(self, key: Any) -> int: ...


@dataclass(frozen=True)
class Plan:
    """How much each workload does, and how long it may take."""

    budget: float = 5.0  # seconds per workload
    insert_one: int = 2000
    find_one: int = 10000
    find_unindexed: int = 50
    find_user: int = 50
    sort_limit: int = 20
    update_one: int = 2000
    delete_one: int = 2000

    def count(self, workload: str, size: int) -> int:
        if workload == "insert_many":
            return size
        wanted: int = getattr(self, workload)
        return wanted if workload in ("insert_one", "sort_limit") else min(wanted, size)


QUICK = Plan(
    budget=0.5,
    insert_one=100,
    find_one=300,
    find_unindexed=5,
    find_user=5,
    sort_limit=3,
    update_one=100,
    delete_one=100,
)


@dataclass
class Outcome:
    ops: int
    seconds: float
    errors: int


Verify = Callable[[Outcome, dict[str, Any]], None]


def _timed(op: Callable[[Any], Any], args: Iterable[Any], budget: float, check: bool) -> Outcome:
    """Run ``op`` over ``args`` until done or past the budget; count falsy answers when checking."""
    perf = time.perf_counter
    done = errors = 0
    start = perf()
    deadline = start + budget
    if check:
        for arg in args:
            if not op(arg):
                errors += 1
            done += 1
            if perf() >= deadline:
                break
    else:
        for arg in args:
            op(arg)
            done += 1
            if perf() >= deadline:
                break
    return Outcome(done, perf() - start, errors)


class Profiler:
    """Optional cProfile around each timed loop; writes .prof and a text summary per workload."""

    def __init__(self, directory: str | None, label: str) -> None:
        self.directory = directory
        self.label = label

    def run(self, workload: str, fn: Callable[[], Outcome]) -> Outcome:
        if self.directory is None:
            return fn()
        profile = cProfile.Profile()
        outcome = profile.runcall(fn)
        base = os.path.join(self.directory, f"{self.label}-{workload}")
        profile.dump_stats(base + ".prof")
        text = io.StringIO()
        stats = pstats.Stats(profile, stream=text)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(40)
        with open(base + ".txt", "w") as fh:
            fh.write(text.getvalue())
        return outcome


def _record(workload: str, target: int, outcome: Outcome) -> dict[str, Any]:
    return {
        "ops": outcome.ops,
        "target": target,
        "seconds": round(outcome.seconds, 6),
        "rate": outcome.ops / outcome.seconds if outcome.seconds > 0 else 0.0,
        "unit": UNITS[workload],
        "partial": outcome.ops < target,
        "errors": outcome.errors,
    }


def _batches(docs: Sequence[dict[str, Any]]) -> list[Sequence[dict[str, Any]]]:
    return [docs[i : i + BATCH] for i in range(0, len(docs), BATCH)]


def run_contender(
    contender: Contender,
    size: int,
    plan: Plan,
    workdir: str,
    report: Callable[[str, dict[str, Any]], None],
    profile_dir: str | None = None,
) -> None:
    """Measure one contender at one size, handing each workload's result to ``report``."""
    docs = orders(size + plan.insert_one)
    base, extra = docs[:size], docs[size:]
    rng = random.Random(SEED + size)
    find_docs = rng.sample(base, plan.count("find_one", size))
    scan_docs = rng.sample(base, plan.count("find_unindexed", size))
    user_docs = rng.sample(base, plan.count("find_user", size))
    update_docs = rng.sample(base, plan.count("update_one", size))
    delete_docs = rng.sample(base, plan.count("delete_one", size))

    prepared = contender.prepare(base)
    key = contender.key
    find_equal = contender.find_equal
    txn_id = field_getter(FIND_PATH)

    def one_match(value: Any) -> bool:
        return len(find_equal(FIND_PATH, value)) == 1

    # The answers, worked out in plain Python from what the collection holds then: `base` and
    # the documents insert_one got in before its budget ran out (nothing else changes it before
    # update_one).
    stored = list(base)
    answers: dict[str, Any] = {}

    def after_insert_one(outcome: Outcome, record: dict[str, Any]) -> None:
        stored.extend(extra[: outcome.ops])

    def user_orders(user: Any) -> int:
        if "users" not in answers:
            counts: dict[Any, int] = {}
            for doc in stored:
                counts[doc[USER_PATH]] = counts.get(doc[USER_PATH], 0) + 1
            answers["users"] = counts
        counted: int = answers["users"][user]
        return counted

    def users_orders(user: Any) -> bool:
        found = find_equal(USER_PATH, contender.value(user))
        return len(found) == user_orders(user)

    def largest_totals(_: int) -> bool:
        if "largest" not in answers:
            answers["largest"] = sorted((doc[SORT_FIELD] for doc in stored), reverse=True)[:SORT_LIMIT]
        found = contender.find_sorted(SORT_FIELD, SORT_LIMIT)
        return [doc[SORT_FIELD] for doc in found] == answers["largest"]

    def after_insert_many(outcome: Outcome, record: dict[str, Any]) -> None:
        # The rest goes in untimed, in one call: later workloads need all N documents.
        if outcome.ops < size:
            start = time.perf_counter()
            contender.insert_many(prepared[outcome.ops :])
            record["untimed_load_seconds"] = round(time.perf_counter() - start, 3)
        if not _same(contender.find_one_by_id(key(base[-1]["_id"])), prepared[-1]):
            record["errors"] += 1

    def after_update(outcome: Outcome, record: dict[str, Any]) -> None:
        doc = contender.find_one_by_id(key(update_docs[0]["_id"]))
        if doc is None or doc["status"] != "shipped" or abs(doc["total"] - (update_docs[0]["total"] + 1)) > 1e-6:
            record["errors"] += 1

    def after_delete(outcome: Outcome, record: dict[str, Any]) -> None:
        if contender.find_one_by_id(key(delete_docs[0]["_id"])) is not None:
            record["errors"] += 1

    # (workload, operation, its arguments, whether a falsy answer is an error, check afterwards)
    steps: list[tuple[str, Callable[[Any], Any], list[Any], bool, Verify | None]] = [
        ("insert_many", contender.insert_many, _batches(prepared), False, after_insert_many),
        ("insert_one", contender.insert_one, contender.prepare(extra), False, after_insert_one),
        ("find_one", contender.find_one_by_id, [key(d["_id"]) for d in find_docs], True, None),
        ("find_unindexed", one_match, [contender.value(txn_id(d)) for d in scan_docs], True, None),
        ("find_user", users_orders, [d[USER_PATH] for d in user_docs], True, None),
        ("sort_limit", largest_totals, list(range(plan.count("sort_limit", size))), True, None),
        ("update_one", contender.update_one_by_id, [key(d["_id"]) for d in update_docs], True, after_update),
        ("delete_one", contender.delete_one_by_id, [key(d["_id"]) for d in delete_docs], True, after_delete),
    ]
    profiler = Profiler(profile_dir, f"{contender.name}-{size}")
    contender.open(workdir)
    try:
        failed: str | None = None
        for workload, op, args, check, verify in steps:
            if failed is not None:
                report(workload, {"skipped": failed, "unit": UNITS[workload]})
                continue
            gc.collect()
            try:
                if workload in WARMED and args:
                    op(args[0])  # untimed: the scans are measured with caches warm (a store's own)
                outcome = profiler.run(workload, lambda: _timed(op, args, plan.budget, check))
                if workload == "insert_many":
                    # Count documents, not batches.
                    outcome.ops = sum(len(batch) for batch in args[: outcome.ops])
                record = _record(workload, plan.count(workload, size), outcome)
                if verify is not None:
                    verify(outcome, record)
            except Exception as exc:
                record = {"error": _describe(exc), "unit": UNITS[workload]}
                if workload == "insert_many":
                    failed = "the collection could not be loaded"
            report(workload, record)
    finally:
        contender.close()


def _same(found: dict[str, Any] | None, expected: dict[str, Any]) -> bool:
    return found is not None and {k: found.get(k) for k in expected} == expected


def _describe(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"
