"""llama-index's MongoDB vector store (llama-index-vector-stores-mongodb) as its users run it,
against the embedded client and against `foliodb serve`: its index helper, add nodes with
embeddings and metadata, top-k queries with scores, metadata filters, delete by document.
Embeddings come from the deterministic function of the langchain test; answers are checked
against numpy.

Library docs: https://docs.llamaindex.ai/en/stable/examples/vector_stores/MongoDBAtlasVectorSearch/
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import numpy as np
import pymongo
import pytest
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)
from llama_index.vector_stores.mongodb import MongoDBAtlasVectorSearch

import foliodb
from tests.clients.conftest import RunningServer
from tests.clients.test_langchain_mongodb import DIMS, EMBED, TEXTS, TOPICS, _ranking

pytestmark = pytest.mark.clients


@pytest.fixture(params=["embedded", "wire"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[MongoDBAtlasVectorSearch]:
    if request.param == "embedded":
        client: Any = foliodb.MongoClient(str(tmp_path / "embedded"))
        async_client: Any = foliodb.AsyncMongoClient(str(tmp_path / "embedded"))  # the same engine
        yield MongoDBAtlasVectorSearch(client, async_client, db_name="rag", collection_name="nodes")
        client.close()
    else:
        server = RunningServer(tmp_path / "served")
        client = server.client()
        async_client: Any = pymongo.AsyncMongoClient(server.uri)
        yield MongoDBAtlasVectorSearch(client, async_client, db_name="rag", collection_name="nodes")
        client.close()
        server.stop()


def _nodes() -> list[TextNode]:
    return [
        TextNode(
            text=text,
            id_=f"node{i}",
            embedding=EMBED.embed_query(text),
            metadata={"topic": TOPICS[i], "n": i},
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"doc{i % 3}")},
        )
        for i, text in enumerate(TEXTS)
    ]


def test_query_filter_delete(store: MongoDBAtlasVectorSearch) -> None:
    store.create_vector_search_index(
        dimensions=DIMS, path="embedding", similarity="cosine", filters=["metadata.topic"], wait_until_complete=60
    )
    assert store.add(_nodes()) == [f"node{i}" for i in range(len(TEXTS))]
    query = "the cat and the dog"
    result = store.query(VectorStoreQuery(query_embedding=EMBED.embed_query(query), similarity_top_k=4))
    expected = _ranking(query, list(range(len(TEXTS))))[:4]
    assert result.ids == [f"node{i}" for i in expected]
    q = np.asarray(EMBED.embed_query(query))
    for node, score in zip(result.nodes, result.similarities or [], strict=True):
        v = np.asarray(EMBED.embed_query(node.get_content()))
        assert score == pytest.approx((1 + float(v @ q)) / 2, abs=1e-6)  # unit vectors: cosine is the dot
    filters = MetadataFilters(filters=[MetadataFilter(key="topic", value="sport", operator=FilterOperator.EQ)])
    sport = [i for i, t in enumerate(TOPICS) if t == "sport"]
    filtered = store.query(
        VectorStoreQuery(query_embedding=EMBED.embed_query("penalty goal"), similarity_top_k=2, filters=filters)
    )
    assert filtered.ids == [f"node{i}" for i in _ranking("penalty goal", sport)[:2]]
    asynchronous = asyncio.run(
        store.aquery(VectorStoreQuery(query_embedding=EMBED.embed_query(query), similarity_top_k=4))
    )
    assert asynchronous.ids == result.ids
    store.delete("doc0")  # the nodes whose source document is doc0: 0, 3, 6, 9
    left = [i for i in range(len(TEXTS)) if i % 3]
    after = store.query(VectorStoreQuery(query_embedding=EMBED.embed_query(query), similarity_top_k=3))
    assert after.ids == [f"node{i}" for i in _ranking(query, left)[:3]]
