"""Under access control, an operation belongs to the users of the connection that runs it:
``$currentOp`` (``allUsers: false``, its default) and ``currentOp`` with ``$ownOps: true``
show a user its own operations without the inprog privilege, and ``killOp`` without killop
kills only one's own (mongod's "coauthorized" rule).

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/currentOp/ (allUsers),
https://www.mongodb.com/docs/manual/reference/command/currentOp/ ($ownOps, access control),
https://www.mongodb.com/docs/manual/reference/command/killOp/ (users may kill their own operations).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
from pymongo.errors import OperationFailure

from foliodb.server import Server
from tests.concurrency.background import Background, wait_for

pytestmark = pytest.mark.clients


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, int]]:
    running = Server(str(tmp_path / "data"), "127.0.0.1", 0, auth=True)
    host, port = running.start()
    setup: Any = pymongo.MongoClient(host, port)
    setup.admin.command("createUser", "root", pwd="pw", roles=["root"])
    setup.close()
    root: Any = pymongo.MongoClient(host, port, username="root", password="pw")
    for user in ("ann", "bob"):
        root.admin.command("createUser", user, pwd="pw", roles=[{"role": "readWrite", "db": "app"}])
    root.app.slow.insert_many([{"_id": i} for i in range(200)])
    root.close()
    yield host, port
    running.shutdown()


def _client(where: tuple[str, int], user: str) -> Any:
    return pymongo.MongoClient(*where, username=user, password="pw", authSource="admin")


def _commented(ops: list[dict[str, Any]], comment: str) -> list[dict[str, Any]]:
    return [op for op in ops if op.get("command", {}).get("comment") == comment]


def test_users_see_and_kill_their_own_operations_only(server: tuple[str, int]) -> None:
    ann, ann_again, bob, root = (_client(server, u) for u in ("ann", "ann", "bob", "root"))
    slow = Background(lambda: list(ann.app.slow.find({"$where": "sleep(100); return true;"}, comment="ann-slow")))
    ops = wait_for(lambda: _commented(list(ann_again.admin.aggregate([{"$currentOp": {}}])), "ann-slow"))
    # Bob sees none of Ann's operations, and may not ask for every user's.
    assert not _commented(list(bob.admin.aggregate([{"$currentOp": {}}])), "ann-slow")
    assert not _commented(bob.admin.command("currentOp", **{"$ownOps": True})["inprog"], "ann-slow")
    with pytest.raises(OperationFailure) as info:
        list(bob.admin.aggregate([{"$currentOp": {"allUsers": True}}]))
    assert info.value.code == 13
    with pytest.raises(OperationFailure) as info:
        bob.admin.command("currentOp")
    assert info.value.code == 13
    # root (inprog) sees it among every user's.
    assert _commented(list(root.admin.aggregate([{"$currentOp": {"allUsers": True}}])), "ann-slow")
    assert _commented(root.admin.command("currentOp")["inprog"], "ann-slow")
    # Bob may not kill it (nor an operation that does not exist); Ann may, from another connection.
    for opid in (ops[0]["opid"], 987654):
        with pytest.raises(OperationFailure) as info:
            bob.admin.command("killOp", op=opid)
        assert info.value.code == 13
    assert ann_again.admin.command("killOp", op=ops[0]["opid"])["ok"] == 1.0
    slow.join()
    assert isinstance(slow.error, OperationFailure) and slow.error.code == 11601
