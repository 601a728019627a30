"""A bounded abuse suite against ``foliodb serve`` in a child process: descriptor
exhaustion, the connection limit, idle and slow-byte connections, abandoned
cursors and a saslStart flood. Throughout, the server answers ``ping``; after,
it accepts again and its memory comes back.

mongod's limits are the reference: ``net.maxIncomingConnections`` (at most 80%
of the soft RLIMIT_NOFILE), ``cursorTimeoutMillis``, one SASL conversation per
connection. Memory is the child's resident set (``/proc/<pid>/status``).
Longer soaks (many more connections, hours) belong in scripts/, not here.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bson
import pymongo
import pytest
from bson.binary import Binary

ROOT = Path(__file__).resolve().parents[2]
HEADER = struct.Struct("<iiii")
OP_MSG = 2013


class Child:
    """A server process; its log goes to a file the test reads."""

    def __init__(self, tmp: Path, *options: str) -> None:
        self.log_path = tmp / "server.log"
        self.log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.server.child", str(tmp / "data"), *options],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("PORT "), line
        self.port = int(line.split()[1])

    def client(self, **options: Any) -> Any:
        return pymongo.MongoClient("127.0.0.1", self.port, serverSelectionTimeoutMS=5000, **options)

    def rss(self) -> int:
        """The resident set size, in bytes."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def blocks(self) -> int:
        """The blocks Python's allocator holds in the server (the child writes them on SIGUSR1)."""
        path = self.log_path.parent / "data.blocks"
        path.unlink(missing_ok=True)
        self.proc.send_signal(signal.SIGUSR1)
        assert settle(path.exists, 10)
        return int(path.read_text())

    def threads(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/task"))

    def log_text(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Any]:
    children: list[Child] = []

    def start(*options: str) -> Child:
        directory = tmp_path / f"child{len(children)}"
        directory.mkdir()
        child = Child(directory, *options)
        children.append(child)
        return child

    yield start
    for child in children:
        child.stop()
        assert "Traceback" not in child.log_text(), child.log_text()[-3000:]


def frame(command: dict[str, Any], request_id: int = 1) -> bytes:
    body = bson.encode(command)
    return HEADER.pack(HEADER.size + 5 + len(body), request_id, 0, OP_MSG) + b"\x00\x00\x00\x00\x00" + body


_LEFTOVER: dict[int, bytes] = {}  # socket fileno -> bytes read past the last reply (pipelined replies)


def reply(sock: socket.socket) -> dict[str, Any] | None:
    """The next reply's document; None when the server closed the connection."""
    data = _LEFTOVER.pop(sock.fileno(), b"")
    while len(data) < HEADER.size or len(data) < struct.unpack_from("<i", data)[0]:
        try:
            chunk = sock.recv(1 << 20)
        except (ConnectionResetError, TimeoutError):
            return None
        if not chunk:
            return None
        data += chunk
    length = struct.unpack_from("<i", data)[0]
    if len(data) > length:
        _LEFTOVER[sock.fileno()] = data[length:]
    return bson.decode(data[HEADER.size + 5 : length])


def connect(port: int, timeout: float = 5.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.settimeout(timeout)
    return sock


def pinged(sock: socket.socket) -> bool:
    try:
        sock.sendall(frame({"ping": 1, "$db": "admin"}))
    except OSError:
        return False
    answer = reply(sock)
    return answer is not None and answer.get("ok") == 1.0


def closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def settle(check: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return bool(check())


def test_the_listener_survives_descriptor_exhaustion(spawn: Any) -> None:
    child = spawn()
    keeper = connect(child.port)
    assert pinged(keeper)
    # Lower the server's descriptor limit under its feet: accept() now fails with EMFILE.
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.prlimit(child.proc.pid, resource.RLIMIT_NOFILE, (64, hard))
    flood = []
    for _ in range(90):
        sock = connect(child.port)
        with contextlib.suppress(OSError):
            sock.sendall(frame({"ping": 1, "$db": "admin"}))
        flood.append(sock)
    time.sleep(0.5)
    for sock in flood:
        sock.settimeout(0.02)
    answered = sum(reply(sock) is not None for sock in flood)
    assert answered < len(flood), "the limit never bit"
    assert pinged(keeper)  # serving what it has while accept() fails
    assert settle(lambda: "accept failed" in child.log_text(), 5)
    for sock in flood:
        sock.close()
    with child.client() as fresh:  # accepts again once descriptors come back
        assert fresh.admin.command("ping")["ok"] == 1.0
    assert pinged(keeper)
    assert child.proc.poll() is None


def test_connections_over_the_limit_are_closed_politely(spawn: Any) -> None:
    child = spawn("--max-conns", "4")
    held = [connect(child.port) for _ in range(4)]
    assert all(pinged(sock) for sock in held)
    extra = connect(child.port)
    assert closed_by_server(extra)
    held.pop().close()
    time.sleep(0.2)  # the server notices the close
    held.append(connect(child.port))
    assert pinged(held[-1])
    assert "connection refused because too many open connections: 4" in child.log_text()
    for sock in held:
        sock.close()
    time.sleep(0.2)
    with child.client() as monitor:
        stats = monitor.admin.command("serverStatus")["connections"]
    assert stats["current"] + stats["available"] == 4


def _flood_of_stuck_connections(child: Any, monitor: Any) -> None:
    """1,000 connections: idle, three bytes and nothing more, a message stuck
    mid-frame after a ping, a byte now and another later; all must be closed by
    the server's time limits while it keeps answering."""
    socks: list[socket.socket] = []
    header = frame({"ping": 1, "$db": "admin"})
    for i in range(1000):
        sock = connect(child.port, timeout=10)
        if i % 4 == 1:
            sock.sendall(header[:3])  # three bytes, and nothing more
        elif i % 4 == 2:
            assert pinged(sock)  # a working connection...
            sock.sendall(header[:20])  # ...then a message stuck mid-frame
        elif i % 4 == 3:
            sock.sendall(header[:1])  # a byte now, another later
        socks.append(sock)
    assert monitor.admin.command("ping")["ok"] == 1.0
    time.sleep(0.8)
    for sock in socks[3::4]:
        with contextlib.suppress(OSError):
            sock.sendall(header[1:2])
    assert monitor.admin.command("ping")["ok"] == 1.0
    assert settle(lambda: all(closed_by_server(s) for s in socks[-50:]), 10)
    assert all(closed_by_server(sock) for sock in socks)
    for sock in socks:
        sock.close()


def test_idle_and_slow_connections_are_closed_after_the_time_limit(spawn: Any) -> None:
    child = spawn("--handshake-timeout", "1.5", "--frame-timeout", "1.5")
    # Polling: the driver keeps two connections (its monitor's and its pool's), both open
    # once insert_one returns. Streaming, it opens a third (the RTT monitor) at some moment
    # after, which under load could land after the baseline and count as the flood's.
    monitor = child.client(serverMonitoringMode="poll")
    monitor.shop.c.insert_one({"_id": 1})
    baseline_connections = monitor.admin.command("serverStatus")["connections"]["current"]  # the driver's own
    baseline_threads = child.threads()
    current = lambda: monitor.admin.command("serverStatus")["connections"]["current"]  # noqa: E731
    high_water = 0
    for flood in range(2):
        _flood_of_stuck_connections(child, monitor)
        assert settle(lambda: current() <= baseline_connections, 10), (current(), baseline_connections)
        assert settle(lambda: child.threads() <= baseline_threads + 2, 10)
        if flood == 0:
            # The first flood sets the allocator's high-water mark (how many
            # threads were alive at once depends on the machine's load); a
            # second one must not add to it: nothing per connection is kept.
            high_water = child.rss()
    assert child.rss() < high_water * 1.1 + 8 * 1024 * 1024, (high_water, child.rss())
    assert monitor.shop.c.find_one() == {"_id": 1}  # and the idle pooled connection of a driver stays
    monitor.close()


def test_abandoned_cursors_are_reaped_on_a_timer(spawn: Any) -> None:
    child = spawn()
    monitor = child.client()
    monitor.shop.c.insert_many([{"_id": i, "pad": "x" * 200} for i in range(50)])
    kept = monitor.shop.command("find", "c", batchSize=1, noCursorTimeout=True)["cursor"]["id"]
    sock = connect(child.port, timeout=30)
    count = 5000
    open_cursors = lambda: monitor.admin.command("serverStatus")["metrics"]["cursor"]["open"]["total"]  # noqa: E731

    def abandon() -> list[int]:
        sock.sendall(b"".join(frame({"find": "c", "batchSize": 1, "$db": "shop"}, i) for i in range(count)))
        ids = []
        for _ in range(count):
            answer = reply(sock)
            assert answer is not None
            ids.append(answer["cursor"]["id"])
        assert all(ids) and open_cursors() == count + 1
        return ids

    abandon()  # a first round, so the allocator's arenas exist before the baseline
    assert monitor.admin.command("setParameter", 1, cursorTimeoutMillis=300)["was"] == 600_000
    assert settle(lambda: open_cursors() == 1, 15)
    monitor.admin.command("setParameter", 1, cursorTimeoutMillis=600_000)
    baseline, baseline_rss = child.blocks(), child.rss()
    ids = abandon()
    grown = child.blocks()
    monitor.admin.command("setParameter", 1, cursorTimeoutMillis=300)
    # No new cursor opens: the reaper runs on its own.
    assert settle(lambda: open_cursors() == 1, 15), open_cursors()
    gone = monitor.shop.command("killCursors", "c", cursors=ids[::250])
    assert (gone["cursorsKilled"], len(gone["cursorsNotFound"])) == ([], count // 250)
    assert monitor.shop.command("getMore", kept, collection="c")["cursor"]["nextBatch"]  # noCursorTimeout
    # Settled, not at once: a connection thread of the busy server may still hold the last
    # batch it built when the count is taken (a 4-round probe showed no growth across rounds).
    assert settle(lambda: child.blocks() < baseline * 1.2, 10), (baseline, grown, child.blocks())
    # What was freed is reused: a second round of abandoned cursors does not grow the process.
    assert child.rss() < baseline_rss * 1.2, (baseline_rss, child.rss())
    sock.close()
    monitor.close()


def test_a_sasl_start_flood_holds_bounded_memory(spawn: Any) -> None:
    child = spawn("--auth")
    pymongo.MongoClient("127.0.0.1", child.port).admin.command("createUser", "u", pwd="pw", roles=["root"])
    monitor = child.client(username="u", password="pw")
    monitor.admin.command("ping")
    start = {
        "saslStart": 1,
        "mechanism": "SCRAM-SHA-256",
        "payload": Binary(b"n,,n=u,r=abcdefghijklmnop"),
        "$db": "admin",
    }
    socks = [connect(child.port, timeout=30) for _ in range(50)]
    for sock in socks:  # each connection piles up saslStarts it never finishes
        sock.sendall(frame(start, 1))
        assert reply(sock) is not None
    baseline = child.rss()
    for sock in socks:
        sock.sendall(b"".join(frame(start, i) for i in range(400)))
    for sock in socks:
        for _ in range(400):
            answer = reply(sock)
            assert answer is not None and answer["ok"] == 1.0
    assert monitor.admin.command("ping")["ok"] == 1.0
    assert child.rss() < baseline + 16 * 1024 * 1024, (baseline, child.rss())
    # One conversation per connection, as mongod: a new saslStart abandons the previous one.
    sock = socks[0]
    sock.sendall(frame(start, 1))
    first = reply(sock)
    sock.sendall(frame(start, 2))
    assert reply(sock) is not None
    assert first is not None
    sock.sendall(frame({"saslContinue": 1, "conversationId": first["conversationId"], "payload": b"", "$db": "admin"}))
    answer = reply(sock)
    assert answer is not None and answer["code"] == 17  # ProtocolError: no SASL session state
    for sock in socks:
        sock.close()
    monitor.close()
