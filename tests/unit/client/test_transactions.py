"""Multi-document transactions on the embedded client (issue 10), through
pymongo's ClientSession API: all-or-nothing commits, isolation, aborts that
leave no trace, with_transaction's retries, and the commands a transaction
sends.

Expected values are written out from the cited pages and from pymongo 4.20's
client_session.py; the engine is the real one (two sessions in one thread
interleave to make a conflict).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pymongo import ReadPreference
from pymongo.client_session import TransactionOptions
from pymongo.errors import (
    ConfigurationError,
    DuplicateKeyError,
    InvalidOperation,
    NetworkTimeout,
    OperationFailure,
    WriteConcernError,
)
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

import foliodb
from tests.sent_commands import SentCommands

TRANSACTIONS = "https://www.mongodb.com/docs/manual/core/transactions/"
SESSIONS = "https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"
CONVENIENT = (
    "https://github.com/mongodb/specifications/blob/master/source/transactions-convenient-api/"
    "transactions-convenient-api.md"
)
CONFLICTS = "https://www.mongodb.com/docs/manual/core/transactions-production-consideration/#in-progress-transactions-and-write-conflicts"
SPEC = "https://github.com/mongodb/specifications/blob/master/source/transactions/transactions.md"


@pytest.fixture
def commands() -> SentCommands:
    return SentCommands()


@pytest.fixture
def client(commands: SentCommands, tmp_path: Any) -> Iterator[Any]:
    with foliodb.MongoClient(str(tmp_path / "data"), event_listeners=[commands]) as client:
        yield client


@pytest.fixture
def shop(client: Any) -> Any:
    shop = client.shop
    shop.inventory.insert_one({"_id": "sku1", "qty": 3})
    return shop


def _order(shop: Any, order_id: int, fail_midway: bool = False) -> Any:
    """The schema-design examples' order: record it, then take the stock (TRANSACTIONS)."""

    def callback(session: Any) -> str:
        shop.orders.insert_one({"_id": order_id, "sku": "sku1", "qty": 1}, session=session)
        if fail_midway:
            raise RuntimeError("payment declined")
        taken = shop.inventory.update_one({"_id": "sku1", "qty": {"$gte": 1}}, {"$inc": {"qty": -1}}, session=session)
        if taken.modified_count != 1:
            raise RuntimeError("out of stock")
        return "ordered"

    return callback


def test_an_order_and_its_stock_commit_together(shop: Any, client: Any) -> None:
    # TRANSACTIONS: both writes commit, or neither.
    with client.start_session() as session:
        assert session.with_transaction(_order(shop, 1)) == "ordered"
    assert list(shop.orders.find()) == [{"_id": 1, "sku": "sku1", "qty": 1}]
    assert shop.inventory.find_one() == {"_id": "sku1", "qty": 2}


def test_a_callback_that_raises_midway_leaves_nothing(shop: Any, client: Any) -> None:
    # CONVENIENT: an error from the callback aborts the transaction and reaches the caller.
    with client.start_session() as session:
        with pytest.raises(RuntimeError, match="payment declined"):
            session.with_transaction(_order(shop, 1, fail_midway=True))
        assert not session.in_transaction
    assert shop.orders.count_documents({}) == 0
    assert shop.inventory.find_one() == {"_id": "sku1", "qty": 3}


def test_out_of_stock_rolls_the_order_back(shop: Any, client: Any) -> None:
    shop.inventory.update_one({"_id": "sku1"}, {"$set": {"qty": 0}})
    with client.start_session() as session, pytest.raises(RuntimeError, match="out of stock"):
        session.with_transaction(_order(shop, 1))
    assert shop.orders.count_documents({}) == 0


def test_with_transaction_retries_a_write_conflict(shop: Any, client: Any) -> None:
    # CONFLICTS: the second writer of a document an open transaction wrote gets WriteConflict
    # (112) labelled TransientTransactionError; with_transaction runs its callback again (CONVENIENT).
    first = client.start_session()
    first.start_transaction()
    shop.inventory.update_one({"_id": "sku1"}, {"$inc": {"qty": -1}}, session=first)
    errors: list[OperationFailure] = []

    def second_order(session: Any) -> None:
        if errors:
            first.commit_transaction()  # the first writer finishes before the retry writes
        try:
            shop.inventory.update_one({"_id": "sku1"}, {"$inc": {"qty": -1}}, session=session)
        except OperationFailure as exc:
            errors.append(exc)
            raise
        shop.orders.insert_one({"_id": 2, "sku": "sku1", "qty": 1}, session=session)

    with client.start_session() as second:
        second.with_transaction(second_order)
    first.end_session()
    assert [(e.code, e.has_error_label("TransientTransactionError")) for e in errors] == [(112, True)]
    assert shop.inventory.find_one() == {"_id": "sku1", "qty": 1}  # both decrements, one after the other
    assert shop.orders.count_documents({}) == 1


def test_with_transaction_gives_up_after_120_seconds(shop: Any, client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # CONVENIENT: retries stop once 120 seconds have passed since with_transaction began; the
    # last error is raised as a timeout, its labels kept. pymongo's clock, not the engine, is faked.
    import pymongo.client_session_shared as shared
    import pymongo.synchronous.client_session as synchronous

    now = [0.0]  # seconds on pymongo's clock, moved on by each attempt of the callback

    class FakeTime:
        @staticmethod
        def monotonic() -> float:
            return now[0]

        @staticmethod
        def sleep(seconds: float) -> None:
            now[0] += seconds

    monkeypatch.setattr(shared, "time", FakeTime)
    monkeypatch.setattr(synchronous, "time", FakeTime)
    holder = client.start_session()
    holder.start_transaction()
    shop.inventory.update_one({"_id": "sku1"}, {"$inc": {"qty": -1}}, session=holder)
    attempts = []

    def conflicting(session: Any) -> None:
        attempts.append(1)
        now[0] += 70.0
        shop.inventory.update_one({"_id": "sku1"}, {"$inc": {"qty": -1}}, session=session)

    with client.start_session() as session, pytest.raises(NetworkTimeout) as info:
        session.with_transaction(conflicting)
    holder.end_session()
    assert info.value.has_error_label("TransientTransactionError")
    # Attempt 1 fails at 70 s (within 120: retry, after a backoff of at most 0.5 s); attempt 2
    # fails past 140 s: no more retries.
    assert len(attempts) == 2
    assert shop.inventory.find_one() == {"_id": "sku1", "qty": 3}


def test_isolation_before_commit(shop: Any, client: Any) -> None:
    # TRANSACTIONS: nothing a transaction wrote is visible outside it before it commits; inside,
    # it reads its own writes.
    with client.start_session() as session, client.start_session() as other:
        session.start_transaction()
        shop.orders.insert_one({"_id": 1}, session=session)
        shop.inventory.update_one({"_id": "sku1"}, {"$set": {"qty": 0}}, session=session)
        assert shop.orders.find_one({"_id": 1}, session=session) == {"_id": 1}
        assert shop.inventory.find_one({}, session=session)["qty"] == 0
        assert shop.orders.find_one({"_id": 1}) is None
        assert shop.orders.find_one({"_id": 1}, session=other) is None
        assert shop.inventory.find_one()["qty"] == 3
        session.commit_transaction()
        assert shop.orders.find_one({"_id": 1}, session=other) == {"_id": 1}
        assert shop.inventory.find_one()["qty"] == 0


def test_a_transaction_reads_its_snapshot(shop: Any, client: Any) -> None:
    # TRANSACTIONS (read concern snapshot): writes committed by others after the transaction's
    # first read are not seen by its later reads.
    shop.orders.insert_one({"_id": 1})
    with client.start_session() as session:
        session.start_transaction(read_concern=ReadConcern("snapshot"))
        assert shop.orders.count_documents({}, session=session) == 1
        shop.orders.insert_one({"_id": 2})
        shop.inventory.update_one({"_id": "sku1"}, {"$set": {"qty": 99}})
        assert shop.orders.count_documents({}, session=session) == 1
        assert shop.inventory.find_one({}, session=session)["qty"] == 3
        session.commit_transaction()
    assert shop.orders.count_documents({}) == 2


def test_abort_leaves_no_trace(shop: Any, client: Any) -> None:
    # TRANSACTIONS: an aborted transaction's inserts, updates, deletes and index keys all vanish.
    shop.orders.create_index("code", unique=True)
    shop.orders.insert_one({"_id": 1, "code": "a"})
    with client.start_session() as session:
        with session.start_transaction():
            shop.orders.insert_one({"_id": 2, "code": "b"}, session=session)
            shop.orders.update_one({"_id": 1}, {"$set": {"code": "z"}}, session=session)
            shop.inventory.delete_one({"_id": "sku1"}, session=session)
            session.abort_transaction()
        assert not session.in_transaction
    assert list(shop.orders.find()) == [{"_id": 1, "code": "a"}]
    assert shop.inventory.count_documents({}) == 1
    shop.orders.insert_one({"_id": 3, "code": "b"})  # the aborted insert's unique key is free


def test_the_context_manager_aborts_on_error_and_commits_otherwise(shop: Any, client: Any) -> None:
    # SESSIONS: start_transaction's context commits on a clean exit and aborts on an exception.
    with client.start_session() as session:
        with pytest.raises(ZeroDivisionError), session.start_transaction():
            shop.orders.insert_one({"_id": 1}, session=session)
            1 / 0  # noqa: B018
        with session.start_transaction():
            shop.orders.insert_one({"_id": 2}, session=session)
    assert [d["_id"] for d in shop.orders.find()] == [2]


def test_ending_a_session_aborts_its_transaction(shop: Any, client: Any, commands: SentCommands) -> None:
    session = client.start_session()
    session.start_transaction()
    shop.orders.insert_one({"_id": 1}, session=session)
    session.end_session()
    assert len(commands.named("abortTransaction")) == 1
    assert shop.orders.count_documents({}) == 0


def test_the_commands_of_a_transaction(client: Any, commands: SentCommands) -> None:
    # SPEC: the first command starts the transaction and carries its read concern; every
    # command has lsid, txnNumber and autocommit: false; no statement has a write concern, the
    # commit has the transaction's (and maxTimeMS); a retried commit is w: majority, wtimeout 10000.
    orders = client.shop.get_collection("orders", write_concern=WriteConcern(w=1))
    with client.start_session() as session:
        session.start_transaction(
            read_concern=ReadConcern("snapshot"), write_concern=WriteConcern(w="majority"), max_commit_time_ms=500
        )
        orders.insert_one({"_id": 1}, session=session)
        orders.find_one({"_id": 1}, session=session)
        session.commit_transaction()
        session.commit_transaction()
        lsid = session.session_id
    insert, find = commands.named("insert")[0], commands.named("find")[0]
    first_commit, retried_commit = commands.named("commitTransaction")
    for cmd in (insert, find, first_commit, retried_commit):
        assert (cmd["lsid"], cmd["txnNumber"], cmd["autocommit"]) == (lsid, 1, False)
    assert insert["startTransaction"] is True and insert["readConcern"] == {"level": "snapshot"}
    assert "startTransaction" not in find and "readConcern" not in find
    assert "writeConcern" not in insert
    assert first_commit["writeConcern"] == {"w": "majority"} and first_commit["maxTimeMS"] == 500
    assert retried_commit["writeConcern"] == {"w": "majority", "wtimeout": 10000}


def test_transaction_options_are_inherited(client: Any, commands: SentCommands) -> None:
    # SESSIONS: unset transaction options come from the session's defaults, then the client's.
    defaults = TransactionOptions(write_concern=WriteConcern(w="majority"), max_commit_time_ms=250)
    with client.start_session(default_transaction_options=defaults) as session, session.start_transaction():
        client.shop.orders.insert_one({"_id": 1}, session=session)
    (commit,) = commands.named("commitTransaction")
    assert commit["writeConcern"] == {"w": "majority"} and commit["maxTimeMS"] == 250


def test_an_empty_transaction_sends_nothing(client: Any, commands: SentCommands) -> None:
    # SPEC: a transaction that ran no command is committed or aborted without a command.
    with client.start_session() as session:
        session.start_transaction()
        session.commit_transaction()
        session.start_transaction()
        session.abort_transaction()
    assert commands.sent == []


def test_client_side_state_errors(client: Any) -> None:
    # SESSIONS: pymongo's own state machine, with its messages.
    orders = client.shop.orders
    with client.start_session() as session:
        with pytest.raises(InvalidOperation, match="No transaction started"):
            session.commit_transaction()
        with pytest.raises(InvalidOperation, match="No transaction started"):
            session.abort_transaction()
        session.start_transaction()
        with pytest.raises(InvalidOperation, match="Transaction already in progress"):
            session.start_transaction()
        orders.insert_one({"_id": 1}, session=session)
        session.commit_transaction()
        with pytest.raises(InvalidOperation, match="Cannot call abortTransaction after calling commitTransaction"):
            session.abort_transaction()
        session.start_transaction()
        orders.insert_one({"_id": 2}, session=session)
        session.abort_transaction()
        with pytest.raises(InvalidOperation, match="Cannot call abortTransaction twice"):
            session.abort_transaction()
        with pytest.raises(InvalidOperation, match="Cannot call commitTransaction after calling abortTransaction"):
            session.commit_transaction()
        with pytest.raises(ConfigurationError, match="transactions do not support unacknowledged write concern"):
            session.start_transaction(write_concern=WriteConcern(w=0))
        session.start_transaction(read_preference=ReadPreference.SECONDARY)
        with pytest.raises(InvalidOperation, match="read preference in a transaction must be primary"):
            orders.find_one({}, session=session)
        orders.insert_one({"_id": 3}, session=session)  # writes go to the primary whatever the preference
        session.commit_transaction()
    assert [d["_id"] for d in orders.find()] == [1, 3]


def test_a_failed_statement_aborts_the_transaction_server_side(client: Any, commands: SentCommands) -> None:
    # SPEC: any error aborts the transaction on the server; its commit then fails with
    # NoSuchTransaction (251), labelled TransientTransactionError; abort ignores server errors.
    orders = client.shop.orders
    orders.insert_one({"_id": 1})
    with client.start_session() as session:
        session.start_transaction()
        orders.insert_one({"_id": 2}, session=session)
        with pytest.raises(DuplicateKeyError):
            orders.insert_one({"_id": 1}, session=session)
        with pytest.raises(OperationFailure) as info:
            session.commit_transaction()
        assert info.value.code == 251 and info.value.has_error_label("TransientTransactionError")
        assert not info.value.has_error_label("UnknownTransactionCommitResult")
        session.start_transaction()
        orders.insert_one({"_id": 3}, session=session)
        with pytest.raises(DuplicateKeyError):
            orders.insert_one({"_id": 1}, session=session)
        session.abort_transaction()  # the server answers NoSuchTransaction: ignored
    assert commands.named("abortTransaction")[0]["txnNumber"] == 2
    assert [d["_id"] for d in orders.find()] == [1]


def test_a_commit_write_concern_error_is_raised_after_committing(client: Any) -> None:
    # SPEC: a write concern error on commit raises WriteConcernError; the transaction committed
    # (a one-member replica set has no w: 2, UnsatisfiableWriteConcern 100).
    orders = client.shop.orders
    with client.start_session() as session:
        session.start_transaction(write_concern=WriteConcern(w=2))
        orders.insert_one({"_id": 1}, session=session)
        with pytest.raises(WriteConcernError) as info:
            session.commit_transaction()
        assert info.value.code == 100
        assert not info.value.has_error_label("UnknownTransactionCommitResult")
    assert orders.count_documents({}) == 1


def test_a_callback_that_commits_itself(client: Any) -> None:
    # CONVENIENT: a callback that ends the transaction itself is left as it is.
    orders = client.shop.orders

    def callback(session: Any) -> int:
        orders.insert_one({"_id": 1}, session=session)
        session.commit_transaction()
        return 7

    with client.start_session() as session:
        assert session.with_transaction(callback) == 7
    assert orders.count_documents({}) == 1


def test_a_cursor_in_a_transaction_gets_more_inside_it(client: Any, commands: SentCommands) -> None:
    orders = client.shop.orders
    with client.start_session() as session, session.start_transaction():
        orders.insert_many([{"_id": i} for i in range(5)], session=session)
        assert [d["_id"] for d in orders.find({}, session=session).batch_size(2)] == [0, 1, 2, 3, 4]
    get_mores = commands.named("getMore")
    assert len(get_mores) == 2
    assert all((cmd["txnNumber"], cmd["autocommit"]) == (1, False) for cmd in get_mores)
    assert orders.count_documents({}) == 5
