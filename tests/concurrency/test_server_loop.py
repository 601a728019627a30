"""The server's loop (foliodb/server/loop.py): established connections wait in one
epoll set, one thread serves whichever is ready, and hands the loop on before
it waits.

Raw sockets, so that no driver's monitor threads or pools blur what is
measured: each connection sends OP_MSG frames and reads the replies by
``responseTo``. The server runs in this process, so the tests can see its
threads and set the lane's patience; what each checks is an answer a client
gets (or the time it takes), against what MongoDB's wire protocol says it
must get.
"""

from __future__ import annotations

import logging
import random
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import bson
import pymongo
import pytest

from foliodb import lane
from foliodb.server import Server
from foliodb.server import loop as server_loop

HEADER = struct.Struct("<iiii")
# A bound for an answer that only has to come, not come fast: on a loaded 2-core machine a
# thread can wait seconds for a core. Where a check is that one client did not wait for
# another, it is made by order (the other is still blocked, or still mid-message, when the
# answer comes), not by the clock.
ANSWERED = 5.0
OP_MSG = 2013


def frame(command: dict[str, Any], request_id: int) -> bytes:
    body = b"\x00\x00\x00\x00\x00" + bson.encode(command)  # flags, then a kind-0 section
    return HEADER.pack(HEADER.size + len(body), request_id, 0, OP_MSG) + body


class Peer:
    """A raw connection: frames out, replies in (``responseTo`` and the document)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self._data = b""

    def send(self, command: dict[str, Any], request_id: int = 1) -> None:
        self.sock.sendall(frame(command, request_id))

    def reply(self) -> tuple[int, dict[str, Any]]:
        while len(self._data) < HEADER.size or len(self._data) < HEADER.unpack_from(self._data)[0]:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed by the server")
            self._data += chunk
        length, _request_id, response_to, _op = HEADER.unpack_from(self._data)
        document = bson.decode(self._data[HEADER.size + 5 : length])
        self._data = self._data[length:]
        return response_to, document

    def command(self, command: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
        self.send(command, request_id)
        response_to, document = self.reply()
        assert response_to == request_id
        return document

    def closed_by_server(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()


def _ping(peer: Peer) -> float:
    started = time.perf_counter()
    assert peer.command({"ping": 1, "$db": "admin"})["ok"] == 1.0
    return time.perf_counter() - started


def _server_threads(prefix: str) -> int:
    return sum(thread.name.startswith(prefix) for thread in threading.enumerate())


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(**options: Any) -> Server:
        server = Server(str(tmp_path / f"data{len(servers)}"), "127.0.0.1", 0, **options)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()


@pytest.fixture
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """No follower passes a leader that blocks for less than 5 s, and no slice ends before: the
    explicit hand-overs are what a test with this sees, not the watch that would end any block
    after 20 ms, or the interrupt check after a 2 ms slice."""
    monkeypatch.setattr(lane, "HOLDER_SECONDS", 5.0)
    monkeypatch.setattr(lane, "SLICE_SECONDS", 5.0)


def _settle(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_established_connections_wait_in_the_loop_not_in_threads(serve: Callable[..., Server]) -> None:
    server = serve()
    port = server.address[1]
    peers = [Peer(port) for _ in range(40)]
    for peer in peers:
        _ping(peer)  # the first message is answered on the connection's own thread
    # Then each plain connection joins the loop and its thread ends.
    assert _settle(lambda: _server_threads("foliodb-conn") == 0)
    # A follower beyond the idle few ends once it finds the loop led (a moment on a loaded machine).
    assert _settle(lambda: _server_threads("foliodb-loop") <= 1 + server_loop.MAX_IDLE, 2.0)
    # Every connection sends at once; each gets its own answer (its key, its requestID).
    for i, peer in enumerate(peers):
        peer.send({"insert": "c", "documents": [{"_id": i}], "$db": "test"}, request_id=1000 + i)
    for i, peer in enumerate(peers):
        response_to, inserted = peer.reply()
        assert response_to == 1000 + i and (inserted["n"], inserted["ok"]) == (1, 1.0)
    for i, peer in enumerate(peers):
        found = peer.command({"find": "c", "filter": {"_id": i}, "$db": "test"}, request_id=2000 + i)
        assert found["cursor"]["firstBatch"] == [{"_id": i}]
    assert _settle(lambda: _server_threads("foliodb-loop") <= 1 + server_loop.MAX_IDLE, 2.0)
    for peer in peers:
        peer.close()
    assert _settle(lambda: server._connection_stats()["current"] == 0)


def test_pipelined_requests_are_answered_in_order(serve: Callable[..., Server]) -> None:
    peer = Peer(serve().address[1])
    _ping(peer)
    # Three requests in one send: the loop finds them in one read and answers each.
    peer.sock.sendall(b"".join(frame({"ping": 1, "$db": "admin"}, request_id) for request_id in (7, 8, 9)))
    assert [peer.reply()[0] for _ in range(3)] == [7, 8, 9]


def test_a_message_sent_in_part_is_finished_beside_the_loop(serve: Callable[..., Server], patient: None) -> None:
    server = serve(frame_timeout=1.5)
    port = server.address[1]
    slow, other = Peer(port), Peer(port)
    _ping(slow)
    _ping(other)
    whole = frame({"ping": 1, "$db": "admin"}, request_id=5)
    slow.sock.sendall(whole[:10])  # part of the header: its thread waits for the rest
    time.sleep(0.2)
    # The others are served meanwhile: before the slow message's 1.5 s limit (which would
    # close it, and its reply below would never come), so beside it.
    assert max(_ping(other) for _ in range(5)) < 1.5
    slow.sock.sendall(whole[10:])
    response_to, pinged = slow.reply()
    assert response_to == 5 and pinged["ok"] == 1.0
    # A message that stops midway is closed after the frame time limit; the server goes on.
    slow.sock.sendall(whole[:20])
    started = time.monotonic()
    assert slow.closed_by_server()
    assert 1.0 < time.monotonic() - started < 10
    assert _ping(other) < ANSWERED


def test_a_peer_slow_to_take_its_reply_holds_back_no_one(serve: Callable[..., Server], patient: None) -> None:
    port = serve().address[1]
    loader: Any = pymongo.MongoClient("127.0.0.1", port)
    try:
        loader.test.big.insert_many([{"_id": i, "pad": "x" * 3_000_000} for i in range(5)])
    finally:
        loader.close()
    reader, other = Peer(port), Peer(port)
    _ping(reader)
    _ping(other)
    # A 15 MB first batch of five documents (found in a moment, more than the sockets' buffers
    # hold), and a reader that takes none of it for a while: the server's send waits.
    reader.send({"find": "big", "$db": "test"}, request_id=3)
    time.sleep(1.0)
    # Held back, a ping would wait for the reader to take its reply, which it does only below.
    assert max(_ping(other) for _ in range(5)) < ANSWERED
    response_to, found = reader.reply()
    assert response_to == 3 and [doc["_id"] for doc in found["cursor"]["firstBatch"]] == list(range(5))


def test_a_leader_that_blocks_where_nobody_marked_is_passed(
    serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request that blocks the loop's leader without leaving the lane (here a sleep
    inside the executor, as a long SQLite statement would) delays the others by about
    HOLDER_SECONDS: a follower leads beside it."""
    monkeypatch.setattr(lane, "HOLDER_SECONDS", 0.2)
    server = serve()
    execute = server.executor.execute
    release = threading.Event()

    def blocking_execute(db: str, cmd: Any, **kwargs: Any) -> dict[str, Any]:
        if cmd.get("comment") == "block":
            release.wait(30)  # blocked until the pings below are answered (or 30 s)
        return execute(db, cmd, **kwargs)

    monkeypatch.setattr(server.executor, "execute", blocking_execute)
    port = server.address[1]
    blocked, other = Peer(port), Peer(port)
    _ping(blocked)
    _ping(other)
    blocked.send({"find": "c", "comment": "block", "$db": "test"}, request_id=4)
    time.sleep(0.05)
    latencies = [_ping(other) for _ in range(5)]
    assert max(latencies) < 30  # answered while the request blocks: waiting for it would take its 30 s
    release.set()
    response_to, found = blocked.reply()
    assert response_to == 4 and found["ok"] == 1.0
    assert _ping(other) < ANSWERED


def test_commands_answer_while_the_lane_is_held(serve: Callable[..., Server], patient: None) -> None:
    """A loop's leader does not wait for a turn another thread holds: it hands the
    loop on and runs beside; hello, ping and currentOp never take one. (With the patient
    HOLDER of 5 s, a leader that waited for its turn would take 5 s, not a busy machine's 20 ms.)"""
    server = serve()
    peer = Peer(server.address[1])
    peer.command({"insert": "c", "documents": [{"_id": 1}], "$db": "test"})
    with server.lane.turn():  # this thread holds the lane, as a command that blocked without leaving would
        started = time.perf_counter()
        for command in ({"ping": 1}, {"hello": 1}, {"currentOp": 1}, {"find": "c", "filter": {"_id": 1}}):
            db = "test" if "find" in command else "admin"
            assert peer.command(command | {"$db": db})["ok"] == 1.0
        elapsed = time.perf_counter() - started
    assert elapsed < lane.HOLDER_SECONDS


def test_shutdown_closes_the_connections_in_the_loop(serve: Callable[..., Server]) -> None:
    server = serve()
    peers = [Peer(server.address[1]) for _ in range(5)]
    for peer in peers:
        _ping(peer)
    assert _settle(lambda: _server_threads("foliodb-conn") == 0)
    started = time.monotonic()
    server.shutdown()
    assert time.monotonic() - started < 5
    assert all(peer.closed_by_server() for peer in peers)
    assert _server_threads("foliodb-loop") == 0


def test_without_epoll_each_connection_keeps_its_thread(
    serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_loop, "SUPPORTED", False)  # as on a system other than Linux
    server = serve()
    peers = [Peer(server.address[1]) for _ in range(3)]
    for i, peer in enumerate(peers):
        _ping(peer)
        peer.command({"insert": "c", "documents": [{"_id": i}], "$db": "test"})
    assert _server_threads("foliodb-conn") == 3 and _server_threads("foliodb-loop") == 0
    found = peers[0].command({"find": "c", "sort": {"_id": 1}, "$db": "test"})
    assert found["cursor"]["firstBatch"] == [{"_id": 0}, {"_id": 1}, {"_id": 2}]
    server.shutdown()
    assert all(peer.closed_by_server() for peer in peers)


def _client_session(port: int, seed: int, rounds: int, errors: list[str], inserted: list[int]) -> None:
    """One client doing, at random, what clients do to a connection: a request and its reply,
    a burst of pipelined requests, a message sent in two parts with a pause between, a reply
    read slowly, and hanging up with a request unanswered. Every reply must answer its own
    request; a document whose insert was answered must be there at the end."""
    rng = random.Random(seed)
    peer = Peer(port)
    request_id = 0
    try:
        for _ in range(rounds):
            action = rng.choice(("request", "burst", "split", "slow", "hang up"))
            request_id += 1
            key = seed * 1_000_000 + request_id
            insert = frame({"insert": "chaos", "documents": [{"_id": key, "seed": seed}], "$db": "test"}, request_id)
            if action == "request":
                peer.sock.sendall(insert)
                response_to, answer = peer.reply()
                if (response_to, answer.get("n")) != (request_id, 1):
                    errors.append(f"{seed}: {response_to} {answer} for request {request_id}")
                inserted.append(key)
            elif action == "burst":
                ids = [request_id + i for i in range(rng.randint(2, 20))]
                request_id = ids[-1]
                peer.sock.sendall(b"".join(frame({"ping": 1, "$db": "admin"}, i) for i in ids))
                got = [peer.reply()[0] for _ in ids]
                if got != ids:
                    errors.append(f"{seed}: burst answered {got}, sent {ids}")
            elif action == "split":
                cut = rng.randint(1, len(insert) - 1)
                peer.sock.sendall(insert[:cut])
                time.sleep(rng.uniform(0, 0.05))
                peer.sock.sendall(insert[cut:])
                response_to, answer = peer.reply()
                if (response_to, answer.get("n")) != (request_id, 1):
                    errors.append(f"{seed}: split insert answered {response_to} {answer}")
                inserted.append(key)
            elif action == "slow":
                peer.send({"find": "chaos", "filter": {"seed": seed}, "batchSize": 1000, "$db": "test"}, request_id)
                time.sleep(rng.uniform(0, 0.05))
                response_to, answer = peer.reply()
                mine = {doc["_id"] for doc in answer["cursor"]["firstBatch"]}
                if response_to != request_id or not set(inserted) <= mine:
                    errors.append(f"{seed}: find answered {response_to}, missing {set(inserted) - mine}")
            else:  # a request in flight, or half a message, and the connection goes
                peer.sock.sendall(insert[: rng.randint(1, len(insert))])
                peer.close()
                peer = Peer(port)
    except Exception as exc:  # any exception is a failure of the server's answers
        errors.append(f"{seed}: {type(exc).__name__}: {exc}")
    finally:
        peer.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_many_clients_doing_anything_get_their_own_answers(
    serve: Callable[..., Server], seed: int, caplog: pytest.LogCaptureFixture
) -> None:
    server = serve()
    port = server.address[1]
    errors: list[str] = []
    inserted: list[list[int]] = [[] for _ in range(12)]
    threads = [
        threading.Thread(target=_client_session, args=(port, seed * 100 + i, 40, errors, inserted[i]), daemon=True)
        for i in range(12)
    ]
    watcher = Peer(port)
    with caplog.at_level(logging.INFO, logger="foliodb"):
        for thread in threads:
            thread.start()
        slowest = 0.0
        while any(thread.is_alive() for thread in threads):
            slowest = max(slowest, _ping(watcher))
            time.sleep(0.01)
        for thread in threads:
            thread.join(timeout=60)
    assert errors == []
    assert slowest < ANSWERED  # the watcher was answered throughout the storm
    stored = {
        doc["_id"]
        for doc in server.executor.execute("test", {"find": "chaos", "batchSize": 100_000})["cursor"]["firstBatch"]
    }
    answered = {key for keys in inserted for key in keys}
    assert answered <= stored  # an answered insert is never lost; a hung-up one may or may not have run
    assert not [r for r in caplog.records if r.exc_info], "a FolioDB bug was logged"
    assert _settle(lambda: server._connection_stats()["current"] == 1)  # the watcher alone


def test_threads_that_served_beside_the_loop_end_beyond_the_idle_few(
    serve: Callable[..., Server], patient: None
) -> None:
    server = serve()
    port = server.address[1]
    peers = [Peer(port) for _ in range(30)]
    for peer in peers:
        _ping(peer)
    process_id = peers[0].command({"hello": 1, "$db": "admin"})["topologyVersion"]["processId"]
    awaitable = {"hello": 1, "topologyVersion": {"processId": process_id, "counter": 0}, "$db": "admin"}
    for peer in peers:  # each connection's awaitable hello waits on a thread beside the loop
        peer.send({**awaitable, "maxAwaitTimeMS": 1500}, request_id=9)
    assert _settle(lambda: _server_threads("foliodb-loop") >= 30)
    assert all(peer.reply()[0] == 9 for peer in peers)  # all about at once, they finish and come back
    assert _settle(lambda: _server_threads("foliodb-loop") <= 1 + server_loop.MAX_IDLE)
    assert _ping(peers[0]) < ANSWERED
