"""Write databases in mongodump's directory format, so ``mongorestore`` loads
them into any MongoDB deployment.

Layout (as mongodump 100.x writes it)::

    OUT/<db>/<collection>.bson             the documents, BSON concatenated, natural order
    OUT/<db>/<collection>.metadata.json    canonical Extended JSON:
                                           {options, indexes, uuid, collectionName, type}

A view has only its metadata file (``options`` holds ``viewOn`` and
``pipeline``). With ``gzip`` every file gets a ``.gz`` suffix, as with
``mongodump --gzip``. System collections and the ``admin``, ``config`` and
``local`` databases are left out unless named, as mongodump does.

The source is any client with pymongo's API: FolioDB's embedded client, or
pymongo connected to ``foliodb serve`` or to MongoDB itself.

Format: https://www.mongodb.com/docs/database-tools/mongodump/#output
"""

from __future__ import annotations

import gzip as gzip_module
import io
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import bson
from bson import json_util
from bson.binary import Binary
from bson.raw_bson import RawBSONDocument
from bson.son import SON

SYSTEM_DATABASES = ("admin", "config", "local")
_CANONICAL = json_util.JSONOptions(json_mode=json_util.JSONMode.CANONICAL)


@dataclass
class DumpReport:
    """What was written: documents per namespace, and the views."""

    documents: dict[str, int] = field(default_factory=dict)
    views: list[str] = field(default_factory=list)


def dump(
    client: Any,
    out: str,
    db: str | None = None,
    collection: str | None = None,
    query: Mapping[str, Any] | None = None,
    gzip: bool = False,
) -> DumpReport:
    """Dump every user database (or ``db``, or one ``collection`` of it) under ``out``."""
    if collection is not None and db is None:
        raise ValueError("a collection can only be named together with its database")
    report = DumpReport()
    names = [db] if db is not None else [n for n in client.list_database_names() if n not in SYSTEM_DATABASES]
    for name in names:
        database = client[name]
        directory = os.path.join(out, name)
        os.makedirs(directory, exist_ok=True)
        for info in database.list_collections():
            coll_name = info["name"]
            if (collection is not None and coll_name != collection) or (
                collection is None and coll_name.startswith("system.")
            ):
                continue
            is_view = info.get("type") == "view"
            _write_metadata(database, info, directory, gzip)
            if is_view:
                report.views.append(f"{name}.{coll_name}")
                continue
            raw = database.get_collection(coll_name, codec_options=bson.CodecOptions(document_class=RawBSONDocument))
            count = 0
            with _open(os.path.join(directory, f"{coll_name}.bson"), gzip) as fh:
                for doc in raw.find(query or {}):
                    fh.write(doc.raw)
                    count += 1
            report.documents[f"{name}.{coll_name}"] = count
    return report


def _write_metadata(database: Any, info: Mapping[str, Any], directory: str, gzip: bool) -> None:
    name = info["name"]
    metadata: SON[str, Any] = SON()
    options = dict(info.get("options") or {})
    if options:
        metadata["options"] = options
    is_view = info.get("type") == "view"
    # Index documents keep their key order: the key pattern's order is its meaning.
    metadata["indexes"] = [] if is_view else [SON(index.items()) for index in database[name].list_indexes()]
    uuid = (info.get("info") or {}).get("uuid")
    if isinstance(uuid, Binary):
        metadata["uuid"] = uuid.hex()
    metadata["collectionName"] = name
    metadata["type"] = "view" if is_view else "collection"
    with _open(os.path.join(directory, f"{name}.metadata.json"), gzip) as fh:
        fh.write(json_util.dumps(metadata, json_options=_CANONICAL).encode())


def _open(path: str, gzip: bool) -> io.BufferedIOBase:
    if gzip:
        return gzip_module.open(path + ".gz", "wb")
    return open(path, "wb")
