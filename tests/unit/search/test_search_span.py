"""The span operator against a plain-Python evaluation of Lucene's span semantics.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/span/ (term, or, first with
endPositionLte, near with slop and inOrder, subtract, contains with spanToReturn). Spans are
[start, end) position runs over lucene.standard tokens; scores are BM25 with frequency
sum(1 / (1 + width)) and the summed idf of the span's terms (Lucene's SpanWeight).
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from tests.unit.search.conftest import wait_ready
from tests.unit.search.text_reference import bm25, float32, standard_terms

WORDS = ["quick", "brown", "fox", "dog", "red"]


def _setup(db: Any) -> tuple[Any, dict[int, list[str]]]:
    rng = random.Random(9)
    docs = {i: " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 7))) for i in range(60)}
    db.sp.insert_many([{"_id": i, "t": t} for i, t in docs.items()])
    db.sp.create_search_index(SearchIndexModel(definition={"mappings": {"dynamic": True}}))
    wait_ready(db.sp, "default")
    return db.sp, {i: standard_terms(t) for i, t in docs.items()}


def _term(word: str) -> dict[str, Any]:
    return {"term": {"path": "t", "query": word}}


def _spans(spec: dict[str, Any], tokens: list[str]) -> set[tuple[int, int]]:
    """The reference: a span spec's (start, end) runs in one document's tokens."""
    kind, body = next(iter(spec.items()))
    if kind == "term":
        return {(p, p + 1) for p, t in enumerate(tokens) if t == body["query"]}
    if kind == "or":
        return set().union(*(_spans(c, tokens) for c in body["clauses"]))
    if kind == "first":
        return {s for s in _spans(body["operator"], tokens) if s[1] <= body.get("endPositionLte", 3)}
    if kind == "subtract":
        out = _spans(body["exclude"], tokens)
        return {s for s in _spans(body["include"], tokens) if not any(e[0] < s[1] and s[0] < e[1] for e in out)}
    if kind == "contains":
        big, little = _spans(body["big"], tokens), _spans(body["little"], tokens)
        pairs = [(b, s) for b in big for s in little if b[0] <= s[0] and s[1] <= b[1]]
        return {b if body["spanToReturn"] == "outer" else s for b, s in pairs}
    found = set()
    for choice in itertools.product(*(sorted(_spans(c, tokens)) for c in body["clauses"])):
        if body.get("inOrder"):
            ordered = all(a[1] <= b[0] for a, b in itertools.pairwise(choice))
            if ordered and sum(b[0] - a[1] for a, b in itertools.pairwise(choice)) <= body.get("slop", 0):
                found.add((choice[0][0], choice[-1][1]))
        else:
            window = max(s[1] for s in choice) - min(s[0] for s in choice)
            if window - sum(s[1] - s[0] for s in choice) <= body.get("slop", 0):
                found.add((min(s[0] for s in choice), max(s[1] for s in choice)))
    return found


SPECS = [
    _term("fox"),
    {"or": {"clauses": [_term("red"), _term("dog")]}},
    {"first": {"operator": _term("quick"), "endPositionLte": 2}},
    {"near": {"clauses": [_term("quick"), _term("fox")], "slop": 1, "inOrder": True}},
    {"near": {"clauses": [_term("fox"), _term("quick")], "slop": 0}},
    {"near": {"clauses": [_term("brown"), _term("dog"), _term("red")], "slop": 3}},
    {
        "subtract": {
            "include": {"near": {"clauses": [_term("quick"), _term("dog")], "slop": 3}},
            "exclude": _term("red"),
        }
    },
    {
        "contains": {
            "little": _term("brown"),
            "big": {"near": {"clauses": [_term("quick"), _term("fox")], "slop": 3, "inOrder": True}},
            "spanToReturn": "outer",
        }
    },
    {"contains": {"little": _term("brown"), "big": {"first": {"operator": _term("brown")}}, "spanToReturn": "inner"}},
]


@pytest.mark.parametrize("spec", SPECS)
def test_span_matches_the_reference(db: Any, spec: dict[str, Any]) -> None:
    coll, tokens = _setup(db)
    expected = {i for i, t in tokens.items() if _spans(spec, t)}
    got = {d["_id"] for d in coll.aggregate([{"$search": {"span": spec}}])}
    assert got == expected


def test_span_scores(db: Any) -> None:
    coll, tokens = _setup(db)
    n = len(tokens)
    avgdl = sum(len(t) for t in tokens.values()) / n

    def df(word: str) -> int:
        return sum(1 for t in tokens.values() if word in t)

    pipeline = [{"$search": {"span": _term("fox")}}, {"$project": {"s": {"$meta": "searchScore"}}}]
    for d in coll.aggregate(pipeline):
        t = tokens[d["_id"]]
        assert d["s"] == pytest.approx(float32(bm25(t.count("fox"), df("fox"), n, len(t), avgdl)), rel=1e-5)
    # An ordered near: each match adds 1 / (1 + gaps); idf sums quick's and fox's.
    near = {"near": {"clauses": [_term("quick"), _term("fox")], "slop": 2, "inOrder": True}}
    from math import log

    weight = sum(log(1 + (n - df(w) + 0.5) / (df(w) + 0.5)) for w in ("quick", "fox"))
    pipeline = [{"$search": {"span": near}}, {"$project": {"s": {"$meta": "searchScore"}}}]
    got = {d["_id"]: d["s"] for d in coll.aggregate(pipeline)}
    assert got
    for i, score in got.items():
        t = tokens[i]
        freq = sum(1 / (1 + b - a - 1) for a, b in _spans_by_start(t))
        idf_one = log(1 + (n - df("fox") + 0.5) / (df("fox") + 0.5))
        expected = bm25(freq, df("fox"), n, len(t), avgdl) * weight / idf_one
        assert score == pytest.approx(float32(expected), rel=1e-5)


def _spans_by_start(tokens: list[str]) -> list[tuple[int, int]]:
    """For each 'quick', the nearest following 'fox' within 2 gaps (Lucene's match per start)."""
    out = []
    for a, word in enumerate(tokens):
        if word == "quick":
            b = next((j for j in range(a + 1, min(len(tokens), a + 4)) if tokens[j] == "fox"), None)
            if b is not None:
                out.append((a, b))
    return out


@pytest.mark.parametrize(
    "spec",
    [
        {"term": {"path": "t"}},
        {"near": {"clauses": []}},
        {"near": {"clauses": [_term("fox"), {"term": {"path": "u", "query": "fox"}}]}},
        {"first": {"operator": _term("fox"), "endPositionLte": 0}},
        {"contains": {"little": _term("fox"), "big": _term("dog"), "spanToReturn": "middle"}},
        {"term": {"path": "t", "query": "fox"}, "or": {"clauses": [_term("fox")]}},
    ],
)
def test_bad_spans_fail(db: Any, spec: dict[str, Any]) -> None:
    coll, _ = _setup(db)
    with pytest.raises(OperationFailure) as failure:
        list(coll.aggregate([{"$search": {"span": spec}}]))
    assert failure.value.code == 8


def test_near_over_many_occurrences_is_not_combinatorial(db: Any) -> None:
    """3 clauses x 3000 occurrences each: the product would be 2.7e10 choices."""
    coll, _ = _setup(db)
    coll.insert_one({"_id": "long", "t": "quick brown fox " * 3000})
    for in_order in (True, False):
        near = {"near": {"clauses": [_term("quick"), _term("brown"), _term("fox")], "inOrder": in_order}}
        got = {d["_id"] for d in coll.aggregate([{"$search": {"span": near}}])}
        assert "long" in got
