"""returnScope, hasAncestor and hasRoot against a plain-Python evaluation.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/query/return-scope/ (the elements of
an ``embeddedDocuments`` field with a ``storedSource`` returned as documents, scored, counted
and sorted as documents; ``returnStoredSource: true`` required; only the stored fields come
back; ``searchRootDocumentId``), .../operators-collectors/hasancestor/ (``ancestorPath`` an
embeddedDocuments field above the scope), .../hasroot/ (an operator over the root
documents). mongot (HasAncestorQueryFactory, HasRootQueryFactory): an element matches when
its ancestor matches, scored as the ancestor plus 1 (a required constant-score filter on the
scope's path); OperatorEmbeddedRootValidator and validateReturnScope give the errors.
Expected scores are BM25 over the entries of the searched level (elements count as
documents), computed here.
"""

from __future__ import annotations

import itertools
import random
import re
from collections import Counter
from typing import Any

import pytest
from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from tests.unit.search.conftest import wait_ready
from tests.unit.search.text_reference import bm25, float32, standard_terms

WORDS = ["red", "blue", "steel", "wood", "saw", "ball"]
CATEGORIES = ["tools", "toys", "garden"]
DEFINITION = {
    "mappings": {
        "dynamic": True,
        "fields": {
            "items": {
                "type": "embeddedDocuments",
                "dynamic": True,
                "storedSource": {"include": ["name", "price"]},
                "fields": {
                    "parts": {"type": "embeddedDocuments", "dynamic": True, "storedSource": True},
                    "price": [{"type": "number"}, {"type": "numberFacet"}],
                },
            }
        },
    }
}


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def _setup(db: Any) -> tuple[Any, list[dict[str, Any]]]:
    rng = random.Random(31)
    docs = []
    for i in range(40):
        items = []
        for _ in range(rng.randint(0, 3)):
            item: dict[str, Any] = {"name": _words(rng, 1, 3), "price": rng.randint(1, 9), "note": "x"}
            if rng.random() < 0.7:
                item["parts"] = [{"kind": _words(rng, 1, 2), "n": j} for j in range(rng.randint(1, 2))]
            items.append(item)
        docs.append({"_id": i, "category": rng.choice(CATEGORIES), "items": items})
    db.s.insert_many(docs)
    db.s.create_search_index(SearchIndexModel(definition=DEFINITION))
    wait_ready(db.s, "default")
    return db.s, docs


def _run(coll: Any, stage: dict[str, Any]) -> list[dict[str, Any]]:
    meta = {"score": {"$meta": "searchScore"}, "root": {"$meta": "searchRootDocumentId"}}
    return list(coll.aggregate([{"$search": {**stage, "returnStoredSource": True}}, {"$addFields": meta}]))


def _bm25_table(texts: list[str], word: str) -> list[float | None]:
    """Each text's BM25 for ``word`` among these texts (None: not matching)."""
    tokens = [standard_terms(t) for t in texts]
    n = len(tokens)
    avgdl = sum(len(t) for t in tokens) / n
    df = sum(1 for t in tokens if word in t)
    return [bm25(t.count(word), df, n, len(t), avgdl) if word in t else None for t in tokens]


def _items(docs: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    return [(d["_id"], item) for d in docs for item in d["items"]]


def _key(found: dict[str, Any]) -> tuple[Any, ...]:
    return found["root"], tuple(sorted((k, str(v)) for k, v in found.items() if k not in ("score", "root")))


def _check(got: list[dict[str, Any]], expected: list[tuple[Any, dict[str, Any], float]]) -> None:
    """The same elements (with multiplicity), each with its score, best first."""
    want = {}
    for root, element, score in expected:
        want.setdefault(_key({**element, "root": root}), []).append(score)
    assert Counter(_key(g) for g in got) == Counter({k: len(v) for k, v in want.items()})
    for g in got:
        assert g["score"] == pytest.approx(float32(want[_key(g)][0]), rel=1e-5)
    scores = [g["score"] for g in got]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("word", ["red", "saw"])
def test_elements_are_scored_and_returned_as_documents(db: Any, word: str) -> None:
    coll, docs = _setup(db)
    items = _items(docs)
    scores = _bm25_table([item["name"] for _, item in items], word)
    expected = [
        (root, {"name": item["name"], "price": item["price"]}, score)
        for (root, item), score in zip(items, scores, strict=True)
        if score is not None
    ]
    got = _run(coll, {"text": {"query": word, "path": "items.name"}, "returnScope": {"path": "items"}})
    assert expected
    _check(got, expected)
    count = list(
        coll.aggregate(
            [{"$searchMeta": {"text": {"query": word, "path": "items.name"}, "returnScope": {"path": "items"}}}]
        )
    )
    assert count == [{"count": {"lowerBound": len(expected)}}]


def test_has_root_filters_elements_by_their_document(db: Any) -> None:
    coll, docs = _setup(db)
    items = _items(docs)
    category = {d["_id"]: d["category"] for d in docs}
    scores = _bm25_table([item["name"] for _, item in items], "blue")
    expected = [
        (root, {"name": item["name"], "price": item["price"]}, score)
        for (root, item), score in zip(items, scores, strict=True)
        if score is not None and category[root] == "toys"
    ]
    assert expected
    has_root = {"hasRoot": {"operator": {"text": {"query": "toys", "path": "category"}}}}
    stage = {
        "compound": {"must": [{"text": {"query": "blue", "path": "items.name"}}], "filter": [has_root]},
        "returnScope": {"path": "items"},
    }
    _check(_run(coll, stage), expected)


def test_has_root_scores_the_document_plus_one(db: Any) -> None:
    coll, docs = _setup(db)
    root_scores = dict(zip([d["_id"] for d in docs], _bm25_table([d["category"] for d in docs], "garden"), strict=True))
    expected = [
        (root, {"name": item["name"], "price": item["price"]}, root_scores[root] + 1)
        for root, item in _items(docs)
        if root_scores[root] is not None
    ]
    assert expected
    stage = {
        "hasRoot": {"operator": {"text": {"query": "garden", "path": "category"}}},
        "returnScope": {"path": "items"},
    }
    _check(_run(coll, stage), expected)


def test_has_ancestor_scores_parts_by_their_item(db: Any) -> None:
    coll, docs = _setup(db)
    items = _items(docs)
    scores = _bm25_table([item["name"] for _, item in items], "steel")
    expected = [
        (root, part, score + 1)
        for (root, item), score in zip(items, scores, strict=True)
        if score is not None
        for part in item.get("parts", [])
    ]
    stage = {
        "hasAncestor": {"ancestorPath": "items", "operator": {"text": {"query": "steel", "path": "items.name"}}},
        "returnScope": {"path": "items.parts"},
    }
    assert expected
    _check(_run(coll, stage), expected)


def test_embedded_document_inside_return_scope_sums_its_elements(db: Any) -> None:
    coll, docs = _setup(db)
    items = _items(docs)
    parts = [(i, part) for i, (_, item) in enumerate(items) for part in item.get("parts", [])]
    part_scores = _bm25_table([part["kind"] for _, part in parts], "wood")
    per_item: dict[int, float] = {}
    for (i, _), score in zip(parts, part_scores, strict=True):
        if score is not None:
            per_item[i] = per_item.get(i, 0.0) + score
    expected = [
        (items[i][0], {"name": items[i][1]["name"], "price": items[i][1]["price"]}, s) for i, s in per_item.items()
    ]
    assert expected
    stage = {
        "embeddedDocument": {
            "path": "items.parts",
            "operator": {"text": {"query": "wood", "path": "items.parts.kind"}},
        },
        "returnScope": {"path": "items"},
    }
    _check(_run(coll, stage), expected)


def test_facets_count_elements(db: Any) -> None:
    coll, docs = _setup(db)
    matching = [item for _, item in _items(docs) if "red" in standard_terms(item["name"])]
    bounds = [0, 4, 7, 10]
    expected = [
        {"_id": low, "count": sum(1 for item in matching if low <= item["price"] < high)}
        for low, high in itertools.pairwise(bounds)
    ]
    facet = {
        "operator": {"text": {"query": "red", "path": "items.name"}},
        "facets": {"p": {"type": "number", "path": "items.price", "boundaries": bounds}},
    }
    (meta,) = coll.aggregate([{"$searchMeta": {"facet": facet, "returnScope": SCOPE}}])
    assert meta == {"count": {"lowerBound": len(matching)}, "facet": {"p": {"buckets": expected}}}


def test_a_document_written_just_now_is_found(db: Any) -> None:
    """The element of a document the index has not absorbed yet (the search's own view)."""
    coll, _ = _setup(db)
    coll.insert_one(
        {"_id": "new", "category": "toys", "items": [{"name": "plain"}, {"name": "zebra kite", "price": 1}]}
    )
    got = _run(coll, {"text": {"query": "zebra", "path": "items.name"}, "returnScope": {"path": "items"}})
    assert [(g["root"], g["name"], g["price"]) for g in got] == [("new", "zebra kite", 1)]


def test_a_transaction_sees_its_own_elements(db: Any, client: Any) -> None:
    """Elements of a document written in the running transaction (the reader's overlay)."""
    coll, _ = _setup(db)
    stage = {"text": {"query": "zebra", "path": "items.name"}, "returnScope": SCOPE, "returnStoredSource": True}
    pipeline = [{"$search": stage}, {"$addFields": {"root": {"$meta": "searchRootDocumentId"}}}]
    with client.start_session() as session:
        session.start_transaction()
        coll.insert_one({"_id": "t", "items": [{"name": "a"}, {"name": "zebra", "price": 4}]}, session=session)
        got = list(coll.aggregate(pipeline, session=session))
        assert [(g["root"], g["name"], g["price"]) for g in got] == [("t", "zebra", 4)]
        assert list(coll.aggregate(pipeline)) == []  # not committed: others do not see it
        session.abort_transaction()


def test_sort_orders_elements(db: Any) -> None:
    coll, docs = _setup(db)
    stage = {"exists": {"path": "items.price"}, "returnScope": {"path": "items"}, "sort": {"items.price": -1}}
    got = _run(coll, stage)
    assert sorted(g["price"] for g in got) == sorted(item["price"] for _, item in _items(docs))
    assert [g["price"] for g in got] == sorted((g["price"] for g in got), reverse=True)


SCOPE = {"path": "items"}
TEXT = {"text": {"query": "red", "path": "items.name"}}


@pytest.mark.parametrize(
    ("stage", "message"),
    [
        (
            {**TEXT, "returnScope": {"path": "category"}},
            "returnScope path 'category' must be indexed as embeddedDocument",
        ),
        ({**TEXT, "returnScope": {"path": "plain"}}, "returnScope path 'plain' must be indexed as embeddedDocument"),
        ({**TEXT, "returnScope": {}}, '"returnScope.path" is required'),
        ({**TEXT, "returnScope": {"path": 1}}, '"returnScope.path" must be a string'),
        ({**TEXT, "returnScope": {"path": "items", "x": 1}}, '"returnScope.x" is not a valid field'),
        ({**TEXT, "returnScope": "items"}, '"returnScope" must be a document'),
        (
            {"hasRoot": {"operator": {"text": {"query": "toys", "path": "category"}}}},
            "hasRoot operator requires embeddedDocument.path, hasAncestor.ancestorPath, or returnScope.path to be set.",
        ),
        (
            {"hasAncestor": {"ancestorPath": "items", "operator": TEXT}},
            "hasAncestor operator requires embeddedDocument.path",
        ),
        (
            {"hasAncestor": {"ancestorPath": "items", "operator": TEXT}, "returnScope": SCOPE},
            "hasAncestor.ancestorPath 'items' must be a parent of returnScope.path 'items'",
        ),
        (
            {"hasAncestor": {"ancestorPath": "category", "operator": TEXT}, "returnScope": SCOPE},
            "hasAncestor requires path 'category' to be indexed as 'embeddedDocuments'",
        ),
        (
            {"hasRoot": {"operator": {"moreLikeThis": {"like": {"category": "toys"}}}}, "returnScope": SCOPE},
            "Operator: moreLikeThis not allowed in embeddedDocument operator",
        ),
        (
            {"embeddedDocument": {"path": "items", "operator": TEXT}, "returnScope": {"path": "items.parts"}},
            "embeddedDocument operator path 'items' must be a descendant of returnScope.path 'items.parts'",
        ),
        (
            {"text": {"query": "toys", "path": "category"}, "returnScope": SCOPE},
            "text operator path 'category' must be a descendant of returnScope.path 'items'",
        ),
        (
            {"compound": {"should": [TEXT, {"exists": {"path": "category"}}]}, "returnScope": SCOPE},
            "exists operator path 'category' must be a descendant of returnScope.path 'items'",
        ),
        (
            {
                "hasAncestor": {"ancestorPath": "items", "operator": {"text": {"query": "x", "path": "category"}}},
                "returnScope": {"path": "items.parts"},
            },
            "text operator path 'category' must be a descendant of hasAncestor.ancestorPath 'items'",
        ),
        (
            {"embeddedDocument": {"path": "items", "operator": {"text": {"query": "x", "path": "category"}}}},
            "text operator path 'category' must be a descendant of embeddedDocument.path 'items'",
        ),
        (
            {"span": {"term": {"path": "category", "query": "toys"}}, "returnScope": SCOPE},
            "span operator path 'category' must be a descendant of returnScope.path 'items'",
        ),
        (
            {
                "hasRoot": {
                    "operator": {
                        "embeddedDocument": {
                            "path": "items",
                            "operator": {
                                "embeddedDocument": {
                                    "path": "items.parts",
                                    "operator": {
                                        "hasRoot": {
                                            "operator": {"embeddedDocument": {"path": "items", "operator": TEXT}}
                                        }
                                    },
                                }
                            },
                        }
                    }
                },
                "returnScope": {"path": "items.parts"},
            },
            "Query must contain less than 4 occurrences of hasAncestor + hasRoot + embeddedDocuments.",
        ),
        ({"hasRoot": {}, "returnScope": SCOPE}, '"hasRoot.operator" is required'),
        ({"hasAncestor": {"operator": TEXT}, "returnScope": SCOPE}, '"hasAncestor.ancestorPath" is required'),
    ],
)
def test_bad_scopes_fail_as_mongot(db: Any, stage: dict[str, Any], message: str) -> None:
    coll, _ = _setup(db)
    with pytest.raises(OperationFailure) as failure:
        _run(coll, stage)
    assert failure.value.code == 8
    assert message in str(failure.value)


def test_return_scope_needs_return_stored_source(db: Any) -> None:
    coll, _ = _setup(db)
    with pytest.raises(OperationFailure) as failure:
        list(coll.aggregate([{"$search": {**TEXT, "returnScope": SCOPE}}]))
    assert failure.value.code == 8
    assert "Set returnStoredSource to true if returnScope is non-empty" in str(failure.value)


def _passage(name: str, word: str) -> dict[str, Any]:
    """The highlight passage of one name (lower-case words and spaces) where ``word`` hit."""
    texts: list[dict[str, Any]] = []
    at = 0
    words = list(re.finditer(r"[a-z]+", name))
    for m in (m for m in words if m.group() == word):
        if m.start() > at:
            texts.append({"value": name[at : m.start()], "type": "text"})
        texts.append({"value": m.group(), "type": "hit"})
        at = m.end()
    if at < len(name):
        texts.append({"value": name[at:], "type": "text"})
    hits = sum(1 for m in words if m.group() == word)
    return {"path": "items.name", "texts": texts, "score": hits / len(words)}


def test_highlights_come_from_the_element(db: Any) -> None:
    coll, _ = _setup(db)
    stage = {**TEXT, "returnScope": SCOPE, "returnStoredSource": True, "highlight": {"path": "items.name"}}
    got = list(coll.aggregate([{"$search": stage}, {"$addFields": {"h": {"$meta": "searchHighlights"}}}]))
    assert got
    for element in got:
        assert element["h"] == [_passage(element["name"], "red")]


def test_paging_under_return_scope_is_not_implemented(db: Any) -> None:
    coll, _ = _setup(db)
    with pytest.raises(OperationFailure) as failure:
        _run(coll, {**TEXT, "returnScope": SCOPE, "searchAfter": "CAA="})
    assert failure.value.code == 238


@pytest.mark.parametrize("stored", [1, {"include": "name"}, {"include": ["a"], "exclude": ["b"]}, {"only": ["a"]}])
def test_bad_embedded_stored_source_definitions_fail(db: Any, stored: Any) -> None:
    definition = {"mappings": {"fields": {"items": {"type": "embeddedDocuments", "storedSource": stored}}}}
    with pytest.raises(OperationFailure) as failure:
        db.x.create_search_index(SearchIndexModel(definition=definition))
    assert failure.value.code == 2
