"""A quick regression probe of the embedded hot path: find_one by _id on disk.

    python scripts/find_one_probe.py          # prints the best of 5 runs of 5,000 lookups

It is not the benchmark (``python -m benchmarks.run`` compares with the floor
and the peers); it is a 10-second check that a change did not slow the path
every read takes.
"""

from __future__ import annotations

import tempfile
import time

from bson import ObjectId

import foliodb


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, foliodb.MongoClient(tmp + "/data") as client:
        coll = client.db.orders
        docs = [{"_id": ObjectId(), "x": "a" * 300, "n": i, "addr": {"city": "x"}} for i in range(20000)]
        coll.insert_many(docs)
        ids = [d["_id"] for d in docs[:5000]]
        best = 0.0
        for _ in range(5):
            started = time.perf_counter()
            for _id in ids:
                coll.find_one({"_id": _id})
            best = max(best, len(ids) / (time.perf_counter() - started))
        print(f"find_one by _id on disk: {best:,.0f}/s (best of 5 runs of {len(ids):,})")


if __name__ == "__main__":
    main()
