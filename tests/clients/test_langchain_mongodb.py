"""langchain-mongodb's MongoDBAtlasVectorSearch as its users run it, against the embedded client
and against `foliodb serve`: its index helpers, add_texts with metadata, similarity search with
scores, pre-filtered search, MMR, delete by id. Embeddings come from a small deterministic function
(no model); every answer is checked against numpy's exact ranking of the same vectors.

Library docs: https://python.langchain.com/docs/integrations/vectorstores/mongodb_atlas/
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings
from langchain_mongodb import MongoDBAtlasVectorSearch
from langchain_mongodb.index import drop_vector_search_index, update_vector_search_index

import foliodb
from tests.clients.conftest import RunningServer

pytestmark = pytest.mark.clients

DIMS = 32
TEXTS = [
    "the cat sat on the mat",
    "a dog chased the cat",
    "stock markets fell sharply today",
    "the central bank raised interest rates",
    "a recipe for apple pie with cinnamon",
    "bake the pie for forty minutes",
    "the football match ended in a draw",
    "the striker scored twice in the final",
    "cats and dogs living together",
    "bond yields rose after the rate decision",
    "slice the apples thinly",
    "the goalkeeper saved a penalty",
]
TOPICS = ["pets", "pets", "money", "money", "food", "food", "sport", "sport", "pets", "money", "food", "sport"]


class HashEmbeddings(Embeddings):
    """Character-trigram counts hashed into DIMS buckets, normalised: similar words, near vectors."""

    def _embed(self, text: str) -> list[float]:
        vector = np.zeros(DIMS)
        padded = f"  {text.lower()}  "
        for i in range(len(padded) - 2):
            bucket = int.from_bytes(hashlib.blake2b(padded[i : i + 3].encode(), digest_size=2).digest(), "big")
            vector[bucket % DIMS] += 1.0
        return (vector / np.linalg.norm(vector)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


EMBED = HashEmbeddings()


def _ranking(query: str, candidates: list[int]) -> list[int]:
    """Indexes of TEXTS best first by cosine similarity, computed by numpy."""
    q = np.asarray(EMBED.embed_query(query))
    matrix = np.asarray(EMBED.embed_documents([TEXTS[i] for i in candidates]))
    sims = matrix @ q / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(q))
    return [candidates[i] for i in np.argsort(-sims, kind="stable")]


@pytest.fixture(params=["embedded", "wire"])
def collection(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    if request.param == "embedded":
        client: Any = foliodb.MongoClient(str(tmp_path / "embedded"))
        yield client.rag.chunks
        client.close()
    else:
        server = RunningServer(tmp_path / "served")
        client = server.client()
        yield client.rag.chunks
        client.close()
        server.stop()


def _store(collection: Any) -> MongoDBAtlasVectorSearch:
    store = MongoDBAtlasVectorSearch(
        collection, EMBED, index_name="vector_index", relevance_score_fn="cosine", auto_create_index=False
    )
    store.create_vector_search_index(dimensions=DIMS, filters=["topic"], wait_until_complete=60)
    return store


def test_index_helpers(collection: Any) -> None:
    _store(collection)
    (listed,) = collection.list_search_indexes()
    assert listed["name"] == "vector_index" and listed["status"] == "READY" and listed["type"] == "vectorSearch"
    fields = {field["path"]: field for field in listed["latestDefinition"]["fields"]}
    assert fields["embedding"]["numDimensions"] == DIMS and fields["topic"]["type"] == "filter"
    update_vector_search_index(
        collection,
        "vector_index",
        path="embedding",
        dimensions=DIMS,
        similarity="cosine",
        filters=["topic", "year"],
        wait_until_complete=60,
    )
    (updated,) = collection.list_search_indexes()
    assert {field["path"] for field in updated["latestDefinition"]["fields"]} == {"embedding", "topic", "year"}
    drop_vector_search_index(collection, "vector_index", wait_until_complete=60)
    assert list(collection.list_search_indexes()) == []


def test_similarity_search_with_scores_and_filters(collection: Any) -> None:
    store = _store(collection)
    ids = store.add_texts(TEXTS, metadatas=[{"topic": t, "n": i} for i, t in enumerate(TOPICS)])
    assert len(ids) == len(TEXTS)
    query = "cat and dog"
    found = store.similarity_search_with_score(query, k=4)
    expected = _ranking(query, list(range(len(TEXTS))))[:4]
    assert [doc.metadata["n"] for doc, _ in found] == expected
    q = np.asarray(EMBED.embed_query(query))
    for doc, score in found:
        v = np.asarray(EMBED.embed_query(doc.page_content))
        assert score == pytest.approx((1 + float(v @ q) / (np.linalg.norm(v) * np.linalg.norm(q))) / 2, abs=1e-6)
    assert found[0][0].page_content == TEXTS[expected[0]]
    # pre-filtered: only the topic asked for, best first among them
    money = [i for i, t in enumerate(TOPICS) if t == "money"]
    hits = store.similarity_search("interest rate rises", k=3, pre_filter={"topic": {"$eq": "money"}})
    assert [doc.metadata["n"] for doc in hits] == _ranking("interest rate rises", money)[:3]
    assert all(doc.metadata["topic"] == "money" for doc in hits)


def test_mmr_and_delete_by_id(collection: Any) -> None:
    store = _store(collection)
    ids = store.add_texts(TEXTS, metadatas=[{"topic": t, "n": i} for i, t in enumerate(TOPICS)])
    query = "apple pie recipe"
    fetched = set(_ranking(query, list(range(len(TEXTS))))[:8])
    mmr = store.max_marginal_relevance_search(query, k=3, fetch_k=8, lambda_mult=0.5)
    assert len(mmr) == 3
    assert mmr[0].metadata["n"] == _ranking(query, list(range(len(TEXTS))))[0]
    assert {doc.metadata["n"] for doc in mmr} <= fetched  # MMR re-ranks the fetch_k nearest
    best = _ranking(query, list(range(len(TEXTS))))[0]
    store.delete(ids=[ids[best]])
    after = store.similarity_search(query, k=2)
    remaining = [i for i in range(len(TEXTS)) if i != best]
    assert [doc.metadata["n"] for doc in after] == _ranking(query, remaining)[:2]
