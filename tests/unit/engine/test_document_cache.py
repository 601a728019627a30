"""The document cache's build policy (engine/cache.py): a collection written while its scans
build entries stops being built until a scan finds it quiet.

Regression: 8 writer threads beside 2 scanning readers on one embedded client (the
embedded_mix benchmark) had every scan decode the whole collection into an entry that a
write made useless before it went in, then decode again what it returned: twice the
readers' work, and tens of thousands of dicts for the cyclic collector, whose full
collections stop every thread (the writers' p99)."""

from __future__ import annotations

from foliodb.engine.cache import DocumentCache, Row, row_size

MAX = 1 << 20
ROWS: list[Row] = [(1, b"\x05\x00\x00\x00\x00", {})]
SIZE = row_size(b"\x05\x00\x00\x00\x00")


def _write(cache: DocumentCache, commits: int) -> None:
    """A write to collection 1 that commits as commit number ``commits``."""
    cache.writing(1)
    cache.write_ended(commits, committed=True)


def test_a_build_overtaken_by_a_write_stops_builds_until_a_scan_finds_no_write_since() -> None:
    cache = DocumentCache(MAX)
    assert cache.room_for(1) == MAX  # never built: build
    _write(cache, 4)  # lands while the scan stamped 3 builds
    cache.put(1, ROWS, SIZE, stamp=3)
    assert cache.get(1, 4) is None and cache.builds == 0  # wasted
    _write(cache, 5)
    assert cache.room_for(1) == 0  # written since the wasted build: no build
    _write(cache, 6)
    assert cache.room_for(1) == 0  # written since the last scan: still none
    assert cache.room_for(1) == MAX  # no write since the last scan: build again
    cache.put(1, ROWS, SIZE, stamp=6)
    assert cache.get(1, 6) == ROWS and cache.builds == 1


def test_a_write_between_scans_alone_does_not_stop_builds() -> None:
    cache = DocumentCache(MAX)
    cache.put(1, ROWS, SIZE, stamp=0)
    _write(cache, 1)  # drops the entry
    assert cache.get(1, 1) is None
    assert cache.room_for(1) == MAX  # no build was wasted: the next scan builds
    cache.put(1, ROWS, SIZE, stamp=1)
    assert cache.get(1, 1) == ROWS


def test_a_dropped_collection_forgets_its_wasted_build() -> None:
    cache = DocumentCache(MAX)
    _write(cache, 2)
    cache.put(1, ROWS, SIZE, stamp=1)  # wasted
    _write(cache, 3)
    cache.forget(1)
    assert cache.room_for(1) == MAX
