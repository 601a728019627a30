"""Geo queries through a 2dsphere index against a collection scan: ``python -m benchmarks.geo``.

N random points (uniform over the sphere, seeded) are loaded as GeoJSON
Points with a ``2dsphere`` index, in one process and one dbpath. Then, for
random centres (the same in both modes):

- ``near``: ``find({loc: {$near: {$geometry: c, $maxDistance: 50 km}}}).limit(100)``,
  the nearest first;
- ``within``: ``find({loc: {$geoWithin: {$centerSphere: [c, 50 km]}}})``.

Each runs through the index (GEO_NEAR_2DSPHERE, IXSCAN) and as a collection
scan (``FOLIODB_NO_INDEXES=1`` set in-process for the query: the near scan
measures every document and sorts, the filter checks every document). The
two answers must be the same documents; the script fails otherwise. Times
are the median over the queries, in milliseconds.

    python -m benchmarks.geo                          # 1,000,000 points
    python -m benchmarks.geo --points 100000 --queries 20 --scan-queries 5
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

RADIUS = 6378.1 * 1000
DISTANCE = 50_000.0  # meters


def random_point(rng: random.Random) -> list[float]:
    # Uniform over the sphere's area: latitude through asin.
    return [rng.uniform(-180.0, 180.0), math.degrees(math.asin(rng.uniform(-1.0, 1.0)))]


def load(coll: Any, points: int, rng: random.Random) -> tuple[float, float]:
    """(insert seconds, index build seconds)."""
    start = time.perf_counter()
    batch = 10_000
    for first in range(0, points, batch):
        docs = [
            {"_id": i, "loc": {"type": "Point", "coordinates": random_point(rng)}}
            for i in range(first, min(points, first + batch))
        ]
        coll.insert_many(docs, ordered=False)
    inserted = time.perf_counter() - start
    start = time.perf_counter()
    coll.create_index([("loc", "2dsphere")])
    return inserted, time.perf_counter() - start


def timed(run: Any, scan: bool) -> tuple[float, list[Any]]:
    if scan:
        os.environ["FOLIODB_NO_INDEXES"] = "1"
    try:
        start = time.perf_counter()
        ids = run()
        return (time.perf_counter() - start) * 1000, ids
    finally:
        os.environ.pop("FOLIODB_NO_INDEXES", None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=20, help="indexed queries of each kind")
    parser.add_argument("--scan-queries", type=int, default=3, help="collection-scan queries of each kind")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    import foliodb

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        client = foliodb.MongoClient(str(Path(tmp) / "data"))
        coll = client.bench.places
        inserted, built = load(coll, args.points, rng)
        centers = [random_point(rng) for _ in range(args.queries)]

        def near(c: list[float]) -> Any:
            query = {"loc": {"$near": {"$geometry": {"type": "Point", "coordinates": c}, "$maxDistance": DISTANCE}}}
            return lambda: [d["_id"] for d in coll.find(query, {"_id": 1}).limit(100)]

        def within(c: list[float]) -> Any:
            query = {"loc": {"$geoWithin": {"$centerSphere": [c, DISTANCE / RADIUS]}}}
            return lambda: sorted(d["_id"] for d in coll.find(query, {"_id": 1}))

        results: dict[str, Any] = {}
        for name, make in (("near", near), ("within", within)):
            indexed, scanned, found = [], [], []
            for n, c in enumerate(centers):
                ms, ids = timed(make(c), scan=False)
                indexed.append(ms)
                found.append(len(ids))
                if n < args.scan_queries:
                    scan_ms, scan_ids = timed(make(c), scan=True)
                    scanned.append(scan_ms)
                    if scan_ids != ids:
                        raise SystemExit(f"{name} at {c}: the index and the scan disagree")
            results[name] = {
                "indexed_ms_median": round(statistics.median(indexed), 2),
                "scan_ms_median": round(statistics.median(scanned), 1) if scanned else None,
                "results_median": statistics.median(found),
                "queries": len(indexed),
                "scan_queries": len(scanned),
            }
        client.close()
    report = {
        "date": datetime.now().strftime("%Y-%m-%d"),
        "points": args.points,
        "insert_seconds": round(inserted, 1),
        "index_build_seconds": round(built, 1),
        "distance_m": DISTANCE,
        **results,
    }
    print(json.dumps(report, indent=2))
    out = args.out or Path("benchmark-results") / f"geo-{report['date']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
