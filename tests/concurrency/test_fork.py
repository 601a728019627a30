"""A client used in a child after ``fork()`` refuses, clearly, and the parent's data stays whole.

SQLite connections must not cross a fork: a child writing through the
parent's connections and catalog would corrupt indexes (a unique index
created in the child was not maintained by the parent). So the child gets a
clear error instead, never touches the parent's files or dbpath lock, and
the parent goes on as if nothing happened.
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
REFUSED, WROTE, OTHER_ERROR, DBPATH_FREE = 10, 11, 12, 13


def _child(client: foliodb.MongoClient, path: str) -> int:
    try:
        client.db.c.insert_one({"u": 2})
    except Exception as exc:  # the refusal, an OperationFailure with code 20
        if getattr(exc, "code", None) != 20 or "fork()" not in str(exc):
            return OTHER_ERROR
    else:
        return WROTE
    try:
        foliodb.MongoClient(path)
    except Exception:
        pass  # the parent holds the dbpath
    else:
        return DBPATH_FREE
    with foliodb.MongoClient(":memory:") as fresh:  # a client the child opens itself works
        fresh.db.c.insert_one({"ok": 1})
    return REFUSED


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only")
@pytest.mark.parametrize("exit_normally", [False, True])
def test_a_forked_child_refuses_the_parents_client(tmp_path: Path, exit_normally: bool) -> None:
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
                status = WROTE  # the parent's :memory: client must refuse too
            except Exception as exc:
                if getattr(exc, "code", None) != 20:
                    status = OTHER_ERROR
            if exit_normally:
                atexit._run_exitfuncs()  # what a normal exit runs (finalizers of :memory: files among them)
        finally:
            os._exit(status)
    _, wait_status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(wait_status) in (REFUSED,), os.waitstatus_to_exitcode(wait_status)
    # The parent goes on: its writes work, its unique index holds, its :memory: database is intact.
    client.db.c.insert_one({"u": 3})
    with pytest.raises(DuplicateKeyError):
        client.db.c.insert_one({"u": 1})
    assert sorted(d["u"] for d in client.db.c.find()) == [1, 3]
    assert client.db.command("validate", "c")["valid"]
    assert memory.db.m.find_one() == {"_id": 1}
    # Its lock too: another process still cannot open the dbpath.
    other = subprocess.run(
        [sys.executable, "-c", f"import foliodb; foliodb.MongoClient({path!r})"], capture_output=True, text=True
    )
    assert other.returncode != 0 and "in use" in other.stderr
    client.close()
    memory.close()
