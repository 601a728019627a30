"""A cached collection's needle scans find their rows by one search of its bytes.

A collection scan whose filter has *needles* (string, ObjectId and date
equalities, and ``$in`` lists of them: byte strings a matching document's BSON
must hold) runs over a cached collection by searching the entry's BSON, laid
end to end (``engine/cache.py``'s ``Haystack``), for the rows holding one of
the first group's needles, then testing each such row's own bytes and the
filter. Checked here:

1. ``Haystack.rows_holding`` against a brute force: the rows in which some
   occurrence of a needle starts (an occurrence may run into the next row:
   the callers test each row's own bytes).
2. End to end, random documents and random needle filters (equalities, ``$in``,
   two at once, with and without a sort and a limit) answer through a warm cache
   exactly as a plain-Python evaluation of the filter does, in record order.
"""

from __future__ import annotations

import datetime
from typing import Any

from bson import ObjectId
from hypothesis import given, settings
from hypothesis import strategies as st

import foliodb
from foliodb.engine.cache import NEEDLE_SCANS_BEFORE_BUILD, Haystack

_ABC = st.sampled_from(b"abc")  # a small alphabet: needles occur, straddle rows and overlap
_CHUNK = st.lists(_ABC, max_size=10).map(bytes)
_NEEDLE = st.lists(_ABC, min_size=1, max_size=3).map(bytes)


@settings(max_examples=300, deadline=None)
@given(chunks=st.lists(_CHUNK, max_size=12), needles=st.lists(_NEEDLE, min_size=1, max_size=3))
def test_rows_holding_are_the_rows_where_a_needle_starts(chunks: list[bytes], needles: list[bytes]) -> None:
    rows = [(i, chunk, {}) for i, chunk in enumerate(chunks)]
    blob = b"".join(chunks)
    owner = [i for i, chunk in enumerate(chunks) for _ in chunk]  # the row of each byte of blob
    expected = sorted(
        {owner[at] for needle in needles for at in range(len(blob) - len(needle) + 1) if blob.startswith(needle, at)}
    )
    assert Haystack.of(rows).rows_holding(needles) == expected


_OWNERS = [ObjectId(f"{i:024x}") for i in range(1, 5)]
_NAMES = ["ann", "bo", "annie", "b"]  # prefixes of one another: a needle must not match a longer string
_DAYS = [datetime.datetime(2024, 1, d) for d in (1, 2, 3)]
_DOC = st.fixed_dictionaries(
    {"owner": st.sampled_from(_OWNERS), "name": st.sampled_from(_NAMES), "day": st.sampled_from(_DAYS)},
    optional={"n": st.integers(-2, 2), "tags": st.lists(st.sampled_from(_NAMES), max_size=2)},
)
_FILTER = st.one_of(
    st.builds(lambda v: {"owner": v}, st.sampled_from(_OWNERS)),
    st.builds(lambda v: {"name": v}, st.sampled_from(_NAMES)),
    st.builds(lambda v: {"day": v}, st.sampled_from(_DAYS)),
    st.builds(lambda vs: {"name": {"$in": vs}}, st.lists(st.sampled_from(_NAMES), min_size=1, max_size=2)),
    st.builds(lambda a, b: {"owner": a, "name": b}, st.sampled_from(_OWNERS), st.sampled_from(_NAMES)),
    st.builds(lambda v: {"tags": v}, st.sampled_from(_NAMES)),
)


def _matches(doc: dict[str, Any], spec: dict[str, Any]) -> bool:
    for field, want in spec.items():
        have = doc.get(field)
        wanted = want["$in"] if isinstance(want, dict) else [want]
        held = have if isinstance(have, list) else [have]
        if not any(w in held for w in wanted):
            return False
    return True


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(_DOC, min_size=1, max_size=40),
    filters=st.lists(_FILTER, min_size=1, max_size=4),
    limit=st.sampled_from([0, 1, 3]),
)
def test_needle_scans_through_a_warm_cache_answer_as_python(
    docs: list[dict[str, Any]], filters: list[dict[str, Any]], limit: int
) -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.c
        coll.insert_many([{"_id": i, **doc} for i, doc in enumerate(docs)])
        for _ in range(NEEDLE_SCANS_BEFORE_BUILD):  # the last one builds the entry
            list(coll.find(filters[0]))
        assert client.admin.command("serverStatus")["documentCache"]["builds"] == 1
        for spec in filters:
            expected = [i for i, doc in enumerate(docs) if _matches(doc, spec)]
            assert [d["_id"] for d in coll.find(spec)] == expected, spec
            if limit:
                assert [d["_id"] for d in coll.find(spec).sort("_id", -1).limit(limit)] == expected[::-1][:limit]
        assert client.admin.command("serverStatus")["documentCache"]["builds"] == 1  # nothing rebuilt it
