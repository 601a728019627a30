"""mongosh's search index helpers and $vectorSearch against ``foliodb serve``.

https://www.mongodb.com/docs/manual/reference/method/db.collection.createSearchIndex/,
db.collection.getSearchIndexes(), updateSearchIndex(), dropSearchIndex().
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from bson import json_util

from tests.clients.conftest import RunningServer, needs_node_clients
from tests.clients.test_mongosh import run_mongosh

pytestmark = [pytest.mark.clients, needs_node_clients]

EVAL = textwrap.dedent(
    """
    const coll = db.items;
    coll.insertMany([
      { _id: 1, v: [0, 0, 1], kind: 'a' },
      { _id: 2, v: [0, 1, 0], kind: 'b' },
      { _id: 3, v: [1, 0, 0], kind: 'a' },
      { _id: 4, v: [1, 1, 0], kind: 'b' },
    ]);
    const created = coll.createSearchIndex('vec', 'vectorSearch', {
      fields: [
        { type: 'vector', path: 'v', numDimensions: 3, similarity: 'euclidean' },
        { type: 'filter', path: 'kind' },
      ],
    });
    const text = coll.createSearchIndex('text', { mappings: { dynamic: true } });
    let status = '';
    for (let i = 0; i < 600 && status !== 'READY'; i++) {
      status = coll.getSearchIndexes('vec')[0].status;
      if (status !== 'READY') sleep(50);
    }
    const hits = coll.aggregate([
      { $vectorSearch: { index: 'vec', path: 'v', queryVector: [1, 0.9, 0], numCandidates: 4, limit: 2,
                         filter: { kind: 'b' } } },
      { $project: { _id: 1, score: { $meta: 'vectorSearchScore' } } },
    ]).toArray();
    coll.updateSearchIndex('text', { mappings: { dynamic: false, fields: { kind: { type: 'token' } } } });
    const updated = coll.getSearchIndexes('text')[0];
    coll.dropSearchIndex('text');
    ({ created, text, status, hits, updated, names: coll.getSearchIndexes().map((i) => i.name) })
    """
)


def test_search_index_helpers_and_vector_search(server: RunningServer, tmp_path: Path) -> None:
    proc = run_mongosh(tmp_path, server.uri + "shelldb", "--quiet", "--json=canonical", "--eval", EVAL)
    assert proc.returncode == 0, f"mongosh exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    out = json_util.loads(proc.stdout)
    assert (out["created"], out["text"], out["status"]) == ("vec", "text", "READY")
    # kind 'b': _id 4 at distance 0.1, _id 2 at distance sqrt(1 + 0.01); score 1 / (1 + d), float32 query
    assert [hit["_id"] for hit in out["hits"]] == [4, 2]
    assert out["hits"][0]["score"] == pytest.approx(1 / 1.1, rel=1e-6)
    assert out["hits"][1]["score"] == pytest.approx(1 / (1 + 1.01**0.5), rel=1e-6)
    assert out["updated"]["latestDefinition"] == {"mappings": {"dynamic": False, "fields": {"kind": {"type": "token"}}}}
    assert out["updated"]["latestDefinitionVersion"]["version"] == 1
    assert out["names"] == ["vec"]
