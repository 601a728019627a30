"""Closing a command cursor before it is exhausted kills it on the server, as pymongo's does
(killCursors: https://www.mongodb.com/docs/manual/reference/command/killCursors/): a later
killCursors of the same id finds nothing to kill."""

from __future__ import annotations

import foliodb


def test_closing_an_unfinished_command_cursor_kills_it() -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.docs
        coll.insert_many([{"_id": i} for i in range(10)])
        cursor = coll.aggregate([{"$match": {}}], batchSize=2)
        assert next(cursor) == {"_id": 0}
        cursor_id = cursor.cursor_id
        assert cursor_id  # more batches wait on the server
        cursor.close()
        reply = client.test.command("killCursors", "docs", cursors=[cursor_id])
        assert reply["cursorsKilled"] == [] and reply["cursorsNotFound"] == [cursor_id]


def test_an_open_command_cursor_is_there_to_kill() -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.docs
        coll.insert_many([{"_id": i} for i in range(10)])
        cursor = coll.aggregate([{"$match": {}}], batchSize=2)
        next(cursor)
        reply = client.test.command("killCursors", "docs", cursors=[cursor.cursor_id])
        assert reply["cursorsKilled"] == [cursor.cursor_id]
