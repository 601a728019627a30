"""A client used in a child after ``fork()`` keeps working, through its parent, and the parent's data stays whole.

SQLite connections must not cross a fork: a child writing through the
parent's connections and catalog would corrupt indexes (a unique index
created in the child was not maintained by the parent). So a file client's
commands in the child go to the parent's engine over the dbpath's share
socket (foliodb.server.share), where its unique index holds; the child never
touches the parent's files or dbpath lock. A ``:memory:`` database has no
socket: the parent's ``:memory:`` client refuses in the child, clearly.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pymongo.errors import DuplicateKeyError

import foliodb

# The child reports through its exit status.
WORKED, REFUSED_A_WRITE, OTHER_ERROR, INDEX_IGNORED = 10, 11, 12, 13


def _child(client: foliodb.MongoClient, path: str) -> int:
    try:
        client.db.c.insert_one({"u": 2})  # through the parent's engine
    except Exception:
        return REFUSED_A_WRITE
    try:
        client.db.c.insert_one({"u": 1})
    except DuplicateKeyError:
        pass  # the parent's unique index holds for the child's writes
    else:
        return INDEX_IGNORED
    with foliodb.MongoClient(path) as second:  # a client the child opens on the dbpath: through the parent too
        if second._executor.remote is None or second.db.c.count_documents({}) != 2:
            return OTHER_ERROR
    with foliodb.MongoClient(":memory:") as fresh:  # a client the child opens itself works
        fresh.db.c.insert_one({"ok": 1})
    return WORKED


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only")
@pytest.mark.parametrize("exit_normally", [False, True])
def test_a_forked_child_uses_the_parents_client_through_the_parent(tmp_path: Path, exit_normally: bool) -> None:
    path = str(tmp_path / "data")
    client = foliodb.MongoClient(path)
    client.db.c.create_index("u", unique=True)
    client.db.c.insert_one({"u": 1})
    memory = foliodb.MongoClient(":memory:")
    memory.db.m.insert_one({"_id": 1})
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        status = OTHER_ERROR
        try:
            status = _child(client, path)
            try:
                memory.db.m.count_documents({})
                status = OTHER_ERROR  # the parent's :memory: client must refuse: nothing to reach it by
            except Exception as exc:
                if getattr(exc, "code", None) != 20 or "fork()" not in str(exc):
                    status = OTHER_ERROR
            if exit_normally:
                atexit._run_exitfuncs()  # what a normal exit runs (finalizers of :memory: files among them)
        finally:
            os._exit(status)
    _, wait_status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(wait_status) == WORKED, os.waitstatus_to_exitcode(wait_status)
    # The parent goes on: the child's write is there, its writes work, its unique index holds,
    # its :memory: database is intact.
    client.db.c.insert_one({"u": 3})
    with pytest.raises(DuplicateKeyError):
        client.db.c.insert_one({"u": 1})
    assert sorted(d["u"] for d in client.db.c.find()) == [1, 2, 3]
    assert client.db.command("validate", "c")["valid"]
    assert memory.db.m.find_one() == {"_id": 1}
    # Its lock too: another process opens the dbpath through the parent, which still owns it.
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import foliodb; c = foliodb.MongoClient({path!r}); print(c._executor.remote is not None)",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert other.stdout.strip() == "True", other.stderr
    client.close()
    memory.close()
