"""Index benchmarks: ``python -m benchmarks.indexes [--quick] [--peers all] [--sizes 10000,100000,1000000]``.

Each contender runs in its own interpreter (:mod:`benchmarks.child`) and
loads its collection once, growing it through the sizes (10k, 100k, 1M by
default; ``--quick``: 10k, 20k, 50k). The ``user_id`` index is created on the
empty collection, so loading maintains it. At each size::

    load        insert_many in batches of 1,000 up to the size (docs/s, _id and user_id indexes maintained)
    find_user   list(find({"user_id": u})): an indexed equality find, ~5 documents each
    find_one    find_one({"_id": id})
    build       drop the user_id index, then time create_index("user_id") on the loaded collection
                (the rebuilt index is the one the next growth step maintains)

The documents are :func:`benchmarks.data.iter_orders` with ``blocks=True``:
every customer has ~4 orders at every size (a query returns ~5: customers
are picked through random orders, which favours those with more), so the
per-query time compares like with like from 10k to 1M. Queries go to random existing customers and
ids (seeded). Each query workload runs ``rounds`` times and keeps the
fastest round; a round stops at its count or its budget. Every answer is
checked (exactly the customer's orders; the document with that id).

Invariants:

* the floor (:class:`benchmarks.floor.IndexedFloor`) and FolioDB run at every
  size; peers stop at ``peer_max`` (100k by default), and the output says so;
* an index build that passes ``build_budget`` is interrupted and reported as
  over budget, never as a time, and that contender stops growing;
* targets (PASS/FAIL lines) are checked for ``foliodb-disk``: per-query time
  at the largest size within 2x of the smallest, for both query workloads,
  and the indexed find at least 40% of the floor's rate at every size.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import socket
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any, Protocol, TypeGuard

from bson import ObjectId

from benchmarks import child
from benchmarks.data import BLOCK, SEED, batches, iter_orders
from benchmarks.floor import IndexedFloor
from benchmarks.peers import (
    FolioDBDisk,
    FolioDBMemory,
    MongitaDisk,
    MongitaMemory,
    Mongomock,
    MontyDBMemory,
    PymongoStyle,
    version,
)
from benchmarks.report import fmt_rate, fmt_ratio, targets_block
from benchmarks.run import machine, output_path, save
from benchmarks.workloads import BATCH, Outcome, Profiler, _timed

FIELD = "user_id"
QUERIES = ("find_user", "find_one")
# Share of the floor's rate the indexed find must reach, and the growth in
# per-query time allowed from the smallest size to the largest.
FLOOR_SHARE = 0.40
GROWTH = 2.0
OURS = "foliodb-disk"

NOTES = {
    "floor": "index table (key = user_id bytes + rid) joined to docs, bson.decode; build = decode all, sort, insert",
    "mongita-disk": "index = a sorted dict value -> ids, re-sorted on every insert_many and saved with the metadata",
    "mongita-memory": "index = a sorted dict value -> ids, re-sorted on every insert_many",
    "mongomock": "create_index records the index (for unique); find and find_one scan every document",
    "montydb-memory": "create_index is a no-op ('Not functioning', its docstring); find and find_one scan",
}


class Indexable(Protocol):
    """What a contender of this benchmark offers (the floor and the pymongo-style stores)."""

    name: str
    storage: str
    package: str

    def open(self, workdir: str) -> None: ...
    def close(self) -> None: ...
    def insert_many(self, docs: list[dict[str, Any]]) -> None: ...
    def find_one_by_id(self, key: Any) -> dict[str, Any] | None: ...
    def find_equal(self, path: str, value: Any) -> list[dict[str, Any]]: ...
    def create_index(self, field: str) -> None: ...
    def drop_index(self, field: str) -> None: ...


class PymongoIndexes(PymongoStyle):
    """create_index / drop_index through pymongo's API (index name ``<field>_1``).

    ``builds_index`` is False for a store whose create_index builds nothing
    its queries use: its build is reported as "no index", not as a time.
    """

    builds_index = True

    def create_index(self, field: str) -> None:
        self.coll.create_index(field)

    def drop_index(self, field: str) -> None:
        self.coll.drop_index(f"{field}_1")


def explain_summary(coll: Any, field: str, value: Any) -> dict[str, Any]:
    """FolioDB's plan and counters for one equality find: proof the index served it."""
    explained = coll.find({field: value}).explain()
    stages = []
    stage: dict[str, Any] | None = explained["queryPlanner"]["winningPlan"]
    while stage:
        stages.append(stage["stage"] + (f" {stage['indexName']}" if "indexName" in stage else ""))
        stage = stage.get("inputStage")
    stats = explained.get("executionStats", {})
    return {
        "plan": " <- ".join(stages),
        **{k: stats[k] for k in ("nReturned", "totalKeysExamined", "totalDocsExamined") if k in stats},
    }


class FolioDBDiskIndexes(PymongoIndexes, FolioDBDisk):
    def explain(self, field: str, value: Any) -> dict[str, Any]:
        return explain_summary(self.coll, field, value)


class FolioDBMemoryIndexes(PymongoIndexes, FolioDBMemory):
    def explain(self, field: str, value: Any) -> dict[str, Any]:
        return explain_summary(self.coll, field, value)


class MongitaDiskIndexes(PymongoIndexes, MongitaDisk):
    pass


class MongitaMemoryIndexes(PymongoIndexes, MongitaMemory):
    pass


class MongomockIndexes(PymongoIndexes, Mongomock):
    builds_index = False


class MontyDBMemoryIndexes(PymongoIndexes, MontyDBMemory):
    builds_index = False

    def drop_index(self, field: str) -> None:
        """montydb's drop_index raises on the index its create_index never made; there is nothing to drop."""


CONTENDERS: dict[str, type[Indexable]] = {
    cls.name: cls
    for cls in (
        IndexedFloor,
        FolioDBDiskIndexes,
        FolioDBMemoryIndexes,
        MongitaDiskIndexes,
        MongitaMemoryIndexes,
        MongomockIndexes,
        MontyDBMemoryIndexes,
    )
}
DEFAULT = ["floor", "foliodb-disk", "mongita-disk", "mongita-memory", "mongomock", "montydb-memory"]
# Contenders measured at every size; the others stop at ``peer_max``.
FULL_RANGE = ("floor", "foliodb-disk", "foliodb-memory")


@dataclass(frozen=True)
class IndexPlan:
    sizes: tuple[int, ...] = (10_000, 100_000, 1_000_000)
    peer_max: int = 100_000
    budget: float = 2.0  # seconds per round of one query workload
    rounds: int = 5
    find_user: int = 2000
    find_one: int = 5000
    build_budget: float = 300.0

    def count(self, workload: str, size: int) -> int:
        wanted: int = getattr(self, workload)
        return min(wanted, size)

    def sizes_for(self, name: str) -> tuple[int, ...]:
        return self.sizes if name in FULL_RANGE else tuple(s for s in self.sizes if s <= self.peer_max)


QUICK = IndexPlan(
    sizes=(10_000, 20_000, 50_000), peer_max=50_000, budget=0.3, rounds=1, find_user=200, find_one=500, build_budget=60
)


def query_indices(plan: IndexPlan, size: int) -> dict[str, list[int]]:
    """Positions (in load order) of the documents whose user_id / _id the queries at ``size`` use."""
    rng = random.Random(SEED + size)
    return {w: rng.sample(range(size), plan.count(w, size)) for w in QUERIES}


def _query_record(target: int, rounds: list[Outcome]) -> dict[str, Any]:
    per_query = [o.seconds / o.ops * 1e6 for o in rounds if o.ops]
    best = min(range(len(rounds)), key=lambda i: per_query[i]) if per_query else 0
    outcome = rounds[best]
    return {
        "us_per_query": per_query[best] if per_query else None,
        "rounds_us": [round(us, 2) for us in per_query],
        "ops": outcome.ops,
        "target": target,
        "seconds": round(outcome.seconds, 6),
        "partial": outcome.ops < target,
        "errors": sum(o.errors for o in rounds),
    }


def time_queries(
    profiler: Profiler, workload: str, op: Callable[[Any], Any], args: list[Any], budget: float
) -> Outcome:
    """One round: every query once (or until the budget), after a full garbage collection."""
    gc.collect()
    return profiler.run(workload, lambda: _timed(op, args, budget, True))


def worker(name: str, plan: IndexPlan, workdir: str, results: child.Results, profile_dir: str | None) -> None:
    """Child: grow one contender's collection through its sizes: at each, load, query, rebuild the index."""
    contender = CONTENDERS[name]()
    sizes = plan.sizes_for(name)
    wanted = {size: query_indices(plan, size) for size in sizes}
    keep = {i for per in wanted.values() for positions in per.values() for i in positions}
    picked: dict[int, tuple[ObjectId, ObjectId]] = {}
    # Keyed by the id's bytes, which the garbage collector does not track: the
    # harness's own heap stays small next to the store's.
    orders_of: Counter[bytes] = Counter()
    stream = iter_orders(sizes[-1], blocks=True)
    rounds = 1 if profile_dir else plan.rounds
    contender.open(workdir)
    try:
        contender.create_index(FIELD)
        loaded = 0
        for size in sizes:
            profiler = Profiler(profile_dir, f"{name}-{size}")
            previous = loaded
            seconds = 0.0
            for batch in batches(islice(stream, size - loaded), BATCH):
                for offset, doc in enumerate(batch):
                    orders_of[doc[FIELD].binary] += 1
                    if loaded + offset in keep:
                        picked[loaded + offset] = (doc["_id"], doc[FIELD])
                start = time.perf_counter()
                contender.insert_many(batch)
                seconds += time.perf_counter() - start
                loaded += len(batch)
            record: dict[str, Any] = {
                "load": {
                    "from": previous,
                    "to": size,
                    "seconds": round(seconds, 3),
                    "rate": (size - previous) / seconds,
                }
            }
            users = [picked[i][1] for i in wanted[size]["find_user"]]
            ids = [picked[i][0] for i in wanted[size]["find_one"]]

            def right_orders(user: ObjectId) -> bool:
                return len(contender.find_equal(FIELD, user)) == orders_of[user.binary]

            ops: dict[str, tuple[Callable[[Any], Any], list[Any]]] = {
                "find_user": (right_orders, users),
                "find_one": (contender.find_one_by_id, ids),
            }
            for workload, (op, args) in ops.items():
                outcomes = [time_queries(profiler, workload, op, args, plan.budget) for _ in range(rounds)]
                record[workload] = _query_record(len(args), outcomes)
            found = contender.find_equal(FIELD, users[0])
            if not found or any(doc[FIELD] != users[0] for doc in found):
                record["find_user"]["errors"] += 1
            one = contender.find_one_by_id(ids[0])
            if one is None or one["_id"] != ids[0]:
                record["find_one"]["errors"] += 1
            explain = getattr(contender, "explain", None)
            if explain is not None:
                record["explain"] = explain(FIELD, users[0])
            record["build"] = build(contender, plan, size, users[0], orders_of[users[0].binary])
            results.save(str(size), record)
            if "over_budget" in record["build"]:
                break  # the index is half built: nothing later would measure what it claims
    finally:
        contender.close()


def build(contender: Indexable, plan: IndexPlan, size: int, user: ObjectId, expected: int) -> dict[str, Any]:
    """Drop the index, then time create_index on the loaded collection (interrupted past the budget)."""
    if not getattr(contender, "builds_index", True):
        return {"docs": size, "no_index": "create_index builds nothing that queries use"}
    contender.drop_index(FIELD)
    gc.collect()
    start = time.perf_counter()
    try:
        with child.deadline(plan.build_budget):
            contender.create_index(FIELD)
    except child.OverBudget as exc:
        return {"docs": size, "over_budget": str(exc)}
    seconds = time.perf_counter() - start
    right = len(contender.find_equal(FIELD, user)) == expected
    return {"docs": size, "seconds": round(seconds, 3), "rate": size / seconds, "errors": 0 if right else 1}


def hard_limit(plan: IndexPlan, sizes: tuple[int, ...]) -> float:
    """Seconds after which a child is stopped: loading at >= 2,000 docs/s, every budget twice, the builds."""
    per_size = len(QUERIES) * plan.rounds * plan.budget * 2 + 10 + plan.build_budget
    return 120 + sizes[-1] / 2000 + len(sizes) * per_size


# -- the parent: run the children, compare, report ------------------------------------------


def select(spec: str) -> list[str]:
    """Contender names for ``--peers``: ``all`` (the default set) or names and families; the floor is always in."""
    if spec == "all":
        return list(DEFAULT)
    families = {"foliodb": ["foliodb-disk", "foliodb-memory"], "mongita": ["mongita-disk", "mongita-memory"]}
    chosen = ["floor"]
    for word in filter(None, (w.strip() for w in spec.split(","))):
        for name in families.get(word, [word]):
            if name not in CONTENDERS:
                raise SystemExit(f"unknown contender {word!r}; known: {', '.join([*CONTENDERS, *families])}")
            if name not in chosen:
                chosen.append(name)
    return chosen


def best_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per size, each measurement's best run (fastest queries and build, fastest load); every run's value kept."""
    best: dict[str, Any] = {}
    for size in dict.fromkeys(size for run in runs for size in run):
        records = [run[size] for run in runs if size in run]
        merged = dict(records[0])
        for workload in QUERIES:
            valid = [r[workload] for r in records if _valid(r.get(workload))]
            if valid:
                merged[workload] = dict(min(valid, key=lambda q: q["us_per_query"]))
            merged[workload]["runs_us"] = [r.get(workload, {}).get("us_per_query") for r in records]
        built = [r["build"] for r in records if r.get("build", {}).get("seconds") and not r["build"].get("errors")]
        if built:
            merged["build"] = dict(min(built, key=lambda b: b["seconds"]))
        merged["build"]["runs_seconds"] = [r.get("build", {}).get("seconds") for r in records]
        merged["load"] = dict(max((r["load"] for r in records), key=lambda load: load["rate"]))
        merged["load"]["runs_rate"] = [r["load"]["rate"] for r in records]
        best[size] = merged
    return best


def add_ratios(doc: dict[str, Any]) -> None:
    """``ratio`` on every query record (the floor's time / this time: a share of the floor's rate) and build."""
    floor = doc["results"].get("floor", {})
    for records in doc["results"].values():
        for size, record in records.items():
            base = floor.get(size, {})
            for workload in QUERIES:
                ours, theirs = record.get(workload, {}), base.get(workload, {})
                if ours.get("us_per_query") and theirs.get("us_per_query"):
                    ours["ratio"] = theirs["us_per_query"] / ours["us_per_query"]
            ours, theirs = record.get("build", {}), base.get("build", {})
            if ours.get("seconds") and theirs.get("seconds"):
                ours["ratio"] = theirs["seconds"] / ours["seconds"]


def _valid(record: dict[str, Any] | None) -> TypeGuard[dict[str, Any]]:
    return record is not None and record.get("us_per_query") is not None and not record.get("errors")


def targets(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """PASS/FAIL lines for foliodb-disk, each ``{passed, line}``."""
    ours = doc["results"].get(OURS)
    if not ours:
        return []
    checks: list[dict[str, Any]] = []

    def check(passed: bool, text: str) -> None:
        checks.append({"passed": passed, "line": f"{'PASS' if passed else 'FAIL'}  {text}"})

    sizes = [str(s) for s in doc["sizes"]]
    small, large = sizes[0], sizes[-1]
    for workload in QUERIES:
        label = f"{OURS} {workload} per-query time, {int(large):,} vs {int(small):,} docs"
        first, last = ours.get(small, {}).get(workload), ours.get(large, {}).get(workload)
        if not (_valid(first) and _valid(last)):
            check(False, f"{label}: no valid measurement at both sizes")
            continue
        growth = last["us_per_query"] / first["us_per_query"]
        check(
            growth <= GROWTH,
            f"{label}: {last['us_per_query']:.1f} vs {first['us_per_query']:.1f} us"
            f" = {growth:.2f}x (target <= {GROWTH:.2f}x)",
        )
    for size in sizes:
        label = f"{int(size):>9,} docs  {OURS} find_user"
        record = ours.get(size, {}).get("find_user")
        if not _valid(record) or "ratio" not in record:
            check(False, f"{label}: no valid measurement of it and the floor")
            continue
        ratio = record["ratio"]
        check(ratio >= FLOOR_SHARE, f"{label}: {ratio:.3f} of the floor's rate (target >= {FLOOR_SHARE:.2f})")
    return checks


def _query_cell(record: dict[str, Any] | None) -> str:
    if not record:
        return "—"
    if "error" in record:
        return "error"
    if record.get("us_per_query") is None:
        return "—"
    text = fmt_rate(record["us_per_query"])
    if record.get("partial"):
        text += "\\*"
    if record.get("errors"):
        text += " !"
    if "ratio" in record:
        text += f" ({fmt_ratio(record['ratio'])})"
    return text


def _build_cell(record: dict[str, Any] | None) -> str:
    if not record:
        return "—"
    if "over_budget" in record:
        return "over budget"
    if "no_index" in record:
        return "no index"
    text = f"{record['seconds']:.3g} s"
    if record.get("errors"):
        text += " !"
    if "ratio" in record:
        text += f" ({fmt_ratio(record['ratio'])})"
    return text


def markdown(doc: dict[str, Any]) -> str:
    """The results as Markdown tables, the contenders and the target lines."""
    sizes = [str(s) for s in doc["sizes"]]
    names = list(doc["results"])
    storage = {name: doc["contenders"][name]["storage"] for name in names}
    out: list[str] = []

    def table(title: str, columns: list[str], cells: Callable[[str], list[str]], footnote: str) -> None:
        out.append(f"#### {title}\n")
        out.append("| contender | storage | " + " | ".join(columns) + " |")
        out.append("|---|---|" + "--:|" * len(columns))
        for name in names:
            out.append(f"| {name} | {storage[name]} | " + " | ".join(cells(name)) + " |")
        out.append(f"\n{footnote}\n")

    def growth(name: str, workload: str) -> str:
        records = doc["results"][name]
        first, last = records.get(sizes[0], {}).get(workload), records.get(sizes[-1], {}).get(workload)
        if not (_valid(first) and _valid(last)):
            return "—"
        return f"{last['us_per_query'] / first['us_per_query']:.2f}x"

    size_columns = [f"{int(s):,}" for s in sizes]
    query_note = (
        "Microseconds per query: the fastest of {rounds} round(s) in each run, and for the floor and FolioDB the "
        "best of {repeat} interleaved run(s) (in brackets: the share of the floor's rate, floor time / this "
        "time). \\* the round stopped at its {budget:g} s budget. ! wrong answers. — not run at this size."
    ).format(rounds=doc["plan"]["rounds"], repeat=doc["repeat"], budget=doc["plan"]["budget"])
    for workload, title in (
        ("find_user", f'Indexed equality find: `list(find({{"{FIELD}": u}}))`, ~5 documents each'),
        ("find_one", 'find_one by `_id`: `find_one({"_id": id})`'),
    ):

        def query_cells(name: str, w: str = workload) -> list[str]:
            return [*(_query_cell(doc["results"][name].get(s, {}).get(w)) for s in sizes), growth(name, w)]

        table(title, [*size_columns, f"{int(sizes[-1]):,} / {int(sizes[0]):,}"], query_cells, query_note)
    table(
        f'Index build: `create_index("{FIELD}")` on the loaded collection',
        size_columns,
        lambda name: [_build_cell(doc["results"][name].get(s, {}).get("build")) for s in sizes],
        "Seconds, the best run (in brackets: the floor's time / this time). no index: the store's create_index builds "
        "nothing its queries use. over budget: interrupted after "
        f"{doc['plan']['build_budget']:g} s.",
    )
    steps = [f"{int(a):,} → {int(b):,}" for a, b in zip(["0", *sizes], sizes, strict=False)]

    def load_cells(name: str) -> list[str]:
        records = doc["results"][name]
        return [fmt_rate(records[s]["load"]["rate"]) if "load" in records.get(s, {}) else "—" for s in sizes]

    table(
        f"Loading: insert_many in batches of {BATCH:,}, the `_id` and `{FIELD}` indexes maintained",
        steps,
        load_cells,
        "Documents per second over each growth step, the best run (untimed: generating the documents).",
    )
    plans = [
        f"- {name} at {int(s):,} docs: {record['explain']['plan']}, "
        + ", ".join(f"{k} {v}" for k, v in record["explain"].items() if k != "plan")
        for name in names
        for s, record in doc["results"][name].items()
        if "explain" in record
    ]
    if plans:
        out.append("FolioDB's plan for one query (`explain()`):\n")
        out.extend(plans)
        out.append("")
    problems = [f"- {name}: {reason}" for name, reason in doc.get("failures", {}).items()]
    if problems:
        out.append("Stopped early:\n")
        out.extend(problems)
        out.append("")
    out.append("Contenders:\n")
    for name in names:
        info = doc["contenders"][name]
        reach = info["sizes"][-1] if info["sizes"] else 0
        limited = "" if reach == int(sizes[-1]) else f"; measured up to {reach:,} documents"
        note = f": {info['note']}" if info["note"] else ""
        out.append(f"- {name} ({info['package']} {info['version']}, {info['storage']}{limited}){note}")
    out.extend(targets_block(doc, "Targets", f"not checked: {OURS} was not measured."))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.indexes", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None, help="collection sizes, ascending (default 10000,100000,1000000)")
    parser.add_argument("--peer-max", type=int, default=None, help="largest size for peers (default 100000)")
    parser.add_argument("--peers", default="all", help="all, or names/families: foliodb,mongita,mongomock,...")
    parser.add_argument("--quick", action="store_true", help="sizes 10k/20k/50k, one 0.3 s round per workload")
    parser.add_argument("--budget", type=float, default=None, help="seconds per round of a query workload")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per query workload (the fastest is kept)")
    parser.add_argument("--repeat", type=int, default=None, help="runs of the floor and FolioDB (default 3, quick 1)")
    parser.add_argument("--build-budget", type=float, default=None, help="seconds an index build may take")
    parser.add_argument("--out", default=None, help="the JSON file to write (default ./benchmark-results/...)")
    parser.add_argument("--workdir", default=None, help="where on-disk stores live (default: the temp dir)")
    parser.add_argument("--profile", default=None, help="a directory for cProfile output per workload and size")
    parser.add_argument("--report", default=None, help="print the tables and targets of an earlier results JSON")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--plan", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        fields = json.loads(args.plan)
        fields["sizes"] = tuple(fields["sizes"])
        plan = IndexPlan(**fields)
        workdir = tempfile.mkdtemp(prefix=f"bench-ix-{args.worker}-", dir=args.workdir)
        try:
            worker(args.worker, plan, workdir, child.Results(args.result), args.profile)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        return
    if args.report:
        earlier = json.loads(Path(args.report).read_text())
        print(markdown(earlier))
        return

    plan = QUICK if args.quick else IndexPlan()
    if args.sizes:
        plan = replace(plan, sizes=tuple(sorted(int(s) for s in args.sizes.split(","))))
    overrides = {"peer_max": args.peer_max, "budget": args.budget, "rounds": args.rounds}
    overrides["build_budget"] = args.build_budget
    plan = replace(plan, **{k: v for k, v in overrides.items() if v is not None})
    if any(size % BLOCK for size in plan.sizes):
        raise SystemExit(f"sizes must be multiples of {BLOCK} (whole customer blocks)")
    names = select(args.peers)
    repeat = args.repeat or (1 if args.quick or args.profile else 3)
    host = socket.gethostname().split(".")[0]
    started = datetime.now()
    doc: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "host": host,
        "command": "python -m benchmarks.indexes " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": machine(),
        "plan": asdict(plan),
        "repeat": repeat,
        "sizes": list(plan.sizes),
        "contenders": {},
        "results": {},
        "failures": {},
    }
    clock = time.perf_counter()
    for name in names:
        cls = CONTENDERS[name]
        doc["contenders"][name] = {
            "storage": cls.storage,
            "package": cls.package,
            "version": version(cls.package),
            "note": NOTES.get(name, ""),
            "sizes": list(plan.sizes_for(name)),
        }
    # The floor and FolioDB carry the targets: they run ``repeat`` times,
    # interleaved (so a slow spell of a shared machine hits both), and keep
    # each measurement's best; the peers run once.
    repeated = [n for n in names if n in FULL_RANGE]
    order = repeated * repeat + [n for n in names if n not in repeated]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for name in order:
        sizes = plan.sizes_for(name)
        print(f"[{time.perf_counter() - clock:6.0f} s] {name} up to {sizes[-1]} documents", file=sys.stderr, flush=True)
        command = ["--worker", name, "--plan", json.dumps(asdict(replace(plan, sizes=sizes)))]
        if args.workdir:
            command += ["--workdir", args.workdir]
        if args.profile:
            os.makedirs(args.profile, exist_ok=True)
            command += ["--profile", args.profile]
        results, failure = child.run("benchmarks.indexes", command, hard_limit(plan, sizes))
        runs[name].append(results)
        if failure:
            doc["failures"][f"{name} (run {len(runs[name])})"] = failure
    doc["results"] = {name: best_of(runs[name]) for name in names}
    doc["machine"]["load_average_at_end"] = list(os.getloadavg())
    doc["elapsed_seconds"] = round(time.perf_counter() - clock, 1)
    add_ratios(doc)
    doc["targets"] = targets(doc)
    save(doc, output_path(args, host, f"{started:%Y-%m-%d}", "indexes"), markdown(doc))


if __name__ == "__main__":
    main()
