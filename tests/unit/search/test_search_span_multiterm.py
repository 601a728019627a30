"""span's ``term`` with ``fuzzy``, ``regex`` and ``wildcard``, against a plain-Python evaluation.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/span/ (span is a term-level operator:
its query is not analyzed). mongot builds a span ``term`` from its ``term`` operator (options
``fuzzy {maxEdits 0-2 = 2, prefixLength = 0, maxExpansions = 256}``, ``prefix``, ``regex``,
``wildcard``, at most one), the query normalized by the field's analyzer (lower-cased, not
tokenized), wrapped in Lucene's SpanMultiTermQueryWrapper: the spans of every index term the
query stands for. A regex or wildcard takes every matching term; a fuzzy query its top
``maxExpansions`` terms by similarity ``1 - edits / min(len(term), len(query))`` (Damerau-
Levenshtein, adjacent transpositions), ties by term order. The score is BM25 with frequency the
number of spans and idf the sum of the idf of the terms the query stands for (SpanWeight).
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import pytest
from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from tests.unit.search.conftest import wait_ready
from tests.unit.search.text_reference import expanded_terms, float32, norm_length, standard_terms

WORDS = ["quick", "quack", "quirk", "quicker", "brown", "brawn", "crown", "fox", "fax", "box", "dog"]


def _setup(db: Any) -> tuple[Any, dict[int, list[str]]]:
    rng = random.Random(28)
    docs = {i: " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 7))) for i in range(80)}
    db.sp.insert_many([{"_id": i, "t": t} for i, t in docs.items()])
    db.sp.create_search_index(SearchIndexModel(definition={"mappings": {"dynamic": True}}))
    wait_ready(db.sp, "default")
    return db.sp, {i: standard_terms(t) for i, t in docs.items()}


def _spans(spec: dict[str, Any], tokens: list[str], vocabulary: set[str]) -> set[tuple[int, int]]:
    kind, body = next(iter(spec.items()))
    if kind == "term":
        terms = expanded_terms(body, vocabulary)
        return {(p, p + 1) for p, t in enumerate(tokens) if t in terms}
    if kind == "or":
        return set().union(*(_spans(c, tokens, vocabulary) for c in body["clauses"]))
    if kind == "subtract":
        out = _spans(body["exclude"], tokens, vocabulary)
        kept = _spans(body["include"], tokens, vocabulary)
        return {s for s in kept if not any(e[0] < s[1] and s[0] < e[1] for e in out)}
    assert kind == "near" and body.get("inOrder")
    found = set()
    for choice in itertools.product(*(sorted(_spans(c, tokens, vocabulary)) for c in body["clauses"])):
        gaps = [b[0] - a[1] for a, b in itertools.pairwise(choice)]
        if all(g >= 0 for g in gaps) and sum(gaps) <= body.get("slop", 0):
            found.add((choice[0][0], choice[-1][1]))
    return found


def _term(query: str, **options: Any) -> dict[str, Any]:
    return {"term": {"path": "t", "query": query, **options}}


SPECS = [
    _term("qu[ai]ck", regex=True),
    _term("b.*n", regex=True),
    _term("(fox|fax)", regex=True),
    _term("QU*", wildcard=True),  # normalized: lower-cased as the field's analyzer does
    _term("?ox", wildcard=True),
    _term("quikc", fuzzy={}),
    _term("crown", fuzzy={"maxEdits": 1}),
    _term("brown", fuzzy={"maxEdits": 2, "prefixLength": 2}),
    _term("quick", fuzzy={"maxEdits": 2, "maxExpansions": 2}),
    _term("fox", fuzzy={"maxEdits": 1, "maxExpansions": 2}),  # fax and box tie: box comes first
    _term("quicke", fuzzy={"maxEdits": 1, "maxExpansions": 1}),  # quicker (5/6) over quick (4/5)
    _term("fox", fuzzy={"maxEdits": 0}),
    _term("fo", fuzzy={"prefixLength": 2}),  # the prefix is the whole term: the term alone
    {"near": {"clauses": [_term("qu*", wildcard=True), _term("f.x", regex=True)], "slop": 1, "inOrder": True}},
    {"or": {"clauses": [_term("dgo", fuzzy={"maxEdits": 1}), _term("bo?", wildcard=True)]}},
    {"subtract": {"include": _term("[bc]r.wn", regex=True), "exclude": _term("crown")}},
]


@pytest.mark.parametrize("spec", SPECS)
def test_multi_term_spans_match_the_reference(db: Any, spec: dict[str, Any]) -> None:
    coll, tokens = _setup(db)
    vocabulary = set(itertools.chain.from_iterable(tokens.values()))
    expected = {i for i, t in tokens.items() if _spans(spec, t, vocabulary)}
    got = {d["_id"] for d in coll.aggregate([{"$search": {"span": spec}}])}
    assert got == expected


@pytest.mark.parametrize("spec", SPECS[:13])
def test_multi_term_span_scores(db: Any, spec: dict[str, Any]) -> None:
    coll, tokens = _setup(db)
    vocabulary = set(itertools.chain.from_iterable(tokens.values()))
    terms = expanded_terms(spec["term"], vocabulary)
    n = len(tokens)
    avgdl = sum(len(t) for t in tokens.values()) / n
    weight = 0.0
    for term in terms:
        df = sum(1 for t in tokens.values() if term in t)
        weight += math.log(1 + (n - df + 0.5) / (df + 0.5))
    pipeline = [{"$search": {"span": spec}}, {"$project": {"s": {"$meta": "searchScore"}}}]
    got = {d["_id"]: d["s"] for d in coll.aggregate(pipeline)}
    assert set(got) == {i for i, t in tokens.items() if terms & set(t)}
    for i, score in got.items():
        t = tokens[i]
        tf = sum(1 for w in t if w in terms)
        expected = weight * tf / (tf + 1.2 * (1 - 0.75 + 0.75 * norm_length(len(t)) / avgdl))
        assert score == pytest.approx(float32(expected), rel=1e-5)


def test_a_term_no_document_holds_adds_no_idf(db: Any) -> None:
    """Regression: an ``or`` with an absent term scored as if the term had document frequency 0;
    Lucene's SpanWeight leaves terms no document holds out of the idf."""
    coll, tokens = _setup(db)
    n = len(tokens)
    avgdl = sum(len(t) for t in tokens.values()) / n
    df = sum(1 for t in tokens.values() if "fox" in t)
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    spec = {"or": {"clauses": [_term("fox"), _term("zebra")]}}
    pipeline = [{"$search": {"span": spec}}, {"$project": {"s": {"$meta": "searchScore"}}}]
    got = {d["_id"]: d["s"] for d in coll.aggregate(pipeline)}
    assert set(got) == {i for i, t in tokens.items() if "fox" in t}
    for i, score in got.items():
        t = tokens[i]
        tf = t.count("fox")
        expected = idf * tf / (tf + 1.2 * (1 - 0.75 + 0.75 * norm_length(len(t)) / avgdl))
        assert score == pytest.approx(float32(expected), rel=1e-5)


def test_the_query_is_normalized_not_analyzed(db: Any) -> None:
    """lucene.whitespace keeps case, so an upper-case pattern matches only upper-case terms;
    lucene.english normalizes by lower-casing alone (no stemming): "Runs" is "runs"."""
    db.n.insert_many([{"_id": 1, "w": "Quick fox", "e": "the dog runs"}, {"_id": 2, "w": "quick fox", "e": "a run"}])
    fields = {
        "w": {"type": "string", "analyzer": "lucene.whitespace"},
        "e": {"type": "string", "analyzer": "lucene.english"},
    }
    db.n.create_search_index(SearchIndexModel(definition={"mappings": {"dynamic": False, "fields": fields}}))
    wait_ready(db.n, "default")

    def ids(spec: dict[str, Any]) -> set[int]:
        return {d["_id"] for d in db.n.aggregate([{"$search": {"span": spec}}])}

    assert ids({"term": {"path": "w", "query": "Qu*", "wildcard": True}}) == {1}
    assert ids({"term": {"path": "w", "query": "qu.*", "regex": True}}) == {2}
    assert ids({"term": {"path": "w", "query": "Quikc", "fuzzy": {"maxEdits": 1}}}) == {1}
    # The index holds english's stems ("run" for both); the regex "Runs" is searched as "runs".
    assert ids({"term": {"path": "e", "query": "Runs", "regex": True}}) == set()
    assert ids({"term": {"path": "e", "query": "Ru.", "regex": True}}) == {1, 2}
    # So is a plain term: "Runs" is not stemmed to "run" (it used to be analyzed).
    assert ids({"term": {"path": "e", "query": "Runs"}}) == set()
    assert ids({"term": {"path": "e", "query": "RUN"}}) == {1, 2}


@pytest.mark.parametrize(
    "term",
    [
        {"fuzzy": {}, "regex": True},
        {"wildcard": True, "prefix": True},
        {"regex": 1},
        {"wildcard": "yes"},
        {"fuzzy": True},
        {"fuzzy": {"maxEdits": 3}},
        {"fuzzy": {"maxEdits": -1}},
        {"fuzzy": {"maxEdits": 1.5}},
        {"fuzzy": {"maxExpansions": 0}},
        {"fuzzy": {"prefixLength": -1}},
        {"fuzzy": {"maxEdit": 1}},
        {"query": "qu[ick", "regex": True},
        {"query": "(fox", "regex": True},
    ],
)
def test_bad_multi_term_spans_fail(db: Any, term: dict[str, Any]) -> None:
    coll, _ = _setup(db)
    spec = {"term": {"path": "t", "query": "fox", **term}}
    with pytest.raises(OperationFailure) as failure:
        list(coll.aggregate([{"$search": {"span": spec}}]))
    assert failure.value.code == 8


def test_an_option_set_false_is_no_option(db: Any) -> None:
    coll, tokens = _setup(db)
    spec = {"term": {"path": "t", "query": "fox", "regex": False, "wildcard": False, "prefix": True}}
    expected = {i for i, t in tokens.items() if any(w.startswith("fox") for w in t)}
    assert {d["_id"] for d in coll.aggregate([{"$search": {"span": spec}}])} == expected
