"""Search index definitions in the catalog, and the change log they follow.

Stored beside the other catalog tables, in the same SQLite file::

    catalog_search_indexes(id, collection_id, name, public_id, type,
                           definition BSON, version, created)
    x<C>(seq INTEGER PRIMARY KEY AUTOINCREMENT, rid)   collection C's change log

``public_id`` is the ``id`` MongoDB Search reports (24 hex digits);
``version`` counts the definition's updates (``latestDefinitionVersion``).

The change log. While collection ``C`` has a search index, three SQLite
triggers on its record table ``c<C>`` append the record id of every inserted,
updated or deleted document to ``x<C>``, inside the statement that changed it
(so inside the same SQLite transaction, on every write path: single and batch
inserts, updates, deletes, truncation, a transaction's commit). ``seq`` only
grows (AUTOINCREMENT never reuses a value), commits are serialized, so every
snapshot holds exactly the log entries up to its newest ``seq``: a derived
search structure that has applied the log up to ``seq = W`` describes the
collection of every snapshot whose newest entry is ``W``. Entries at or below
every index's saved watermark are deleted (:func:`trim_log`).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import bson

from foliodb.engine.search.definition import Definition, parse

if TYPE_CHECKING:
    from foliodb.engine.catalog import CollectionInfo

SCHEMA = """
CREATE TABLE IF NOT EXISTS catalog_search_indexes (
    id INTEGER PRIMARY KEY,
    collection_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    public_id TEXT NOT NULL,
    type TEXT NOT NULL,
    definition BLOB NOT NULL,
    version INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    UNIQUE (collection_id, name)
);
"""


@dataclass
class SearchIndexInfo:
    id: int  # internal: names its saved files; never reused
    collection_id: int
    name: str
    public_id: str  # the `id` listSearchIndexes shows
    type: str  # "search" or "vectorSearch"
    definition: dict[str, Any]  # as given (latestDefinition)
    version: int = 0
    created: float = 0.0  # seconds since the epoch of the latest version

    @functools.cached_property
    def parsed(self) -> Definition:
        return parse(self.type, self.definition)

    @property
    def created_at(self) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self.created, datetime.UTC).replace(tzinfo=None)


def log_table(collection_id: int) -> str:
    return f"x{collection_id}"


def load(conn: sqlite3.Connection, by_id: dict[int, CollectionInfo]) -> None:
    """Attach the stored search indexes to their collections (a file from before them gets their table;
    opened read-only, it has none)."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'catalog_search_indexes'").fetchone()
    if exists is None:
        try:
            conn.executescript(SCHEMA)
        except sqlite3.OperationalError:
            return
    rows = conn.execute(
        "SELECT id, collection_id, name, public_id, type, definition, version, created FROM catalog_search_indexes"
    ).fetchall()
    for iid, cid, name, public_id, kind, definition, version, created in rows:
        info = by_id.get(cid)
        if info is not None:
            decoded = bson.decode(definition)
            info.search_indexes[name] = SearchIndexInfo(iid, cid, name, public_id, kind, decoded, version, created)


def _start_log(conn: sqlite3.Connection, info: CollectionInfo) -> None:
    log = log_table(info.id)
    records = info.table
    conn.execute(f"CREATE TABLE IF NOT EXISTS {log} (seq INTEGER PRIMARY KEY AUTOINCREMENT, rid INTEGER NOT NULL)")
    for suffix, event, row in (("i", "INSERT", "new"), ("u", "UPDATE", "new"), ("d", "DELETE", "old")):
        conn.execute(
            f"CREATE TRIGGER IF NOT EXISTS {log}_{suffix} AFTER {event} ON {records} "
            f"BEGIN INSERT INTO {log} (rid) VALUES ({row}.rid); END"
        )


def _stop_log(conn: sqlite3.Connection, info: CollectionInfo) -> None:
    log = log_table(info.id)
    for suffix in ("i", "u", "d"):
        conn.execute(f"DROP TRIGGER IF EXISTS {log}_{suffix}")
    conn.execute(f"DROP TABLE IF EXISTS {log}")


def add(conn: sqlite3.Connection, info: CollectionInfo, index: SearchIndexInfo, iid: int) -> SearchIndexInfo:
    """Inside a write, ``info`` being the draft's copy: store a new index under the fresh id ``iid``."""
    index = dataclasses.replace(index, id=iid, collection_id=info.id)
    conn.execute(
        "INSERT INTO catalog_search_indexes (id, collection_id, name, public_id, type, definition, version, created) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            index.id,
            info.id,
            index.name,
            index.public_id,
            index.type,
            bson.encode(index.definition),
            index.version,
            index.created,
        ),
    )
    if not info.search_indexes:
        _start_log(conn, info)
    info.search_indexes[index.name] = index
    return index


def replace(conn: sqlite3.Connection, info: CollectionInfo, index: SearchIndexInfo) -> None:
    """Inside a write: a new version of an index's definition."""
    conn.execute(
        "UPDATE catalog_search_indexes SET definition = ?, version = ?, created = ? WHERE id = ?",
        (bson.encode(index.definition), index.version, index.created, index.id),
    )
    info.search_indexes[index.name] = index


def remove(conn: sqlite3.Connection, info: CollectionInfo, index: SearchIndexInfo) -> None:
    conn.execute("DELETE FROM catalog_search_indexes WHERE id = ?", (index.id,))
    del info.search_indexes[index.name]
    if not info.search_indexes:
        _stop_log(conn, info)


def remove_all(conn: sqlite3.Connection, info: CollectionInfo) -> None:
    """A collection is dropped: its search indexes and change log go with it."""
    if info.search_indexes:
        conn.execute("DELETE FROM catalog_search_indexes WHERE collection_id = ?", (info.id,))
        info.search_indexes.clear()
        _stop_log(conn, info)


def trim_log(conn: sqlite3.Connection, collection_id: int, upto: int) -> None:
    """Inside a write: forget the log entries every saved search structure has applied."""
    conn.execute(f"DELETE FROM {log_table(collection_id)} WHERE seq <= ?", (upto,))
