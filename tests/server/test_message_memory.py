"""Reading messages costs the bytes that arrive, not the bytes a header declares.

A header announcing a 48 MB message (MongoDB's maxMessageSizeBytes) is 16 bytes
of input; the server must not allocate the 48 MB before they come. Under
``--auth`` a connection that has not authenticated may send only what the
handshake and SASL need, and is closed past it. A message arriving in parts
waits in the server's loop, not on a thread of its own.

Manual: https://www.mongodb.com/docs/manual/reference/limits/ (maxMessageSizeBytes),
https://www.mongodb.com/docs/manual/reference/mongodb-wire-protocol/
"""

from __future__ import annotations

import socket
from typing import Any

import pymongo
import pytest

from tests.server.test_abuse import HEADER, OP_MSG, closed_by_server, connect, frame, pinged, reply, settle, spawn

__all__ = ["spawn"]  # the fixture, imported for the tests below

MB = 1024 * 1024
DECLARED = 48_000_000  # mongod's maxMessageSizeBytes: the largest length a header may declare


def _headers_only(port: int, count: int) -> list[socket.socket]:
    socks = []
    for i in range(count):
        sock = connect(port, timeout=10)
        sock.sendall(HEADER.pack(DECLARED, i + 1, 0, OP_MSG))
        socks.append(sock)
    return socks


@pytest.mark.parametrize("auth", [False, True], ids=["open", "auth"])
def test_twenty_48mb_headers_cost_what_arrived(spawn: Any, auth: bool) -> None:
    child = spawn(*(["--auth"] if auth else []))
    monitor = connect(child.port)
    assert pinged(monitor)
    baseline = child.rss()
    socks = _headers_only(child.port, 20)
    assert pinged(monitor)  # the server has read the headers by the time it answers this
    # Each header declared 48 MB: allocating them would add 960 MB. What arrived is 320 bytes;
    # 20 MB is room for the interpreter's own noise.
    assert child.rss() < baseline + 20 * MB, (baseline, child.rss())
    if auth:
        # Before authentication a message may be only as large as the handshake needs: closed.
        assert settle(lambda: all(closed_by_server(s) for s in socks), 10)
        assert "out of range (at most 65536 bytes)" in child.log_text()
    else:
        for sock in socks:
            sock.settimeout(0.05)
        assert not any(closed_by_server(s) for s in socks)  # they wait for the rest (within the frame limit)
    for sock in socks:
        sock.close()


def test_the_handshake_and_authentication_fit_under_the_pre_auth_bound(spawn: Any) -> None:
    child = spawn("--auth")
    pymongo.MongoClient("127.0.0.1", child.port).admin.command("createUser", "u", pwd="pw", roles=["root"])
    with child.client(username="u", password="pw", appname="a" * 100) as client:
        # Once authenticated, a large message is taken: 8 MB of document.
        client.test.c.insert_one({"_id": 1, "pad": "x" * (8 * MB)})
        assert len(client.test.c.find_one()["pad"]) == 8 * MB


def test_a_large_message_arriving_in_parts_is_read_whole(spawn: Any) -> None:
    child = spawn()
    sock = connect(child.port, timeout=30)
    message = frame({"insert": "c", "documents": [{"_id": 1, "pad": "y" * (3 * MB)}], "$db": "test"})
    for start in range(0, len(message), 100_000):
        sock.sendall(message[start : start + 100_000])
    answer = reply(sock)
    assert answer is not None and answer["n"] == 1
    sock.close()


def test_partial_messages_wait_in_the_loop_not_on_threads(spawn: Any) -> None:
    child = spawn()
    monitor = connect(child.port)
    assert pinged(monitor)
    baseline = child.threads()
    socks = []
    for i in range(200):
        sock = connect(child.port, timeout=10)
        sock.sendall(frame({"ping": 1, "$db": "admin"}, i)[:20])  # a header and a few bytes more
        socks.append(sock)
    assert pinged(monitor)
    # A thread each would be 200 more; the loop keeps a leader and a few followers.
    assert child.threads() < baseline + 10, (baseline, child.threads())
    for i, sock in enumerate(socks[:20]):  # the rest of the message comes: answered
        sock.sendall(frame({"ping": 1, "$db": "admin"}, i)[20:])
        answer = reply(sock)
        assert answer is not None and answer["ok"] == 1.0
    for sock in socks:
        sock.close()


def test_the_budget_lends_only_what_it_has_and_wakes_waiters_when_given_back() -> None:
    from foliodb.server.budget import Budget

    woken: list[str] = []
    budget = Budget(limit=100)
    assert budget.take_or_notify(60, lambda: woken.append("first"))
    assert not budget.take_or_notify(50, lambda: woken.append("second"))  # 110 > 100: waits
    assert not budget.wait(50, deadline=0.0)  # a deadline already passed: no wait
    budget.give(60)
    assert woken == ["second"] and budget.used == 0
    assert budget.wait(100, deadline=None) and budget.used == 100
