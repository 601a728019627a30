"""The ``foliodb`` command as users meet it, in subprocesses: every user error
is one line on stderr and exit status 1, never a traceback; read-only commands
never create a dbpath; progress goes to stderr (a bar on a terminal, log lines
elsewhere, nothing with --quiet); data pipes between commands.

Tools' behaviour: https://www.mongodb.com/docs/database-tools/ (mongodump,
mongorestore, mongoimport, mongoexport pages).
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import socket
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from pathlib import Path

import pymongo
import pytest

import foliodb

ROOT = Path(__file__).resolve().parents[3]
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4}\t"


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "foliodb", *args]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def run(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(command(*args), cwd=cwd, env=env(), input=stdin, capture_output=True, timeout=120)


def one_line_error(result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode == 1, result
    err = result.stderr.decode()
    assert err.count("\n") == 1 and err.endswith("\n") and "Traceback" not in err, err
    return err.rstrip("\n")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    with foliodb.MongoClient(str(tmp_path / "data")) as client:
        client.shop.orders.insert_many([{"_id": i, "status": ["new", "paid"][i % 2]} for i in range(30)])
    return tmp_path


@pytest.fixture
def served(shop: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = free_port()
    proc = subprocess.Popen(
        command("serve", "--dbpath", "data", "--port", str(port)), cwd=shop, env=env(), stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None and b"waiting for connections" in proc.stdout.readline()
        yield proc, port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# -- user errors ------------------------------------------------------------------------------


def test_bad_values_are_one_line(tmp_path: Path) -> None:
    assert one_line_error(run("serve", "--port", "80000", cwd=tmp_path)) == (
        "foliodb serve: argument --port: 80000 is not a port number (0 to 65535; 0 picks a free one)"
        " (see foliodb serve --help)"
    )
    assert one_line_error(run("export", "-c", "x", "--limit", "-1", cwd=tmp_path)).startswith(
        "foliodb export: argument --limit: -1 is not a count"
    )
    assert one_line_error(run("dump", "--query", "{bad", cwd=tmp_path)).startswith(
        "foliodb dump: argument --query/-q: not a JSON document"
    )


def test_port_in_use_is_named(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert one_line_error(run("serve", "--dbpath", "data", "--port", str(port), cwd=tmp_path)) == (
            f"foliodb serve: port {port} on 127.0.0.1 is in use by another process"
            " (choose another with --port; 0 picks one)"
        )


def test_a_dbpath_held_by_serve_works_through_it(served: tuple[subprocess.Popen[bytes], int], shop: Path) -> None:
    """The tools open a dbpath foliodb serve holds: their commands go to the
    server's engine through its share socket (foliodb.server.share)."""
    _proc, port = served
    done = run("export", "--dbpath", "data", "-d", "shop", "-c", "orders", "--quiet", cwd=shop)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 30
    # ... and what they write, the server's clients read.
    assert (
        run(
            "import", "--dbpath", "data", "-d", "shop", "-c", "more", "--quiet", cwd=shop, stdin=b'{"a": 1}\n'
        ).returncode
        == 0
    )
    with pymongo.MongoClient("127.0.0.1", port, serverSelectionTimeoutMS=5000) as client:
        assert client.shop.more.find_one({}, {"_id": 0}) == {"a": 1}


def test_a_dbpath_held_by_another_program_works_through_it(shop: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import foliodb, sys; c = foliodb.MongoClient('data'); print('ready', flush=True); sys.stdin.read();"
            " print(c.x.x.count_documents({}))",
        ],
        cwd=shop,
        env=env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"ready\n"
        done = run(
            "import", "--dbpath", "data", "-d", "x", "-c", "x", "--quiet", cwd=shop, stdin=b'{"a": 1}\n{"a": 2}\n'
        )
        assert done.returncode == 0, done.stderr
    finally:
        out, _ = holder.communicate(b"", timeout=30)
    assert out == b"2\n"  # the holder sees what the tool wrote through it


def test_permission_denied(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        path = "/sys/foliodb-test-dbpath"  # sysfs refuses new directories even to root
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        path = str(locked / "data")
    assert one_line_error(run("import", "--dbpath", path, "-c", "x", "/dev/null", cwd=tmp_path)) == (
        f"foliodb import: cannot open the dbpath {path}: permission denied"
    )


@pytest.mark.parametrize("tool", [["dump"], ["export", "-c", "orders"], ["advise"]])
def test_read_only_commands_never_create_a_dbpath(tmp_path: Path, tool: list[str]) -> None:
    name = tool[0]
    assert one_line_error(run(*tool, "--dbpath", "missing", cwd=tmp_path)) == (
        f"foliodb {name}: no database at missing: the directory does not exist"
    )
    assert not (tmp_path / "missing").exists()
    (tmp_path / "empty").mkdir()
    assert one_line_error(run(*tool, "--dbpath", "empty", cwd=tmp_path)) == (
        f"foliodb {name}: no FolioDB database at empty: the directory holds no foliodb.sqlite"
    )
    assert list((tmp_path / "empty").iterdir()) == []


# -- progress -------------------------------------------------------------------------------------


def test_progress_is_log_lines_off_a_terminal_and_nothing_when_quiet(shop: Path) -> None:
    done = run("dump", "--dbpath", "data", cwd=shop)
    assert done.returncode == 0 and done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert lines and all(re.match(STAMP, line) for line in lines), lines
    assert lines[-1].endswith("\tdone dumping shop.orders (30 documents)")
    quiet = run("dump", "--dbpath", "data", "--out", "again", "--quiet", cwd=shop)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, b"", b"")


def test_progress_is_a_bar_on_a_terminal(shop: Path) -> None:
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a 100-column terminal
    try:
        proc = subprocess.run(
            command("export", "--dbpath", "data", "-d", "shop", "-c", "orders", "-o", "out.json"),
            cwd=shop,
            env=env(),
            stderr=follower,
            timeout=120,
        )
        os.close(follower)
        output = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
    finally:
        os.close(leader)
    assert proc.returncode == 0
    assert re.search(rb"shop\.orders: 100%\|[^|]*\| 30/30", output), output  # tqdm's bar
    assert b"exported 30 records" in output


# -- data through pipes ------------------------------------------------------------------------------


def test_archive_through_a_pipe_and_gzip(shop: Path) -> None:
    dumped = run("dump", "--dbpath", "data", "--archive", "--quiet", cwd=shop)
    assert dumped.returncode == 0 and dumped.stdout[:4] == bytes.fromhex("6de29981")
    restored = run(
        "restore",
        "--dbpath",
        "copy",
        "--archive",
        "--nsFrom",
        "shop.*",
        "--nsTo",
        "two.*",
        cwd=shop,
        stdin=dumped.stdout,
    )
    assert restored.returncode == 0, restored.stderr
    assert "30 document(s) restored successfully. 0 document(s) failed to restore." in restored.stderr.decode()
    assert run("dump", "--dbpath", "data", "--archive=shop.gz", "--gzip", "--quiet", cwd=shop).returncode == 0
    assert (shop / "shop.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert run("restore", "--dbpath", "copy", "--archive=shop.gz", "--gzip", "--quiet", cwd=shop).returncode == 0
    with foliodb.MongoClient(str(shop / "copy")) as copy:
        assert copy.two.orders.count_documents({}) == 30 and copy.shop.orders.count_documents({}) == 30


def test_export_then_import(shop: Path) -> None:
    exported = run(
        "export",
        "--dbpath",
        "data",
        "-d",
        "shop",
        "-c",
        "orders",
        "--type",
        "csv",
        "-f",
        "_id,status",
        "--query",
        '{"status": "paid"}',
        cwd=shop,
    )
    assert exported.returncode == 0 and exported.stdout.decode().splitlines()[:2] == ["_id,status", "1,paid"]
    assert exported.stderr.decode().endswith("\texported 15 records\n")
    (shop / "paid.csv").write_bytes(exported.stdout)
    imported = run("import", "--dbpath", "copy", "--type", "csv", "--headerline", "paid.csv", cwd=shop)
    assert imported.returncode == 0
    assert imported.stderr.decode().endswith(
        "\t15 document(s) imported successfully. 0 document(s) failed to import.\n"
    )
    with foliodb.MongoClient(str(shop / "copy")) as copy:
        assert copy.test.paid.count_documents({"status": "paid"}) == 15  # the collection is named after the file
