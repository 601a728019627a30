"""A process that owns a dbpath exits at once, whether or not it closed its client.

Another process working through the owner's share socket leaves the owner's server
loop with threads; on Python 3.13 daemon threads never run again once the
interpreter finalizes, and the client's ``__del__`` (which closes it then) joined
each of them for 10 s: 35 s or more to exit. CI runs this file on 3.11 and 3.13.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

OWNER = textwrap.dedent(
    """
    import subprocess, sys, time
    import foliodb
    path, close = sys.argv[1], sys.argv[2] == "close"
    client = foliodb.MongoClient(path)
    client.test.c.insert_one({"x": 1})
    other = "import foliodb, sys; c = foliodb.MongoClient(sys.argv[1]); c.test.c.insert_one({'y': 2}); print(c.test.c.count_documents({}))"
    assert subprocess.run([sys.executable, "-c", other, path], check=True, capture_output=True, text=True).stdout.strip() == "2"
    if close:
        client.close()
    print(time.monotonic(), flush=True)
    """
)


@pytest.mark.parametrize("close", ["close", "leave-open"])
def test_a_dbpath_owner_exits_at_once(tmp_path: Path, close: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(tmp_path / "data"), close], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    done = float(proc.stdout.readline())
    proc.wait(timeout=120)
    exited = time.monotonic()  # the same clock, system-wide on Linux
    assert proc.returncode == 0
    # A second is what is asked; three, for a loaded machine. It was 35 s and more on 3.13.
    assert exited - done < 3.0, exited - done
