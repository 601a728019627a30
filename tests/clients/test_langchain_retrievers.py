"""langchain-mongodb's full-text and hybrid retrievers as their users run them, embedded and over
the wire: MongoDBAtlasFullTextSearchRetriever (creating its own search index) and
MongoDBAtlasHybridSearchRetriever ($vectorSearch and $search joined by $unionWith, fused by
reciprocal rank). Answers are checked against Lucene's BM25 and numpy's cosine ranking,
computed independently, and the retriever's documented fusion formula
(weight / (rank + penalty + 1), ranks from 0).

Library docs: https://python.langchain.com/docs/integrations/providers/mongodb_atlas/#retrievers
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_mongodb.retrievers import MongoDBAtlasFullTextSearchRetriever, MongoDBAtlasHybridSearchRetriever

from tests.clients.test_langchain_mongodb import TEXTS, TOPICS, _ranking, _store, collection  # noqa: F401
from tests.unit.search.conftest import wait_ready
from tests.unit.search.text_reference import float32, score_terms

pytestmark = pytest.mark.clients


def _bm25_ranking(query: str) -> list[tuple[int, float]]:
    scores = score_terms(dict(enumerate(TEXTS)), query.lower().split())
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def test_full_text_retriever(collection: Any) -> None:  # noqa: F811 - the fixture imported above
    store = _store(collection)
    store.add_texts(TEXTS, metadatas=[{"topic": t, "n": i} for i, t in enumerate(TOPICS)])
    retriever = MongoDBAtlasFullTextSearchRetriever(
        collection=collection, search_index_name="text_index", search_field="text", k=3, auto_index_timeout=60
    )
    wait_ready(collection, "text_index")
    docs = retriever.invoke("apple pie")
    expected = _bm25_ranking("apple pie")[:3]
    assert [d.metadata["n"] for d in docs] == [i for i, _ in expected]
    for doc, (_, score) in zip(docs, expected, strict=True):
        assert doc.metadata["score"] == pytest.approx(float32(score), rel=1e-6)
    # A pre-filter ($match after $search): only the topic asked for.
    filtered = MongoDBAtlasFullTextSearchRetriever(
        collection=collection, search_index_name="text_index", search_field="text", filter={"topic": "sport"}
    )
    sport = [d.metadata["n"] for d in filtered.invoke("the final match")]
    assert sport and all(TOPICS[n] == "sport" for n in sport)
    # A document added now is found at once (mongot would catch up later).
    store.add_texts(["fresh apple pie from the bakery"], metadatas=[{"topic": "food", "n": 99}])
    assert 99 in [d.metadata["n"] for d in retriever.invoke("bakery")]


def test_hybrid_retriever(collection: Any) -> None:  # noqa: F811 - the fixture imported above
    store = _store(collection)
    store.add_texts(TEXTS, metadatas=[{"topic": t, "n": i} for i, t in enumerate(TOPICS)])
    MongoDBAtlasFullTextSearchRetriever(
        collection=collection, search_index_name="text_index", search_field="text", auto_index_timeout=60
    )
    wait_ready(collection, "text_index")
    k = 4
    retriever = MongoDBAtlasHybridSearchRetriever(vectorstore=store, search_index_name="text_index", k=k)
    query = "apple pie and cats"
    docs = retriever.invoke(query)
    vector = _ranking(query, list(range(len(TEXTS))))[:k]
    text = [i for i, _ in _bm25_ranking(query)][:k]
    expected: dict[int, float] = {}
    for ranking in (vector, text):
        for rank, i in enumerate(ranking):
            expected[i] = expected.get(i, 0.0) + 1.0 / (rank + 60 + 1)
    assert len(docs) == k
    for doc in docs:
        assert doc.metadata["score"] == pytest.approx(expected[doc.metadata["n"]])
    best = sorted(expected.values(), reverse=True)[:k]
    assert sorted((d.metadata["score"] for d in docs), reverse=True) == pytest.approx(best)
