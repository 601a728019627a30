"""The moreLikeThis operator against Lucene's MoreLikeThis as mongot configures it.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/morelikethis/ (strings of the ``like``
documents analyzed per indexed string field, the most representative terms OR-ed). mongot
sets minTermFreq 0, minDocFreq 2 and keeps Lucene's maxQueryTerms 25; a term's weight is
tf x ClassicSimilarity idf (1 + ln((docCount + 1) / (docFreq + 1))), float32. The reference
below computes the terms and the BM25 scores in plain Python.
"""

from __future__ import annotations

import math
import random
import struct
from typing import Any

import pytest
from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from tests.unit.search.conftest import wait_ready
from tests.unit.search.text_reference import bm25, float32, standard_terms

VOCABULARY = [f"w{i}" for i in range(60)]


def _f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def _corpus(seed: int = 3, n: int = 40) -> dict[int, dict[str, str]]:
    rng = random.Random(seed)
    # Zipf-like: low-numbered words are common, high-numbered ones rare (some held by one document).
    weights = [1 / (i + 1) for i in range(len(VOCABULARY))]
    return {
        i: {f: " ".join(rng.choices(VOCABULARY, weights, k=rng.randint(2, 9))) for f in ("title", "plot")}
        for i in range(n)
    }


def _reference(docs: dict[int, dict[str, str]], like: list[dict[str, Any]]) -> dict[int, float]:
    tokens = {k: {f: standard_terms(v) for f, v in d.items()} for k, d in docs.items()}
    frequencies: dict[str, dict[str, int]] = {}
    for doc in like:
        for field, value in doc.items():
            values = value if isinstance(value, list) else [value]
            for text in values:
                if isinstance(text, str) and field in ("title", "plot"):
                    for term in standard_terms(text):
                        counts = frequencies.setdefault(field, {})
                        counts[term] = counts.get(term, 0) + 1
    candidates = []
    for field, counts in frequencies.items():
        holding = [k for k in tokens if tokens[k][field]]
        for term, tf in counts.items():
            df = sum(1 for k in holding if term in tokens[k][field])
            if df >= 2:
                idf = _f32(1 + math.log((len(holding) + 1) / (df + 1)))
                candidates.append((-_f32(tf * idf), field, term))
    chosen = [(field, term) for _, field, term in sorted(candidates)[:25]]
    out: dict[int, float] = {}
    for field, term in chosen:
        holding = [k for k in tokens if tokens[k][field]]
        avgdl = sum(len(tokens[k][field]) for k in holding) / len(holding)
        df = sum(1 for k in holding if term in tokens[k][field])
        for k in holding:
            tf = tokens[k][field].count(term)
            if tf:
                out[k] = out.get(k, 0.0) + bm25(tf, df, len(holding), len(tokens[k][field]), avgdl)
    return out


def _setup(db: Any) -> tuple[Any, dict[int, dict[str, str]]]:
    docs = _corpus()
    db.mlt.insert_many([{"_id": k, **d, "year": 2000 + k} for k, d in docs.items()])
    db.mlt.create_search_index(
        SearchIndexModel(
            definition={
                "mappings": {"dynamic": True, "fields": {"tag": {"type": "autocomplete"}}},
            }
        )
    )
    wait_ready(db.mlt, "default")
    return db.mlt, docs


def _search(coll: Any, stage: dict[str, Any]) -> list[tuple[Any, float]]:
    pipeline = [{"$search": stage}, {"$project": {"s": {"$meta": "searchScore"}}}]
    return [(d["_id"], d["s"]) for d in coll.aggregate(pipeline)]


@pytest.mark.parametrize("picks", [[0], [5, 17], [1, 2, 3, 4, 6, 7, 8]])
def test_more_like_this_matches_lucene_more_like_this(db: Any, picks: list[int]) -> None:
    coll, docs = _setup(db)
    like = [{"title": docs[k]["title"], "plot": docs[k]["plot"], "year": 1} for k in picks]
    expected = _reference(docs, like)
    got = _search(coll, {"moreLikeThis": {"like": like if len(like) > 1 else like[0]}})
    assert {k for k, _ in got} == set(expected)
    for k, score in got:
        assert score == pytest.approx(float32(expected[k]), rel=1e-5)
    assert [k for k, _ in got] == sorted(expected, key=lambda k: (-float32(expected[k]), k))


def test_more_like_this_at_most_25_terms(db: Any) -> None:
    coll, docs = _setup(db)
    like = [{"plot": " ".join(VOCABULARY), "title": " ".join(VOCABULARY[::-1])}]
    expected = _reference(docs, like)
    assert {k for k, _ in _search(coll, {"moreLikeThis": {"like": like}})} == set(expected)


def test_terms_held_by_one_document_are_ignored(db: Any) -> None:
    coll, _ = _setup(db)
    coll.insert_many([{"_id": "a", "plot": "zebra"}, {"_id": "b", "plot": "yak"}, {"_id": "c", "plot": "yak"}])
    assert _search(coll, {"moreLikeThis": {"like": {"plot": "zebra"}}}) == []
    assert {k for k, _ in _search(coll, {"moreLikeThis": {"like": {"plot": "yak zebra"}}})} == {"b", "c"}


def test_only_indexed_string_fields_count(db: Any) -> None:
    coll, _ = _setup(db)
    coll.insert_many([{"_id": "x", "tag": "alpha", "n": 5}, {"_id": "y", "tag": "alpha", "n": 5}])
    # An autocomplete field and a number: no string terms to look for.
    assert _search(coll, {"moreLikeThis": {"like": {"tag": "alpha", "n": 5}}}) == []
    # Strings nested in documents and arrays are taken under their dotted paths.
    coll.insert_many([{"_id": "p", "info": {"note": "giraffe"}}, {"_id": "q", "info": {"note": ["giraffe"]}}])
    found = {k for k, _ in _search(coll, {"moreLikeThis": {"like": {"info": [{"note": "giraffe"}]}}})}
    assert found == {"p", "q"}


@pytest.mark.parametrize(
    "stage",
    [
        {"moreLikeThis": {}},
        {"moreLikeThis": {"like": []}},
        {"moreLikeThis": {"like": "text"}},
        {"moreLikeThis": {"like": [{"plot": "x"}, 3]}},
        {"moreLikeThis": {"like": {"plot": "x"}, "path": "plot"}},
        {"embeddedDocument": {"path": "e", "operator": {"moreLikeThis": {"like": {"e.a": "x"}}}}},
    ],
)
def test_bad_more_like_this_fails(db: Any, stage: dict[str, Any]) -> None:
    db.bad.insert_one({"_id": 1, "plot": "x", "e": [{"a": "x"}]})
    db.bad.create_search_index(
        SearchIndexModel(
            definition={"mappings": {"dynamic": True, "fields": {"e": {"type": "embeddedDocuments", "dynamic": True}}}}
        )
    )
    wait_ready(db.bad, "default")
    with pytest.raises(OperationFailure) as failure:
        list(db.bad.aggregate([{"$search": stage}]))
    assert failure.value.code == 8
