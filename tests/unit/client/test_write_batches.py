"""Writes larger than one command: pymongo splits a bulk into commands of at
most maxWriteBatchSize (100,000) operations, and so does the embedded client;
errors keep the index of the whole request.

Manual: https://www.mongodb.com/docs/manual/reference/limits/#mongodb-limit-Write-Command-Batch-Limit-Size
"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo import InsertOne
from pymongo.errors import BulkWriteError

N = 100_000 + 20


def test_insert_many_past_the_batch_limit(db: Any) -> None:
    result = db.x.insert_many([{"_id": i} for i in range(N)])
    assert len(result.inserted_ids) == N == db.x.count_documents({})


@pytest.mark.parametrize("ordered", [True, False])
def test_errors_carry_the_request_index_across_commands(db: Any, ordered: bool) -> None:
    # The last 20 operations (in the second command) repeat _ids 0..19 of the first.
    requests = [InsertOne({"_id": i % (N - 20)}) for i in range(N)]
    with pytest.raises(BulkWriteError) as info:
        db.y.bulk_write(requests, ordered=ordered)
    errors = info.value.details["writeErrors"]
    assert info.value.details["nInserted"] == N - 20
    if ordered:
        assert [e["index"] for e in errors] == [N - 20]  # the first failure stops an ordered bulk
    else:
        assert [e["index"] for e in errors] == list(range(N - 20, N))
    assert all(e["code"] == 11000 for e in errors)
