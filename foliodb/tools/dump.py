"""Write databases in mongodump's formats, so ``mongorestore`` loads them into
any MongoDB deployment: a directory, or an archive (:mod:`foliodb.tools.archive`).

Directory layout (as mongodump 100.x writes it)::

    OUT/<db>/<collection>.bson             the documents, BSON concatenated, natural order
    OUT/<db>/<collection>.metadata.json    canonical Extended JSON, compact:
                                           {options, indexes, uuid, collectionName, type}

A collection name becomes a file name as mongodump makes it (Go's
``url.QueryEscape``; past 238 bytes, a prefix and a SHA-1). A view has only
its metadata file (``options`` holds ``viewOn`` and ``pipeline``); in an
archive it has an empty segment. With ``gzip`` every file gets a ``.gz``
suffix; an archive is compressed whole.

What is dumped, as mongodump decides it: every database but ``local`` and
``config`` (or the one named); in ``admin`` every collection but
``system.keys``, so the users (``admin.system.users``) and custom roles
(``admin.system.roles``) travel with a full dump; elsewhere no ``system.*``
collection but ``system.js``. ``dump_db_users_and_roles`` adds, for one named
database, its users and roles as ``<db>/$admin.system.users.bson`` (and
roles, and ``$admin.system.version``), as ``--dumpDbUsersAndRoles`` does.

With ``oplog`` (full dumps only), ``OUT/oplog.bson`` (an archive's ``.oplog``)
holds the oplog entries written while the dump ran (:mod:`foliodb.tools.oplog`).

The source is any client with pymongo's API: FolioDB's embedded client, or
pymongo connected to ``foliodb serve`` or to MongoDB itself.

Format: https://www.mongodb.com/docs/database-tools/mongodump/#output and
mongo-tools' ``mongodump/prepare.go`` and ``metadata_dump.go``.
"""

from __future__ import annotations

import base64
import hashlib
import os
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

import bson
from bson import json_util
from bson.binary import Binary
from bson.raw_bson import RawBSONDocument
from bson.son import SON
from pymongo.errors import PyMongoError

import foliodb
from foliodb.tools.archive import ArchiveWriter, Entry, Header
from foliodb.tools.files import open_write
from foliodb.tools.oplog import OPLOG_COLLECTION, OPLOG_DB, OPLOG_FILE, window, window_start
from foliodb.tools.progress import SILENT, Reporter

SKIPPED_DATABASES = ("local", "config")
USER_COLLECTIONS = ("system.users", "system.roles", "system.version")
TOOL_VERSION = f"foliodb {foliodb.__version__}"
_CANONICAL = json_util.JSONOptions(json_mode=json_util.JSONMode.CANONICAL)
_RAW = bson.CodecOptions(document_class=RawBSONDocument)


@dataclass
class DumpReport:
    """What was written: documents per namespace, and the views."""

    documents: dict[str, int] = field(default_factory=dict)
    views: list[str] = field(default_factory=list)
    oplog: int | None = None  # oplog entries dumped (None: no --oplog)


@dataclass
class _Intent:
    """One namespace to write: where it is read from and what it is called in the dump."""

    db: str  # the dump's database (directory) and name
    name: str
    source_db: str
    source: str
    info: Mapping[str, Any] | None  # listCollections entry; None for the $admin.* files
    filter: Mapping[str, Any]

    @property
    def namespace(self) -> str:
        return f"{self.db}.{self.name}"

    @property
    def is_view(self) -> bool:
        return self.info is not None and self.info.get("type") == "view"


def dump(
    client: Any,
    out: str = "dump",
    db: str | None = None,
    collection: str | None = None,
    query: Mapping[str, Any] | None = None,
    gzip: bool = False,
    dump_db_users_and_roles: bool = False,
    reporter: Reporter = SILENT,
    oplog: bool = False,
) -> DumpReport:
    """Dump every database (or ``db``, or one ``collection`` of it) under the directory ``out``;
    with ``oplog``, the oplog entries written meanwhile too (:mod:`foliodb.tools.oplog`)."""
    intents = _plan(client, db, collection, query, dump_db_users_and_roles, oplog)
    start = window_start(client) if oplog else None
    report = DumpReport()
    for intent in intents:
        directory = os.path.join(out, intent.db)
        os.makedirs(directory, exist_ok=True)
        stem = os.path.join(directory, file_stem(intent.name))
        if intent.info is not None:
            with _open(stem + ".metadata.json", gzip) as fh:
                fh.write(metadata_json(client[intent.source_db], intent.info).encode())
        if intent.is_view:
            report.views.append(intent.namespace)
            reporter.note(f"dumped view {intent.namespace}")
            continue
        with _open(stem + ".bson", gzip) as fh:
            count = 0
            for raw in _documents(client, intent, reporter):
                fh.write(raw)
                count += 1
        report.documents[intent.namespace] = count
        reporter.note(f"done dumping {intent.namespace} ({count} documents)")
    if start is not None:
        os.makedirs(out, exist_ok=True)
        with _open(os.path.join(out, OPLOG_FILE), gzip) as fh:
            report.oplog = _write_entries(window(client, start), fh.write)
        reporter.note(f"dumped {report.oplog} oplog entries")
    return report


def _write_entries(entries: Iterator[bytes], write: Any) -> int:
    count = 0
    for entry in entries:
        write(entry)
        count += 1
    return count


def dump_archive(
    client: Any,
    stream: IO[bytes],
    db: str | None = None,
    collection: str | None = None,
    query: Mapping[str, Any] | None = None,
    dump_db_users_and_roles: bool = False,
    reporter: Reporter = SILENT,
    oplog: bool = False,
) -> DumpReport:
    """Dump as :func:`dump` does, into one archive written to ``stream``."""
    intents = _plan(client, db, collection, query, dump_db_users_and_roles, oplog)
    start = window_start(client) if oplog else None
    entries = [
        Entry(
            intent.db,
            intent.name,
            metadata_json(client[intent.source_db], intent.info) if intent.info is not None else "",
            str(intent.info.get("type", "collection")) if intent.info is not None else "",
        )
        for intent in intents
    ]
    if start is not None:
        entries.append(Entry(OPLOG_DB, OPLOG_COLLECTION, "", ""))  # last, as mongodump's Intents() lists it
    writer = ArchiveWriter(stream, Header(server_version=_server_version(client), tool_version=TOOL_VERSION), entries)
    report = DumpReport()
    for intent in _data_order(intents):
        if intent.is_view:
            writer.namespace(intent.db, intent.name, ())
            report.views.append(intent.namespace)
            reporter.note(f"dumped view {intent.namespace}")
            continue
        count = writer.namespace(intent.db, intent.name, _documents(client, intent, reporter))
        report.documents[intent.namespace] = count
        reporter.note(f"done dumping {intent.namespace} ({count} documents)")
    if start is not None:
        report.oplog = writer.namespace(OPLOG_DB, OPLOG_COLLECTION, window(client, start))
        reporter.note(f"dumped {report.oplog} oplog entries")
    return report


def _plan(
    client: Any,
    db: str | None,
    collection: str | None,
    query: Mapping[str, Any] | None,
    dump_db_users_and_roles: bool,
    oplog: bool = False,
) -> list[_Intent]:
    if oplog and db is not None:
        raise ValueError("--oplog mode only supported on full dumps")
    if collection is not None and db is None:
        raise ValueError("a collection can only be named together with its database")
    if dump_db_users_and_roles and (db is None or collection is not None):
        raise ValueError("dumping a database's users and roles needs that database, and no collection")
    names = [db] if db is not None else [n for n in client.list_database_names() if n not in SKIPPED_DATABASES]
    intents: list[_Intent] = []
    for name in names:
        for info in client[name].list_collections():
            coll_name = info["name"]
            if collection is not None:
                if coll_name != collection:
                    continue
            elif _skipped_system(name, coll_name):
                continue
            intents.append(_Intent(name, coll_name, name, coll_name, info, query or {}))
    if dump_db_users_and_roles and db != "admin":
        assert db is not None
        for source in USER_COLLECTIONS:
            selector = {} if source == "system.version" else {"db": db}
            intents.append(_Intent(db, f"$admin.{source}", "admin", source, None, selector))
    return intents


def _skipped_system(db: str, name: str) -> bool:
    """mongodump's shouldSkipSystemNamespace, for the databases FolioDB can hold."""
    if db == "admin":
        return name == "system.keys"
    return name.startswith("system.") and name != "system.js"


def _data_order(intents: list[_Intent]) -> list[_Intent]:
    """Users, roles and the auth version first, then the rest in discovery order, as mongodump writes them."""

    def rank(intent: _Intent) -> int:
        if intent.source_db == "admin" and intent.source in USER_COLLECTIONS:
            return USER_COLLECTIONS.index(intent.source)
        return len(USER_COLLECTIONS)

    return sorted(intents, key=rank)


def _documents(client: Any, intent: _Intent, reporter: Reporter) -> Iterator[bytes]:
    raw = client[intent.source_db].get_collection(intent.source, codec_options=_RAW)
    total = None if intent.filter else raw.estimated_document_count()
    with reporter.task(intent.namespace, total) as task:
        for doc in raw.find(intent.filter):
            yield doc.raw
            task.advance(1)


def metadata_json(database: Any, info: Mapping[str, Any]) -> str:
    """A namespace's ``.metadata.json`` text, as mongodump's Metadata struct marshals it."""
    return json_util.dumps(metadata(database, info), json_options=_CANONICAL, separators=(",", ":"), ensure_ascii=False)


def metadata(database: Any, info: Mapping[str, Any]) -> SON[str, Any]:
    """A namespace's metadata document (options, indexes, uuid, name, type), from its listCollections entry."""
    name = info["name"]
    document: SON[str, Any] = SON()
    options = dict(info.get("options") or {})
    if options:
        document["options"] = options
    is_view = info.get("type") == "view"
    # Index documents keep their key order: the key pattern's order is its meaning.
    document["indexes"] = [] if is_view else [SON(index.items()) for index in database[name].list_indexes()]
    uuid = (info.get("info") or {}).get("uuid")
    if isinstance(uuid, Binary):
        document["uuid"] = uuid.hex()
    document["collectionName"] = name
    document["type"] = info.get("type") or "collection"
    return document


def file_stem(name: str) -> str:
    """A collection's file name without extension, as mongodump's outputPath makes it."""
    escaped = urllib.parse.quote_plus(name, safe="")
    if len(escaped) > 238:
        digest = base64.urlsafe_b64encode(hashlib.sha1(name.encode()).digest()).rstrip(b"=").decode()
        escaped = escaped[:208] + "%24" + digest
    return escaped


def _server_version(client: Any) -> str:
    try:
        return str(client.server_info().get("version", "unknown"))
    except (PyMongoError, AttributeError):  # a peer without buildInfo: mongodump writes "unknown" then too
        return "unknown"


def _open(path: str, gzip: bool) -> IO[bytes]:
    return open_write(path + ".gz" if gzip else path, gzip)
