"""Load a dump in mongodump's directory format (from ``mongodump`` or
``foliodb dump``) through any client with pymongo's API: FolioDB's embedded
client, or pymongo connected to ``foliodb serve`` or to MongoDB itself.

As ``mongorestore`` does: collections are created with their options, then
filled in batches, then indexed from the metadata (``_id_`` comes with the
collection); a document whose ``_id`` already exists is reported and skipped,
not fatal; ``drop`` drops each collection first; views are created last,
since they may read other collections. ``.gz`` files are read as gzip.

Format: https://www.mongodb.com/docs/database-tools/mongorestore/
"""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import bson
from bson import json_util
from bson.raw_bson import RawBSONDocument
from pymongo import IndexModel
from pymongo.errors import BulkWriteError

BATCH_DOCUMENTS = 1000
BATCH_BYTES = 16 * 1024 * 1024
_DUPLICATE_KEY = 11000


@dataclass
class RestoreReport:
    documents: dict[str, int] = field(default_factory=dict)  # restored, per namespace
    failures: dict[str, int] = field(default_factory=dict)  # refused (duplicate _id...), per namespace
    indexes: dict[str, int] = field(default_factory=dict)
    views: list[str] = field(default_factory=list)


def restore(client: Any, source: str, drop: bool = False) -> RestoreReport:
    """Restore every ``<db>/<collection>`` under the dump directory ``source``."""
    if not os.path.isdir(source):
        raise FileNotFoundError(f"no dump directory at {source!r}")
    report = RestoreReport()
    views: list[tuple[str, dict[str, Any]]] = []
    for db_name in sorted(os.listdir(source)):
        directory = os.path.join(source, db_name)
        if not os.path.isdir(directory):
            continue
        for coll_name, metadata_path, data_path in _collections(directory):
            metadata = _read_metadata(metadata_path) if metadata_path else {}
            options = dict(metadata.get("options") or {})
            if "viewOn" in options:
                views.append((db_name, {"name": coll_name, **options}))
                continue
            _restore_collection(client[db_name], coll_name, options, metadata, data_path, drop, report)
    for db_name, view in views:
        database = client[db_name]
        name = view.pop("name")
        if drop:
            database.drop_collection(name)
        database.create_collection(name, **view)
        report.views.append(f"{db_name}.{name}")
    return report


def _collections(directory: str) -> Iterator[tuple[str, str | None, str | None]]:
    """``(collection, metadata file, data file)`` for each collection in a database directory."""
    found: dict[str, dict[str, str]] = {}
    for filename in os.listdir(directory):
        bare = filename.removesuffix(".gz")
        for suffix, kind in ((".metadata.json", "metadata"), (".bson", "data")):
            if bare.endswith(suffix):
                found.setdefault(bare.removesuffix(suffix), {})[kind] = os.path.join(directory, filename)
    for name in sorted(found):
        if name.startswith("system."):
            continue  # system.users, system.views...: mongorestore handles them separately
        files = found[name]
        yield name, files.get("metadata"), files.get("data")


def _open(path: str) -> io.BufferedIOBase:
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def _read_metadata(path: str) -> dict[str, Any]:
    with _open(path) as fh:
        metadata: dict[str, Any] = json_util.loads(fh.read().decode())
    return metadata


def _restore_collection(
    database: Any,
    name: str,
    options: dict[str, Any],
    metadata: dict[str, Any],
    data_path: str | None,
    drop: bool,
    report: RestoreReport,
) -> None:
    ns = f"{database.name}.{name}"
    if drop:
        database.drop_collection(name)
    if name not in database.list_collection_names(filter={"name": name}):
        database.create_collection(name, **options)
    coll = database[name]
    restored = failed = 0
    if data_path is not None:
        for batch in _batches(data_path):
            try:
                restored += len(coll.insert_many(batch, ordered=False).inserted_ids)
            except BulkWriteError as exc:
                details = exc.details
                restored += details["nInserted"]
                failed += len(details["writeErrors"])
                other = [e for e in details["writeErrors"] if e["code"] != _DUPLICATE_KEY]
                if other:
                    raise
    report.documents[ns] = restored
    if failed:
        report.failures[ns] = failed
    models = []
    for spec in metadata.get("indexes", []):
        spec = dict(spec)
        if spec.get("name") == "_id_":
            continue
        key = list(spec.pop("key").items())
        spec.pop("v", None)
        spec.pop("ns", None)  # written by servers before 4.4
        models.append(IndexModel(key, **spec))
    if models:
        coll.create_indexes(models)
    report.indexes[ns] = len(models)


def _batches(path: str) -> Iterator[list[RawBSONDocument]]:
    """The file's documents, read one length-prefixed BSON document at a time."""
    batch: list[RawBSONDocument] = []
    size = 0
    with _open(path) as fh:
        while header := fh.read(4):
            length = int.from_bytes(header, "little", signed=True)
            if len(header) < 4 or length < 5:
                raise ValueError(f"{path}: corrupt BSON document length {length}")
            body = fh.read(length - 4)
            if len(body) < length - 4:
                raise ValueError(f"{path}: truncated BSON document")
            batch.append(RawBSONDocument(header + body, bson.CodecOptions(document_class=RawBSONDocument)))
            size += length
            if len(batch) >= BATCH_DOCUMENTS or size >= BATCH_BYTES:
                yield batch
                batch, size = [], 0
    if batch:
        yield batch
