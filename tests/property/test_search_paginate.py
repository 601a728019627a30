"""searchAfter / searchBefore pages, for random documents, sorts and page sizes, against Python.

Walking forward with ``searchAfter`` from the first page, and backward with ``searchBefore``
from the last document, must give exactly the search's order, which is computed here
independently: BM25 scores (tests/unit/search/text_reference.py) rounded to float32, then
the ``sort`` fields (a missing value lowest unless ``noData: "highest"``), then higher score,
then insertion order (Atlas's documented pagination, FolioDB's tie order).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.operations import SearchIndexModel

import foliodb
from tests.unit.search.conftest import wait_ready
from tests.unit.search.text_reference import float32, score_terms

WORDS = ["apple", "berry", "cherry"]
DOCS = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
        st.one_of(st.none(), st.integers(0, 3)),
        st.sampled_from(["x", "y", "z"]),
    ),
    min_size=1,
    max_size=20,
)
SORTS = st.sampled_from(
    [
        None,
        {"n": 1},
        {"n": -1},
        {"g": 1, "n": -1},
        {"n": {"order": 1, "noData": "highest"}},
        {"g": -1},
        {"s": {"$meta": "searchScore", "order": 1}},
        {"n": 1, "s": {"$meta": "searchScore"}},
    ]
)
DEFINITION = {"mappings": {"fields": {"body": {"type": "string"}, "n": {"type": "number"}, "g": {"type": "token"}}}}


def _expected(docs: list[tuple[str, Any, str]], word: str, sort: dict[str, Any] | None) -> list[int]:
    scores = score_terms({i: body for i, (body, _, _) in enumerate(docs)}, [word])
    order = sorted(scores, key=lambda i: (-float32(scores[i]), i))
    for path, how in reversed(list((sort or {}).items())):  # least significant first, stable sorts
        if isinstance(how, dict) and how.get("$meta") == "searchScore":
            order = sorted(order, key=lambda i: float32(scores[i]), reverse=how.get("order", -1) == -1)
            continue
        direction = how["order"] if isinstance(how, dict) else how
        highest = isinstance(how, dict) and how.get("noData") == "highest"
        column = 1 if path == "n" else 2

        def key(i: int, column: int = column, highest: bool = highest) -> tuple[int, Any]:
            value = docs[i][column]
            return (2 if highest else 0, 0) if value is None else (1, value)

        order = sorted(order, key=key, reverse=direction == -1)
    return order


def _page(coll: Any, stage: dict[str, Any], size: int) -> list[tuple[int, str]]:
    pipeline = [{"$search": stage}, {"$limit": size}, {"$project": {"t": {"$meta": "searchSequenceToken"}}}]
    return [(d["_id"], d["t"]) for d in coll.aggregate(pipeline)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=DOCS, word=st.sampled_from(WORDS), sort=SORTS, size=st.integers(1, 4))
def test_pages_walk_the_order(docs: list[tuple[str, Any, str]], word: str, sort: Any, size: int) -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.docs
        coll.insert_many(
            [{"_id": i, "body": b, "g": g} | ({} if n is None else {"n": n}) for i, (b, n, g) in enumerate(docs)]
        )
        coll.create_search_index(SearchIndexModel(name="default", definition=DEFINITION))
        wait_ready(coll, "default")
        stage: dict[str, Any] = {"text": {"query": word, "path": "body"}}
        if sort is not None:
            stage["sort"] = sort
        expected = _expected(docs, word, sort)
        forward: list[int] = []
        page = _page(coll, stage, size)
        while page:
            forward += [i for i, _ in page]
            page = _page(coll, {**stage, "searchAfter": page[-1][1]}, size)
        assert forward == expected
        if not expected:
            return
        last = _page(coll, stage, len(expected))[-1][1]
        backward: list[int] = []
        page = _page(coll, {**stage, "searchBefore": last}, size)
        while page:
            backward = [i for i, _ in reversed(page)] + backward
            page = _page(coll, {**stage, "searchBefore": page[-1][1]}, size)
        assert backward == expected[:-1]


# Scores that tie, tie once rounded to float32 (1 + 1e-9 rounds to 1), and are not finite.
_RAW = [0.0, -0.0, 1.0, 1.0 + 1e-9, 1.0 - 1e-9, 2.5, 2.5 + 1e-12, 3.0, -1.0, float("inf"), float("-inf"), float("nan")]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    size=st.integers(0, 700),
    pool=st.lists(st.sampled_from(_RAW), min_size=1, max_size=6, unique_by=repr),
    finite=st.booleans(),
    data=st.data(),
)
def test_best_first_orders_as_the_general_path(size: int, pool: list[float], finite: bool, data: Any) -> None:
    """Pager.best_first (the score order's first 256 found with a partition) against
    Pager.order (a sort of every match) and, for finite scores, a plain-Python sort: higher
    float32 score first, then record order."""
    import bson
    import numpy as np

    from foliodb.engine.search.text.index import TextState
    from foliodb.engine.search.text.mapping import compile_definition
    from foliodb.engine.search.text.paginate import FIRST_SORT, Pager
    from foliodb.engine.search.text.reader import Reader

    if finite:
        pool = [v for v in pool if np.isfinite(v)] or [1.0]
    state = TextState(1, 1, compile_definition({"mappings": {"dynamic": True}}))
    rids = data.draw(st.permutations(range(1000, 1000 + size)))  # record order is not ordinal order
    for rid in rids:
        state.apply(rid, bson.encode({"_id": rid}))
    ords = np.arange(size, dtype=np.int64)
    raw = np.asarray(data.draw(st.lists(st.sampled_from(pool), min_size=size, max_size=size)), dtype=np.float64)
    pager = Pager(Reader(state), None, ords, raw)
    pieces = list(pager.best_first())
    got = np.concatenate(pieces).tolist() if pieces else []
    assert got == pager.order().tolist()
    if size > FIRST_SORT:
        assert len(pieces[0]) <= FIRST_SORT
    if finite:
        expected = sorted(range(size), key=lambda i: (-float32(raw[i]), rids[i]))
        assert got == expected
