"""Adapters: FolioDB and its peers behind the :class:`Contender` interface.

Every peer runs with its default settings, as a user who follows its README
would run it; the notes in :data:`NOTES` say what those defaults mean for the
numbers. The pymongo-style stores all get the same calls::

    insert_many(batch) / insert_one(doc)
    find_one({"_id": id})
    list(find({"payment.txn_id": x})), list(find({"user_id": u}))
    list(find({}).sort("total", -1).limit(10))
    update_one({"_id": id}, {"$inc": {"total": 1}, "$set": {"status": "shipped"}})
    delete_one({"_id": id})

TinyDB has no query language of that shape: equality goes through ``Query``,
the update through ``update(transform, cond)``, and since it has no ``_id``
index, find_one by ``_id`` is a search. Its JSON storage cannot hold ObjectId
or datetime, so its documents are converted to strings before timing.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from abc import abstractmethod
from datetime import UTC, datetime
from typing import Any

from bson import ObjectId

from benchmarks.workloads import Contender

UPDATE = {"$inc": {"total": 1}, "$set": {"status": "shipped"}}

NOTES = {
    "foliodb-server": "pymongo 4 over loopback TCP to `foliodb serve` (a child process) on the same disk settings",
    "mongomock": "memory only; no _id index: find_one, update_one and delete_one by _id scan the collection",
    "montydb-flatfile": "no indexes (_id lookups scan); default cache_modified=0: every write rewrites the JSON file",
    "montydb-sqlite": "no indexes (_id lookups scan); journal_mode=WAL with SQLite's default synchronous=FULL",
    "montydb-memory": "no indexes: _id lookups scan the collection",
    "mongita-disk": "a file per document behind a process cache; update_one matches its filter against every document",
    "mongita-memory": "update_one matches its filter against every document (find_one and delete_one look _id up)",
    "tinymongo": "default tinydb backend: every read parses and every write rewrites the whole JSON file",
    "tinydb-json": "every read parses and every write rewrites the whole file; ids and dates stored as strings",
    "tinydb-memory": "MemoryStorage: every operation rebuilds the table's document objects; no _id index",
    "mongoeco-memory": "mongoeco's default in-memory engine (Python 3.13+)",
    "mongoeco-sqlite": "mongoeco's SQLiteEngine on a file (Python 3.13+)",
    "polodb": "PoloDB (Rust) via polodb-python; its own ObjectId type and UTC-aware dates: converted before timing",
}


class PymongoStyle(Contender):
    """A store with pymongo's collection API; subclasses make the client."""

    @abstractmethod
    def make_client(self, workdir: str) -> Any: ...

    def open(self, workdir: str) -> None:
        self.client = self.make_client(workdir)
        self.coll = self.client["bench"]["orders"]

    def close(self) -> None:
        close = getattr(self.client, "close", None)
        if close is not None:
            close()

    def insert_many(self, docs: list[dict[str, Any]]) -> None:
        self.coll.insert_many(docs)

    def insert_one(self, doc: dict[str, Any]) -> None:
        self.coll.insert_one(doc)

    def find_one_by_id(self, key: Any) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.coll.find_one({"_id": key})
        return found

    def find_equal(self, path: str, value: Any) -> list[dict[str, Any]]:
        return list(self.coll.find({path: value}))

    def find_sorted(self, field: str, limit: int) -> list[dict[str, Any]]:
        return list(self.coll.find({}).sort(field, -1).limit(limit))

    def update_one_by_id(self, key: Any) -> int:
        matched: int = self.coll.update_one({"_id": key}, UPDATE).matched_count
        return matched

    def delete_one_by_id(self, key: Any) -> int:
        deleted: int = self.coll.delete_one({"_id": key}).deleted_count
        return deleted


class FolioDBDisk(PymongoStyle):
    name = "foliodb-disk"
    storage = "disk"
    package = "foliodb"

    def make_client(self, workdir: str) -> Any:
        import foliodb

        return foliodb.MongoClient(os.path.join(workdir, "foliodb"))


class FolioDBMemory(PymongoStyle):
    name = "foliodb-memory"
    storage = "memory"
    package = "foliodb"

    def make_client(self, workdir: str) -> Any:
        import foliodb

        return foliodb.MongoClient(":memory:")


class FolioDBServer(PymongoStyle):
    """pymongo over loopback TCP to a ``foliodb serve`` child on disk: the wire's cost."""

    name = "foliodb-server"
    storage = "disk"
    package = "foliodb"

    def make_client(self, workdir: str) -> Any:
        import pymongo

        command = [sys.executable, "-m", "foliodb", "serve", "--dbpath", os.path.join(workdir, "served"), "--port", "0"]
        self.server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self.server.stdout is not None
        first = self.server.stdout.readline()  # "... waiting for connections on HOST:PORT (dbpath ...)"
        host, port = first.split(" on ", 1)[1].split(" ", 1)[0].rsplit(":", 1)
        return pymongo.MongoClient(host, int(port))

    def close(self) -> None:
        super().close()
        self.server.terminate()
        self.server.wait(timeout=60)


class Mongomock(PymongoStyle):
    name = "mongomock"
    storage = "memory"
    package = "mongomock"

    def make_client(self, workdir: str) -> Any:
        import mongomock

        return mongomock.MongoClient()


class MontyDB(PymongoStyle):
    package = "montydb"
    engine = ""

    def make_client(self, workdir: str) -> Any:
        from montydb import MontyClient, set_storage

        if self.storage == "memory":
            return MontyClient(":memory:")
        repository = os.path.join(workdir, self.name)
        # set_storage's default use_bson=None is saved as "" and read back as
        # False, which makes montydb fall back to JSON (no ObjectId): say it.
        set_storage(repository, storage=self.engine, use_bson=True)
        return MontyClient(repository)


class MontyDBFlatfile(MontyDB):
    name = "montydb-flatfile"
    storage = "disk"
    engine = "flatfile"


class MontyDBSqlite(MontyDB):
    name = "montydb-sqlite"
    storage = "disk"
    engine = "sqlite"


class MontyDBMemory(MontyDB):
    name = "montydb-memory"
    storage = "memory"
    engine = "memory"


class MongitaDisk(PymongoStyle):
    name = "mongita-disk"
    storage = "disk"
    package = "mongita"

    def make_client(self, workdir: str) -> Any:
        from mongita import MongitaClientDisk

        return MongitaClientDisk(os.path.join(workdir, "mongita"))


class MongitaMemory(PymongoStyle):
    name = "mongita-memory"
    storage = "memory"
    package = "mongita"

    def make_client(self, workdir: str) -> Any:
        from mongita import MongitaClientMemory

        return MongitaClientMemory()


class MongoecoMemory(PymongoStyle):
    """mongoeco's default engine (Python 3.13+ only: ``pip install mongoeco``)."""

    name = "mongoeco-memory"
    storage = "memory"
    package = "mongoeco"

    def make_client(self, workdir: str) -> Any:
        import mongoeco

        return mongoeco.MongoClient()


class MongoecoSqlite(PymongoStyle):
    name = "mongoeco-sqlite"
    storage = "disk"
    package = "mongoeco"

    def make_client(self, workdir: str) -> Any:
        import mongoeco
        from mongoeco.engines import SQLiteEngine

        return mongoeco.MongoClient(SQLiteEngine(os.path.join(workdir, "mongoeco.sqlite")))


class TinyMongo(PymongoStyle):
    name = "tinymongo"
    storage = "disk"
    package = "tinymongo"

    def make_client(self, workdir: str) -> Any:
        from tinymongo import TinyMongoClient

        return TinyMongoClient(os.path.join(workdir, "tinymongo"))


def _polodb_value(value: Any) -> Any:
    """polodb-python refuses bson's ObjectId (its own type, made from the hex string) and
    returns datetimes aware of UTC: the documents are given as it returns them."""
    import polodb

    if isinstance(value, dict):
        return {k: _polodb_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_polodb_value(v) for v in value]
    if isinstance(value, ObjectId):
        return polodb.ObjectId(str(value))
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


class PoloDB(PymongoStyle):
    """PoloDB, an embedded document database in Rust, through its Python bindings (on disk)."""

    name = "polodb"
    storage = "disk"
    package = "polodb-python"

    def prepare(self, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [_polodb_value(doc) for doc in docs]

    def key(self, _id: ObjectId) -> Any:
        return _polodb_value(_id)

    def value(self, value: Any) -> Any:
        return _polodb_value(value)

    def make_client(self, workdir: str) -> Any:
        import polodb

        return polodb.PoloDB(os.path.join(workdir, "polodb"))

    def find_sorted(self, field: str, limit: int) -> list[dict[str, Any]]:
        return list(self.coll.find({}, sort={field: -1}, limit=limit))

    def open(self, workdir: str) -> None:
        self.client = self.make_client(workdir)
        self.coll = self.client.collection("orders")


def _jsonable(value: Any) -> Any:
    """TinyDB's JSON storage holds only JSON types: ObjectId and datetime become strings."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, ObjectId):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _ship(doc: dict[str, Any]) -> None:
    doc["total"] += 1
    doc["status"] = "shipped"


class TinyDBContender(Contender):
    package = "tinydb"

    @abstractmethod
    def make_db(self, workdir: str) -> Any: ...

    def open(self, workdir: str) -> None:
        from tinydb import Query

        self.db = self.make_db(workdir)
        self.table = self.db.table("orders")
        self.query = Query

    def close(self) -> None:
        self.db.close()

    def insert_many(self, docs: list[dict[str, Any]]) -> None:
        self.table.insert_multiple(docs)

    def insert_one(self, doc: dict[str, Any]) -> None:
        self.table.insert(doc)

    def find_one_by_id(self, key: Any) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.table.get(self.query()["_id"] == key)
        return found

    def find_equal(self, path: str, value: Any) -> list[dict[str, Any]]:
        field = self.query()
        for part in path.split("."):
            field = field[part]
        found: list[dict[str, Any]] = self.table.search(field == value)
        return found

    def find_sorted(self, field: str, limit: int) -> list[dict[str, Any]]:
        # TinyDB has no sort: all documents, ordered in Python (as its documentation suggests).
        return sorted(self.table.all(), key=lambda doc: doc[field], reverse=True)[:limit]

    def update_one_by_id(self, key: Any) -> int:
        return len(self.table.update(_ship, self.query()["_id"] == key))

    def delete_one_by_id(self, key: Any) -> int:
        return len(self.table.remove(self.query()["_id"] == key))


class TinyDBJSON(TinyDBContender):
    name = "tinydb-json"
    storage = "disk"

    def prepare(self, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [_jsonable(doc) for doc in docs]

    def key(self, _id: ObjectId) -> Any:
        return str(_id)

    def make_db(self, workdir: str) -> Any:
        from tinydb import TinyDB

        return TinyDB(os.path.join(workdir, "tinydb.json"))


class TinyDBMemory(TinyDBContender):
    name = "tinydb-memory"
    storage = "memory"

    def make_db(self, workdir: str) -> Any:
        from tinydb import TinyDB
        from tinydb.storages import MemoryStorage

        return TinyDB(storage=MemoryStorage)


def version(package: str) -> str:
    """The installed version of a contender's distribution."""
    if package == "sqlite3+bson":
        import sqlite3

        import bson

        return f"sqlite {sqlite3.sqlite_version}, pymongo {bson.__dict__.get('__version__') or _dist('pymongo')}"
    return _dist(package)


def _dist(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        module = importlib.import_module(name)
        return str(getattr(module, "__version__", "unknown"))
