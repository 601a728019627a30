"""The raw floor: pymongo's C ``bson`` codec over bare stdlib ``sqlite3``.

This is what any document store on SQLite in Python must at least pay: no
query language, no validation, no abstraction, just the storage layout
FolioDB's design uses and the same durability as FolioDB's default.

Layout (one file)::

    docs (rid INTEGER PRIMARY KEY, doc BLOB)            -- BSON bytes
    ids  (key BLOB PRIMARY KEY, rid INTEGER) WITHOUT ROWID  -- 12-byte ObjectId

Settings as FolioDB's storage: WAL, ``synchronous=NORMAL``, a 64 MiB page
cache, ``BEGIN IMMEDIATE``, one transaction per single-document write and one
per ``insert_many`` batch. The floor owns its file alone (as
FolioDB owns a dbpath under its lock), so it numbers records itself and
inserts a batch with two ``executemany`` calls.

Operations: find_one = one SELECT joining ``ids`` to ``docs``, then
``bson.decode``; update = SELECT + decode + modify + encode + UPDATE in a
transaction; delete = DELETE ... RETURNING on ``ids`` and DELETE on ``docs``
in a transaction; the unindexed find scans ``docs``, decodes every document
and matches in plain Python; the sorted find decodes every document into
``heapq.nlargest``.

:class:`IndexedFloor` adds secondary indexes on ObjectId fields, one table
each, as FolioDB lays them out::

    ix_<field> (key BLOB PRIMARY KEY, rid INTEGER) WITHOUT ROWID
               -- key = the field's 12 ObjectId bytes + the rid as 8 bytes big-endian

kept in the same transaction as the documents they index. An equality find
is one SELECT of the key range joined to ``docs``, then ``bson.decode`` of
each document; building an index reads and decodes every document, sorts
the keys and inserts them in one transaction.
"""

from __future__ import annotations

import heapq
import os
import sqlite3
from collections.abc import Callable
from typing import Any

import bson
from bson import ObjectId

from benchmarks.workloads import Contender, field_getter

_SCHEMA = """
CREATE TABLE IF NOT EXISTS docs (rid INTEGER PRIMARY KEY, doc BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS ids (key BLOB PRIMARY KEY, rid INTEGER NOT NULL) WITHOUT ROWID;
"""


class Floor(Contender):
    name = "floor"
    storage = "disk"
    package = "sqlite3+bson"

    def open(self, workdir: str) -> None:
        self.conn = sqlite3.connect(os.path.join(workdir, "floor.sqlite"), isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA cache_size=-65536")  # FolioDB's 64 MiB page cache
        self.conn.executescript(_SCHEMA)
        # A reopened file (the aggregation benchmark loads in one process, queries in another) goes on numbering.
        self.next_rid = self.conn.execute("SELECT coalesce(max(rid), 0) + 1 FROM docs").fetchone()[0]

    def close(self) -> None:
        self.conn.close()

    def insert_many(self, docs: list[dict[str, Any]]) -> None:
        encode = bson.encode
        first = self.next_rid
        rows = [(first + i, encode(doc)) for i, doc in enumerate(docs)]
        keys = [(doc["_id"].binary, first + i) for i, doc in enumerate(docs)]
        execute = self.conn.execute
        execute("BEGIN IMMEDIATE")
        try:
            self.conn.executemany("INSERT INTO docs (rid, doc) VALUES (?, ?)", rows)
            self.conn.executemany("INSERT INTO ids (key, rid) VALUES (?, ?)", keys)
        except BaseException:
            execute("ROLLBACK")
            raise
        execute("COMMIT")
        self.next_rid = first + len(docs)

    def insert_one(self, doc: dict[str, Any]) -> None:
        rid = self.next_rid
        execute = self.conn.execute
        execute("BEGIN IMMEDIATE")
        try:
            execute("INSERT INTO docs (rid, doc) VALUES (?, ?)", (rid, bson.encode(doc)))
            execute("INSERT INTO ids (key, rid) VALUES (?, ?)", (doc["_id"].binary, rid))
        except BaseException:
            execute("ROLLBACK")
            raise
        execute("COMMIT")
        self.next_rid = rid + 1

    def find_one_by_id(self, _id: ObjectId) -> dict[str, Any] | None:
        row = self.conn.execute(
            "SELECT docs.doc FROM ids JOIN docs ON docs.rid = ids.rid WHERE ids.key = ?", (_id.binary,)
        ).fetchone()
        return None if row is None else bson.decode(row[0])

    def find_equal(self, path: str, value: Any) -> list[dict[str, Any]]:
        get = field_getter(path)
        decode = bson.decode
        found = []
        for (blob,) in self.conn.execute("SELECT doc FROM docs"):
            doc = decode(blob)
            if get(doc) == value:
                found.append(doc)
        return found

    def find_sorted(self, field: str, limit: int) -> list[dict[str, Any]]:
        decode = bson.decode
        docs = (decode(blob) for (blob,) in self.conn.execute("SELECT doc FROM docs"))
        return heapq.nlargest(limit, docs, key=lambda doc: doc[field])

    def update_one_by_id(self, _id: ObjectId) -> int:
        return self.update_by_id(_id, _ship)

    def update_by_id(self, _id: ObjectId, change: Callable[[dict[str, Any]], None]) -> int:
        """Read the document with ``_id``, ``change`` it in place and write it back, in one transaction."""
        execute = self.conn.execute
        execute("BEGIN IMMEDIATE")
        try:
            row = execute(
                "SELECT docs.rid, docs.doc FROM ids JOIN docs ON docs.rid = ids.rid WHERE ids.key = ?", (_id.binary,)
            ).fetchone()
            if row is not None:
                doc = bson.decode(row[1])
                change(doc)
                execute("UPDATE docs SET doc = ? WHERE rid = ?", (bson.encode(doc), row[0]))
        except BaseException:
            execute("ROLLBACK")
            raise
        execute("COMMIT")
        return 0 if row is None else 1

    def delete_one_by_id(self, _id: ObjectId) -> int:
        execute = self.conn.execute
        execute("BEGIN IMMEDIATE")
        try:
            rows = execute("DELETE FROM ids WHERE key = ? RETURNING rid", (_id.binary,)).fetchall()
            if rows:
                execute("DELETE FROM docs WHERE rid = ?", rows[0])
        except BaseException:
            execute("ROLLBACK")
            raise
        execute("COMMIT")
        return len(rows)


def _index_table(field: str) -> str:
    return "ix_" + field.replace(".", "_")


class IndexedFloor(Floor):
    """The floor plus secondary indexes on ObjectId-valued fields (of a fresh file: reopening forgets them)."""

    def open(self, workdir: str) -> None:
        super().open(workdir)
        self.indexed: dict[str, Callable[[dict[str, Any]], Any]] = {}

    def index_rows(self, field: str, docs: list[dict[str, Any]], first: int) -> list[tuple[bytes, int]]:
        get = self.indexed[field]
        return [(get(doc).binary + (first + i).to_bytes(8, "big"), first + i) for i, doc in enumerate(docs)]

    def insert_many(self, docs: list[dict[str, Any]]) -> None:
        encode = bson.encode
        first = self.next_rid
        rows = [(first + i, encode(doc)) for i, doc in enumerate(docs)]
        keys = [(doc["_id"].binary, first + i) for i, doc in enumerate(docs)]
        execute = self.conn.execute
        execute("BEGIN IMMEDIATE")
        try:
            self.conn.executemany("INSERT INTO docs (rid, doc) VALUES (?, ?)", rows)
            self.conn.executemany("INSERT INTO ids (key, rid) VALUES (?, ?)", keys)
            for field in self.indexed:
                self.conn.executemany(
                    f"INSERT INTO {_index_table(field)} (key, rid) VALUES (?, ?)", self.index_rows(field, docs, first)
                )
        except BaseException:
            execute("ROLLBACK")
            raise
        execute("COMMIT")
        self.next_rid = first + len(docs)

    def create_index(self, field: str) -> None:
        get = field_getter(field)
        decode = bson.decode
        execute = self.conn.execute
        execute("BEGIN IMMEDIATE")
        try:
            execute(f"CREATE TABLE {_index_table(field)} (key BLOB PRIMARY KEY, rid INTEGER NOT NULL) WITHOUT ROWID")
            keys = [
                (get(decode(blob)).binary + rid.to_bytes(8, "big"), rid)
                for rid, blob in execute("SELECT rid, doc FROM docs")
            ]
            keys.sort()
            self.conn.executemany(f"INSERT INTO {_index_table(field)} (key, rid) VALUES (?, ?)", keys)
        except BaseException:
            execute("ROLLBACK")
            raise
        execute("COMMIT")
        self.indexed[field] = get

    def drop_index(self, field: str) -> None:
        self.conn.execute(f"DROP TABLE {_index_table(field)}")
        del self.indexed[field]

    def find_equal(self, path: str, value: Any) -> list[dict[str, Any]]:
        if path not in self.indexed:
            return super().find_equal(path, value)
        decode = bson.decode
        low = value.binary
        rows = self.conn.execute(
            f"SELECT docs.doc FROM {_index_table(path)} AS ix JOIN docs ON docs.rid = ix.rid"
            " WHERE ix.key >= ? AND ix.key < ?",
            (low, low + b"\xff" * 9),
        )
        return [decode(blob) for (blob,) in rows]


def _ship(doc: dict[str, Any]) -> None:
    """The update_one workload's change: ``{$inc: {total: 1}, $set: {status: "shipped"}}``."""
    doc["total"] += 1
    doc["status"] = "shipped"
