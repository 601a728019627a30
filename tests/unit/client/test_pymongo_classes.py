"""The facade's classes are pymongo's (issue 13): ``isinstance`` checks for
pymongo's classes pass, every public attribute of pymongo's classes is the
facade's own or a pure pymongo accessor, and nothing reaches pymongo's network
layer: no topology, no socket, no background thread.

Audited surface: ``dir()`` of each pymongo class, its public names and the
operators it defines (``__getitem__``, ``__iter__``...).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import gridfs
import pymongo
import pymongo.collection
import pymongo.command_cursor
import pymongo.cursor
import pymongo.database
import pytest
from pymongo.cursor import CursorType
from pymongo.driver_info import DriverInfo
from pymongo.errors import ConfigurationError, InvalidOperation, OperationFailure
from pymongo.monitoring import CommandListener
from pymongo.periodic_executor import PeriodicExecutor
from pymongo.synchronous.topology import Topology

import foliodb
from foliodb.client import Collection, CommandCursor, Cursor, Database, MongoClient
from foliodb.client.command_cursor import RawBatchCommandCursor
from foliodb.client.cursor import RawBatchCursor
from foliodb.client.driver_hooks import NoNetworkLayer

MONGO_CLIENT = "https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html"
CURSOR = "https://pymongo.readthedocs.io/en/stable/api/pymongo/cursor.html"

PAIRS = [
    (pymongo.MongoClient, MongoClient),
    (pymongo.database.Database, Database),
    (pymongo.collection.Collection, Collection),
    (pymongo.cursor.Cursor, Cursor),
    (pymongo.command_cursor.CommandCursor, CommandCursor),
    (pymongo.cursor.RawBatchCursor, RawBatchCursor),
    (pymongo.command_cursor.RawBatchCommandCursor, RawBatchCommandCursor),
]

# pymongo's own implementations the facade keeps, each read and found pure (no I/O):
# common.BaseObject's accessors of the four settings, and the refusals of truth
# testing, iteration and calling (they raise pymongo's TypeError/NotImplementedError).
KEPT = {
    "codec_options",
    "read_preference",
    "write_concern",
    "read_concern",
    "__bool__",
    "__iter__",
    "__next__",
    "next",
    "__call__",
}


def pymongo_names(cls: type) -> set[str]:
    """The public names and the operators that pymongo's class hierarchy defines."""
    names = {name for name in dir(cls) if not name.startswith("_")}
    for klass in cls.__mro__:
        if klass.__module__.startswith(("pymongo", "gridfs")):
            names.update(name for name in vars(klass) if name.startswith("__") and name.endswith("__"))
    # Python's machinery on every class, not pymongo's API.
    return names - {
        "__init__",
        "__dict__",
        "__doc__",
        "__module__",
        "__weakref__",
        "__orig_bases__",
        "__parameters__",
        "__abstractmethods__",
        "__slots__",
        "__annotations__",
        "__class_getitem__",
        "__init_subclass__",
        "__firstlineno__",
        "__static_attributes__",
        "__type_params__",
        "__del__",
        "__ne__",
        "__aiter__",
        "__anext__",
        "__aenter__",
        "__aexit__",
    }


def owner(cls: type, name: str) -> type:
    return next(klass for klass in cls.__mro__ if name in vars(klass))


@pytest.mark.parametrize(("theirs", "ours"), PAIRS, ids=[p[1].__name__ for p in PAIRS])
def test_isinstance_of_pymongos_class(theirs: type, ours: type) -> None:
    assert issubclass(ours, theirs)


@pytest.mark.parametrize(("theirs", "ours"), PAIRS, ids=[p[1].__name__ for p in PAIRS])
def test_every_pymongo_attribute_is_the_facades_or_a_kept_pure_one(theirs: type, ours: type) -> None:
    stray = sorted(
        name
        for name in pymongo_names(theirs)
        if not owner(ours, name).__module__.startswith("foliodb") and name not in KEPT
    )
    assert stray == []


def test_instances_are_pymongos(client: Any) -> None:
    db = client.test
    coll = db.things
    coll.insert_many([{"_id": i} for i in range(3)])
    assert isinstance(client, pymongo.MongoClient)
    assert isinstance(db, pymongo.database.Database)
    assert isinstance(coll, pymongo.collection.Collection)
    assert isinstance(coll.find(), pymongo.cursor.Cursor)
    assert isinstance(coll.aggregate([]), pymongo.command_cursor.CommandCursor)
    assert isinstance(db.list_collections(), pymongo.command_cursor.CommandCursor)
    assert isinstance(coll.find_raw_batches(), pymongo.cursor.RawBatchCursor)
    assert isinstance(coll.aggregate_raw_batches([]), pymongo.command_cursor.RawBatchCommandCursor)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail the test if anything opens a connection, or pymongo builds a topology or
    starts one of its background threads (monitors, pool maintenance, killCursors).
    The engine's own threads (the TTL monitor) are FolioDB's and allowed."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("reached the network layer")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(Topology, "__init__", refuse)
    monkeypatch.setattr(PeriodicExecutor, "open", refuse)
    start = threading.Thread.start

    def start_unless_pymongos(thread: threading.Thread) -> None:
        target = getattr(thread, "_target", None)
        if getattr(target, "__module__", "").startswith("pymongo"):
            refuse()
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", start_unless_pymongos)
    yield


def test_a_workload_opens_no_socket_and_starts_no_thread(tmp_path: Any, no_network: None) -> None:
    with foliodb.MongoClient(str(tmp_path / "data")) as client:
        coll = client.shop.orders
        coll.insert_many([{"_id": i, "n": i % 2} for i in range(5)])
        coll.update_one({"_id": 0}, {"$set": {"n": 9}})
        assert [d["_id"] for d in coll.find({"n": 1}).sort("_id").batch_size(1)] == [1, 3]
        assert coll.count_documents({}) == 5
        assert list(coll.aggregate([{"$group": {"_id": None, "t": {"$sum": "$n"}}}])) == [{"_id": None, "t": 11}]
        coll.create_index("n")
        assert client.list_database_names() == ["admin", "config", "local", "shop"]  # as mongod lists them
        assert client.shop.list_collection_names() == ["orders"]
        fs = gridfs.GridFS(client.shop)
        file_id = fs.put(b"x" * 300_000, filename="f")
        assert [f.filename for f in fs.find()] == ["f"]
        assert fs.get(file_id).read() == b"x" * 300_000
        with client.start_session() as session:
            assert coll.find_one({"_id": 1}, session=session) == {"_id": 1, "n": 1}
        coll.delete_many({})


def test_pymongos_network_path_stops_at_the_choke_point(client: Any, no_network: None) -> None:
    # Everything of pymongo's that would select a server or check out a connection starts here.
    with pytest.raises(NoNetworkLayer, match="embedded"):
        client._get_topology()
    with pytest.raises(NoNetworkLayer):
        client._topology  # noqa: B018
    with pytest.raises(NoNetworkLayer):
        client.topology_description  # noqa: B018
    # pymongo's own implementation, bypassing the facade's, stops there too.
    with pytest.raises(NoNetworkLayer):
        pymongo.MongoClient._select_server(client, pymongo.ReadPreference.PRIMARY, None, "find")
    assert isinstance(NoNetworkLayer("x"), InvalidOperation)


def test_pymongos_own_cursor_runs_over_the_embedded_client(client: Any, no_network: None) -> None:
    # gridfs's GridOutCursor is pymongo's Cursor: its find and getMore go through the driver hooks.
    coll = client.test.native
    coll.insert_many([{"_id": i} for i in range(7)])
    cursor = pymongo.cursor.Cursor(coll, {"_id": {"$gte": 2}}, sort=[("_id", -1)], batch_size=2)
    assert [doc["_id"] for doc in cursor] == [6, 5, 4, 3, 2]
    assert cursor.alive is False
    partial = pymongo.cursor.Cursor(coll, batch_size=2)
    assert next(partial)["_id"] == 0
    assert partial.cursor_id  # a server cursor is open...
    partial.close()  # ...and killCursors releases it
    assert client.test.command("serverStatus")["metrics"]["cursor"]["open"]["total"] == 0
    with pytest.raises(OperationFailure, match="unknown operator"):
        next(pymongo.cursor.Cursor(coll, {"_id": {"$bogus": 1}}))
    explained = pymongo.cursor.Cursor(coll, {"_id": 1}).explain()
    assert explained["queryPlanner"]["namespace"] == "test.native"


def test_options_are_parsed_by_pymongo(tmp_path: Any) -> None:
    # MONGO_CLIENT: the keyword options, validated and normalised as pymongo does.
    with foliodb.MongoClient(
        str(tmp_path / "d"), w=2, journal=True, readConcernLevel="majority", uuidRepresentation="standard"
    ) as client:
        assert client.write_concern.document == {"w": 2, "j": True}
        assert client.read_concern.level == "majority"
        assert client.codec_options.uuid_representation == 4  # UuidRepresentation.STANDARD
        assert client.options.write_concern == client.write_concern
    with pytest.raises(ConfigurationError):
        foliodb.MongoClient(":memory:", notAnOption=1)
    with pytest.raises(ValueError, match="w"):
        foliodb.MongoClient(":memory:", w=-1)


def test_host_may_be_a_list_of_one_dbpath(tmp_path: Any) -> None:
    # mongoengine passes host as a list; MONGO_CLIENT: "host ... or a list of" them.
    with foliodb.MongoClient([str(tmp_path / "d")]) as client:
        assert client.dbpath == str(tmp_path / "d")


def test_client_helpers(client: Any) -> None:
    # MONGO_CLIENT: append_metadata (4.14+) takes a DriverInfo; eq_props decides equality.
    client.append_metadata(DriverInfo("mylib", "1.0"))
    assert "mylib" in client.options.pool_options.metadata["driver"]["name"]
    with pytest.raises(TypeError, match="DriverInfo"):
        client.append_metadata("mylib")
    assert client.eq_props() == client.eq_props()
    with pytest.raises(TypeError, match="not iterable"):
        next(client)


def test_cursor_query_flags() -> None:
    # CURSOR: add_option / remove_option set bits of the query flags (16: noCursorTimeout);
    # exhaust refuses a limit.
    sent: list[dict[str, Any]] = []

    class Recorder(CommandListener):
        def started(self, event: Any) -> None:
            if event.command_name == "find":
                sent.append(event.command)

        def succeeded(self, event: Any) -> None:
            pass

        def failed(self, event: Any) -> None:
            pass

    with foliodb.MongoClient(":memory:", event_listeners=[Recorder()]) as client:
        coll = client.test.flags
        coll.insert_many([{"_id": i} for i in range(3)])
        cursor = coll.find().add_option(CursorType.EXHAUST)
        with pytest.raises(InvalidOperation, match="limit and exhaust"):
            cursor.limit(1)
        assert [d["_id"] for d in cursor.remove_option(CursorType.EXHAUST).limit(2)] == [0, 1]
        list(coll.find().add_option(16))
        list(coll.find(no_cursor_timeout=True).remove_option(16))
        assert [d["_id"] for d in coll.find(cursor_type=CursorType.EXHAUST)] == [0, 1, 2]
        with pytest.raises(TypeError, match="mask"):
            coll.find().add_option("tailable")
        # CURSOR: max_scan is deprecated; MongoDB 4.2+ refuses the field (code 40415).
        with pytest.raises(OperationFailure, match="maxScan") as info:
            list(coll.find().max_scan(5))
        assert info.value.code == 40415
    assert [cmd.get("noCursorTimeout") for cmd in sent] == [None, True, None, None, None]


def test_j_is_taken_for_journal() -> None:
    # The embedded client's documented j=True (docs/guide.md), which pymongo spells journal=True.
    with foliodb.MongoClient(":memory:", j=True) as client:
        assert client.write_concern.document == {"j": True}
