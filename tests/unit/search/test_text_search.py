"""$search and $searchMeta, embedded and over the wire, against MongoDB Search's documented behaviour.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/operators-and-collectors/ (each
operator's page), .../atlas-search/scoring/, .../atlas-search/counting/,
.../atlas-search/facet/, .../atlas-search/highlighting/, .../atlas-search/sort/. Scores are
checked against Lucene's BM25 computed independently (tests/unit/search/text_reference.py).
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from bson import ObjectId
from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from tests.unit.search.conftest import wait_ready
from tests.unit.search.text_reference import bm25, float32, score_terms, standard_terms

PLOTS = {
    1: "a fox jumps over the lazy dog",
    2: "the dog sleeps all summer long and the dog dreams",
    3: "hounds chase the quick fox across the fox den",
    4: "summer rain falls on the quiet town while everyone in the town sleeps through the long night "
    "and dreams of brighter mornings with sunshine warmth and laughter in every street",  # > 24 tokens
}


def _index(coll: Any, definition: dict[str, Any], name: str = "default") -> None:
    coll.create_search_index(SearchIndexModel(name=name, definition=definition))
    wait_ready(coll, name)


def _movies(db: Any) -> Any:
    coll = db.movies
    coll.insert_many(
        [
            {
                "_id": k,
                "plot": v,
                "title": f"Title {k}",
                "year": 1990 + 10 * k,
                "genre": ["comedy", "drama", "comedy", "horror"][k - 1],
                "released": datetime.datetime(1990 + 10 * k, 1, 1),
                "ok": k % 2 == 0,
            }
            for k, v in PLOTS.items()
        ]
    )
    _index(
        coll,
        {
            "mappings": {
                "dynamic": True,
                "fields": {"genre": {"type": "token"}, "title": [{"type": "string"}, {"type": "autocomplete"}]},
            }
        },
    )
    return coll


def _search(coll: Any, stage: dict[str, Any], *rest: Any) -> list[tuple[Any, float]]:
    pipeline = [{"$search": stage}, *rest, {"$project": {"_id": 1, "s": {"$meta": "searchScore"}}}]
    return [(d["_id"], d["s"]) for d in coll.aggregate(pipeline)]


def _ids(coll: Any, stage: dict[str, Any]) -> set[Any]:
    return {i for i, _ in _search(coll, stage)}


def test_text_scores_are_lucene_bm25(db: Any) -> None:
    coll = _movies(db)
    got = _search(coll, {"text": {"query": "dog summer", "path": "plot"}})
    expected = score_terms(PLOTS, ["dog", "summer"])
    assert [i for i, _ in got] == sorted(expected, key=lambda k: -expected[k])
    for i, s in got:
        assert s == pytest.approx(float32(expected[i]), rel=1e-6)


def test_text_long_field_length_is_quantized_as_lucene_norms(db: Any) -> None:
    coll = _movies(db)
    ((i, s),) = _search(coll, {"text": {"query": "night", "path": "plot"}})
    lengths = [len(standard_terms(p)) for p in PLOTS.values()]
    assert i == 4 and lengths[3] > 24
    expected = bm25(1, 1, 4, lengths[3], sum(lengths) / 4)
    assert s == pytest.approx(float32(expected), rel=1e-6)


def test_text_multiple_paths_and_match_criteria(db: Any) -> None:
    coll = _movies(db)
    assert _ids(coll, {"text": {"query": "title fox", "path": ["plot", "title"]}}) == {1, 2, 3, 4}
    assert _ids(coll, {"text": {"query": "fox dog", "path": "plot", "matchCriteria": "all"}}) == {1}
    assert _ids(coll, {"text": {"query": "fox", "path": {"wildcard": "p*"}}}) == {1, 3}


def test_text_fuzzy(db: Any) -> None:
    coll = _movies(db)
    assert _ids(coll, {"text": {"query": "foz", "path": "plot", "fuzzy": {"maxEdits": 1}}}) == {1, 3}
    assert _ids(coll, {"text": {"query": "zzx", "path": "plot", "fuzzy": {"maxEdits": 1}}}) == set()
    # Transposition counts one edit (Damerau-Levenshtein, as Lucene's FuzzyQuery).
    assert _ids(coll, {"text": {"query": "fxo", "path": "plot", "fuzzy": {"maxEdits": 1}}}) == {1, 3}
    assert _ids(coll, {"text": {"query": "dgo", "path": "plot", "fuzzy": {"maxEdits": 2, "prefixLength": 1}}}) == {
        1,
        2,
        3,
    }  # dog, den


def test_phrase_and_slop(db: Any) -> None:
    coll = _movies(db)
    assert _ids(coll, {"phrase": {"query": "lazy dog", "path": "plot"}}) == {1}
    assert _ids(coll, {"phrase": {"query": "dog lazy", "path": "plot"}}) == set()
    assert _ids(coll, {"phrase": {"query": "fox dog", "path": "plot"}}) == set()
    assert _ids(coll, {"phrase": {"query": "jumps dog", "path": "plot", "slop": 3}}) == {1}
    assert _ids(coll, {"phrase": {"query": "jumps dog", "path": "plot", "slop": 2}}) == set()


def test_compound(db: Any) -> None:
    coll = _movies(db)
    must = {"text": {"query": "dog", "path": "plot"}}
    assert _ids(
        coll, {"compound": {"must": [must], "mustNot": [{"equals": {"path": "genre", "value": "comedy"}}]}}
    ) == {2}
    assert _ids(coll, {"compound": {"filter": [{"range": {"path": "year", "gte": 2010}}]}}) == {2, 3, 4}
    shoulds = [{"text": {"query": w, "path": "plot"}} for w in ("fox", "dog", "summer")]
    assert _ids(coll, {"compound": {"should": shoulds, "minimumShouldMatch": 2}}) == {1, 2}
    assert _ids(coll, {"compound": {"mustNot": [{"text": {"query": "fox", "path": "plot"}}]}}) == {2, 4}
    # A filter adds no score: must + filter scores as must alone.
    alone = dict(_search(coll, {"compound": {"must": [must]}}))
    filtered = dict(_search(coll, {"compound": {"must": [must], "filter": [{"exists": {"path": "genre"}}]}}))
    assert alone == filtered


def test_equals_in_range_exists(db: Any) -> None:
    coll = _movies(db)
    assert _ids(coll, {"equals": {"path": "ok", "value": True}}) == {2, 4}
    assert _ids(coll, {"equals": {"path": "year", "value": 2010}}) == {2}
    assert _ids(coll, {"equals": {"path": "released", "value": datetime.datetime(2020, 1, 1)}}) == {3}
    assert _ids(coll, {"in": {"path": "genre", "value": ["drama", "horror"]}}) == {2, 4}
    assert _ids(coll, {"range": {"path": "year", "gt": 2000, "lt": 2030}}) == {2, 3}
    assert _ids(coll, {"range": {"path": "released", "gte": datetime.datetime(2020, 1, 1)}}) == {3, 4}
    assert _ids(coll, {"range": {"path": "genre", "gte": "d", "lt": "h"}}) == {2}
    assert _ids(coll, {"exists": {"path": "genre"}}) == {1, 2, 3, 4}
    assert _ids(coll, {"exists": {"path": "nothing"}}) == set()
    assert {s for _, s in _search(coll, {"range": {"path": "year", "gte": 0}})} == {1.0}


def test_equals_objectid(db: Any) -> None:
    coll = db.things
    oid = ObjectId()
    coll.insert_many([{"_id": 1, "owner": oid}, {"_id": 2, "owner": ObjectId()}])
    _index(coll, {"mappings": {"dynamic": True}})
    assert _ids(coll, {"equals": {"path": "owner", "value": oid}}) == {1}


def test_near_numbers_dates_and_points(db: Any) -> None:
    coll = _movies(db)
    got = dict(_search(coll, {"near": {"path": "year", "origin": 2010, "pivot": 5}}))
    assert got == pytest.approx({1: 5 / 15, 2: 1.0, 3: 5 / 15, 4: 5 / 25}, rel=1e-6)
    day = 86_400_000
    got = dict(_search(coll, {"near": {"path": "released", "origin": datetime.datetime(2010, 1, 1), "pivot": day}}))
    assert max(got, key=lambda k: got[k]) == 2
    places = db.places
    places.insert_many([{"_id": 1, "at": {"type": "Point", "coordinates": [0, 0]}}, {"_id": 2, "at": [0, 1]}])
    _index(places, {"mappings": {"fields": {"at": {"type": "geo"}}}})
    got = dict(
        _search(places, {"near": {"path": "at", "origin": {"type": "Point", "coordinates": [0, 0]}, "pivot": 1000}})
    )
    one_degree = 6_371_008.7714 * 3.141592653589793 / 180
    assert got[1] == 1.0 and got[2] == pytest.approx(1000 / (1000 + one_degree), rel=1e-6)


def test_autocomplete(db: Any) -> None:
    coll = db.titles
    coll.insert_many(
        [{"_id": 1, "t": "The Quick Brown Fox"}, {"_id": 2, "t": "Quiet Days"}, {"_id": 3, "t": "Brownies à la mode"}]
    )
    _index(coll, {"mappings": {"fields": {"t": {"type": "autocomplete", "minGrams": 2, "maxGrams": 10}}}})
    assert _ids(coll, {"autocomplete": {"query": "qui", "path": "t"}}) == {1, 2}
    assert _ids(coll, {"autocomplete": {"query": "brown", "path": "t"}}) == {1, 3}
    assert _ids(coll, {"autocomplete": {"query": "quick bro", "path": "t", "tokenOrder": "sequential"}}) == {1}
    assert _ids(coll, {"autocomplete": {"query": "bro quick", "path": "t", "tokenOrder": "sequential"}}) == set()
    assert _ids(coll, {"autocomplete": {"query": "a la", "path": "t", "tokenOrder": "sequential"}}) == {3}  # folded
    assert _ids(coll, {"autocomplete": {"query": "qiu", "path": "t", "fuzzy": {"maxEdits": 1}}}) == {1, 2}


def test_autocomplete_ngram_and_right_edge(db: Any) -> None:
    coll = db.words
    coll.insert_many([{"_id": 1, "w": "searching"}, {"_id": 2, "w": "archive"}])
    fields = {"w": [{"type": "autocomplete", "tokenization": "nGram", "minGrams": 3, "maxGrams": 5}]}
    _index(coll, {"mappings": {"fields": fields}})
    assert _ids(coll, {"autocomplete": {"query": "arch", "path": "w"}}) == {1, 2}
    assert _ids(coll, {"autocomplete": {"query": "ing", "path": "w"}}) == {1}
    right = db.right
    right.insert_many([{"_id": 1, "w": "searching"}, {"_id": 2, "w": "singer"}])
    _index(right, {"mappings": {"fields": {"w": {"type": "autocomplete", "tokenization": "rightEdgeGram"}}}})
    assert _ids(right, {"autocomplete": {"query": "ing", "path": "w"}}) == {1}


def test_wildcard_and_regex(db: Any) -> None:
    coll = db.codes
    coll.insert_many([{"_id": 1, "c": "AB-100"}, {"_id": 2, "c": "AB-200"}, {"_id": 3, "c": "XY-100"}])
    _index(coll, {"mappings": {"fields": {"c": {"type": "string", "analyzer": "lucene.keyword"}}}})
    assert _ids(coll, {"wildcard": {"query": "AB-*", "path": "c"}}) == {1, 2}
    assert _ids(coll, {"wildcard": {"query": "??-100", "path": "c"}}) == {1, 3}
    assert _ids(coll, {"wildcard": {"query": "AB\\-1*", "path": "c"}}) == {1}
    assert _ids(coll, {"regex": {"query": "[A-Z]{2}-[12]00", "path": "c"}}) == {1, 2, 3}
    assert _ids(coll, {"regex": {"query": "AB.*|XY-200", "path": "c"}}) == {1, 2}
    assert _ids(coll, {"regex": {"query": "B-100", "path": "c"}}) == set()  # anchored to the whole term
    assert _ids(coll, {"regex": {"query": '"AB-"@', "path": "c"}}) == {1, 2}


def test_query_string(db: Any) -> None:
    coll = _movies(db)
    assert _ids(coll, {"queryString": {"defaultPath": "plot", "query": "fox AND dog"}}) == {1}
    assert _ids(coll, {"queryString": {"defaultPath": "plot", "query": "fox OR summer"}}) == {1, 2, 3, 4}
    assert _ids(coll, {"queryString": {"defaultPath": "plot", "query": "dog -lazy"}}) == {2}
    assert _ids(coll, {"queryString": {"defaultPath": "plot", "query": '"quick fox"'}}) == {3}
    assert _ids(coll, {"queryString": {"defaultPath": "plot", "query": "title:1 OR hound*"}}) == {1, 3}


def test_embedded_document(db: Any) -> None:
    coll = db.orders
    coll.insert_many(
        [
            {"_id": 1, "items": [{"name": "red apple", "qty": 5}, {"name": "green pear", "qty": 1}]},
            {"_id": 2, "items": [{"name": "red pear", "qty": 1}, {"name": "green apple", "qty": 9}]},
        ]
    )
    _index(coll, {"mappings": {"fields": {"items": {"type": "embeddedDocuments", "dynamic": True}}}})
    both = {
        "must": [
            {"text": {"query": "red", "path": "items.name"}},
            {"text": {"query": "apple", "path": "items.name"}},
        ]
    }
    # Both words in one element: only the first order's "red apple".
    assert _ids(coll, {"embeddedDocument": {"path": "items", "operator": {"compound": both}}}) == {1}
    assert _ids(coll, {"compound": both}) == set()  # embedded fields are not the document's own
    big = {"embeddedDocument": {"path": "items", "operator": {"range": {"path": "items.qty", "gte": 5}}}}
    assert _ids(coll, big) == {1, 2}
    scored = _search(
        coll,
        {
            "embeddedDocument": {
                "path": "items",
                "operator": {"range": {"path": "items.qty", "gte": 0}},
                "score": {"embedded": {"aggregate": "sum"}},
            }
        },
    )
    assert dict(scored) == {1: 2.0, 2: 2.0}


def test_score_options(db: Any) -> None:
    coll = _movies(db)
    base = dict(_search(coll, {"text": {"query": "fox", "path": "plot"}}))
    boosted = dict(_search(coll, {"text": {"query": "fox", "path": "plot", "score": {"boost": {"value": 3}}}}))
    assert boosted == pytest.approx({k: float32(v * 3) for k, v in base.items()}, rel=1e-6)
    constant = _search(coll, {"text": {"query": "fox", "path": "plot", "score": {"constant": {"value": 7}}}})
    assert {s for _, s in constant} == {7.0}
    by_year = _search(coll, {"text": {"query": "fox", "path": "plot", "score": {"boost": {"path": "year"}}}})
    assert dict(by_year) == pytest.approx({k: float32(v * (1990 + 10 * k)) for k, v in base.items()}, rel=1e-6)
    function = {"function": {"add": [{"path": "year"}, {"constant": 1}, {"log": {"constant": 100}}]}}
    got = dict(_search(coll, {"text": {"query": "fox", "path": "plot", "score": function}}))
    assert got == {1: 2003.0, 3: 2023.0}


def test_search_meta_count_and_facets(db: Any) -> None:
    coll = _movies(db)
    stage = {
        "facet": {
            "operator": {"range": {"path": "year", "gte": 2000}},
            "facets": {
                "genres": {"type": "string", "path": "genre"},
                "decades": {"type": "number", "path": "year", "boundaries": [2000, 2020, 2040], "default": "other"},
                "when": {
                    "type": "date",
                    "path": "released",
                    "boundaries": [datetime.datetime(2000, 1, 1), datetime.datetime(2025, 1, 1)],
                },
            },
        },
        "count": {"type": "total"},
    }
    (meta,) = coll.aggregate([{"$searchMeta": stage}])
    assert meta["count"] == {"total": 4}
    assert meta["facet"]["genres"]["buckets"] == [
        {"_id": "comedy", "count": 2},
        {"_id": "drama", "count": 1},
        {"_id": "horror", "count": 1},
    ]
    assert meta["facet"]["decades"]["buckets"] == [
        {"_id": 2000, "count": 2},
        {"_id": 2020, "count": 2},
        {"_id": "other", "count": 0},
    ]
    assert meta["facet"]["when"]["buckets"] == [{"_id": datetime.datetime(2000, 1, 1), "count": 3}]
    (default,) = coll.aggregate([{"$searchMeta": {"text": {"query": "dog", "path": "plot"}}}])
    assert default == {"count": {"lowerBound": 2}}


def test_search_meta_variable_after_search(db: Any) -> None:
    coll = _movies(db)
    docs = list(
        coll.aggregate(
            [
                {"$search": {"text": {"query": "dog", "path": "plot"}, "count": {"type": "total"}}},
                {"$project": {"meta": "$$SEARCH_META"}},
                {"$limit": 1},
            ]
        )
    )
    assert docs[0]["meta"] == {"count": {"total": 2}}


def test_highlight(db: Any) -> None:
    coll = _movies(db)
    (doc,) = coll.aggregate(
        [
            {"$search": {"text": {"query": "lazy", "path": "plot"}, "highlight": {"path": "plot"}}},
            {"$project": {"h": {"$meta": "searchHighlights"}}},
        ]
    )
    (passage,) = doc["h"]
    assert passage["path"] == "plot"
    assert passage["texts"] == [
        {"value": "a fox jumps over the ", "type": "text"},
        {"value": "lazy", "type": "hit"},
        {"value": " dog", "type": "text"},
    ]


def test_sort_and_stored_source_and_details(db: Any) -> None:
    coll = _movies(db)
    got = _search(coll, {"exists": {"path": "plot"}, "sort": {"year": -1}})
    assert [i for i, _ in got] == [4, 3, 2, 1]
    got = _search(coll, {"exists": {"path": "plot"}, "sort": {"genre": 1, "year": -1}})
    assert [i for i, _ in got] == [3, 1, 2, 4]
    by_score = _search(coll, {"text": {"query": "dog", "path": "plot"}, "sort": {"score": {"$meta": "searchScore"}}})
    assert [i for i, _ in by_score] == [i for i, _ in _search(coll, {"text": {"query": "dog", "path": "plot"}})]
    stored = list(coll.aggregate([{"$search": {"text": {"query": "dog", "path": "plot"}, "returnStoredSource": True}}]))
    assert all(set(d) == {"_id"} for d in stored)
    (detail,) = coll.aggregate(
        [
            {"$search": {"text": {"query": "lazy", "path": "plot"}, "scoreDetails": True}},
            {"$project": {"d": {"$meta": "searchScoreDetails"}, "s": {"$meta": "searchScore"}}},
        ]
    )
    assert detail["d"]["value"] == detail["s"]


def test_language_and_custom_analyzers(db: Any) -> None:
    coll = db.docs
    coll.insert_many(
        [
            {"_id": 1, "en": "The runners were running", "de": "Die Häuser", "code": "<b>Hello</b> WORLD"},
            {"_id": 2, "en": "A quiet run", "de": "Das Haus", "code": "hello there"},
        ]
    )
    definition = {
        "analyzers": [
            {
                "name": "html",
                "charFilters": [{"type": "htmlStrip"}],
                "tokenizer": {"type": "whitespace"},
                "tokenFilters": [{"type": "lowercase"}],
            }
        ],
        "mappings": {
            "fields": {
                "en": {"type": "string", "analyzer": "lucene.english"},
                "de": {"type": "string", "analyzer": "lucene.german"},
                "code": {"type": "string", "analyzer": "html"},
            }
        },
    }
    _index(coll, definition)
    assert _ids(coll, {"text": {"query": "run", "path": "en"}}) == {1, 2}  # Porter: running -> run
    assert _ids(coll, {"text": {"query": "the", "path": "en"}}) == set()  # an English stop word
    assert _ids(coll, {"text": {"query": "die", "path": "de"}}) == set()  # a German stop word
    assert _ids(coll, {"text": {"query": "hello", "path": "code"}}) == {1, 2}


def test_bad_definitions_and_queries(db: Any) -> None:
    coll = _movies(db)
    with pytest.raises(OperationFailure) as bad:
        coll.create_search_index(
            SearchIndexModel(name="x", definition={"mappings": {"dynamic": True}, "analyzer": "lucene.nope"})
        )
    assert bad.value.code == 2
    with pytest.raises(OperationFailure) as missing:
        list(coll.aggregate([{"$search": {"text": {"path": "plot"}}}]))
    assert missing.value.code == 8 and '"text.query" is required' in str(missing.value)
    with pytest.raises(OperationFailure) as nested:
        list(coll.aggregate([{"$search": {"compound": {"should": [{"text": {"query": "x"}}]}}}]))
    assert '"compound.should[0].text.path" is required' in str(nested.value)
    with pytest.raises(OperationFailure) as unknown:
        list(coll.aggregate([{"$search": {"txet": {"query": "x", "path": "plot"}}}]))
    assert unknown.value.code == 8
    with pytest.raises(OperationFailure) as second:
        list(coll.aggregate([{"$match": {}}, {"$search": {"text": {"query": "x", "path": "plot"}}}]))
    assert second.value.code == 40602
    # An index that does not exist: no documents, as MongoDB Search.
    assert list(coll.aggregate([{"$search": {"index": "none", "text": {"query": "fox", "path": "plot"}}}])) == []


def test_sees_writes_and_transactions(db: Any, client: Any) -> None:
    coll = _movies(db)
    coll.insert_one({"_id": 5, "plot": "a brand new fox"})
    assert _ids(coll, {"text": {"query": "fox", "path": "plot"}}) == {1, 3, 5}
    coll.update_one({"_id": 1}, {"$set": {"plot": "no animals here"}})
    coll.delete_one({"_id": 3})
    assert _ids(coll, {"text": {"query": "fox", "path": "plot"}}) == {5}
    with client.start_session() as session:
        session.start_transaction()
        coll.insert_one({"_id": 6, "plot": "a fox in a transaction"}, session=session)
        coll.delete_one({"_id": 5}, session=session)
        inside = {
            d["_id"] for d in coll.aggregate([{"$search": {"text": {"query": "fox", "path": "plot"}}}], session=session)
        }
        assert inside == {6}
        assert _ids(coll, {"text": {"query": "fox", "path": "plot"}}) == {5}
        session.abort_transaction()
    assert _ids(coll, {"text": {"query": "fox", "path": "plot"}}) == {5}


def test_explain_and_usage(db: Any) -> None:
    coll = _movies(db)
    _search(coll, {"text": {"query": "fox", "path": "plot"}})
    explained = db.command(
        "explain",
        {"aggregate": "movies", "pipeline": [{"$search": {"text": {"query": "fox", "path": "plot"}}}], "cursor": {}},
    )
    stage = explained["stages"][0]["$search"]["explain"]
    assert stage["type"] == "search" and stage["operator"] == "text" and stage["nMatched"] == 2
    (listed,) = coll.list_search_indexes()
    assert listed["accesses"]["ops"] >= 2 and listed["numDocs"] == 4


def test_rank_fusion(db: Any) -> None:
    coll = _movies(db)
    stage = {
        "$rankFusion": {
            "input": {
                "pipelines": {
                    "text": [{"$search": {"text": {"query": "dog fox", "path": "plot"}}}, {"$limit": 3}],
                    "recent": [{"$match": {"year": {"$gte": 2010}}}, {"$sort": {"year": -1}}],
                }
            },
            "combination": {"weights": {"recent": 2}},
            "scoreDetails": True,
        }
    }
    got = list(coll.aggregate([stage, {"$project": {"s": {"$meta": "score"}, "d": {"$meta": "scoreDetails"}}}]))
    text_order = [i for i, _ in _search(coll, {"text": {"query": "dog fox", "path": "plot"}})][:3]
    recent_order = [4, 3, 2]
    expected: dict[int, float] = {}
    for rank, i in enumerate(text_order, 1):
        expected[i] = expected.get(i, 0) + 1 / (60 + rank)
    for rank, i in enumerate(recent_order, 1):
        expected[i] = expected.get(i, 0) + 2 / (60 + rank)
    assert [d["_id"] for d in got] == sorted(expected, key=lambda k: (-expected[k], k))
    assert {d["_id"]: d["s"] for d in got} == pytest.approx(expected)
    assert {x["inputPipelineName"] for x in got[0]["d"]["details"]} <= {"text", "recent"}
    with pytest.raises(OperationFailure):
        list(coll.aggregate([{"$rankFusion": {"input": {"pipelines": {"p": [{"$match": {}}]}}}}]))  # not ranked


def test_score_fusion(db: Any) -> None:
    coll = _movies(db)
    pipelines = {
        "a": [{"$search": {"text": {"query": "dog", "path": "plot"}}}],
        "b": [{"$search": {"index": "default", "near": {"path": "year", "origin": 2000, "pivot": 10}}}],
    }
    a = dict(_search(coll, {"text": {"query": "dog", "path": "plot"}}))
    b = dict(_search(coll, {"near": {"path": "year", "origin": 2000, "pivot": 10}}))
    stage = {"$scoreFusion": {"input": {"pipelines": pipelines, "normalization": "none"}}}
    got = {d["_id"]: d["s"] for d in coll.aggregate([stage, {"$project": {"s": {"$meta": "score"}}}])}
    assert got == pytest.approx({k: (a.get(k, 0) + b.get(k, 0)) / 2 for k in set(a) | set(b)})
    stage = {
        "$scoreFusion": {
            "input": {"pipelines": pipelines, "normalization": "minMaxScaler"},
            "combination": {"method": "expression", "expression": {"$max": ["$$a", "$$b"]}},
        }
    }
    got = {d["_id"]: d["s"] for d in coll.aggregate([stage, {"$project": {"s": {"$meta": "score"}}}])}

    def scaled(values: dict[int, float]) -> dict[int, float]:
        low, high = min(values.values()), max(values.values())
        return {k: (v - low) / (high - low) for k, v in values.items()}

    sa, sb = scaled(a), scaled(b)
    assert got == pytest.approx({k: max(sa.get(k, 0), sb.get(k, 0)) for k in set(a) | set(b)})


_FOX_DOG = {"text": {"query": "fox dog", "path": "plot"}}


def _saved(path: str) -> list[Any]:
    """A dbpath whose movies have a saved dynamic index; the hits of "fox dog" in it."""
    import foliodb

    with foliodb.MongoClient(path) as client:
        coll = client.test.movies
        coll.insert_many([{"_id": k, "plot": v} for k, v in PLOTS.items()])
        _index(coll, {"mappings": {"dynamic": True}})
        return _search(coll, _FOX_DOG)


def _reopened(path: str, loaded: bool, write: dict[str, Any] | None = None) -> list[Any]:
    """The hits of "fox dog" after a restart (and ``write`` inserted), the index having been
    loaded from its files (``loaded``) or rebuilt."""
    import foliodb

    with foliodb.MongoClient(path) as client:
        coll = client.test.movies
        if write is not None:
            coll.insert_one(write)  # replayed from the log after loading
        wait_ready(coll, "default")
        (state,) = client._executor.engine.search.states.values()
        assert state.loaded is loaded
        return _search(coll, _FOX_DOG)


def test_restart_loads_the_saved_index(tmp_path: Any) -> None:
    path = str(tmp_path / "data")
    before = _saved(path)
    after = _reopened(path, True, {"_id": 9, "plot": "one more fox"})
    assert {i for i, _ in after} == {i for i, _ in before} | {9}


def test_restart_rebuilds_an_index_saved_in_an_older_format(tmp_path: Any) -> None:
    import bson

    path = str(tmp_path / "data")
    before = _saved(path)
    # The files as the first format left them: its meta file says format 1.
    (meta,) = (tmp_path / "data" / "foliodb.search").glob("*.meta")
    meta.write_bytes(bson.encode({**bson.decode(meta.read_bytes()), "format": 1}))
    assert _reopened(path, False) == before  # rebuilt from the collection
    assert _reopened(path, True) == before  # and the rebuilt index's files load
