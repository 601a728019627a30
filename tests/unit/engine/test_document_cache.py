"""The document cache's build policy (engine/cache.py): a collection written while its scans
build entries stops being built until a scan finds it quiet; a build that would evict entries
goes ahead only for a collection scanned more often lately than each of them.

Regression: 8 writer threads beside 2 scanning readers on one embedded client (the
embedded_mix benchmark) had every scan decode the whole collection into an entry that a
write made useless before it went in, then decode again what it returned: twice the
readers' work, and tens of thousands of dicts for the cyclic collector, whose full
collections stop every thread (the writers' p99)."""

from __future__ import annotations

from bson import ObjectId
from hypothesis import given
from hypothesis import strategies as st

import foliodb
from foliodb.engine.cache import (
    NEEDLE_SCANS_BEFORE_BUILD,
    PATCH_MIN,
    SCANS_PER_AGE,
    DocumentCache,
    Haystack,
    Row,
    entry_size,
    row_size,
)

MAX = 1 << 20
ROWS: list[Row] = [(1, b"\x05\x00\x00\x00\x00", {})]
SIZE = row_size(b"\x05\x00\x00\x00\x00")
HAYSTACK = Haystack.of(ROWS)


def _rows(cache: DocumentCache, cid: int, stamp: int) -> list[Row] | None:
    """The rows of the collection's entry for a reader stamped ``stamp`` (None: no entry for it)."""
    found = cache.get(cid, stamp)
    return None if found is None else found[0].rows


def _write(cache: DocumentCache, commits: int) -> None:
    """A write of records it does not name (the entry goes) to collection 1 that commits as
    commit number ``commits``."""
    cache.writing(1, None)
    cache.write_ended(commits, committed=True)


def test_a_build_overtaken_by_a_write_stops_builds_until_a_scan_finds_no_write_since() -> None:
    cache = DocumentCache(MAX)
    assert cache.room_for(1) == MAX  # never built: build
    _write(cache, 4)  # lands while the scan stamped 3 builds
    cache.put(1, ROWS, SIZE, stamp=3, haystack=HAYSTACK)
    assert cache.get(1, 4) is None and cache.builds == 0  # wasted
    _write(cache, 5)
    assert cache.room_for(1) == 0  # written since the wasted build: no build
    _write(cache, 6)
    assert cache.room_for(1) == 0  # written since the last scan: still none
    assert cache.room_for(1) == MAX  # no write since the last scan: build again
    cache.put(1, ROWS, SIZE, stamp=6, haystack=HAYSTACK)
    assert _rows(cache, 1, 6) == ROWS and cache.builds == 1


def test_a_write_between_scans_alone_does_not_stop_builds() -> None:
    cache = DocumentCache(MAX)
    cache.put(1, ROWS, SIZE, stamp=0, haystack=HAYSTACK)
    _write(cache, 1)  # drops the entry
    assert cache.get(1, 1) is None
    assert cache.room_for(1) == MAX  # no build was wasted: the next scan builds
    cache.put(1, ROWS, SIZE, stamp=1, haystack=HAYSTACK)
    assert _rows(cache, 1, 1) == ROWS


def test_a_dropped_collection_forgets_its_wasted_build() -> None:
    cache = DocumentCache(MAX)
    _write(cache, 2)
    cache.put(1, ROWS, SIZE, stamp=1, haystack=HAYSTACK)  # wasted
    _write(cache, 3)
    cache.forget(1)
    assert cache.room_for(1) == MAX


def test_needle_scans_build_an_entry_every_so_many_of_them() -> None:
    cache = DocumentCache(MAX)
    assert [cache.needle_scan_due(1) for _ in range(NEEDLE_SCANS_BEFORE_BUILD - 1)] == [False] * (
        NEEDLE_SCANS_BEFORE_BUILD - 1
    )
    _write(cache, 1)  # the count goes on: an entry now outlives writes
    assert cache.needle_scan_due(1) is True
    due = [cache.needle_scan_due(1) for _ in range(NEEDLE_SCANS_BEFORE_BUILD)]
    assert due == [False] * (NEEDLE_SCANS_BEFORE_BUILD - 1) + [True]  # and again after a build's turn
    assert cache.needle_scan_due(2) is False  # per collection


def test_repeated_equality_scans_of_a_quiet_collection_come_to_use_the_cache() -> None:
    """End to end: a filter on an ObjectId (a needle) over a collection; the answers stay
    what a plain-Python filter of the documents gives, before and after, and a write
    later patches the entry instead of dropping it."""
    owners = [ObjectId() for _ in range(5)]
    docs = [{"_id": i, "owner": owners[i % 5], "n": i} for i in range(200)]
    with foliodb.MongoClient(":memory:") as client:
        coll = client.db.c

        def status() -> dict[str, int]:
            return dict(client.admin.command("serverStatus")["documentCache"])

        coll.insert_many(docs)
        for scan in range(NEEDLE_SCANS_BEFORE_BUILD + 3):
            owner = owners[scan % 5]
            found = sorted(d["n"] for d in coll.find({"owner": owner}))
            assert found == [d["n"] for d in docs if d["owner"] == owner]
            assert status()["builds"] == (0 if scan < NEEDLE_SCANS_BEFORE_BUILD - 1 else 1), scan
        coll.insert_one({"_id": -1, "owner": owners[0], "n": -1})  # one delta on the entry
        assert sorted(d["n"] for d in coll.find({"owner": owners[0]}))[0] == -1
        assert (status()["builds"], status()["patches"]) == (1, 1)


def _scan(cache: DocumentCache, cid: int, size: int) -> bool:
    """A scan of collection ``cid`` (an entry of ``size`` bytes) as record_reads runs one:
    whether it found an entry or built one."""
    if cache.get(cid, 0) is not None:
        return True
    if not cache.admits(cid, size):
        return False
    cache.put(cid, ROWS, size, stamp=0, haystack=HAYSTACK)
    return True


def test_scans_cycling_over_more_than_fits_keep_the_first_entries_instead_of_evicting_each() -> None:
    """Four collections scanned in turn, two fitting: with eviction alone every scan would
    build an entry and evict the one needed next; admitted by scan counts, the first two stay
    and the other two are read without the cache."""
    cache = DocumentCache(MAX)
    half = MAX // 2
    served = [[_scan(cache, cid, half) for cid in (1, 2, 3, 4)] for _ in range(5)]
    assert served == [[True, True, False, False]] * 5
    assert (cache.builds, cache.evictions, cache.refusals) == (2, 0, 10)
    assert cache.bytes == MAX


def test_a_collection_scanned_more_than_a_cached_one_takes_its_place() -> None:
    cache = DocumentCache(MAX)
    assert _scan(cache, 1, MAX)  # cached; scanned once
    assert not _scan(cache, 2, MAX)  # once each: no eviction for it
    assert _scan(cache, 2, MAX)  # scanned twice, collection 1 once: it goes
    assert (cache.builds, cache.evictions) == (2, 1)
    assert cache.get(1, 0) is None and _rows(cache, 2, 0) == ROWS


def test_scan_counts_fade_so_a_once_busy_collection_gives_way() -> None:
    busy = 100

    def refusals_before_admission(idle_scans: int) -> int:
        cache = DocumentCache(MAX)
        for _ in range(busy):
            assert _scan(cache, 1, MAX)
        for _ in range(idle_scans):  # scans of a collection that has no part here (the cache is full)
            cache.get(3, 0)
        refused = 0
        while not _scan(cache, 2, MAX):
            refused += 1
        assert _rows(cache, 2, 0) == ROWS and cache.get(1, 0) is None
        return refused

    # Unfaded, collection 2 must outnumber collection 1's scans since their last halving.
    assert refusals_before_admission(0) >= min(busy, SCANS_PER_AGE) // 2
    # After three halvings of every count, an eighth of them (or less) stands in its way.
    assert 1 <= refusals_before_admission(SCANS_PER_AGE * 3 + busy) <= busy // 8 + 1


def test_a_build_that_fits_beside_the_entries_needs_no_count() -> None:
    cache = DocumentCache(MAX)
    for _ in range(5):
        assert _scan(cache, 1, MAX // 4)
    assert _scan(cache, 2, MAX // 4)  # scanned once, fits in the free room
    assert cache.refusals == 0 and cache.evictions == 0


@given(st.lists(st.binary(min_size=5, max_size=400), max_size=50))
def test_entry_size_is_what_a_build_counts(blobs: list[bytes]) -> None:
    rows: list[Row] = [(rid, data, {}) for rid, data in enumerate(blobs, 1)]
    counted = sum(row_size(data) for _, data, _ in rows) + Haystack.of(rows).size()
    assert entry_size(len(blobs), sum(map(len, blobs))) == counted


def test_a_collection_thinned_by_deletes_is_cached_once_its_rows_fit() -> None:
    """Record ids span the deleted records too: the rows' own sizes decide."""
    with foliodb.MongoClient(":memory:") as client:
        client.admin.command("setParameter", 1, documentCacheSizeMB=1)
        coll = client.db.c
        coll.insert_many([{"_id": i, "n": i % 7, "pad": "x" * 200} for i in range(3000)])  # ~5 MB counted
        coll.delete_many({"_id": {"$gte": 150, "$lt": 2850}})  # the record ids still span 3,000
        kept = [*range(150), *range(2850, 3000)]
        for _ in range(2):
            assert sorted(d["_id"] for d in coll.find({"n": {"$gt": 5}})) == [i for i in kept if i % 7 > 5]
        status = client.admin.command("serverStatus")["documentCache"]
        assert (status["builds"], status["hits"], status["documents"]) == (1, 1, 300)


def test_a_long_cycle_keeps_its_entries_across_the_halvings() -> None:
    """A cycle over 100 collections (two fit), 20 times round: far more scans than a halving's
    period, so counts halve between two visits to a collection unless the period grows with
    the collections counted; the two first entries stay (no churn), every later visit to them
    a hit."""
    cache = DocumentCache(MAX)
    half = MAX // 2
    for _ in range(20):
        for cid in range(1, 101):
            _scan(cache, cid, half)
    assert cache.builds <= 4 and cache.evictions <= 2
    assert cache.hits >= 2 * 19 - 2


def test_a_committed_write_leaves_the_entry_with_its_delta_for_readers_that_see_it() -> None:
    cache = DocumentCache(MAX)
    cache.put(1, ROWS, SIZE, stamp=0, haystack=HAYSTACK)
    cache.writing(1, [5])
    assert cache.get(1, 0) is not None  # written, not yet committing: in no reader's snapshot
    cache.committing = True
    assert cache.get(1, 0) is None  # committing: a reader cannot tell whether it sees the write
    cache.write_ended(1, committed=True)
    assert cache.committing is False
    found = cache.get(1, 0)  # stamped before the write: its snapshot may hold it or not, patching tells
    assert found is not None and found[1] == ((1, frozenset({5})),)
    found = cache.get(1, 1)
    assert found is not None and found[0].rows is ROWS and found[1] == ((1, frozenset({5})),)


def test_a_rolled_back_write_and_one_past_the_patch_limit_drop_the_entry() -> None:
    cache = DocumentCache(MAX)
    cache.put(1, ROWS, SIZE, stamp=0, haystack=HAYSTACK)
    cache.writing(1, [5])
    cache.write_ended(1, committed=False)
    assert cache.get(1, 9) is None
    cache.put(1, ROWS, SIZE, stamp=2, haystack=HAYSTACK)
    cache.writing(1, range(PATCH_MIN + 1))
    cache.write_ended(3, committed=True)
    assert cache.get(1, 9) is None and cache.bytes == 0


def test_patched_rows_replace_the_entry_as_of_its_newest_delta_keeping_later_ones() -> None:
    cache = DocumentCache(MAX)
    cache.put(1, ROWS, SIZE, stamp=0, haystack=HAYSTACK)
    cache.writing(1, [5])
    cache.write_ended(1, committed=True)
    found = cache.get(1, 1)
    assert found is not None
    entry, deltas = found
    cache.writing(1, [6])  # a write lands while the reader patches
    cache.write_ended(2, committed=True)
    patched: list[Row] = [*ROWS, (5, b"\x05\x00\x00\x00\x00", {})]
    cache.patched(1, entry, len(deltas), patched, SIZE * 2, stamp=1)
    assert cache.get(1, 0) is None  # as of the patching reader's stamp
    now = cache.get(1, 2)
    assert now is not None and now[0].rows is patched and now[0].since == 1 and now[1] == ((2, frozenset({6})),)
    assert cache.bytes == SIZE * 2 and cache.patches == 1
    cache.patched(1, entry, len(deltas), ROWS, SIZE, stamp=2)  # the same entry again: already replaced
    assert cache.get(1, 2) == now


def test_a_reader_older_than_a_delta_patches_and_leaves_it_pending() -> None:
    cache = DocumentCache(MAX)
    cache.put(1, ROWS, SIZE, stamp=0, haystack=HAYSTACK)
    for commit, rid in ((1, 5), (2, 6)):
        cache.writing(1, [rid])
        cache.write_ended(commit, committed=True)
    found = cache.get(1, 1)  # its snapshot holds commit 1, and commit 2 perhaps
    assert found is not None and len(found[1]) == 2
    cache.patched(1, found[0], 2, ROWS, SIZE, stamp=1)
    now = cache.get(1, 1)
    assert now is not None and now[0].since == 1 and now[1] == ((2, frozenset({6})),)
