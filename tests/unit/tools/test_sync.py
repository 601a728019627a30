"""``foliodb sync``: a live copy of a FolioDB source that converges on the source.

Every test compares the target with the source itself (documents byte for byte,
index specs, collection options and types), never with values FolioDB's sync
computed. Sources and targets are ``foliodb serve`` servers (in this process,
on free ports) and dbpaths; the command runs in a subprocess where it is killed
or signalled.

Change events: https://www.mongodb.com/docs/manual/reference/change-events/ ;
resuming: https://www.mongodb.com/docs/manual/changeStreams/#resume-a-change-stream ;
namespace patterns: https://www.mongodb.com/docs/database-tools/mongorestore/#std-option-mongorestore.--nsInclude
"""

from __future__ import annotations

import datetime
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import bson
import pymongo
import pytest
from bson.raw_bson import RawBSONDocument
from hypothesis import given, settings
from hypothesis import strategies as st

import foliodb
from foliodb.server import Server
from foliodb.tools.progress import Reporter
from foliodb.tools.sync import STATE_COLLECTION, STATE_DB, Sync, SyncOptions, document_writes, source_name
from foliodb.tools.target import ToolError

ROOT = Path(__file__).resolve().parents[3]
RAW = bson.CodecOptions(document_class=RawBSONDocument)
NOT_COMPARED = ("admin", "config", "local", STATE_DB)
FUTURE = datetime.datetime(2100, 1, 1)  # TTL-indexed dates that never expire during a test


class Served:
    """``foliodb serve`` in this process, on a free port."""

    def __init__(self, dbpath: Path, **options: Any) -> None:
        self.server = Server(str(dbpath), "127.0.0.1", 0, **options)
        host, port = self.server.start()
        self.uri = f"mongodb://{host}:{port}/"

    def client(self) -> pymongo.MongoClient[dict[str, Any]]:
        return pymongo.MongoClient(self.uri, serverSelectionTimeoutMS=5000)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def start(name: str, **options: Any) -> Served:
        served = Served(tmp_path / name, **options)
        started.append(served)
        return served

    yield start
    for served in started:
        served.server.shutdown()


def sync_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "foliodb", "sync", *args]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def run_sync(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(sync_command(*args), cwd=cwd, env=env(), capture_output=True, text=True, timeout=120)


def snapshot(client: Any) -> dict[str, Any]:
    """Everything sync must carry: per namespace, its type, options, index specs and documents (BSON bytes)."""
    result: dict[str, Any] = {}
    for db in client.list_database_names():
        if db in NOT_COMPARED:
            continue
        for info in client[db].list_collections():
            name = info["name"]
            entry: dict[str, Any] = {"type": info.get("type", "collection"), "options": info.get("options", {})}
            if entry["type"] == "collection":
                coll = client[db].get_collection(name, codec_options=RAW)
                specs = (bson.decode(bson.encode(i)) for i in client[db][name].list_indexes())  # plain dicts
                entry["indexes"] = {i["name"]: {k: v for k, v in i.items() if k not in ("v", "ns")} for i in specs}
                entry["documents"] = sorted((repr(d["_id"]), d.raw) for d in coll.find())
            result[f"{db}.{name}"] = entry
    return result


def assert_same(target: Any, source: Any) -> None:
    """target == source as :func:`snapshot` sees them, failing with the documents that differ."""
    assert_snapshots(snapshot(target), snapshot(source))


def assert_snapshots(mine: dict[str, Any], theirs: dict[str, Any]) -> None:
    for ns in sorted(set(mine) | set(theirs)):
        if mine.get(ns, {}).get("documents") != theirs.get(ns, {}).get("documents"):
            have = dict(mine.get(ns, {}).get("documents", []))
            want = dict(theirs.get(ns, {}).get("documents", []))
            wrong = {
                k: (bson.decode(have[k]) if k in have else None, bson.decode(want[k]) if k in want else None)
                for k in sorted(set(have) | set(want))
                if have.get(k) != want.get(k)
            }
            raise AssertionError(f"{ns}: (target, source) differ at {wrong}")
    assert mine == theirs


def seed(client: Any) -> None:
    """Collections with every option sync must carry, and some documents."""
    shop = client.shop
    shop.create_collection("capped", capped=True, size=4096, max=5)
    shop.capped.insert_many([{"_id": i} for i in range(8)])
    shop.create_collection(
        "people",
        validator={"$jsonSchema": {"required": ["name"]}},
        validationAction="error",
        changeStreamPreAndPostImages={"enabled": True},
    )
    shop.people.insert_many([{"_id": i, "name": f"p{i}", "tags": ["a"]} for i in range(20)])
    shop.orders.insert_many([{"_id": i, "n": i, "status": "new", "items": [1, 2, 3]} for i in range(200)])
    shop.orders.create_index([("status", 1), ("n", -1)], name="status_n")
    shop.orders.create_index("n", unique=True)
    shop.sessions.create_index("at", expireAfterSeconds=3600)
    shop.sessions.insert_many([{"_id": i, "at": FUTURE} for i in range(5)])
    shop.create_collection("new_orders", viewOn="orders", pipeline=[{"$match": {"status": "new"}}])
    client.crm.accounts.insert_many([{"_id": i, "balance": 100} for i in range(30)])


class Writer(threading.Thread):
    """Inserts, updates ($set, $inc, $unset, $push, pipelines), replaces and deletes on the
    source until stopped, with a transaction now and then over the wire."""

    def __init__(self, client: Any, seed: int, transactions: bool = True) -> None:
        super().__init__(daemon=True)
        self.client, self.random = client, random.Random(seed)
        self.transactions = transactions
        self.done = threading.Event()
        self.writes = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.done.is_set():
                self.step()
                self.writes += 1
        except BaseException as exc:
            self.error = exc

    def step(self) -> None:
        r = self.random
        orders, accounts = self.client.shop.orders, self.client.crm.accounts
        i = r.randrange(300)
        kind = r.randrange(8)
        if kind == 0:
            orders.update_one({"_id": i}, {"$setOnInsert": {"n": 1000 + i}, "$set": {"status": "new"}}, upsert=True)
        elif kind == 1:
            orders.update_one({"_id": i}, {"$set": {"status": r.choice(["paid", "sent"])}, "$inc": {"edits": 1}})
        elif kind == 2:
            orders.update_one({"_id": i}, {"$unset": {"items": ""}, "$push": {"log": r.random()}})
        elif kind == 3:
            orders.update_one({"_id": i}, [{"$set": {"items": {"$slice": [{"$ifNull": ["$items", []]}, 1]}}}])
        elif kind == 4:
            orders.replace_one({"_id": i}, {"n": 2000 + i, "replaced": True})
        elif kind == 5:
            orders.delete_one({"_id": i})
        elif kind == 6 and self.transactions:
            a, b = r.sample(range(30), 2)
            with self.client.start_session() as session, session.start_transaction():
                accounts.update_one({"_id": a}, {"$inc": {"balance": -1}}, session=session)
                accounts.update_one({"_id": b}, {"$inc": {"balance": 1}}, session=session)
        else:
            self.client.shop.people.update_one({"_id": r.randrange(20)}, {"$push": {"tags": r.randrange(9)}})

    def finish(self) -> None:
        self.done.set()
        self.join(timeout=30)
        assert self.error is None, self.error
        assert self.writes > 50, "the writer barely ran"


class Follower(threading.Thread):
    """A continuous :meth:`Sync.run` on a thread, keeping what it raised."""

    def __init__(self, sync: Sync) -> None:
        super().__init__(daemon=True)
        self.sync = sync
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.sync.run()
        except BaseException as exc:
            self.error = exc

    def finish(self) -> None:
        self.sync.stop()
        self.join(timeout=30)
        assert not self.is_alive() and self.error is None, self.error


def wait_for(condition: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def in_apply_phase(target: Any, name: str) -> Callable[[], bool]:
    return lambda: (target[STATE_DB][STATE_COLLECTION].find_one({"_id": name}) or {}).get("phase") == "apply"


# -- live syncs ---------------------------------------------------------------------------------


def test_server_to_server_under_writes_and_ddl_then_once_makes_them_equal(
    servers: Callable[..., Served], tmp_path: Path
) -> None:
    source_server, target_server = servers("source"), servers("target")
    source, target = source_server.client(), target_server.client()
    seed(source)
    writer = Writer(source, 1)
    writer.start()  # writing before and during the copy: the copy is fuzzy
    name = source_name(source_server.uri)
    sync = Sync(source, target, name)
    follower = Follower(sync)
    follower.start()
    wait_for(in_apply_phase(target, name))
    # DDL while events are applied: every kind the stream reports.
    shop = source.shop
    shop.orders.create_index("status", name="by_status")
    shop.orders.create_index("edits", sparse=True)
    shop.orders.drop_index("status_n")
    source.shop.command("collMod", "people", validator={"$jsonSchema": {"required": ["name", "tags"]}})
    shop.orders.create_index("edits_later")
    source.shop.command("collMod", "orders", index={"name": "edits_later_1", "hidden": True})
    shop.scratch.insert_many([{"_id": i} for i in range(10)])
    shop.scratch.rename("archive")
    shop.archive.insert_one({"_id": 10})
    shop.temp.insert_one({"_id": 1})
    shop.temp.drop()
    shop.create_collection("paid", viewOn="orders", pipeline=[{"$match": {"status": "paid"}}])
    source.gone.things.insert_one({"_id": 1})
    source.drop_database("gone")
    time.sleep(0.5)
    writer.finish()
    follower.finish()
    assert sync.report.events > 0 and sync.report.copied["shop.orders"] > 0

    result = run_sync(source_server.uri, target_server.uri, "--once", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "resuming from the position stored" in result.stderr and "caught up" in result.stderr
    assert_same(target, source)
    assert "gone" not in target.list_database_names()


def test_dbpath_source_to_server(servers: Callable[..., Served], tmp_path: Path) -> None:
    path = str(tmp_path / "app")
    target_server = servers("target")
    target = target_server.client()
    with foliodb.MongoClient(path) as app:  # the application, and sync, in one process: one engine
        seed(app)
        writer = Writer(app, 2, transactions=False)
        writer.start()
        sync = Sync(foliodb.MongoClient(path), target, source_name(path))
        follower = Follower(sync)
        follower.start()
        wait_for(in_apply_phase(target, source_name(path)))
        time.sleep(0.5)
        writer.finish()
        follower.finish()
        sync.source.close()
        expected = snapshot(app)
    result = run_sync(path, target_server.uri, "--once", cwd=tmp_path)  # the dbpath is free again
    assert result.returncode == 0, result.stderr
    assert_snapshots(snapshot(target), expected)


def test_kill_9_mid_apply_then_restart_loses_and_duplicates_nothing(
    servers: Callable[..., Served], tmp_path: Path
) -> None:
    source_server, target_server = servers("source"), servers("target")
    source, target = source_server.client(), target_server.client()
    seed(source)
    name = source_name(source_server.uri)
    proc = subprocess.Popen(
        sync_command(source_server.uri, target_server.uri),
        cwd=tmp_path,
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    writer = Writer(source, 3)
    try:
        wait_for(in_apply_phase(target, name))
        writer.start()
        state = target[STATE_DB][STATE_COLLECTION]
        first = state.find_one({"_id": name})["token"]
        wait_for(lambda: state.find_one({"_id": name})["token"] != first)  # applying events
        time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    time.sleep(0.3)  # writes after the kill, too
    writer.finish()
    result = run_sync(source_server.uri, target_server.uri, "--once", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "resuming" in result.stderr and "copied" not in result.stderr  # no copy again
    assert_same(target, source)
    # $inc counters: an update applied twice would show here (and in the snapshot).
    assert sorted(a["balance"] for a in target.crm.accounts.find()) == sorted(
        a["balance"] for a in source.crm.accounts.find()
    )


def test_sigint_and_sigterm_stop_cleanly_and_store_the_position(servers: Callable[..., Served], tmp_path: Path) -> None:
    source_server, target_server = servers("source"), servers("target")
    source, target = source_server.client(), target_server.client()
    source.shop.orders.insert_many([{"_id": i} for i in range(10)])
    name = source_name(source_server.uri)
    for signum in (signal.SIGINT, signal.SIGTERM):
        proc = subprocess.Popen(
            sync_command(source_server.uri, target_server.uri),
            cwd=tmp_path,
            env=env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for(in_apply_phase(target, name))
        source.shop.orders.insert_one({"_id": 100 + signum})
        wait_for(lambda signum=signum: target.shop.orders.find_one({"_id": 100 + signum}))
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "stopped: the position is stored" in err
    assert_same(target, source)


# -- what is synced ---------------------------------------------------------------------------


def namespaces(client: Any) -> list[str]:
    return sorted(
        f"{d}.{c}"
        for d in client.list_database_names()
        if d not in NOT_COMPARED
        for c in client[d].list_collection_names()
    )


class Recorder(Reporter):
    """A reporter that keeps the warnings."""

    def __init__(self) -> None:
        super().__init__(quiet=True)
        self.warnings: list[str] = []

    def warn(self, text: str) -> None:
        self.warnings.append(text)


def test_namespace_filters_select_the_copy_and_the_events(tmp_path: Path) -> None:
    source = foliodb.MongoClient(str(tmp_path / "source"))
    target = foliodb.MongoClient(str(tmp_path / "target"))
    for ns in ("shop.orders", "shop.logs", "shop.carts", "crm.people", "other.stuff"):
        db, coll = ns.split(".")
        source[db][coll].insert_many([{"_id": i, "ns": ns} for i in range(3)])
    options = SyncOptions(include=["shop.*", "crm.*"], exclude=["shop.logs"], once=True)
    first = Sync(source, target, "filters", options)
    first.run()
    assert sorted(first.report.copied) == ["crm.people", "shop.carts", "shop.orders"]
    assert namespaces(target) == ["crm.people", "shop.carts", "shop.orders"]

    source.shop.orders.insert_one({"_id": 9})  # selected: applied
    source.shop.logs.insert_one({"_id": 9})  # excluded
    source.other.stuff.insert_one({"_id": 9})  # not included
    source.shop.carts.rename("logs_carts")  # within the selection: renamed
    source.shop.logs.rename("carts_from_logs")  # into the selection: said, not copied
    source.crm.people.rename("people2")
    source.shop.logs_carts.rename("moved")  # still selected
    source.admin.command("renameCollection", "shop.moved", to="other.moved")  # out of the selection: dropped
    recorder = Recorder()
    again = Sync(source, target, "filters", options, recorder)
    again.run()
    assert again.report.resumed and not again.report.copied
    assert namespaces(target) == ["crm.people2", "shop.orders"]
    for ns in namespaces(target):
        db, coll = ns.split(".")
        assert list(target[db][coll].find()) == list(source[db][coll].find())
    assert len(recorder.warnings) == 1
    assert "shop.logs" in recorder.warnings[0] and "--resync" in recorder.warnings[0]

    with pytest.raises(ToolError, match=r"other namespace options .* --resync"):
        Sync(source, target, "filters", SyncOptions(include=["shop.*"], once=True)).run()


def test_db_option_quiet_first_run_refusal_and_resync(tmp_path: Path) -> None:
    with foliodb.MongoClient(str(tmp_path / "source")) as source:
        source.shop.orders.insert_many([{"_id": i} for i in range(5)])
        source.crm.people.insert_many([{"_id": i, "name": f"p{i}"} for i in range(7)])
    with foliodb.MongoClient(str(tmp_path / "target")) as target:
        target.crm.people.insert_one({"_id": "left over"})

    refused = run_sync("source", "target", "--db", "crm", "--once", "--quiet", cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert "already holds crm.people" in refused.stderr and "--resync" in refused.stderr

    quiet = run_sync("source", "target", "--db", "crm", "--once", "--quiet", "--resync", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == ""
    loud = run_sync("source", "target", "--db", "crm", "--once", "--resync", cwd=tmp_path)
    assert loud.returncode == 0
    assert "dropped crm.people on the target" in loud.stderr
    assert "copied 7 documents to crm.people" in loud.stderr
    with (
        foliodb.MongoClient(str(tmp_path / "source")) as source,
        foliodb.MongoClient(str(tmp_path / "target")) as target,
    ):
        assert namespaces(target) == ["crm.people"]
        assert list(target.crm.people.find()) == list(source.crm.people.find())


def test_a_token_the_oplog_lost_says_run_with_resync(servers: Callable[..., Served], tmp_path: Path) -> None:
    source_server = servers("source", oplog_size_mb=0.002)  # about 2 KB of oplog
    source = source_server.client()
    source.shop.orders.insert_one({"_id": 0})
    assert run_sync(source_server.uri, "target", "--once", cwd=tmp_path).returncode == 0
    source.shop.orders.insert_many([{"_id": i, "pad": "x" * 200} for i in range(1, 60)])
    engine = source_server.server.executor.engine
    engine.housekeeping()  # the oplog's trim, which otherwise runs on a timer
    assert engine.storage.oplog.trimmed_through > 0

    lost = run_sync(source_server.uri, "target", "--once", "--quiet", cwd=tmp_path)
    assert lost.returncode == 1 and lost.stderr.count("\n") == 1, lost.stderr
    assert "ChangeStreamHistoryLost" in lost.stderr and "run again with --resync" in lost.stderr

    again = run_sync(source_server.uri, "target", "--once", "--resync", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    with foliodb.MongoClient(str(tmp_path / "target")) as target:
        assert_same(target, source)


def test_a_run_stopped_inside_the_newest_transaction_resumes_with_the_rest_of_it(tmp_path: Path) -> None:
    """Regression (the CI failure of the test above, 5 runs in 14 under load): a follower stopped
    after the first event of a transaction stores that event's token; when the transaction was
    the source's newest commit, the next ``--once`` run found no commit after the token and
    stopped "caught up", without the transaction's later writes."""
    with foliodb.MongoClient(str(tmp_path / "source")) as source, foliodb.MongoClient(":memory:") as target:
        accounts = source.crm.accounts
        accounts.insert_many([{"_id": i, "balance": 100} for i in range(2)])
        options = SyncOptions(once=True)
        Sync(source, target, "txn", options).run()
        stored = target[STATE_DB][STATE_COLLECTION].find_one({"_id": "txn"})["token"]
        with source.start_session() as session, session.start_transaction():
            accounts.update_one({"_id": 0}, {"$inc": {"balance": -1}}, session=session)
            accounts.update_one({"_id": 1}, {"$inc": {"balance": 1}}, session=session)
        with source.watch(resume_after=stored) as stream:
            first = stream.next()  # the transaction's first event: where such a follower stopped
        assert first["documentKey"] == {"_id": 0}
        target.crm.accounts.update_one({"_id": 0}, {"$set": {"balance": 99}})  # what it had applied
        target[STATE_DB][STATE_COLLECTION].update_one({"_id": "txn"}, {"$set": {"token": first["_id"]}})
        again = Sync(source, target, "txn", options)
        again.run()
        assert again.report.resumed
        assert list(target.crm.accounts.find()) == [{"_id": 0, "balance": 99}, {"_id": 1, "balance": 101}]


def test_unique_values_swapped_between_documents_converge() -> None:
    """The first update's looked-up document already holds the value the other document
    still holds on the target: the unique index refuses it until the other makes way
    (https://www.mongodb.com/docs/manual/core/index-unique/)."""
    with foliodb.MongoClient(":memory:") as source, foliodb.MongoClient(":memory:") as target:
        people = source.crm.people
        people.create_index("email", unique=True)
        people.create_index("nick", unique=True, partialFilterExpression={"nick": {"$exists": True}})
        people.insert_many([{"_id": 1, "email": "a"}, {"_id": 2, "email": "b"}, {"_id": 3, "nick": "z"}])
        options = SyncOptions(once=True)
        Sync(source, target, "swap", options).run()
        people.update_one({"_id": 1}, {"$set": {"email": "tmp"}})
        people.update_one({"_id": 2}, {"$set": {"email": "a"}})
        people.update_one({"_id": 1}, {"$set": {"email": "b"}})
        people.update_one({"_id": 3}, {"$unset": {"nick": ""}})
        people.update_one({"_id": 1}, {"$set": {"nick": "z"}})
        Sync(source, target, "swap", options).run()
        assert_same(target, source)


# -- applying one event: the idempotence the restart relies on -------------------------------------

_OPS = st.lists(
    st.tuples(
        st.sampled_from(["upsert", "set", "inc", "unset", "push", "pop", "replace", "delete"]), st.integers(0, 4)
    ),
    max_size=25,
)


def _write(coll: Any, kind: str, i: int) -> None:
    if kind == "upsert":
        coll.update_one({"_id": i}, {"$set": {"a": [1, 2, 3], "n": 0}}, upsert=True)
    elif kind == "set":
        coll.update_one({"_id": i}, {"$set": {"b.c": i, "a.1": "x"}})
    elif kind == "inc":
        coll.update_one({"_id": i}, {"$inc": {"n": 1}})
    elif kind == "unset":
        coll.update_one({"_id": i}, {"$unset": {"b": ""}})
    elif kind == "push":
        coll.update_one({"_id": i}, {"$push": {"a": {"$each": [7, 8]}}})
    elif kind == "pop":
        coll.update_one({"_id": i}, {"$pop": {"a": 1}})  # truncatedArrays in the description
    elif kind == "replace":
        coll.replace_one({"_id": i}, {"r": True, "a": [0]})
    else:
        coll.delete_one({"_id": i})


def _documents(coll: Any) -> list[bytes]:
    return [d.raw for d in coll.with_options(codec_options=RAW).find().sort("_id", 1)]


@settings(max_examples=40, deadline=None)
@given(_OPS, st.data())
def test_replaying_from_the_start_token_onto_any_later_copy_converges(ops: list[tuple[str, int]], data: Any) -> None:
    """The copy may see any state after the start token; re-applying any suffix again changes nothing."""
    with foliodb.MongoClient(":memory:") as source, foliodb.MongoClient(":memory:") as target:
        coll = source.t.c
        stream = source.watch(full_document="updateLookup", max_await_time_ms=10)
        states = [_documents(coll)]
        for kind, i in ops:
            _write(coll, kind, i)
            states.append(_documents(coll))
        events = []
        while (event := stream.try_next()) is not None:
            events.append(event)
        copy = data.draw(st.sampled_from(states), label="the copy's state")
        if copy:
            target.t.c.insert_many([bson.decode(raw) for raw in copy])

        def replay(batch: list[Any]) -> None:
            for event in batch:
                writes = document_writes(event)
                if writes:
                    target.t.c.bulk_write(writes)

        replay(events)
        assert _documents(target.t.c) == states[-1]
        replay(events[data.draw(st.integers(0, len(events)), label="re-applied from") :])
        assert _documents(target.t.c) == states[-1]


def test_a_missing_source_dbpath_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    result = run_sync("missing", "target", "--once", cwd=tmp_path)
    assert result.returncode == 1 and result.stderr == (
        "foliodb sync: no database at missing: the directory does not exist\n"
    )
    assert not (tmp_path / "missing").exists() and not (tmp_path / "target").exists()
