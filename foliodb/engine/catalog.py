"""The catalog: databases, collections, their options and index definitions.

Stored in two SQLite tables and mirrored in memory (the cache is the only
thing read on the hot path; it is rebuilt from the tables on open, and
updated in the same transaction that changes the tables)::

    catalog_collections(id, db, name, uuid, options BSON)
    catalog_indexes(id, collection_id, name, spec BSON, multikey)

Collection ``N`` keeps its documents in table ``c<N>`` and index ``M`` its
entries in ``i<M>``. A database exists while it holds a collection, as in
MongoDB.
"""

from __future__ import annotations

import functools
import sqlite3
import uuid
from dataclasses import dataclass, field
from typing import Any

import bson
from bson.codec_options import CodecOptions, DatetimeConversion

from foliodb.query import paths

# How the engine decodes stored BSON: plain dicts, naive UTC datetimes, and
# dates beyond datetime's range kept as DatetimeMS so nothing is lost.
CODEC = CodecOptions(document_class=dict, tz_aware=False, datetime_conversion=DatetimeConversion.DATETIME_AUTO)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS catalog_collections (
    id INTEGER PRIMARY KEY,
    db TEXT NOT NULL,
    name TEXT NOT NULL,
    uuid BLOB NOT NULL,
    options BLOB NOT NULL,
    UNIQUE (db, name)
);
CREATE TABLE IF NOT EXISTS catalog_indexes (
    id INTEGER PRIMARY KEY,
    collection_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    spec BLOB NOT NULL,
    multikey INTEGER NOT NULL DEFAULT 0,
    lossy INTEGER NOT NULL DEFAULT 0,
    UNIQUE (collection_id, name)
);
"""


@dataclass
class IndexInfo:
    id: int
    name: str
    spec: dict[str, Any]  # as listIndexes shows it: {v, key, name, unique, ...}
    multikey: bool = False  # some document gave several keys
    lossy: bool = False  # some key does not decode back to its value's type

    @property
    def table(self) -> str:
        return f"i{self.id}"

    @property
    def key(self) -> dict[str, Any]:
        return self.spec["key"]

    @property
    def unique(self) -> bool:
        # The _id index is unique without saying so in its spec.
        return self.name == "_id_" or bool(self.spec.get("unique", False))

    @functools.cached_property
    def kind(self) -> str:
        """ "btree", "hashed", "wildcard" or "text" (the key never changes)."""
        key = self.key
        if "_fts" in key:
            return "text"
        if any(name == "$**" or name.endswith(".$**") for name in key):
            return "wildcard"
        if "hashed" in key.values():
            return "hashed"
        return "btree"

    @property
    def fields(self) -> list[tuple[tuple[str, ...], bool]]:
        """(path parts, descending) of each key field."""
        out = []
        for name, direction in self.key.items():
            descending = isinstance(direction, (int, float)) and direction < 0
            out.append((paths.split(name), descending))
        return out


@dataclass
class CollectionInfo:
    id: int
    db: str
    name: str
    uuid: uuid.UUID
    options: dict[str, Any]
    indexes: dict[str, IndexInfo] = field(default_factory=dict)

    @property
    def table(self) -> str:
        return f"c{self.id}"

    @property
    def is_view(self) -> bool:
        """A read-only view: a pipeline over another collection, no records."""
        return "viewOn" in self.options

    @property
    def ns(self) -> str:
        return f"{self.db}.{self.name}"

    @property
    def id_index(self) -> IndexInfo:
        return self.indexes["_id_"]


class Catalog:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        conn.executescript(_SCHEMA)
        self.collections: dict[tuple[str, str], CollectionInfo] = {}
        self.reload()

    def reload(self) -> None:
        """Rebuild the cache from the tables (after a rolled-back change)."""
        conn = self.conn
        self.collections = {}
        by_id: dict[int, CollectionInfo] = {}
        for cid, db, name, uid, options in conn.execute("SELECT id, db, name, uuid, options FROM catalog_collections"):
            info = CollectionInfo(cid, db, name, uuid.UUID(bytes=uid), bson.decode(options, CODEC))
            self.collections[(db, name)] = info
            by_id[cid] = info
        for iid, cid, name, spec, multikey, lossy in conn.execute(
            "SELECT id, collection_id, name, spec, multikey, lossy FROM catalog_indexes ORDER BY id"
        ):
            by_id[cid].indexes[name] = IndexInfo(iid, name, bson.decode(spec, CODEC), bool(multikey), bool(lossy))

    def get(self, db: str, name: str) -> CollectionInfo | None:
        return self.collections.get((db, name))

    def databases(self) -> list[str]:
        return sorted({db for db, _ in self.collections})

    def in_database(self, db: str) -> list[CollectionInfo]:
        return [info for (d, _), info in sorted(self.collections.items()) if d == db]

    # The mutators below run inside a storage write transaction.

    def add_collection(self, db: str, name: str, options: dict[str, Any]) -> CollectionInfo:
        uid = uuid.uuid4()
        cur = self.conn.execute(
            "INSERT INTO catalog_collections (db, name, uuid, options) VALUES (?, ?, ?, ?)",
            (db, name, uid.bytes, bson.encode(options)),
        )
        cid = cur.lastrowid
        assert cid is not None
        info = CollectionInfo(cid, db, name, uid, options)
        if not info.is_view:
            self.conn.execute(f"CREATE TABLE {info.table} (rid INTEGER PRIMARY KEY, doc BLOB NOT NULL)")
        self.collections[(db, name)] = info
        return info

    def set_options(self, info: CollectionInfo, options: dict[str, Any]) -> None:
        self.conn.execute("UPDATE catalog_collections SET options = ? WHERE id = ?", (bson.encode(options), info.id))
        info.options = options

    def remove_collection(self, info: CollectionInfo) -> None:
        for index in list(info.indexes.values()):
            self.remove_index(info, index)
        if not info.is_view:
            self.conn.execute(f"DROP TABLE {info.table}")
        self.conn.execute("DELETE FROM catalog_collections WHERE id = ?", (info.id,))
        del self.collections[(info.db, info.name)]

    def rename_collection(self, info: CollectionInfo, db: str, name: str) -> None:
        self.conn.execute("UPDATE catalog_collections SET db = ?, name = ? WHERE id = ?", (db, name, info.id))
        del self.collections[(info.db, info.name)]
        info.db, info.name = db, name
        self.collections[(db, name)] = info

    def add_index(self, info: CollectionInfo, spec: dict[str, Any]) -> IndexInfo:
        cur = self.conn.execute(
            "INSERT INTO catalog_indexes (collection_id, name, spec) VALUES (?, ?, ?)",
            (info.id, spec["name"], bson.encode(spec)),
        )
        iid = cur.lastrowid
        assert iid is not None
        index = IndexInfo(iid, spec["name"], spec)
        self.conn.execute(f"CREATE TABLE {index.table} (key BLOB PRIMARY KEY, rid INTEGER NOT NULL) WITHOUT ROWID")
        info.indexes[index.name] = index
        return index

    def update_index_spec(self, index: IndexInfo, spec: dict[str, Any]) -> None:
        self.conn.execute("UPDATE catalog_indexes SET spec = ? WHERE id = ?", (bson.encode(spec), index.id))
        index.spec = spec

    def set_flag(self, index: IndexInfo, flag: str) -> None:
        """Set the ``multikey`` or ``lossy`` flag of an index (never cleared)."""
        assert flag in ("multikey", "lossy")
        self.conn.execute(f"UPDATE catalog_indexes SET {flag} = 1 WHERE id = ?", (index.id,))
        setattr(index, flag, True)

    def remove_index(self, info: CollectionInfo, index: IndexInfo) -> None:
        self.conn.execute(f"DROP TABLE {index.table}")
        self.conn.execute("DELETE FROM catalog_indexes WHERE id = ?", (index.id,))
        del info.indexes[index.name]
