"""Synonym mappings for text and phrase, against Atlas's documented synonyms and mongot's queries.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/synonyms/ (index ``synonyms`` definitions,
source collections with ``equivalent`` and ``explicit`` documents), .../text/ (``matchCriteria``
with synonyms; without it, only documents holding the query, with or without its synonyms,
as a phrase). Expected match sets and BM25 scores are computed here in plain Python.
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

WORDS = ["fast", "quick", "car", "automobile", "sports", "roadster", "red", "blue", "big"]
MAPPINGS = [
    {"mappingType": "equivalent", "synonyms": ["car", "automobile"]},
    {"mappingType": "explicit", "input": ["fast"], "synonyms": ["quick"]},
    {"mappingType": "equivalent", "synonyms": ["sports car", "roadster"]},
]
# The analyzed map: a phrase -> its alternatives (itself included), as the manual defines them.
SYNONYMS = {
    ("car",): [("car",), ("automobile",)],
    ("automobile",): [("automobile",), ("car",)],
    ("fast",): [("fast",), ("quick",)],
    ("sports", "car"): [("sports", "car"), ("roadster",)],
    ("roadster",): [("roadster",), ("sports", "car")],
}


def _setup(db: Any, n: int = 60, seed: int = 2) -> tuple[Any, dict[int, str]]:
    rng = random.Random(seed)
    docs = {i: " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for i in range(n)}
    db.cars.insert_many([{"_id": i, "t": t} for i, t in docs.items()])
    db.syn.insert_many([dict(m) for m in MAPPINGS])
    definition = {
        "mappings": {"dynamic": True, "fields": {"e": {"type": "string", "analyzer": "lucene.english"}}},
        "synonyms": [{"name": "s", "analyzer": "lucene.standard", "source": {"collection": "syn"}}],
    }
    db.cars.create_search_index(SearchIndexModel(definition=definition))
    wait_ready(db.cars, "default")
    return db.cars, docs


def _search(coll: Any, operator: dict[str, Any]) -> dict[Any, float]:
    pipeline = [{"$search": operator}, {"$project": {"s": {"$meta": "searchScore"}}}]
    return {d["_id"]: d["s"] for d in coll.aggregate(pipeline)}


def _segments(terms: list[str]) -> list[list[tuple[str, ...]]]:
    out, i = [], 0
    while i < len(terms):
        for k in (2, 1):
            key = tuple(terms[i : i + k])
            if len(key) == k and key in SYNONYMS:
                out.append(SYNONYMS[key])
                i += k
                break
        else:
            out.append([(terms[i],)])
            i += 1
    return out


def _holds(tokens: list[str], phrase: tuple[str, ...]) -> int:
    """How often the phrase occurs in the tokens."""
    return sum(1 for i in range(len(tokens)) if tuple(tokens[i : i + len(phrase)]) == phrase)


def _expected_matches(docs: dict[int, str], query: str, criteria: str | None) -> set[int]:
    terms = standard_terms(query)
    segments = _segments(terms)
    out = set()
    for i, text in docs.items():
        tokens = standard_terms(text)
        if criteria is None:
            if any(_holds(tokens, sum(path, ())) for path in itertools.product(*segments)):
                out.add(i)
            continue
        seg = [any(_holds(tokens, alt) for alt in alts) for alts in segments]
        exact = [t in tokens for t in terms]
        combine = all if criteria == "all" else any
        if combine(seg) or combine(exact):
            out.add(i)
    return out


@pytest.mark.parametrize("query", ["fast car", "sports car", "red roadster", "quick", "big fast automobile"])
@pytest.mark.parametrize("criteria", ["any", "all", None])
def test_text_synonym_match_sets(db: Any, query: str, criteria: str | None) -> None:
    coll, docs = _setup(db)
    operator: dict[str, Any] = {"query": query, "path": "t", "synonyms": "s"}
    if criteria is not None:
        operator["matchCriteria"] = criteria
    assert set(_search(coll, {"text": operator})) == _expected_matches(docs, query, criteria)


def test_single_term_synonym_scores_blend_and_boost_exact(db: Any) -> None:
    """query "car": a SynonymQuery over car|automobile (tf summed, the larger docFreq) plus the
    exact term query boosted 2."""
    coll, docs = _setup(db)
    tokens = {i: standard_terms(t) for i, t in docs.items()}
    n = len(tokens)
    avgdl = sum(len(t) for t in tokens.values()) / n
    df = {w: sum(1 for t in tokens.values() if w in t) for w in ("car", "automobile")}
    expected = {}
    for i, t in tokens.items():
        tf = t.count("car") + t.count("automobile")
        if tf:
            score = bm25(tf, max(df.values()), n, len(t), avgdl)
            if "car" in t:
                score += 2 * bm25(t.count("car"), df["car"], n, len(t), avgdl)
            expected[i] = score
    got = _search(coll, {"text": {"query": "car", "path": "t", "synonyms": "s", "matchCriteria": "any"}})
    assert set(got) == set(expected)
    for i, score in got.items():
        assert score == pytest.approx(float32(expected[i]), rel=1e-5)
    # An exact match ranks above a synonym-only match of the same length.
    coll.insert_many([{"_id": "exact", "t": "car"}, {"_id": "synonym", "t": "automobile"}])
    got = _search(coll, {"text": {"query": "car", "path": "t", "synonyms": "s", "matchCriteria": "any"}})
    assert got["exact"] > got["synonym"]


@pytest.mark.parametrize("slop", [0, 2])
def test_phrase_synonyms(db: Any, slop: int) -> None:
    coll, docs = _setup(db)
    segments = _segments(standard_terms("fast car"))
    expected = set()
    for i, text in docs.items():
        tokens = standard_terms(text)
        for path in itertools.product(*segments):
            phrase = sum(path, ())
            # Within slop: the phrase's terms in order, each gap at most slop extra positions in total.
            for start in range(len(tokens)):
                if tokens[start] != phrase[0]:
                    continue
                at, moved = start, 0
                for term in phrase[1:]:
                    nxt = next((j for j in range(at + 1, len(tokens)) if tokens[j] == term), None)
                    if nxt is None:
                        moved = slop + 1
                        break
                    moved += nxt - at - 1
                    at = nxt
                if moved <= slop:
                    expected.add(i)
    got = set(_search(coll, {"phrase": {"query": "fast car", "path": "t", "synonyms": "s", "slop": slop}}))
    if slop == 0:
        assert got == expected
    else:
        assert expected <= got  # a sloppy match may also reorder terms (Lucene's edit distance)


def test_source_collection_changes_show_at_once(db: Any) -> None:
    coll, _ = _setup(db)
    coll.insert_one({"_id": "v", "t": "vehicle"})
    operator = {"text": {"query": "car", "path": "t", "synonyms": "s", "matchCriteria": "any"}}
    assert "v" not in _search(coll, operator)
    db.syn.insert_one({"mappingType": "equivalent", "synonyms": ["car", "vehicle"]})
    assert "v" in _search(coll, operator)
    db.syn.delete_many({"synonyms": "vehicle"})
    assert "v" not in _search(coll, operator)
    db.syn.insert_one({"mappingType": "explicit", "synonyms": ["vehicle"]})  # no input: INVALID
    with pytest.raises(OperationFailure) as failure:
        list(coll.aggregate([{"$search": operator}]))
    assert failure.value.code == 8 and "INVALID" in str(failure.value)


def test_empty_source_runs_the_plain_query(db: Any) -> None:
    coll, docs = _setup(db)
    db.syn.delete_many({})
    expected = {i for i, t in docs.items() if {"fast", "car"} & set(standard_terms(t))}
    assert set(_search(coll, {"text": {"query": "fast car", "path": "t", "synonyms": "s"}})) == expected


@pytest.mark.parametrize(
    "operator",
    [
        {"text": {"query": "car", "path": "t", "synonyms": "nope", "matchCriteria": "any"}},
        {"text": {"query": "car", "path": "t", "synonyms": "", "matchCriteria": "any"}},
        {"text": {"query": "car", "path": "t", "synonyms": "s", "fuzzy": {}}},
        {"text": {"query": "car", "path": "t", "synonyms": "s", "matchCriteria": "most"}},
        {"text": {"query": "car", "path": "e", "synonyms": "s", "matchCriteria": "any"}},  # lucene.english field
    ],
)
def test_bad_synonym_queries_fail(db: Any, operator: dict[str, Any]) -> None:
    coll, _ = _setup(db)
    with pytest.raises(OperationFailure) as failure:
        list(coll.aggregate([{"$search": operator}]))
    assert failure.value.code == 8


@pytest.mark.parametrize(
    "synonyms",
    [
        {"name": "s"},
        [{"name": "s", "analyzer": "lucene.standard"}],
        [{"name": "", "analyzer": "lucene.standard", "source": {"collection": "c"}}],
        [{"name": "s", "analyzer": "nope", "source": {"collection": "c"}}],
        [{"name": "s", "analyzer": "lucene.standard", "source": {"collection": "c", "x": 1}}],
        [{"name": "s", "analyzer": "lucene.standard", "source": {"collection": ""}}],
        [{"name": "s", "analyzer": "lucene.standard", "source": {"collection": "c"}}] * 2,
    ],
)
def test_bad_synonym_definitions_fail(db: Any, synonyms: Any) -> None:
    definition = {"mappings": {"dynamic": True}, "synonyms": synonyms}
    with pytest.raises(OperationFailure) as failure:
        db.x.create_search_index(SearchIndexModel(definition=definition))
    assert failure.value.code == 2


def test_a_transaction_sees_its_own_synonyms(db: Any, client: Any) -> None:
    coll, _ = _setup(db)
    coll.insert_one({"_id": "v", "t": "vehicle"})
    operator = {"text": {"query": "car", "path": "t", "synonyms": "s", "matchCriteria": "any"}}
    with client.start_session() as session:
        session.start_transaction()
        db.syn.insert_one({"mappingType": "equivalent", "synonyms": ["car", "vehicle"]}, session=session)
        assert "v" in {d["_id"] for d in coll.aggregate([{"$search": operator}], session=session)}
        assert "v" not in _search(coll, operator)  # not committed: others do not see it
        session.abort_transaction()
    assert "v" not in _search(coll, operator)
