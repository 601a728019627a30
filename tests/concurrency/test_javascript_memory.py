"""JavaScript memory is bounded per operation (``jsHeapLimitMB``, as mongod's) and for all the
scripts running at once (``jsHeapLimitTotalMB``, FolioDB's own): four memory bombs at once keep
the server process under the total.

Manual: https://www.mongodb.com/docs/manual/reference/parameters/#mongodb-parameter-param.jsHeapLimitMB
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pymongo.errors import OperationFailure

from tests.concurrency.background import Background
from tests.concurrency.conftest import Deployment

MB = 1024 * 1024
BOMB = "function() { var a = []; while (true) a.push('x'.repeat(1000) + a.length); }"


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _bomb(client: Any) -> Any:
    return list(client.test.c.aggregate([{"$project": {"v": {"$function": {"body": BOMB, "args": [], "lang": "js"}}}}]))


def test_four_memory_bombs_stay_under_the_total(tmp_path: Path) -> None:
    deployment = Deployment("server", str(tmp_path / "data"))
    try:
        admin = deployment.connect()
        admin.test.c.insert_one({"_id": 1})
        # Per operation 96 MB, 128 MB for all: the first bomb gets 64 (half of what is left), the next ones less.
        admin.admin.command("setParameter", 1, jsHeapLimitMB=96, jsHeapLimitTotalMB=128)
        assert deployment.process is not None
        pid = deployment.process.pid
        with_one = _rss(pid)
        clients = [deployment.connect() for _ in range(4)]
        bombs = [Background(lambda c=c: _bomb(c)) for c in clients]
        peak = with_one
        while any(b.running for b in bombs):
            peak = max(peak, _rss(pid))
        for bomb in bombs:
            bomb.join()
            assert isinstance(bomb.error, OperationFailure) and bomb.error.code == 139
            assert bomb.error.details is not None and bomb.error.details["errmsg"].startswith("Out of memory")
        # Four at 96 MB each would be 384 MB; the total holds them to 128 (and 32 MB of room for the
        # interpreter's own allocations while they run).
        assert peak - with_one < 160 * MB, (peak - with_one) / MB
        assert (
            admin.test.c.aggregate(
                [{"$project": {"v": {"$function": {"body": "function() { return 2 }", "args": [], "lang": "js"}}}}]
            ).next()["v"]
            == 2
        )
    finally:
        deployment.close()
