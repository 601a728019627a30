"""$search against an independent evaluation, for random documents, queries and histories.

* ``text``, ``phrase`` (with ``slop``), ``range`` and ``compound`` of them match exactly the
  documents a plain-Python evaluator with the same analyzer says (lucene.standard on ASCII
  words: lower-cased words), and ``text`` scores are Lucene's BM25 computed independently;
* after any sequence of inserts, updates, deletes and committed or aborted transactions,
  searched between the writes, the index answers every query - documents, order and scores,
  facets and counts - as an index built from scratch on the final data does.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.operations import SearchIndexModel

import foliodb
from foliodb.engine.search.text import index as text_index
from foliodb.engine.search.text.analysis import BUILT_IN
from tests.unit.search.conftest import wait_ready
from tests.unit.search.text_reference import float32, score_terms, standard_terms

WORDS = ["apple", "Berry", "cherry", "date", "elder", "fig"]
BODIES = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join)
NUMBERS = st.one_of(st.integers(min_value=0, max_value=9), st.none())
DOCS = st.lists(st.tuples(BODIES, NUMBERS), min_size=1, max_size=25)
DEFINITION = {"mappings": {"dynamic": False, "fields": {"body": {"type": "string"}, "n": {"type": "number"}}}}


def _phrase_matches(tokens: list[str], words: list[str], slop: int) -> bool:
    """Some choice of distinct positions, one per phrase word, stretched by at most ``slop``."""
    options = [[p for p, t in enumerate(tokens) if t == w] for w in words]
    for choice in itertools.product(*options):
        if len(set(choice)) == len(choice):
            shifted = [p - i for i, p in enumerate(choice)]
            if max(shifted) - min(shifted) <= slop:
                return True
    return False


def _range_matches(n: Any, bounds: dict[str, int]) -> bool:
    if n is None:
        return False
    tests = {"gt": n > bounds.get("gt", -1), "gte": n >= bounds.get("gte", -1)}
    tests |= {"lt": n < bounds.get("lt", 99), "lte": n <= bounds.get("lte", 99)}
    return all(tests[k] for k in bounds)


TEXT = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(
    lambda ws: {"text": {"query": " ".join(ws), "path": "body"}}
)
PHRASE = st.tuples(st.lists(st.sampled_from(WORDS), min_size=2, max_size=3), st.integers(0, 3)).map(
    lambda p: {"phrase": {"query": " ".join(p[0]), "path": "body", "slop": p[1]}}
)
RANGE = (
    st.dictionaries(st.sampled_from(["gt", "gte", "lt", "lte"]), st.integers(0, 9), min_size=1, max_size=2)
    .filter(lambda d: not ({"gt", "gte"} <= set(d) or {"lt", "lte"} <= set(d)))
    .map(lambda d: {"range": {"path": "n", **d}})
)
LEAF = st.one_of(TEXT, PHRASE, RANGE)
COMPOUND = (
    st.fixed_dictionaries(
        {},
        optional={
            "must": st.lists(LEAF, min_size=1, max_size=2),
            "should": st.lists(LEAF, min_size=1, max_size=3),
            "mustNot": st.lists(LEAF, min_size=1, max_size=2),
            "filter": st.lists(LEAF, min_size=1, max_size=2),
        },
    )
    .filter(bool)
    .map(lambda c: {"compound": c})
)
OPERATORS = st.one_of(LEAF, COMPOUND)


def _matches(op: dict[str, Any], doc: tuple[str, Any]) -> bool:
    """The reference: does the operator match (body, n)?"""
    name, body = next(iter(op.items()))
    tokens = standard_terms(doc[0])
    if name == "text":
        return any(t in tokens for t in standard_terms(body["query"]))
    if name == "phrase":
        return _phrase_matches(tokens, standard_terms(body["query"]), body["slop"])
    if name == "range":
        return _range_matches(doc[1], {k: v for k, v in body.items() if k != "path"})
    must = all(_matches(c, doc) for c in body.get("must", []) + body.get("filter", []))
    must_not = any(_matches(c, doc) for c in body.get("mustNot", []))
    should = body.get("should", [])
    if body.get("must") or body.get("filter"):
        return must and not must_not
    if should:
        return any(_matches(c, doc) for c in should) and not must_not
    return not must_not


def _searched(coll: Any, op: dict[str, Any], index: str = "default") -> list[tuple[Any, float]]:
    stage = {"$search": {"index": index, **op}}
    return [(d["_id"], d["s"]) for d in coll.aggregate([stage, {"$project": {"s": {"$meta": "searchScore"}}}])]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=DOCS, ops=st.lists(OPERATORS, min_size=1, max_size=6))
def test_matches_equal_a_python_evaluation(docs: list[tuple[str, Any]], ops: list[dict[str, Any]]) -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.docs
        coll.insert_many([{"_id": i, "body": body, "n": n} for i, (body, n) in enumerate(docs)])
        coll.create_search_index(SearchIndexModel(name="default", definition=DEFINITION))
        wait_ready(coll, "default")
        for op in ops:
            got = {i for i, _ in _searched(coll, op)}
            assert got == {i for i, doc in enumerate(docs) if _matches(op, doc)}, op


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=DOCS, words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
def test_text_scores_equal_bm25(docs: list[tuple[str, Any]], words: list[str]) -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.docs
        coll.insert_many([{"_id": i, "body": body} for i, (body, _) in enumerate(docs)])
        coll.create_search_index(SearchIndexModel(name="default", definition=DEFINITION))
        wait_ready(coll, "default")
        query = " ".join(words)
        got = _searched(coll, {"text": {"query": query, "path": "body"}})
        bodies = {i: body for i, (body, _) in enumerate(docs) if standard_terms(body)}
        expected = score_terms(bodies, standard_terms(query)) if bodies else {}
        assert {i for i, _ in got} == set(expected)
        for i, score in got:
            assert score == pytest.approx(float32(expected[i]), rel=1e-6)
        # Best first; equal scores in insertion order.
        assert [i for i, _ in got] == sorted((i for i, _ in got), key=lambda i: (-dict(got)[i], i))


WRITE = st.one_of(
    st.tuples(st.just("insert"), st.integers(0, 15), BODIES, NUMBERS),
    st.tuples(st.just("update"), st.integers(0, 15), BODIES, NUMBERS),
    st.tuples(st.just("delete"), st.integers(0, 15), st.just(""), st.none()),
)
STEP = st.one_of(
    WRITE.map(lambda w: ("write", [w])),
    st.tuples(st.sampled_from(["commit", "abort"]), st.lists(WRITE, min_size=1, max_size=4)),
    st.tuples(st.just("search"), OPERATORS),
)
PROBES = [
    {"text": {"query": "apple berry", "path": "body"}},
    {"phrase": {"query": "cherry date", "path": "body", "slop": 1}},
    {"range": {"path": "n", "gte": 3}},
    {
        "compound": {
            "should": [{"text": {"query": "fig", "path": "body"}}],
            "mustNot": [{"range": {"path": "n", "lt": 2}}],
        }
    },
]


def _write(coll: Any, write: tuple[str, int, str, Any], session: Any = None) -> None:
    kind, key, body, n = write
    if kind == "insert":
        coll.replace_one({"_id": key}, {"body": body, "n": n}, upsert=True, session=session)
    elif kind == "update":
        coll.update_one({"_id": key}, {"$set": {"body": body, "n": n}}, session=session)
    else:
        coll.delete_one({"_id": key}, session=session)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=12), tiny=st.booleans())
def test_any_history_answers_as_a_fresh_index(steps: list[Any], tiny: bool) -> None:
    # tiny: segments of 2 entries merged 2 at a time, so freezing and merging run too.
    saved = text_index.FREEZE_AT, text_index.MERGE_FACTOR
    if tiny:
        text_index.FREEZE_AT, text_index.MERGE_FACTOR = 2, 2
    try:
        _history(steps)
    finally:
        text_index.FREEZE_AT, text_index.MERGE_FACTOR = saved


def _history(steps: list[Any]) -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.docs
        coll.insert_one({"_id": 100, "body": "apple fig", "n": 5})
        coll.create_search_index(SearchIndexModel(name="default", definition=DEFINITION))
        wait_ready(coll, "default")
        engine = client._executor.engine
        for kind, arg in steps:
            engine.search.wait_idle()  # the background thread merges what it can
            if kind == "write":
                _write(coll, arg[0])
            elif kind == "search":
                _searched(coll, arg)
            else:
                with client.start_session() as session:
                    session.start_transaction()
                    for write in arg:
                        _write(coll, write, session)
                    _searched(coll, PROBES[0])  # outside the transaction, meanwhile
                    if kind == "commit":
                        session.commit_transaction()
                    else:
                        session.abort_transaction()
        coll.create_search_index(SearchIndexModel(name="fresh", definition=DEFINITION))
        wait_ready(coll, "fresh")
        for probe in PROBES:
            assert _searched(coll, probe) == _searched(coll, probe, "fresh"), probe
        meta = {
            "facet": {
                "operator": {"exists": {"path": "body"}},
                "facets": {"n": {"type": "number", "path": "n", "boundaries": [0, 3, 6, 10]}},
            }
        }
        first = list(coll.aggregate([{"$searchMeta": meta}]))
        fresh = list(coll.aggregate([{"$searchMeta": {"index": "fresh", **meta}}]))
        assert first == fresh


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet=st.characters(codec="utf-8"), max_size=60) | st.text(alphabet="aB. ',9_-é\u4e2d", max_size=60)
)
def test_analyzers_fast_path_agrees(text: str) -> None:
    for name in ("lucene.standard", "lucene.simple", "lucene.whitespace"):
        analyzer = BUILT_IN[name]
        assert analyzer.terms(text) == [(t.text, t.position) for t in analyzer.tokens(text)], name


_SCORED = st.dictionaries(st.integers(0, 300), st.floats(0.01, 50, allow_nan=False), max_size=60)


@settings(max_examples=200, deadline=None)
@given(_SCORED, _SCORED, st.integers(0, 1))
def test_union_of_two_parts_sums_as_the_general_path(a: dict[int, float], b: dict[int, float], dense: int) -> None:
    """The two-part union (a merge) against sums done in plain Python, and the general path
    (dense counting past a size, sorting below) on three parts: ``b`` split in two."""
    import numpy as np

    from foliodb.engine.search.text.scoring import union

    def part(scored: dict[int, float]) -> tuple[Any, Any]:
        ords = sorted(scored)
        return np.asarray(ords, dtype=np.int64), np.asarray([scored[o] for o in ords])

    expected = {o: a.get(o, 0.0) + b.get(o, 0.0) for o in set(a) | set(b)}
    counts = {o: (o in a) + (o in b) for o in expected}
    size = 301 if dense else 10**6
    empty = (np.zeros(0, dtype=np.int64), np.zeros(0))
    low = {o: v for o, v in b.items() if o % 2}
    high = {o: v for o, v in b.items() if not o % 2}
    for parts in ([part(a), part(b)], [part(a), empty, part(b)], [part(a), part(low), part(high)]):
        (ords, scores), got_counts = union(parts, size)
        assert ords.tolist() == sorted(expected)
        assert scores.tolist() == [expected[o] for o in sorted(expected)]  # the same sums, exactly
        assert got_counts.tolist() == [counts[o] for o in sorted(expected)]
