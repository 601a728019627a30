"""The external sorter: stable, top-k with a limit, spilling to SQLite.

Every expected order is Python's own stable ``sorted`` over the same keys.
Manual: https://www.mongodb.com/docs/manual/reference/method/cursor.allowDiskUse/
(blocking sorts over the memory limit spill to disk, or fail without
allowDiskUse) and https://www.mongodb.com/docs/manual/reference/error-codes/
(292 QueryExceededMemoryLimitNoDiskUseAllowed).
"""

from __future__ import annotations

import datetime
import os
import random
import tempfile
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


@pytest.fixture
def spill_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Temporary files go where the test can see them.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(("limit", "skip"), [(None, 0), (None, 5), (10, 0), (10, 3), (1, 0), (0, 0), (500, 0)])
def test_in_memory(limit: int | None, skip: int, spill_dir: Path) -> None:
    # ALLOW_DISK_USE: a sort within the limit never touches the disk.
    docs = _documents(300)
    stop = None if limit is None else skip + limit
    assert list(sort_documents(docs, SORT.key, limit=limit, skip=skip)) == _expected(docs)[skip:stop]
    assert os.listdir(spill_dir) == []


@pytest.mark.parametrize(("limit", "skip"), [(None, 0), (None, 17), (25, 0), (25, 40), (1, 0), (3000, 0)])
def test_spill_matches_sorted(limit: int | None, skip: int, spill_dir: Path) -> None:
    # ALLOW_DISK_USE: over the memory limit, sorted runs go to disk and are merged.
    docs = _documents(3000)
    stop = None if limit is None else skip + limit
    it = sort_documents(docs, SORT.key, limit=limit, skip=skip, max_memory_bytes=3000)
    first = next(it)
    if limit is None:  # (a small top-k may fit in memory)
        assert next(p.name for p in spill_dir.iterdir()).startswith("foliodb-sort-")
    assert [first, *it] == _expected(docs)[skip:stop]
    assert os.listdir(spill_dir) == []  # deleted afterwards


def test_spill_round_trips_values(spill_dir: Path) -> None:
    # Spilled documents come back as BSON decodes them: equal values.
    docs = [
        {"_id": ObjectId(f"{i:024x}"), "k": i % 7, "when": datetime.datetime(2024, 1, 1, 0, 0, i % 60, 123000),
         "big": Int64(2**40 + i), "dec": Decimal128(f"{i}.5"), "nested": {"a": [i, {"b": None}]}}
        for i in range(400)
    ]  # fmt: skip
    key = compile_sort({"k": -1}).key
    assert list(sort_documents(docs, key, max_memory_bytes=2000)) == sorted(docs, key=key)


def test_no_disk_use_error(spill_dir: Path) -> None:
    # ALLOW_DISK_USE: without it, a sort over the limit fails with 292.
    with pytest.raises(CommandError) as err:
        list(sort_documents(_documents(300), SORT.key, max_memory_bytes=3000, allow_disk_use=False))
    assert err.value.code == 292
    assert err.value.code_name == "QueryExceededMemoryLimitNoDiskUseAllowed"
    assert err.value.errmsg == "Sort exceeded memory limit of 3000 bytes, but did not opt in to external sorting."
    assert os.listdir(spill_dir) == []


def test_top_k_within_memory_needs_no_disk(spill_dir: Path) -> None:
    # A limit keeps only skip + limit documents, so a small top-k fits.
    docs = _documents(3000)
    got = list(sort_documents(docs, SORT.key, limit=5, skip=2, max_memory_bytes=3000, allow_disk_use=False))
    assert got == _expected(docs)[2:7]


def test_lazy_and_cleaned_up_on_close(spill_dir: Path) -> None:
    consumed = []

    def source() -> Iterator[dict[str, Any]]:
        for doc in _documents(2000):
            consumed.append(doc["_id"])
            yield doc

    it = sort_documents(source(), SORT.key, max_memory_bytes=2000)
    assert consumed == []  # nothing read before the first next()
    first = next(it)
    assert first == _expected(_documents(2000))[0]
    assert len(consumed) == 2000
    assert os.listdir(spill_dir) != []
    it.close()
    assert os.listdir(spill_dir) == []


def test_memory_stays_flat(spill_dir: Path) -> None:
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
