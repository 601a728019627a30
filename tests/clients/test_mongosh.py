"""``mongosh`` (pinned in node/package.json) against ``foliodb serve``.

mongosh runs on the machine's node from node/node_modules, with HOME in the
test's tmp_path (its logs and config go there) and telemetry off. A mongosh
start costs ~1.3 s, so each test is one mongosh process.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from bson import ObjectId, Timestamp, json_util

from tests.clients.conftest import NODE, NODE_DIR, RunningServer, needs_node_clients

MONGOSH = NODE_DIR / "node_modules" / "mongosh" / "bin" / "mongosh.js"

pytestmark = [pytest.mark.clients, needs_node_clients]

# Commands that real mongod also refuses (not on Atlas), which mongosh sends and tolerates.
EXPECTED_REFUSALS = {"atlasVersion"}


def run_mongosh(tmp_path: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert NODE is not None
    assert MONGOSH.is_file(), f"{MONGOSH} is missing: node_modules is incomplete, run `npm ci` in {NODE_DIR}"
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home), MONGOSH_FORCE_DISABLE_TELEMETRY_FOR_TESTING="1")
    return subprocess.run(
        [NODE, str(MONGOSH), "--norc", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )


Seen = list[tuple[Mapping[str, Any], Mapping[str, Any]]]


def record_commands(server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> Seen:
    """Every (command, reply) the server's executor answers from now on (hello included)."""
    executor = server.server.executor
    original = executor.execute
    seen: Seen = []

    def execute(db: str, cmd: Mapping[str, Any], **kwargs: Any) -> dict[str, Any]:
        reply = original(db, cmd, **kwargs)
        seen.append((cmd, reply))
        return reply

    monkeypatch.setattr(executor, "execute", execute)
    return seen


EVAL = textwrap.dedent(
    """
    const coll = db.books;
    const many = coll.insertMany([
      { _id: 1, title: 'Dune', year: 1965, genre: 'sf' },
      { _id: 2, title: 'Neuromancer', year: 1984, genre: 'sf' },
      { _id: 3, title: 'Emma', year: 1815, genre: 'classic' },
      { _id: 4, title: 'Anathem', year: 2008, genre: 'sf' },
    ]);
    const one = coll.insertOne({ title: 'Middlemarch', year: 1871, genre: 'classic' });
    const upd = coll.updateOne({ _id: 1 }, { $set: { read: true }, $inc: { copies: 2 } });
    ({
      version: db.version(),
      ping: db.adminCommand({ ping: 1 }),
      dbName: db.getName(),
      manyIds: many.insertedIds,
      oneId: one.insertedId,
      modified: upd.modifiedCount,
      find: coll.find({ year: { $gt: 1900 } }, { _id: 0, title: 1, year: 1 }).sort({ year: -1 }).batchSize(2).toArray(),
      count: coll.countDocuments({ genre: 'sf' }),
      agg: coll.aggregate([
        { $group: { _id: '$genre', n: { $sum: 1 }, first: { $min: '$year' } } },
        { $sort: { _id: 1 } },
      ]).toArray(),
    })
    """
)


@pytest.mark.clients
def test_eval_insert_find_aggregate(server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = record_commands(server, monkeypatch)
    proc = run_mongosh(tmp_path, server.uri + "shelldb", "--quiet", "--json=canonical", "--eval", EVAL)
    assert proc.returncode == 0, f"mongosh exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    out = json_util.loads(proc.stdout)

    assert out["version"] == "8.0.0"
    assert out["ping"]["ok"] == 1 and "operationTime" in out["ping"]  # a replica set member gossips its cluster time
    assert out["dbName"] == "shelldb"
    assert out["manyIds"] == {"0": 1, "1": 2, "2": 3, "3": 4}
    assert isinstance(out["oneId"], ObjectId)
    assert out["modified"] == 1
    assert out["find"] == [
        {"title": "Anathem", "year": 2008},
        {"title": "Neuromancer", "year": 1984},
        {"title": "Dune", "year": 1965},
    ]
    assert out["count"] == 3
    assert out["agg"] == [
        {"_id": "classic", "n": 2, "first": 1815},
        {"_id": "sf", "n": 3, "first": 1965},
    ]
    # batchSize(2) for three documents: the shell's driver needed a getMore.
    assert [reply["ok"] for cmd, reply in seen if "getMore" in cmd] == [1.0]

    with server.client() as client:
        coll = client.shelldb["books"]
        assert coll.count_documents({}) == 5
        assert coll.find_one({"_id": 1}) == {
            "_id": 1,
            "title": "Dune",
            "year": 1965,
            "genre": "sf",
            "read": True,
            "copies": 2,
        }
        assert coll.find_one({"_id": out["oneId"]}, {"_id": 0}) == {
            "title": "Middlemarch",
            "year": 1871,
            "genre": "classic",
        }


@pytest.mark.clients
def test_eval_error_exits_nonzero_with_the_server_error(server: RunningServer, tmp_path: Path) -> None:
    proc = run_mongosh(
        tmp_path,
        server.uri + "shelldb",
        "--quiet",
        "--json=canonical",
        "--eval",
        "db.c.insertOne({ _id: 'k' }); db.c.insertOne({ _id: 'k' })",
    )
    assert proc.returncode == 1, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    error = json_util.loads(proc.stdout)
    assert error["name"] == "MongoServerError"
    assert error["code"] == 11000
    assert error["message"].startswith("E11000 duplicate key error collection: shelldb.c index: _id_")
    assert error["keyValue"] == {"_id": "k"}
    with server.client() as client:
        assert list(client.shelldb["c"].find()) == [{"_id": "k"}]


@pytest.mark.clients
def test_interactive_session_over_stdin(server: RunningServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shell's full start (greeting, startup checks), then typed commands."""
    seen = record_commands(server, monkeypatch)
    typed = "\n".join(
        [
            "db.version()",
            "use shelldb",
            "db.notes.insertOne({ _id: 1, text: 'hi' }).acknowledged",
            "db.notes.countDocuments()",
            "db.notes.findOne()",
            "show collections",
            "exit",
        ]
    )
    proc = run_mongosh(tmp_path, server.uri, stdin=typed + "\n")
    assert proc.returncode == 0, f"mongosh exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "Using MongoDB:\t\t8.0.0" in proc.stdout
    assert "test> 8.0.0" in proc.stdout
    assert "switched to db shelldb" in proc.stdout
    assert "shelldb> true" in proc.stdout
    assert "shelldb> 1" in proc.stdout
    assert "{ _id: 1, text: 'hi' }" in proc.stdout
    assert "shelldb> notes" in proc.stdout
    assert "Error" not in proc.stdout and proc.stderr == ""
    with server.client() as client:
        assert list(client.shelldb["notes"].find()) == [{"_id": 1, "text": "hi"}]

    refused = {
        json_util.dumps({k: v for k, v in cmd.items() if k not in ("lsid", "$db")}): reply.get("errmsg")
        for cmd, reply in seen
        if reply.get("ok") != 1 and next(iter(cmd)) not in EXPECTED_REFUSALS
    }
    assert not refused, f"mongosh's startup commands that FolioDB refused (mongod answers them): {refused}"


# The shell's own syntax (no await): watch() opens the stream at once (mongosh sends the
# aggregate and a first tryNext), so the writes after it are all seen. hasNext() blocks until
# an event comes, so the loops are bounded by count and by a deadline instead.
WATCH = textwrap.dedent(
    """
    const orders = db.orders.watch([], { maxAwaitTimeMS: 200 });
    const onDb = db.watch([], { maxAwaitTimeMS: 200 });
    const onCluster = db.getMongo().watch([], { maxAwaitTimeMS: 200 });
    const lookup = db.orders.watch([], { maxAwaitTimeMS: 200, fullDocument: 'updateLookup' });
    db.orders.insertOne({ _id: 1, item: 'pen', qty: 2, tags: ['a', 'b', 'c'] });
    db.orders.updateOne({ _id: 1 }, { $set: { qty: 5, 'ship.city': 'Oslo' }, $unset: { item: '' } });
    db.orders.updateOne({ _id: 1 }, [{ $set: { tags: { $slice: ['$tags', 1] } } }]);
    db.orders.deleteOne({ _id: 1 });
    db.getSiblingDB('stock').items.insertOne({ _id: 'ink' });
    function take(stream, n) {
      const got = [];
      const deadline = Date.now() + 10000;
      while (got.length < n && Date.now() < deadline) {
        const event = stream.tryNext();
        if (event !== null) got.push(event);
      }
      return got;
    }
    const first = orders.hasNext() ? orders.next() : null;
    const events = [first, ...take(orders, 3)];
    const extra = orders.tryNext();
    const resumeToken = orders.getResumeToken();
    const resumed = db.orders.watch([], { resumeAfter: events[1]._id, maxAwaitTimeMS: 200 });
    const afterSecond = take(resumed, 2);
    const fromEnd = db.orders.watch([], { resumeAfter: resumeToken, maxAwaitTimeMS: 200 });
    const afterEnd = fromEnd.tryNext();
    [orders, resumed, fromEnd].forEach((s) => s.close());
    print(EJSON.stringify({
      events, resumeToken, afterSecond, extra, afterEnd,
      onDb: take(onDb, 4), onCluster: take(onCluster, 5), lookup: take(lookup, 3),
    }, { relaxed: false }));
    """
)


@pytest.mark.clients
def test_watch_in_shell_syntax(server: RunningServer, tmp_path: Path) -> None:
    """Change events as the manual's change events reference shapes them
    (https://www.mongodb.com/docs/manual/reference/change-events/insert/, .../update/, .../delete/);
    updateLookup of a document deleted since is null
    (https://www.mongodb.com/docs/manual/changeStreams/#lookup-full-document-for-update-operations)."""
    proc = run_mongosh(tmp_path, server.uri + "shop", "--quiet", "--eval", WATCH)
    assert proc.returncode == 0, f"mongosh exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    out = json_util.loads(proc.stdout.strip().splitlines()[-1])  # hasNext()/next() print warnings before it

    insert, update, truncate, delete = out["events"]
    orders_ns = {"db": "shop", "coll": "orders"}
    assert insert["operationType"] == "insert"
    assert insert["ns"] == orders_ns and insert["documentKey"] == {"_id": 1}
    assert insert["fullDocument"] == {"_id": 1, "item": "pen", "qty": 2, "tags": ["a", "b", "c"]}
    assert isinstance(insert["clusterTime"], Timestamp) and isinstance(insert["wallTime"], datetime.datetime)
    assert update["operationType"] == "update"
    assert update["ns"] == orders_ns and update["documentKey"] == {"_id": 1}
    # $set of a dotted path under a missing field creates the field: it is reported whole.
    assert update["updateDescription"] == {
        "updatedFields": {"qty": 5, "ship": {"city": "Oslo"}},
        "removedFields": ["item"],
        "truncatedArrays": [],
    }
    assert "fullDocument" not in update  # without fullDocument: 'updateLookup'
    assert truncate["updateDescription"] == {
        "updatedFields": {},
        "removedFields": [],
        "truncatedArrays": [{"field": "tags", "newSize": 1}],
    }
    assert delete["operationType"] == "delete"
    assert delete["ns"] == orders_ns and delete["documentKey"] == {"_id": 1}
    assert "fullDocument" not in delete
    tokens = [e["_id"] for e in out["events"]]
    assert all(set(t) == {"_data"} and isinstance(t["_data"], str) for t in tokens)
    assert [t["_data"] for t in tokens] == sorted(t["_data"] for t in tokens) and len({t["_data"] for t in tokens}) == 4
    assert out["extra"] is None  # the stock insert is another collection's
    # Read to the end, the resume token is the last event's or later (a batch's postBatchResumeToken),
    # and a stream resumed from it repeats nothing.
    assert out["resumeToken"]["_data"] >= delete["_id"]["_data"]
    assert out["afterEnd"] is None

    # resumeAfter the first update: the two events after it, the same tokens again.
    assert [e["_id"] for e in out["afterSecond"]] == [truncate["_id"], delete["_id"]]
    assert out["afterSecond"] == [truncate, delete]

    # db.watch(): this database's collections; db.getMongo().watch(): every database too.
    assert out["onDb"] == out["events"]
    assert out["onCluster"][:4] == out["events"]
    stock = out["onCluster"][4]  # its collection's implicit create is no event without showExpandedEvents
    assert (stock["operationType"], stock["ns"], stock["documentKey"]) == (
        "insert",
        {"db": "stock", "coll": "items"},
        {"_id": "ink"},
    )

    # updateLookup reads the document when the event is read: it was deleted by then.
    assert [e["operationType"] for e in out["lookup"]] == ["insert", "update", "update"]
    assert [e["fullDocument"] for e in out["lookup"][1:]] == [None, None]


PLAN_CACHE = textwrap.dedent(
    """
    const coll = db.items;
    coll.insertMany(Array.from({ length: 300 }, (_, i) => ({ _id: i, a: i % 10, b: i % 7 })));
    coll.createIndex({ a: 1 });
    coll.createIndex({ b: 1 });
    coll.find({ a: 1, b: 1 }).toArray();
    coll.find({ a: 1, b: 1 }).sort({ b: 1 }).toArray();
    const listed = coll.getPlanCache().list();
    coll.getPlanCache().clearPlansByQuery({ a: 5, b: 5 }, undefined, { b: 1 });
    const afterOne = coll.getPlanCache().list([{ $project: { _id: 0, createdFromQuery: 1 } }]);
    coll.getPlanCache().clear();
    const afterAll = coll.getPlanCache().list();
    db.runCommand({ planCacheSetFilter: 'items', query: { a: 1, b: 1 }, indexes: [{ b: 1 }] });
    const plan = coll.find({ a: 2, b: 2 }).hint({ a: 1 }).explain().queryPlanner;
    print(EJSON.stringify({
      listed: listed.map((e) => ({ sort: e.createdFromQuery.sort, version: e.version, index: e.cachedPlan.inputStage.indexName })),
      afterOne, afterAll,
      filters: db.runCommand({ planCacheListFilters: 'items' }).filters,
      filterSet: plan.indexFilterSet,
      used: plan.winningPlan.inputStage.indexName,
    }));
    """
)


@pytest.mark.clients
def test_plan_cache_helpers(server: RunningServer, tmp_path: Path) -> None:
    # mongosh's PlanCache (getPlanCache().list/clearPlansByQuery/clear) wraps $planCacheStats and
    # planCacheClear: https://www.mongodb.com/docs/manual/reference/method/js-plan-cache/
    proc = run_mongosh(tmp_path, server.uri + "plans", "--quiet", "--eval", PLAN_CACHE)
    assert proc.returncode == 0, f"mongosh exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    out = json_util.loads(proc.stdout.strip().splitlines()[-1])
    assert sorted(repr(e["sort"]) for e in out["listed"]) == ["{'b': 1}", "{}"]
    assert {e["version"] for e in out["listed"]} == {"1"}
    assert out["afterOne"] == [{"createdFromQuery": {"query": {"a": 1, "b": 1}, "sort": {}, "projection": {}}}]
    assert out["afterAll"] == []
    assert out["filters"] == [{"query": {"a": 1, "b": 1}, "sort": {}, "projection": {}, "indexes": [{"b": 1}]}]
    assert out["filterSet"] is True and out["used"] == "b_1"  # the filter overrides the hint
