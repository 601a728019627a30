"""collStats, dbStats and $collStats report storage as MongoDB names it:
``size`` is the documents' BSON, ``storageSize`` the pages holding them,
``indexSizes`` / ``totalIndexSize`` / ``indexSize`` the index pages.

Manual: https://www.mongodb.com/docs/manual/reference/command/collStats/ and
https://www.mongodb.com/docs/manual/reference/command/dbStats/
"""

from __future__ import annotations

from typing import Any

import bson


def test_sizes_follow_the_data(client: Any) -> None:
    db = client.stats
    db.t.insert_many([{"a": i, "s": "x" * 100} for i in range(2000)])
    db.t.create_index("a")
    coll = db.command("collStats", "t")
    assert coll["size"] == sum(len(bson.encode(d)) for d in db.t.find())
    assert coll["storageSize"] >= coll["size"]  # pages hold the documents, with some free space
    assert set(coll["indexSizes"]) == {"_id_", "a_1"} and all(v > 0 for v in coll["indexSizes"].values())
    assert coll["totalIndexSize"] == sum(coll["indexSizes"].values())
    whole = db.command("dbStats")
    assert (whole["dataSize"], whole["storageSize"], whole["indexSize"]) == (
        coll["size"],
        coll["storageSize"],
        coll["totalIndexSize"],
    )
    assert whole["totalSize"] == whole["storageSize"] + whole["indexSize"]
    stage = next(db.t.aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]
    assert stage["indexSizes"] == coll["indexSizes"]
    before = coll["storageSize"]
    db.t.insert_many([{"a": i, "s": "y" * 1000} for i in range(2000)])
    assert db.command("collStats", "t")["storageSize"] > before
