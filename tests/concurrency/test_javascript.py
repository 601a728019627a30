"""Server-side JavaScript under concurrency: killOp interrupts a running script,
scripts on many threads run side by side with right answers, and
``foliodb serve --noscripting`` refuses JavaScript as mongod does.

Manual: https://www.mongodb.com/docs/manual/reference/command/killOp/,
https://www.mongodb.com/docs/manual/reference/operator/query/where/,
https://www.mongodb.com/docs/manual/reference/configuration-options/#mongodb-setting-security.javascriptEnabled
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pymongo.errors import OperationFailure

from tests.concurrency.background import Background, wait_for
from tests.concurrency.conftest import Deployment


def _commented(admin: Any, comment: str) -> list[dict[str, Any]]:
    return [op for op in admin.admin.command("currentOp")["inprog"] if op.get("command", {}).get("comment") == comment]


def test_kill_op_interrupts_an_endless_where(deployment: Deployment) -> None:
    client, admin = deployment.connect(), deployment.connect()
    client.test.c.insert_one({"_id": 1})
    running = Background(lambda: list(client.test.c.find({"$where": "while (true) {}"}, comment="spin")))
    (op,) = wait_for(lambda: _commented(admin, "spin"))
    killed_at = time.perf_counter()
    assert admin.admin.command("killOp", op=op["opid"])["ok"] == 1.0
    running.join()
    assert isinstance(running.error, OperationFailure) and running.error.code == 11601
    # Endless unless killed: any bound shows it stopped; this one leaves a loaded machine room.
    assert time.perf_counter() - killed_at < 30
    assert client.test.c.find_one({"$where": "this._id == 1"}) == {"_id": 1}  # the next script runs


def test_kill_op_interrupts_map_reduce(deployment: Deployment) -> None:
    client, admin = deployment.connect(), deployment.connect()
    client.test.c.insert_many([{"_id": i} for i in range(3)])
    command = {"mapReduce": "c", "map": "function() { for (;;) {} }", "reduce": "function() {}", "out": {"inline": 1}}
    running = Background(lambda: client.test.command({**command, "comment": "mr"}))
    (op,) = wait_for(lambda: _commented(admin, "mr"))
    admin.admin.command("killOp", op=op["opid"])
    running.join()
    assert isinstance(running.error, OperationFailure) and running.error.code == 11601


def test_scripts_on_many_threads_get_their_own_answers(deployment: Deployment) -> None:
    client = deployment.connect()
    client.test.c.insert_many([{"_id": i, "v": i} for i in range(200)])
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for _ in range(5):
                # v % 8 == k holds for 25 of 0..199; their sum is 25k + 8 * (0 + ... + 24) = 25k + 2400.
                found = list(client.test.c.find({"$where": f"this.v % 8 == {k}"}))
                assert sorted(d["_id"] for d in found) == list(range(k, 200, 8))
                out = client.test.command(
                    "mapReduce", "c", map=f"function() {{ if (this.v % 8 == {k}) emit('s', this.v) }}",
                    reduce="function(key, vs) { return Array.sum(vs) }", out={"inline": 1},
                )  # fmt: skip
                assert out["results"] == [{"_id": "s", "value": 25 * k + 2400}]
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[0]


@pytest.fixture
def noscripting_server(tmp_path: Path) -> Any:
    running = Deployment("server", str(tmp_path / "data"), "--noscripting")
    yield running
    running.close()


def test_serve_noscripting_refuses_javascript_as_mongod(noscripting_server: Deployment) -> None:
    db = noscripting_server.connect().test
    db.c.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as info:
        db.c.find_one({"$where": "true"})
    assert (info.value.code, info.value.details["errmsg"]) == (2, "no globalScriptEngine in $where parsing")
    with pytest.raises(OperationFailure) as info:
        list(
            db.c.aggregate(
                [{"$project": {"r": {"$function": {"body": "function() { return 1 }", "args": [], "lang": "js"}}}}]
            )
        )
    assert info.value.code == 31264
    with pytest.raises(OperationFailure) as info:
        db.command("mapReduce", "c", map="function() {}", reduce="function() {}", out={"inline": 1})
    assert info.value.code == 31264
    assert db.c.find_one() == {"_id": 1}
