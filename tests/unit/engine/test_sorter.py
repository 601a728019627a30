"""The external sorter: stable, top-k with a limit, spilling to SQLite.

Every expected order is Python's own stable ``sorted`` over the same keys.
Manual: https://www.mongodb.com/docs/manual/reference/method/cursor.allowDiskUse/
(blocking sorts over the memory limit spill to disk, or fail without
allowDiskUse) and https://www.mongodb.com/docs/manual/reference/error-codes/
(292 QueryExceededMemoryLimitNoDiskUseAllowed).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import random
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bson import Decimal128, Int64, ObjectId

from foliodb.engine.sorter import sort_documents
from foliodb.errors import CommandError
from foliodb.query.sort import compile_sort

ALLOW_DISK_USE = "https://www.mongodb.com/docs/manual/reference/method/cursor.allowDiskUse/"


def _documents(n: int, seed: int = 7, pad: int = 40) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {"_id": i, "k": rng.randint(0, 50), "s": rng.choice(["x", "y", None, [3, 1]]), "pad": "p" * pad}
        for i in range(n)
    ]


SORT = compile_sort({"k": 1, "s": -1})


def _expected(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(docs, key=SORT.key)  # Python's sort is stable: ties keep input order


def _spill_files() -> list[str]:
    """The files this process has open as SQLite temporary databases (named etilqs_*): the
    sorter's spills. Each must already be unlinked ("(deleted)"): nothing is left behind."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if "etilqs_" in target:
                found.append(target)
    return found


@pytest.fixture
def spill_dir() -> Iterator[None]:
    """No spill file open before or after the test."""
    assert _spill_files() == []
    yield
    assert _spill_files() == []


@pytest.mark.parametrize(("limit", "skip"), [(None, 0), (None, 5), (10, 0), (10, 3), (1, 0), (0, 0), (500, 0)])
def test_in_memory(limit: int | None, skip: int, spill_dir: None) -> None:
    # ALLOW_DISK_USE: a sort within the limit never touches the disk.
    docs = _documents(300)
    stop = None if limit is None else skip + limit
    it = sort_documents(docs, SORT.key, limit=limit, skip=skip)
    first = next(it, None)
    assert _spill_files() == []
    assert [first, *it][: len(docs)] == _expected(docs)[skip:stop] or (first is None and stop == 0)


@pytest.mark.parametrize(("limit", "skip"), [(None, 0), (None, 17), (25, 0), (25, 40), (1, 0), (3000, 0)])
def test_spill_matches_sorted(limit: int | None, skip: int, spill_dir: None) -> None:
    # ALLOW_DISK_USE: over the memory limit, sorted runs go to disk and are merged.
    docs = _documents(3000, pad=1000)  # past the 2 MB SQLite keeps of a temporary database in memory
    stop = None if limit is None else skip + limit
    it = sort_documents(docs, SORT.key, limit=limit, skip=skip, max_memory_bytes=3000)
    first = next(it)
    if limit is None:  # (a small top-k may fit in memory)
        spills = _spill_files()
        assert len(spills) == 1 and spills[0].endswith(" (deleted)")  # unlinked from the start
    assert [first, *it] == _expected(docs)[skip:stop]
    assert _spill_files() == []  # closed afterwards: its space is back


def test_spill_round_trips_values(spill_dir: None) -> None:
    # Spilled documents come back as BSON decodes them: equal values.
    docs = [
        {"_id": ObjectId(f"{i:024x}"), "k": i % 7, "when": datetime.datetime(2024, 1, 1, 0, 0, i % 60, 123000),
         "big": Int64(2**40 + i), "dec": Decimal128(f"{i}.5"), "nested": {"a": [i, {"b": None}]}}
        for i in range(400)
    ]  # fmt: skip
    key = compile_sort({"k": -1}).key
    assert list(sort_documents(docs, key, max_memory_bytes=2000)) == sorted(docs, key=key)


def test_no_disk_use_error(spill_dir: None) -> None:
    # ALLOW_DISK_USE: without it, a sort over the limit fails with 292.
    with pytest.raises(CommandError) as err:
        list(sort_documents(_documents(300), SORT.key, max_memory_bytes=3000, allow_disk_use=False))
    assert err.value.code == 292
    assert err.value.code_name == "QueryExceededMemoryLimitNoDiskUseAllowed"
    assert err.value.errmsg == "Sort exceeded memory limit of 3000 bytes, but did not opt in to external sorting."


def test_top_k_within_memory_needs_no_disk(spill_dir: None) -> None:
    # A limit keeps only skip + limit documents, so a small top-k fits.
    docs = _documents(3000)
    got = list(sort_documents(docs, SORT.key, limit=5, skip=2, max_memory_bytes=3000, allow_disk_use=False))
    assert got == _expected(docs)[2:7]


def test_lazy_and_cleaned_up_on_close(spill_dir: None) -> None:
    consumed = []

    def source() -> Iterator[dict[str, Any]]:
        for doc in _documents(2000, pad=1500):  # past the 2 MB SQLite keeps in memory
            consumed.append(doc["_id"])
            yield doc

    it = sort_documents(source(), SORT.key, max_memory_bytes=2000)
    assert consumed == []  # nothing read before the first next()
    first = next(it)
    assert first == _expected(_documents(2000, pad=1500))[0]
    assert len(consumed) == 2000
    assert _spill_files() != []
    it.close()
    assert _spill_files() == []


def test_a_failing_input_closes_the_spill(spill_dir: None) -> None:
    def source() -> Iterator[dict[str, Any]]:
        yield from _documents(2000)
        raise CommandError(11601, "operation was interrupted")  # killOp, seen by the input's scan

    with pytest.raises(CommandError):
        list(sort_documents(source(), SORT.key, max_memory_bytes=2000))


def test_a_failing_input_closes_a_spill_on_disk(spill_dir: None) -> None:
    # Regression: the runs' connection was closed by the sort only once its input was
    # exhausted; an input that failed after a run was written left it (and its file's space)
    # open until the collector found it. Past the spill's page cache, the file is on disk.
    def source() -> Iterator[dict[str, Any]]:
        yield from _documents(2000, pad=1500)
        raise CommandError(11601, "operation was interrupted")

    with pytest.raises(CommandError) as err:
        list(sort_documents(source(), SORT.key, max_memory_bytes=2000))
    assert err.value.code == 11601
    assert _spill_files() == []  # while the error (and the sort's frames) are still held


def test_a_spilled_sort_goes_on_in_another_thread(spill_dir: None) -> None:
    # A server cursor's getMores run on whichever thread serves them: the spill was opened by
    # the first batch's thread (regression: SQLite refused it, "objects created in a thread can
    # only be used in that same thread").
    docs = _documents(3000)
    it = sort_documents(docs, SORT.key, max_memory_bytes=3000)
    first = [next(it)]
    rest: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def more() -> None:
        try:
            rest.extend(it)
        except BaseException as exc:  # reported below
            errors.append(exc)

    thread = threading.Thread(target=more)
    thread.start()
    thread.join(timeout=60)
    assert errors == []
    assert first + rest == _expected(docs)


_KILLED_CHILD = """
import sys
from foliodb.engine.sorter import sort_documents
from foliodb.query.sort import compile_sort
docs = ({"_id": i, "k": (i * 7919) % 1000, "pad": "p" * 200} for i in range(20000))
it = sort_documents(docs, compile_sort({"k": 1}).key, max_memory_bytes=100_000)
next(it)
print("spilled", flush=True)
sys.stdin.read()
"""


def test_kill_9_leaves_no_spill_file(tmp_path: Path) -> None:
    # SQLite puts temporary databases in SQLITE_TMPDIR and unlinks them at once: a process
    # killed mid-sort leaves nothing there (nothing to clean up at the next start).
    env = {**os.environ, "SQLITE_TMPDIR": str(tmp_path)}
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_CHILD], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "spilled"
        held = [os.readlink(f"/proc/{child.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{child.pid}/fd")]
        assert any(target.startswith(str(tmp_path)) and target.endswith(" (deleted)") for target in held)
        assert os.listdir(tmp_path) == []  # in use, and already unlinked
    finally:
        child.kill()
        child.wait(timeout=30)
    assert os.listdir(tmp_path) == []


def test_memory_stays_flat(spill_dir: None) -> None:
    # Sorting ~10 MB of documents with a 64 KiB limit holds far less than the input.
    n, pad = 12_000, 800

    def source() -> Iterator[dict[str, Any]]:
        rng = random.Random(3)
        for i in range(n):
            yield {"_id": i, "k": rng.random(), "pad": "p" * pad}

    key = compile_sort({"k": 1}).key
    tracemalloc.start()
    try:
        previous = -1.0
        count = 0
        for doc in sort_documents(source(), key, max_memory_bytes=64 * 1024):
            assert doc["k"] >= previous
            previous = doc["k"]
            count += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == n
    assert peak < 3 * 1024 * 1024, peak  # the documents alone are over 10 MB


def test_negative_arguments() -> None:
    with pytest.raises(ValueError):
        list(sort_documents([], SORT.key, skip=-1))
    with pytest.raises(ValueError):
        list(sort_documents([], SORT.key, limit=-1))
