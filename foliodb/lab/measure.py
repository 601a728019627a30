"""Running a scenario: each design in a scratch database of its own, the same
workload against each, and what it cost.

Three passes per design, so that measuring does not disturb what is measured:

1. timing: the whole workload (every question, interleaved in the proportions
   of their weights), each call timed, each answer kept for the comparison;
2. storage: ``dbStats`` (data and index bytes) once the workload has run;
3. counting: the design loaded again into a fresh database and the same
   workload replayed from its start, with the profiler on (level 2), until every
   question has run ``COUNTED_CALLS`` times, reading ``docsExamined``,
   ``keysExamined`` and the documents each call wrote from ``system.profile``:
   index entries and documents touched, and the write amplification (documents
   written per logical write). Replaying from the start on a fresh load keeps
   every call's argument valid (an insert's ``_id`` is new again).
"""

from __future__ import annotations

import copy
import random
import statistics
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bson import ObjectId

from foliodb.lab.scenario import Db, Design, Question, Scenario

COUNTED_CALLS = 10  # calls of each question re-run under the profiler


@dataclass
class Measurement:
    """One question against one design: per call times in microseconds, and per
    call averages of what the profiler saw."""

    question: str
    kind: str
    calls: int
    median_us: float
    p95_us: float
    docs_examined: float = 0.0
    keys_examined: float = 0.0
    docs_written: float = 0.0
    operations: float = 0.0  # database operations (queries, writes) per call


@dataclass
class DesignResult:
    design: str
    summary: str
    available: bool = True
    data_bytes: int = 0
    index_bytes: int = 0
    measurements: list[Measurement] = field(default_factory=list)
    answers: dict[str, list[Any]] = field(default_factory=dict)

    def measurement(self, question: str) -> Measurement | None:
        return next((m for m in self.measurements if m.question == question), None)


@dataclass
class ScenarioResult:
    scenario: Scenario
    size: int
    designs: list[DesignResult]
    # question -> designs whose answers differ from the first design's
    mismatches: dict[str, list[str]] = field(default_factory=dict)


def schedule(scenario: Scenario, data: Any, calls: int, seed: int) -> list[tuple[Question, Any]]:
    """The workload: ``calls`` x weight calls of each question, shuffled into one
    sequence every design runs alike, then each call's argument drawn in that
    order (so a clock the arguments carry, a new post's time, runs forward)."""
    rng = random.Random(seed)
    questions = [q for q in scenario.questions for _ in range(calls * q.weight)]
    rng.shuffle(questions)
    return [(q, q.arguments(data, rng)) for q in questions]


def _percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _profiled(db: Db, after: ObjectId) -> list[dict[str, Any]]:
    return list(db.system.profile.find({"_id": {"$gt": after}}, {"command": 0}))


def _written(entry: dict[str, Any]) -> int:
    return int(
        entry.get("ninserted", 0) + entry.get("nModified", 0) + entry.get("ndeleted", 0) + entry.get("nUpserted", 0)
    )


def run_design(design: Design, db: Db, data: Any, work: list[tuple[Question, Any]]) -> DesignResult:
    result = DesignResult(design.name, design.summary)
    if not design.available(db):
        result.available = False
        return result
    design.load(db, copy.deepcopy(data))
    times: dict[str, list[float]] = {}
    for question, argument in work:
        answer = design.answers[question.name]
        started = time.perf_counter()
        value = answer(db, copy.deepcopy(argument))
        elapsed = time.perf_counter() - started
        times.setdefault(question.name, []).append(elapsed * 1e6)
        result.answers.setdefault(question.name, []).append(value)
    stats = db.command("dbStats")
    result.data_bytes, result.index_bytes = int(stats["dataSize"]), int(stats["indexSize"])
    db.client.drop_database(db.name)
    design.load(db, copy.deepcopy(data))
    counts = _count(design, db, work)
    kinds = {q.name: q.kind for q, _ in work}
    for name, samples in times.items():
        seen = counts.get(name, [])
        n = max(len(seen), 1)
        result.measurements.append(
            Measurement(
                question=name,
                kind=kinds[name],
                calls=len(samples),
                median_us=statistics.median(samples),
                p95_us=_percentile(samples, 0.95),
                docs_examined=sum(int(e.get("docsExamined", 0)) for call in seen for e in call) / n,
                keys_examined=sum(int(e.get("keysExamined", 0)) for call in seen for e in call) / n,
                docs_written=sum(_written(e) for call in seen for e in call) / n,
                operations=sum(len(call) for call in seen) / n,
            )
        )
    return result


def _count(design: Design, db: Db, work: list[tuple[Question, Any]]) -> dict[str, list[list[dict[str, Any]]]]:
    """The profiler's entries of each replayed call, per question (at most
    ``COUNTED_CALLS`` a question are kept)."""
    db.command("profile", 2)
    try:
        counted: dict[str, list[list[dict[str, Any]]]] = {}
        last = ObjectId()
        wanted = {question.name for question, _ in work}
        for question, argument in work:
            calls = counted.setdefault(question.name, [])
            if len(calls) >= COUNTED_CALLS:
                wanted.discard(question.name)
                if not wanted:
                    break
            design.answers[question.name](db, copy.deepcopy(argument))
            entries = [e for e in _profiled(db, last) if not e.get("ns", "").endswith(".system.profile")]
            if len(calls) < COUNTED_CALLS:
                calls.append(entries)
            last = ObjectId()
        return counted
    finally:
        db.command("profile", 0)


def run_scenario(client: Any, scenario: Scenario, size: int, *, calls: int = 20, seed: int = 1) -> ScenarioResult:
    """Every design of ``scenario`` at ``size`` in a scratch database of ``client``
    (dropped before and after), with ``calls`` x weight calls of each question."""
    data = scenario.generate(size, random.Random(seed))
    work = schedule(scenario, data, calls, seed + zlib.crc32(scenario.name.encode()))
    results = []
    for number, design in enumerate(scenario.designs):
        name = f"lab_{scenario.name}_{number}"
        client.drop_database(name)
        try:
            results.append(run_design(design, client[name], data, work))
        finally:
            client.drop_database(name)
    outcome = ScenarioResult(scenario, size, results)
    measured = [r for r in results if r.available]
    for question in scenario.questions:
        if measured:
            first = measured[0].answers.get(question.name)
            differing = [r.design for r in measured[1:] if r.answers.get(question.name) != first]
            if differing:
                outcome.mismatches[question.name] = differing
    return outcome
