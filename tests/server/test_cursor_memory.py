"""An open cursor keeps its plan's position, not a copy of its results.

mongod's idle cursor holds its plan's state; FolioDB's held the rows its scan had
fetched ahead (256 of them: about 300 KiB a cursor of 1 KB documents, 1.45 GB for
5,000 cursors for the 10-minute cursorTimeoutMillis). A scan now fetches a few rows
first and doubles, and lets go of each row it returns.

Manual: https://www.mongodb.com/docs/manual/reference/parameters/#mongodb-parameter-param.cursorTimeoutMillis
"""

from __future__ import annotations

from typing import Any

import pymongo
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


def test_open_cursors_are_capped_per_connection_and_per_user(spawn: Any) -> None:
    child = spawn("--auth")
    pymongo.MongoClient("127.0.0.1", child.port).admin.command("createUser", "root", pwd="pw", roles=["root"])
    admin = child.client(username="root", password="pw")
    admin.shop.command("createUser", "u", pwd="pw", roles=["read"])
    admin.shop.c.insert_many([{"_id": i} for i in range(5)])
    admin.admin.command("setParameter", 1, maxOpenCursorsPerConnection=3, maxOpenCursorsPerUser=5)
    first, second = (child.client(username="u", password="pw", authSource="shop", maxPoolSize=1) for _ in range(2))
    opened = [first.shop.command("find", "c", batchSize=1)["cursor"]["id"] for _ in range(3)]
    with pytest.raises(pymongo.errors.OperationFailure) as info:
        first.shop.command("find", "c", batchSize=1)
    assert info.value.code == 96 and "this connection holds 3" in str(info.value)
    opened += [second.shop.command("find", "c", batchSize=1)["cursor"]["id"] for _ in range(2)]
    with pytest.raises(pymongo.errors.OperationFailure) as info:
        second.shop.command("find", "c", batchSize=1)  # two on this connection, but five for the user
    assert info.value.code == 96 and "user u holds 5" in str(info.value)
    first.shop.command("killCursors", "c", cursors=opened[:1])  # closing one makes room again
    assert first.shop.command("find", "c", batchSize=1)["cursor"]["id"]
    assert first.shop.command("find", "c")["cursor"]["id"] == 0  # a cursor read to its end holds nothing
    for client in (first, second, admin):
        client.close()
