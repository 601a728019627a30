"""An open cursor keeps its plan's position, not a copy of its results.

mongod's idle cursor holds its plan's state; FolioDB's held the rows its scan had
fetched ahead (256 of them: about 300 KiB a cursor of 1 KB documents, 1.45 GB for
5,000 cursors for the 10-minute cursorTimeoutMillis). A scan now fetches a few rows
first and doubles, and lets go of each row it returns.

Manual: https://www.mongodb.com/docs/manual/reference/parameters/#mongodb-parameter-param.cursorTimeoutMillis
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.test_abuse import connect, frame, reply, spawn

__all__ = ["spawn"]

MB = 1024 * 1024


@pytest.mark.parametrize("indexed", [False, True], ids=["collscan", "ixscan"])
def test_five_thousand_open_cursors_cost_under_fifty_mb(spawn: Any, indexed: bool) -> None:
    child = spawn()
    monitor = child.client()
    monitor.shop.c.insert_many([{"_id": i, "k": i, "pad": "x" * 1000} for i in range(300)])
    if indexed:
        monitor.shop.c.create_index("k")
    find = {"find": "c", "batchSize": 1, "$db": "shop"} | ({"filter": {"k": {"$gte": 0}}} if indexed else {})
    sock = connect(child.port, timeout=60)

    def open_cursors(count: int) -> None:
        sock.sendall(b"".join(frame(find, i) for i in range(count)))
        for _ in range(count):
            answer = reply(sock)
            assert answer is not None and answer["cursor"]["id"]

    open_cursors(200)  # the allocator's arenas and the statement caches exist before the baseline
    baseline = child.rss()
    open_cursors(5000)
    grown = child.rss() - baseline
    assert grown < 50 * MB, grown / MB
    assert monitor.admin.command("serverStatus")["metrics"]["cursor"]["open"]["total"] == 5200
    sock.close()
    monitor.close()
