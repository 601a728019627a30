"""The catalog: databases, collections, their options and index definitions.

Stored in SQLite tables and mirrored in memory::

    catalog_collections(id, db, name, uuid, options BSON)
    catalog_indexes(id, collection_id, name, spec BSON, multikey, lossy, building)
    catalog_meta(key, value)            the next collection and index ids

Collection ``N`` keeps its documents in table ``c<N>`` and index ``M`` its
entries in ``i<M>``. Ids are never reused, so a table name always means the
same collection or index. A database exists while it holds a collection, as
in MongoDB.

Versions. A :class:`Catalog` is one version of the mirror and never changes
once published (apart from the monotonic multikey/lossy flags of its
indexes, which only make plans more careful). A write transaction that
changes the catalog works on a :class:`CatalogDraft`: a copy of the
published version whose changed collections are copied on first write; the
storage publishes it when the transaction commits and drops it when it rolls
back. Readers keep using the version their snapshot began with.

An index being built (``building``) is in its collection's ``building``
map, not in ``indexes``: writes maintain it, the planner and listIndexes do
not see it until the build commits it as ready.
"""

from __future__ import annotations

import dataclasses
import functools
import sqlite3
import uuid
from dataclasses import dataclass, field
from typing import Any

import bson
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.raw_bson import RawBSONDocument

from foliodb.engine.search import catalog as search_catalog
from foliodb.query import collation, compare, paths
from foliodb.query.collation import Collator

# How the engine decodes stored BSON: plain dicts, naive UTC datetimes, and
# dates beyond datetime's range kept as DatetimeMS so nothing is lost.
CODEC = CodecOptions(document_class=dict, tz_aware=False, datetime_conversion=DatetimeConversion.DATETIME_AUTO)
# A stored document's BSON as it is (a RawBSONDocument), where a reply over the wire carries it unchanged.
RAW = CodecOptions(document_class=RawBSONDocument)

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
    building INTEGER NOT NULL DEFAULT 0,
    UNIQUE (collection_id, name)
);
CREATE TABLE IF NOT EXISTS catalog_meta (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
"""


@dataclass
class IndexInfo:
    id: int
    name: str
    spec: dict[str, Any]  # as listIndexes shows it: {v, key, name, unique, ...}
    multikey: bool = False  # some document gave several keys
    lossy: bool = False  # some key does not decode back to its value's type
    # While the index is being built: the duplicate-key error a concurrent write met (the build fails on it).
    build_error: Any = field(default=None, repr=False, compare=False)

    @property
    def table(self) -> str:
        return f"i{self.id}"

    @property
    def key(self) -> dict[str, Any]:
        return self.spec["key"]

    @functools.cached_property
    def collator(self) -> Collator | None:
        """The index's collation (None: simple); its string keys are ICU sort keys."""
        spec = self.spec.get("collation")
        return None if spec is None else collation.parse(spec)

    @property
    def unique(self) -> bool:
        # The _id index is unique without saying so in its spec.
        return self.name == "_id_" or bool(self.spec.get("unique", False))

    @functools.cached_property
    def kind(self) -> str:
        """ "btree", "hashed", "wildcard", "text", "2dsphere" or "2d" (the key never changes)."""
        key = self.key
        if "_fts" in key:
            return "text"
        for geo_kind in ("2dsphere", "2d"):
            if geo_kind in key.values():
                return geo_kind
        if any(name == "$**" or name.endswith(".$**") for name in key):
            return "wildcard"
        if "hashed" in key.values():
            return "hashed"
        return "btree"

    @functools.cached_property
    def key_names(self) -> tuple[str, ...]:
        """The key's field names, in order (the key never changes: a plan reads them per query)."""
        return tuple(self.key)

    @functools.cached_property
    def descending(self) -> tuple[bool, ...]:
        """Per key field, whether it is descending: a negative number ("hashed", "2d"... ascend)."""
        return tuple(compare.is_number(d) and compare.number_value(d) < 0 for d in self.key.values())

    @functools.cached_property
    def pattern_shown(self) -> str:
        """The key pattern as a plan summary shows it (``{ a: 1, b: -1 }``)."""
        return "{ " + ", ".join(f"{name}: {direction}" for name, direction in self.key.items()) + " }"

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
    building: dict[str, IndexInfo] = field(default_factory=dict)  # indexes being built
    # MongoDB Search indexes by name (foliodb.engine.search.catalog).
    search_indexes: dict[str, search_catalog.SearchIndexInfo] = field(default_factory=dict)
    # The engine's record store for this version of the collection (built on first use).
    store: Any = field(default=None, init=False, repr=False, compare=False)

    @property
    def table(self) -> str:
        return f"c{self.id}"

    @property
    def is_view(self) -> bool:
        """A read-only view: a pipeline over another collection, no records
        (a time-series collection reads as one over its buckets)."""
        return "viewOn" in self.options or self.is_timeseries

    @property
    def is_timeseries(self) -> bool:
        """A time-series collection (not its ``system.buckets`` collection,
        whose options hold the same ``timeseries`` document)."""
        return "timeseries" in self.options and not self.name.startswith("system.buckets.")

    @property
    def view_on(self) -> str:
        return f"system.buckets.{self.name}" if self.is_timeseries else str(self.options["viewOn"])

    @property
    def view_pipeline(self) -> list[Any]:
        """A view's pipeline; a time-series collection's unpacks its buckets, as mongod's view does."""
        if self.is_timeseries:
            ts = self.options["timeseries"]
            unpack = {key: ts[key] for key in ("timeField", "metaField", "bucketMaxSpanSeconds") if key in ts}
            return [{"$_internalUnpackBucket": unpack}]
        return list(self.options.get("pipeline", []))

    @property
    def is_clustered(self) -> bool:
        """Clustered on ``_id``: a ``clusteredIndex`` spec, or ``True`` (the
        form time-series buckets collections are created with)."""
        return bool(self.options.get("clusteredIndex"))

    @property
    def ns(self) -> str:
        return f"{self.db}.{self.name}"

    @property
    def keeps_images(self) -> bool:
        """Whether its writes keep pre- and post-images for change streams (changeStreamPreAndPostImages)."""
        option = self.options.get("changeStreamPreAndPostImages")
        return isinstance(option, dict) and bool(option.get("enabled"))

    @property
    def id_index(self) -> IndexInfo:
        return self.indexes["_id_"]


class Catalog:
    """One version of the catalog (see the module docstring)."""

    def __init__(self, collections: dict[tuple[str, str], CollectionInfo]) -> None:
        self.collections = collections
        self.by_id = {info.id: info for info in collections.values()}

    @classmethod
    def load(cls, conn: sqlite3.Connection) -> Catalog:
        """The catalog stored in the file; index builds a crash interrupted are dropped."""
        conn.executescript(_SCHEMA)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(catalog_indexes)")}
        if "building" not in columns:  # a file from before concurrent index builds
            conn.execute("ALTER TABLE catalog_indexes ADD COLUMN building INTEGER NOT NULL DEFAULT 0")
        for (iid,) in conn.execute("SELECT id FROM catalog_indexes WHERE building = 1").fetchall():
            # Never acknowledged: the build's createIndexes failed with the crash.
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(f"DROP TABLE IF EXISTS i{iid}")
            conn.execute("DELETE FROM catalog_indexes WHERE id = ?", (iid,))
            conn.execute("COMMIT")
        collections: dict[tuple[str, str], CollectionInfo] = {}
        by_id: dict[int, CollectionInfo] = {}
        for cid, db, name, uid, options in conn.execute("SELECT id, db, name, uuid, options FROM catalog_collections"):
            info = CollectionInfo(cid, db, name, uuid.UUID(bytes=uid), bson.decode(options, CODEC))
            collections[(db, name)] = info
            by_id[cid] = info
        for iid, cid, name, spec, multikey, lossy in conn.execute(
            "SELECT id, collection_id, name, spec, multikey, lossy FROM catalog_indexes ORDER BY id"
        ):
            by_id[cid].indexes[name] = IndexInfo(iid, name, bson.decode(spec, CODEC), bool(multikey), bool(lossy))
        search_catalog.load(conn, by_id)
        return cls(collections)

    def get(self, db: str, name: str) -> CollectionInfo | None:
        return self.collections.get((db, name))

    def databases(self) -> list[str]:
        return sorted({db for db, _ in self.collections})

    def in_database(self, db: str) -> list[CollectionInfo]:
        return [info for (d, _), info in sorted(self.collections.items()) if d == db]


def set_flag(conn: sqlite3.Connection, index: IndexInfo, flag: str) -> None:
    """Set the ``multikey`` or ``lossy`` flag of an index (never cleared), in
    the writer's transaction; the flag is visible at once in every version,
    which only makes plans more careful."""
    assert flag in ("multikey", "lossy")
    conn.execute(f"UPDATE catalog_indexes SET {flag} = 1 WHERE id = ?", (index.id,))
    setattr(index, flag, True)


class CatalogDraft:
    """The catalog a write transaction changes: the published version, its
    changed collections copied on first change. Every method runs on the
    writer connection inside that transaction."""

    def __init__(self, base: Catalog, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.catalog = Catalog(dict(base.collections))
        self._owned: set[int] = set()  # ids of the collections copied into this draft

    def finish(self) -> Catalog:
        """The version to publish (the draft must not be used after)."""
        return self.catalog

    def _own(self, info: CollectionInfo) -> CollectionInfo:
        """This draft's copy of a collection, made on its first change; the
        change to come makes its cached store stale."""
        current = self.catalog.by_id[info.id]
        if info.id in self._owned:
            current.store = None
            return current
        copy = dataclasses.replace(
            current,
            indexes=dict(current.indexes),
            building=dict(current.building),
            search_indexes=dict(current.search_indexes),
        )
        self.catalog.collections[(copy.db, copy.name)] = copy
        self.catalog.by_id[copy.id] = copy
        self._owned.add(copy.id)
        return copy

    def _next_id(self, key: str, table: str) -> int:
        """A fresh id, above every id ever handed out (ids are never reused)."""
        row = self.conn.execute("SELECT value FROM catalog_meta WHERE key = ?", (key,)).fetchone()
        highest = self.conn.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0]
        new = max(int(row[0]) if row else 1, int(highest) + 1)
        self.conn.execute("INSERT OR REPLACE INTO catalog_meta (key, value) VALUES (?, ?)", (key, new + 1))
        return new

    def add_collection(self, db: str, name: str, options: dict[str, Any]) -> CollectionInfo:
        uid = uuid.uuid4()
        cid = self._next_id("next_collection_id", "catalog_collections")
        self.conn.execute(
            "INSERT INTO catalog_collections (id, db, name, uuid, options) VALUES (?, ?, ?, ?, ?)",
            (cid, db, name, uid.bytes, bson.encode(options)),
        )
        info = CollectionInfo(cid, db, name, uid, options)
        if not info.is_view:
            self.conn.execute(f"CREATE TABLE {info.table} (rid INTEGER PRIMARY KEY, doc BLOB NOT NULL)")
        self.catalog.collections[(db, name)] = info
        self.catalog.by_id[cid] = info
        self._owned.add(cid)
        return info

    def set_options(self, info: CollectionInfo, options: dict[str, Any]) -> CollectionInfo:
        info = self._own(info)
        self.conn.execute("UPDATE catalog_collections SET options = ? WHERE id = ?", (bson.encode(options), info.id))
        info.options = options
        return info

    def remove_collection(self, info: CollectionInfo) -> None:
        info = self._own(info)
        for index in [*info.indexes.values(), *info.building.values()]:
            self.remove_index(info, index)
        search_catalog.remove_all(self.conn, info)
        if not info.is_view:
            self.conn.execute(f"DROP TABLE {info.table}")
        self.conn.execute("DELETE FROM catalog_collections WHERE id = ?", (info.id,))
        del self.catalog.collections[(info.db, info.name)]
        del self.catalog.by_id[info.id]

    def rename_collection(self, info: CollectionInfo, db: str, name: str) -> CollectionInfo:
        info = self._own(info)
        self.conn.execute("UPDATE catalog_collections SET db = ?, name = ? WHERE id = ?", (db, name, info.id))
        del self.catalog.collections[(info.db, info.name)]
        info.db, info.name = db, name
        self.catalog.collections[(db, name)] = info
        return info

    def add_index(self, info: CollectionInfo, spec: dict[str, Any], building: bool = False) -> IndexInfo:
        """A new index, empty: ready at once, or (``building``) maintained by
        writes but hidden until :meth:`index_ready`."""
        info = self._own(info)
        iid = self._next_id("next_index_id", "catalog_indexes")
        self.conn.execute(
            "INSERT INTO catalog_indexes (id, collection_id, name, spec, building) VALUES (?, ?, ?, ?, ?)",
            (iid, info.id, spec["name"], bson.encode(spec), int(building)),
        )
        index = IndexInfo(iid, spec["name"], spec)
        self.conn.execute(f"CREATE TABLE {index.table} (key BLOB PRIMARY KEY, rid INTEGER NOT NULL) WITHOUT ROWID")
        (info.building if building else info.indexes)[index.name] = index
        return index

    def index_ready(self, info: CollectionInfo, index: IndexInfo) -> None:
        """A built index joins the ones queries use."""
        info = self._own(info)
        self.conn.execute("UPDATE catalog_indexes SET building = 0 WHERE id = ?", (index.id,))
        del info.building[index.name]
        info.indexes[index.name] = index

    def update_index_spec(self, info: CollectionInfo, index: IndexInfo, spec: dict[str, Any]) -> IndexInfo:
        info = self._own(info)
        self.conn.execute("UPDATE catalog_indexes SET spec = ? WHERE id = ?", (bson.encode(spec), index.id))
        updated = dataclasses.replace(index, spec=spec)
        info.indexes[index.name] = updated
        return updated

    def add_search_index(
        self, info: CollectionInfo, index: search_catalog.SearchIndexInfo
    ) -> search_catalog.SearchIndexInfo:
        info = self._own(info)
        return search_catalog.add(
            self.conn, info, index, self._next_id("next_search_index_id", "catalog_search_indexes")
        )

    def replace_search_index(self, info: CollectionInfo, index: search_catalog.SearchIndexInfo) -> None:
        search_catalog.replace(self.conn, self._own(info), index)

    def remove_search_index(self, info: CollectionInfo, index: search_catalog.SearchIndexInfo) -> None:
        search_catalog.remove(self.conn, self._own(info), index)

    def remove_index(self, info: CollectionInfo, index: IndexInfo) -> None:
        info = self._own(info)
        self.conn.execute(f"DROP TABLE {index.table}")
        self.conn.execute("DELETE FROM catalog_indexes WHERE id = ?", (index.id,))
        info.indexes.pop(index.name, None)
        info.building.pop(index.name, None)
