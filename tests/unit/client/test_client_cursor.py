"""pymongo's Cursor over the embedded client: lazy chaining, options frozen
once iteration starts, rewind/clone/close, batches fetched with getMore,
limits, slices.

Expected values are written out by hand from the cited pages.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from pymongo import ASCENDING, DESCENDING
from pymongo.errors import InvalidOperation

CURSOR = "https://pymongo.readthedocs.io/en/stable/api/pymongo/cursor.html"
BATCHES = "https://www.mongodb.com/docs/manual/tutorial/iterate-a-cursor/#cursor-batches"
GET_MORE = "https://www.mongodb.com/docs/manual/reference/command/getMore/"
LIMIT = "https://www.mongodb.com/docs/manual/reference/method/cursor.limit/#negative-values"

N = 10


@pytest.fixture
def coll(client: Any) -> Any:
    coll = client.test.cursor
    coll.insert_many([{"_id": i, "x": i % 3} for i in range(N)])
    return coll


def ids(docs: Any) -> list[int]:
    return [doc["_id"] for doc in docs]


# (name, chained cursor, expected _ids, manual page)
CHAINS: list[tuple[str, Callable[[Any], Any], list[int], str]] = [
    ("sort-skip-limit", lambda c: c.find().sort("_id", DESCENDING).skip(2).limit(3), [7, 6, 5], CURSOR),
    ("compound sort", lambda c: c.find().sort([("x", ASCENDING), ("_id", DESCENDING)]).limit(4), [9, 6, 3, 0], CURSOR),
    ("filter and sort", lambda c: c.find({"x": 1}).sort("_id", -1), [7, 4, 1], CURSOR),
    ("slice", lambda c: c.find().sort("_id")[2:5], [2, 3, 4], CURSOR),
    ("open slice", lambda c: c.find().sort("_id")[8:], [8, 9], CURSOR),
    ("empty slice", lambda c: c.find().sort("_id")[4:4], [], CURSOR),
    ("negative limit: one batch", lambda c: c.find().sort("_id").limit(-4), [0, 1, 2, 3], LIMIT),
    ("limit over batches", lambda c: c.find().sort("_id").limit(7).batch_size(2), [0, 1, 2, 3, 4, 5, 6], CURSOR),
    ("skip past the end", lambda c: c.find().skip(20), [], CURSOR),
]


@pytest.mark.parametrize(("build", "expected", "manual"), [c[1:] for c in CHAINS], ids=[c[0] for c in CHAINS])
def test_chaining(coll: Any, build: Callable[[Any], Any], expected: list[int], manual: str) -> None:
    assert ids(build(coll)) == expected


def test_chaining_returns_the_same_cursor(coll: Any) -> None:
    # CURSOR: the modifiers return the cursor itself, so calls chain.
    cursor = coll.find()
    for modify in (
        lambda c: c.sort("_id"),
        lambda c: c.skip(1),
        lambda c: c.limit(2),
        lambda c: c.batch_size(2),
        lambda c: c.hint([("_id", 1)]),
        lambda c: c.max_time_ms(1000),
        lambda c: c.comment("why"),
    ):
        assert modify(cursor) is cursor
    assert ids(cursor) == [1, 2]


# (name, option call made after iteration started)
FROZEN: list[tuple[str, Callable[[Any], Any]]] = [
    ("sort", lambda c: c.sort("x")),
    ("skip", lambda c: c.skip(1)),
    ("limit", lambda c: c.limit(1)),
    ("batch_size", lambda c: c.batch_size(2)),
    ("hint", lambda c: c.hint("_id_")),
    ("max_time_ms", lambda c: c.max_time_ms(5)),
    ("comment", lambda c: c.comment("late")),
    ("collation", lambda c: c.collation({"locale": "simple"})),
    ("allow_disk_use", lambda c: c.allow_disk_use(True)),
    ("indexing", lambda c: c[1]),
]


@pytest.mark.parametrize("change", [c[1] for c in FROZEN], ids=[c[0] for c in FROZEN])
def test_options_are_frozen_once_iteration_starts(coll: Any, change: Callable[[Any], Any]) -> None:
    # CURSOR: "Raises InvalidOperation if this Cursor has already been used."
    cursor = coll.find()
    next(cursor)
    with pytest.raises(InvalidOperation):
        change(cursor)


def test_batch_size_fetches_the_rest_with_get_more(coll: Any) -> None:
    # BATCHES / GET_MORE: the first batch comes with the find; the server keeps a
    # cursor open for the rest, which getMore returns batch by batch.
    cursor = coll.find().sort("_id").batch_size(3)
    assert next(cursor)["_id"] == 0
    assert cursor.cursor_id  # more documents wait on the server
    assert cursor.alive
    assert ids(cursor) == list(range(1, N))
    assert cursor.retrieved == N
    assert not cursor.alive


def test_a_get_more_continues_where_the_first_batch_ended(client: Any, coll: Any) -> None:
    # GET_MORE: the getMore command returns the next documents of an open cursor.
    reply = client.test.command({"find": coll.name, "sort": {"_id": 1}, "batchSize": 4})
    cursor_id = reply["cursor"]["id"]
    assert ids(reply["cursor"]["firstBatch"]) == [0, 1, 2, 3]
    more = client.test.command({"getMore": cursor_id, "collection": coll.name, "batchSize": 4})
    assert ids(more["cursor"]["nextBatch"]) == [4, 5, 6, 7]
    last = client.test.command({"getMore": cursor_id, "collection": coll.name})
    assert ids(last["cursor"]["nextBatch"]) == [8, 9]
    assert last["cursor"]["id"] == 0


def test_rewind_runs_the_query_again(coll: Any) -> None:
    # CURSOR: rewind() "Rewind this cursor to its unevaluated state."
    cursor = coll.find({"x": 0}).sort("_id").batch_size(2)
    assert ids(cursor) == [0, 3, 6, 9]
    assert ids(cursor) == []
    assert cursor.rewind() is cursor
    assert ids(cursor) == [0, 3, 6, 9]


def test_clone_is_an_unevaluated_copy(coll: Any) -> None:
    # CURSOR: clone() "Get a clone of this cursor. Returns a new Cursor instance
    # with options matching those that have been set on the current instance."
    cursor = coll.find({"x": {"$gt": 0}}).sort("_id", -1).limit(3)
    assert next(cursor)["_id"] == 8
    clone = cursor.clone()
    assert ids(clone) == [8, 7, 5]
    assert ids(cursor) == [7, 5]
    assert ids(copy.copy(cursor)) == [8, 7, 5]
    assert ids(copy.deepcopy(cursor)) == [8, 7, 5]
    clone.rewind()
    clone.skip(1)  # changing the clone leaves the original alone
    assert ids(clone) == [7, 5, 4]
    assert ids(cursor.rewind()) == [8, 7, 5]


def test_close_ends_iteration(coll: Any) -> None:
    # CURSOR: close() "Explicitly close / kill this cursor."
    cursor = coll.find().batch_size(2)
    next(cursor)
    cursor.close()
    assert not cursor.alive
    assert list(cursor) == []


def test_index_and_slice_errors(coll: Any) -> None:
    # CURSOR: __getitem__ takes an index or a slice without step; negative values are refused.
    cursor = coll.find().sort("_id")
    assert cursor[3] == {"_id": 3, "x": 0}
    with pytest.raises(IndexError):
        coll.find()[N]
    with pytest.raises(IndexError):
        coll.find()[-1]
    with pytest.raises(IndexError):
        coll.find()[1:5:2]


def test_to_list_and_distinct(coll: Any) -> None:
    # CURSOR: to_list(length) returns at most length documents; distinct() runs over the cursor's filter.
    assert ids(coll.find().sort("_id").to_list(4)) == [0, 1, 2, 3]
    assert coll.find({"_id": {"$lt": 4}}).distinct("x") == [0, 1, 2]


def test_projection_as_a_list_of_names(coll: Any) -> None:
    # CURSOR / find(): a projection may be a list of field names to include.
    assert coll.find({"_id": 4}, ["x"]).to_list() == [{"_id": 4, "x": 1}]
    assert coll.find({"_id": 4}, {"_id": False}).to_list() == [{"x": 1}]


RAW_BATCHES = "https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html#pymongo.collection.Collection.find_raw_batches"
RETURN_KEY = "https://www.mongodb.com/docs/manual/reference/method/cursor.returnKey/"


def test_find_raw_batches_are_bson_batches(coll: Any) -> None:
    # RAW_BATCHES: each item is one batch, decodable with bson.decode_all.
    import bson

    batches = list(coll.find_raw_batches({"x": {"$ne": 1}}, sort=[("_id", ASCENDING)], batch_size=3))
    assert all(isinstance(batch, bytes) for batch in batches)
    assert [len(bson.decode_all(batch)) for batch in batches] == [3, 3, 1]
    assert [doc["_id"] for batch in batches for doc in bson.decode_all(batch)] == [0, 2, 3, 5, 6, 8, 9]


def test_aggregate_raw_batches(coll: Any) -> None:
    import bson

    batches = list(coll.aggregate_raw_batches([{"$match": {"x": 0}}, {"$sort": {"_id": -1}}]))
    assert [doc["_id"] for batch in batches for doc in bson.decode_all(batch)] == [9, 6, 3, 0]


def test_return_key_gives_the_index_key_or_nothing(coll: Any) -> None:
    # RETURN_KEY: only the index keys; no fields when the query uses no index.
    assert list(coll.find({"x": 2}, return_key=True)) == [{}, {}, {}]
    coll.create_index([("x", ASCENDING), ("_id", DESCENDING)])
    assert list(coll.find({"x": 2}, return_key=True)) == [{"x": 2, "_id": 8}, {"x": 2, "_id": 5}, {"x": 2, "_id": 2}]
    assert list(coll.find({"_id": 4}, return_key=True)) == [{"_id": 4}]


def test_aggregate_command_with_explain_returns_the_plan(coll: Any) -> None:
    # https://www.mongodb.com/docs/manual/reference/command/aggregate/ : explain "returns information on the
    # processing of the pipeline" instead of a cursor.
    reply = coll.database.command("aggregate", coll.name, pipeline=[{"$match": {"x": 1}}], explain=True)
    assert "cursor" not in reply
    assert reply["queryPlanner"]["winningPlan"]["stage"] == "COLLSCAN"


def test_cursor_id_is_zero_once_the_results_end(coll: Any) -> None:
    # GET_MORE: the server closes a cursor whose limit is reached, so no killCursors is needed.
    # A batch that ends exactly at the last document leaves the cursor open, as mongod's (its
    # scan knows the end only when it reads past it: find_cmd.cpp's shouldSaveCursor, isEOF);
    # the next getMore finds nothing and closes it.
    db = coll.database
    assert db.command("find", coll.name, limit=3, batchSize=3)["cursor"]["id"] == 0
    whole = db.command("find", coll.name, batchSize=N)["cursor"]
    assert len(whole["firstBatch"]) == N and whole["id"] != 0
    rest = db.command("getMore", whole["id"], collection=coll.name)["cursor"]
    assert (rest["nextBatch"], rest["id"]) == ([], 0)
    first = db.command("find", coll.name, limit=4, batchSize=2)["cursor"]
    assert first["id"] != 0
    last = db.command("getMore", first["id"], collection=coll.name, batchSize=2)["cursor"]
    assert (len(last["nextBatch"]), last["id"]) == (2, 0)


def test_a_first_batch_reads_no_document_past_itself(coll: Any) -> None:
    # A full batch answers at once, as mongod's: it examines the documents up to its last match,
    # none after (the profiler's docsExamined), so the time to the first batch does not depend on
    # how far away a next match is. Matches (x == 0) are _id 0, 3, 6, 9: a batch of 2 ends at _id 3.
    db = coll.database
    db.command("profile", 2)
    reply = db.command("find", coll.name, filter={"x": 0}, batchSize=2)["cursor"]
    db.command("profile", 0)
    assert ids(reply["firstBatch"]) == [0, 3] and reply["id"] != 0
    (entry,) = db.system.profile.find({"op": "query", "ns": coll.full_name})
    assert (entry["docsExamined"], entry["nreturned"]) == (4, 2)
