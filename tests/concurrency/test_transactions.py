"""Transactions under concurrency: money moves, totals never change, nothing is lost.

Eight threads move money between accounts in transactions for a bounded
time, while readers check that the total never changes - read by plain
finds (each one snapshot), in snapshot sessions and inside read-only
transactions. Transactions that meet each other's writes get WriteConflict
and ``with_transaction`` retries them (first writer wins), so no update is
lost: ``$inc`` counters in transactions count every increment, and unique
inserts never duplicate.

Manual: https://www.mongodb.com/docs/manual/core/transactions/ ,
https://www.mongodb.com/docs/manual/core/transactions-production-consideration/
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pymongo.errors import DuplicateKeyError, OperationFailure
from pymongo.read_concern import ReadConcern

import foliodb
from tests.concurrency.conftest import Deployment

ACCOUNTS = 10
TOTAL = ACCOUNTS * 100
SECONDS = 3.0


def _run_threads(targets: list[Any]) -> list[BaseException]:
    errors: list[BaseException] = []

    def guarded(fn: Any) -> None:
        try:
            fn()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(fn,)) for fn in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return errors


def test_transfers_keep_the_total(deployment: Deployment) -> None:
    setup = deployment.connect()
    setup.bank.accounts.insert_many([{"_id": i, "balance": 100} for i in range(ACCOUNTS)])
    stop_at = time.monotonic() + SECONDS
    transfers = [0]
    totals_seen: list[tuple[str, int]] = []

    def mover(seed: int) -> None:
        client = deployment.connect()
        accounts = client.bank.accounts
        rng = random.Random(seed)
        while time.monotonic() < stop_at:
            a, b = rng.sample(range(ACCOUNTS), 2)
            amount = rng.randrange(1, 20)

            def transfer(session: Any) -> None:
                source = accounts.find_one({"_id": a}, session=session)
                if source["balance"] < amount:
                    return
                accounts.update_one({"_id": a}, {"$inc": {"balance": -amount}}, session=session)
                accounts.update_one({"_id": b}, {"$inc": {"balance": amount}}, session=session)

            with client.start_session() as session:
                session.with_transaction(transfer)
            transfers[0] += 1

    def reader(kind: str) -> None:
        client = deployment.connect()
        accounts = client.bank.accounts
        while time.monotonic() < stop_at:
            if kind == "find":
                balances = [d["balance"] for d in accounts.find()]
            elif kind == "snapshot":
                with client.start_session(snapshot=True) as session:
                    balances = [d["balance"] for d in accounts.find(session=session)]
            else:
                with client.start_session() as session, session.start_transaction(read_concern=ReadConcern("snapshot")):
                    balances = [d["balance"] for d in accounts.find(session=session)]
            totals_seen.append((kind, sum(balances)))

    errors = _run_threads(
        [lambda seed=seed: mover(seed) for seed in range(8)]
        + [lambda kind=kind: reader(kind) for kind in ("find", "snapshot", "transaction")]
    )
    assert not errors, repr(errors[0])
    assert transfers[0] > 10
    assert {kind for kind, _ in totals_seen} == {"find", "snapshot", "transaction"}
    wrong = [(kind, total) for kind, total in totals_seen if total != TOTAL]
    assert not wrong, f"{len(wrong)} of {len(totals_seen)} reads saw another total, e.g. {wrong[:3]}"
    assert sum(d["balance"] for d in setup.bank.accounts.find()) == TOTAL
    assert setup.bank.command("validate", "accounts")["valid"]


def test_increments_and_unique_inserts_in_transactions_lose_nothing(deployment: Deployment) -> None:
    setup = deployment.connect()
    setup.app.counters.insert_one({"_id": "c", "n": 0})
    setup.app.tags.create_index("name", unique=True)
    threads, increments, names = 8, 25, 15
    duplicates: list[int] = []

    def worker(seed: int) -> None:
        client = deployment.connect()
        counters, tags = client.app.counters, client.app.tags
        with client.start_session() as session:
            for _ in range(increments):
                session.with_transaction(lambda s: counters.update_one({"_id": "c"}, {"$inc": {"n": 1}}, session=s))
            refused = 0
            for name in random.Random(seed).sample(range(names), names):
                try:
                    session.with_transaction(lambda s, name=name: tags.insert_one({"name": name}, session=s))
                except DuplicateKeyError:
                    refused += 1
            duplicates.append(refused)

    errors = _run_threads([lambda seed=seed: worker(seed) for seed in range(threads)])
    assert not errors, repr(errors[0])
    assert setup.app.counters.find_one({"_id": "c"})["n"] == threads * increments
    assert sorted(d["name"] for d in setup.app.tags.find()) == list(range(names))
    assert sum(duplicates) == (threads - 1) * names
    assert setup.app.command("validate", "tags")["valid"]


def test_a_commit_landing_while_a_transaction_pins_its_snapshot_is_a_conflict(tmp_path: Path) -> None:
    # A plain write commits after a transaction's snapshot is taken but before the transaction
    # is registered as open (the window in which a full run once lost 15 of 1,000 in the test
    # above): the transaction does not see it, so writing that document must be a WriteConflict
    # (first writer wins), never a write over it.
    client = foliodb.MongoClient(str(tmp_path / "db"))
    other = foliodb.MongoClient(str(tmp_path / "db"))
    accounts = client.bank.accounts
    accounts.insert_one({"_id": 1, "balance": 100})
    storage = client._executor.engine.storage
    pin = storage.pin_snapshot

    def pin_then_commit_elsewhere() -> Any:
        pinned = pin()
        writer = threading.Thread(target=lambda: other.bank.accounts.update_one({"_id": 1}, {"$inc": {"balance": 7}}))
        writer.start()
        writer.join()
        return pinned

    storage.pin_snapshot = pin_then_commit_elsewhere
    try:
        with client.start_session() as session, session.start_transaction():
            assert accounts.find_one({"_id": 1}, session=session)["balance"] == 100  # the snapshot
            try:
                accounts.update_one({"_id": 1}, {"$inc": {"balance": -5}}, session=session)
            except OperationFailure as exc:
                assert exc.code == 112 and exc.has_error_label("TransientTransactionError")
                raise
    except OperationFailure as exc:
        assert exc.code == 112
    else:
        raise AssertionError("the transaction wrote over a commit its snapshot does not hold")
    finally:
        storage.pin_snapshot = pin
    assert accounts.find_one({"_id": 1})["balance"] == 107
    client.close()
    other.close()


def test_current_op_shows_an_idle_transaction_and_kill_sessions_ends_it(deployment: Deployment) -> None:
    """``$currentOp`` (idleSessions, true by default) shows a session holding a transaction open
    between its commands (``type: "idleSession"``), so an administrator can find the one that
    holds writes back and end it with killSessions.
    https://www.mongodb.com/docs/manual/reference/operator/aggregation/currentOp/"""
    client, admin = deployment.connect(), deployment.connect()
    client.test.held.insert_one({"_id": 1})
    session = client.start_session()
    session.start_transaction()
    client.test.held.update_one({"_id": 1}, {"$set": {"x": 1}}, session=session)
    idle = [op for op in admin.admin.aggregate([{"$currentOp": {}}]) if op["type"] == "idleSession"]
    mine = [op for op in idle if op["lsid"]["id"] == session.session_id["id"]]
    assert len(mine) == 1
    shown = mine[0]
    assert shown["active"] is False and shown["desc"] == "inactive transaction"
    assert shown["transaction"]["parameters"]["txnNumber"] >= 1  # a pooled server session may have used 1
    assert shown["transaction"]["parameters"]["autocommit"] is False
    assert shown["transaction"]["timeOpenMicros"] >= 0
    assert not [
        op for op in admin.admin.aggregate([{"$currentOp": {"idleSessions": False}}]) if op["type"] == "idleSession"
    ]
    admin.admin.command("killSessions", [{"id": shown["lsid"]["id"]}])
    assert not [
        op
        for op in admin.admin.aggregate([{"$currentOp": {}}])
        if op["type"] == "idleSession" and op["lsid"]["id"] == session.session_id["id"]
    ]
    with pytest.raises(OperationFailure):
        session.commit_transaction()
    assert admin.test.held.find_one({"_id": 1}) == {"_id": 1}  # the killed transaction's write is gone
