"""``dbHash``, as mongod's (src/mongo/db/commands/dbhash.cpp): an MD5 of each collection's
documents, to check that two copies of a database hold the same data (a migration, a
restore, a replica's members).

A collection's hash is the MD5 of its documents' BSON, one after another, in ``_id`` order
(mongod reads them through the ``_id`` index); the database's ``md5`` is the MD5 of the
collections' hex hashes in name order. FolioDB stores each document's BSON as it was written,
so the same documents hash the same as in mongod. Views are no collections and are left
out, as are the collections mongod does not replicate (the ``local`` database,
``system.profile``) and ``tmp.mr.`` ones; ``collections`` names the ones to hash. It reads
one snapshot, and stops at ``maxTimeMS`` or ``killOp``.
"""

from __future__ import annotations

import hashlib
import socket
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bson import Int64
from bson.binary import Binary, UuidRepresentation

from foliodb.commands import params
from foliodb.commands.registry import COMMANDS
from foliodb.engine.planner.bounds import KeyRange
from foliodb.engine.planner.plans import IndexScan
from foliodb.engine.records import CollectionStore
from foliodb.errors import CommandError, ErrorCode

if TYPE_CHECKING:
    from foliodb.commands.executor import Request

_EVERY_KEY = [KeyRange(b"", None)]


def _hash_collection(store: CollectionStore) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    for _rid, data in IndexScan(store, store.info.id_index, _EVERY_KEY, 1, {}).rows():  # checks for interruption
        digest.update(data)
    return digest.hexdigest()


def _hashed(db: str, name: str) -> bool:
    """Whether mongod's dbHash hashes this collection: replicated, and no incremental mapReduce's."""
    return db != "local" and name != "system.profile" and not name.startswith("tmp.mr.")


@COMMANDS.register("dbHash", "dbhash")
def cmd_dbHash(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    wanted: set[str] | None = None
    listed = params.field(cmd, "collections", "array", "dbHash")
    if listed:
        if not all(isinstance(name, str) for name in listed):
            raise CommandError(ErrorCode.BadValue, "collections entries have to be strings")
        wanted = set(listed)
    hashes: dict[str, str] = {}
    uuids: dict[str, Binary] = {}
    capped: list[str] = []
    engine, db = request.engine, request.db
    for info in sorted(engine.collections(db), key=lambda info: info.name):
        name = info.name
        if info.is_view or not _hashed(db, name) or (wanted is not None and name not in wanted):
            continue
        store = engine.store(db, name)
        if store is None:
            continue
        if info.options.get("capped"):
            capped.append(name)
        uuids[name] = Binary.from_uuid(info.uuid, UuidRepresentation.STANDARD)
        hashes[name] = _hash_collection(store)
    overall = hashlib.md5(usedforsecurity=False)
    for digest in hashes.values():  # in name order, as mongod's std::map
        overall.update(digest.encode())
    return {
        "host": socket.gethostname(),
        "collections": hashes,
        "capped": capped,
        "uuids": uuids,
        "md5": overall.hexdigest(),
        "timeMillis": Int64(int((time.perf_counter() - started) * 1000)),
        "ok": 1.0,
    }
