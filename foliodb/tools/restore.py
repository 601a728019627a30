"""Load a dump in mongodump's formats (from ``mongodump`` or ``foliodb dump``):
a directory, or an archive (:mod:`foliodb.tools.archive`), through any client
with pymongo's API: FolioDB's embedded client, or pymongo connected to
``foliodb serve`` or to MongoDB itself.

As ``mongorestore`` does:

- each namespace is created with its options (or, with ``drop``, dropped and
  created), then filled with ``insert_many(ordered=False)`` batches of at most
  1,000 documents or 16 MiB, then indexed from its metadata (``_id_`` comes
  with the collection); views are created last, since they read other
  collections;
- into an existing collection, a document whose ``_id`` is already there is
  counted as skipped and the rest go on; an existing view is left as it is
  and reported; so a second restore without ``drop`` succeeds;
- ``include`` / ``exclude`` patterns select source namespaces and
  ``renames`` (``--nsFrom``/``--nsTo`` pairs) move them
  (:mod:`foliodb.tools.namespaces`);
- users and roles (``admin.system.users``, ``admin.system.roles``) are
  restored with a full dump, and a database's ``$admin.system.*`` files (from
  ``--dumpDbUsersAndRoles``) with ``restore_db_users_and_roles``: through
  ``_mergeAuthzCollections`` from temporary collections, as mongorestore
  does, or, where the server has no such command (FolioDB), by writing the
  user documents themselves; ``admin.system.version`` is not restored;
- other ``system.*`` collections are skipped; MongoDB's time-series buckets
  (``system.buckets.*``) are reported as not restored;
- with ``oplog_replay``, the dump's oplog (``oplog.bson``, an archive's
  ``.oplog``) is applied after the views and users, and the dump's indexes
  are built after it (:mod:`foliodb.tools.oplog`).

Documents reach an embedded client decoded once per batch (``decode_all``);
a pymongo client gets them as ``RawBSONDocument`` and sends their bytes
as they are.

Format: https://www.mongodb.com/docs/database-tools/mongorestore/
"""

from __future__ import annotations

import os
import tempfile
import threading
import urllib.parse
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import IO, Any

import bson
from bson import Timestamp, json_util
from bson.codec_options import CodecOptions, DatetimeConversion
from bson.errors import BSONError
from bson.raw_bson import RawBSONDocument
from pymongo.errors import BulkWriteError, OperationFailure

import foliodb
from foliodb import collector
from foliodb.tools.archive import ArchiveReader, End, Segment
from foliodb.tools.files import DamagedInputError, open_read
from foliodb.tools.indexes import index_model
from foliodb.tools.namespaces import Matcher, Renamer, split
from foliodb.tools.oplog import OPLOG_FILE, OPLOG_NAMESPACE, Replayer
from foliodb.tools.progress import SILENT, Reporter

BATCH_DOCUMENTS = 1000
BATCH_BYTES = 16 * 1024 * 1024
_CHUNK = 1024 * 1024  # bytes read from a .bson file at a time
MAX_DOCUMENT_BYTES = 16 * 1024 * 1024 + 16 * 1024  # mongod's internal limit (an oplog entry may pass 16 MiB)
TEMP_USERS, TEMP_ROLES = "tempusers", "temproles"  # mongorestore's --tempUsersColl, --tempRolesColl
_DUPLICATE_KEY = 11000
_COMMAND_NOT_FOUND = 59
_DECODE = CodecOptions(document_class=dict, datetime_conversion=DatetimeConversion.DATETIME_AUTO)
_RAW = CodecOptions(document_class=RawBSONDocument)


@dataclass
class RestoreReport:
    documents: dict[str, int] = field(default_factory=dict)  # restored, per target namespace
    skipped: dict[str, int] = field(default_factory=dict)  # already there (duplicate _id), per namespace
    failures: dict[str, int] = field(default_factory=dict)  # refused for another reason, per namespace
    errors: dict[str, str] = field(default_factory=dict)  # the first such refusal, per namespace
    indexes: dict[str, int] = field(default_factory=dict)
    views: list[str] = field(default_factory=list)
    existing_views: list[str] = field(default_factory=list)  # left as they were
    users: int = 0
    roles: int = 0
    ignored: list[str] = field(default_factory=list)  # source namespaces not restored, with the reason
    unrestored: list[str] = field(default_factory=list)  # data that could not be restored, and why
    oplog: int | None = None  # oplog entries applied (None: no --oplogReplay)


@dataclass
class Options:
    """What mongorestore's options ask for (see :func:`restore`)."""

    drop: bool = False
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    renames: tuple[Sequence[str], Sequence[str]] = ((), ())
    no_index_restore: bool = False
    workers: int = 1
    restore_db_users_and_roles: bool = False
    bypass_document_validation: bool = False
    oplog_replay: bool = False  # apply the dump's oplog (--oplogReplay), then build the indexes
    oplog_limit: Timestamp | None = None  # --oplogLimit: apply the entries before it only


def restore(client: Any, source: str, options: Options | None = None, reporter: Reporter = SILENT) -> RestoreReport:
    """Restore every ``<db>/<collection>`` under the dump directory ``source``."""
    if not os.path.isdir(source):
        raise FileNotFoundError(f"no dump directory at {source!r}")
    run = Loader(client, options or Options(), reporter)
    try:
        oplog = _oplog_file(source)
        if oplog is not None and not run.options.oplog_replay:
            run.report.ignored.append(f"{oplog} (replay it with --oplogReplay)")
        elif oplog is None and run.options.oplog_replay:
            raise ValueError("no oplog file to replay; make sure you run mongodump with --oplog")
        for db_name in sorted(os.listdir(source)):
            directory = os.path.join(source, db_name)
            if not os.path.isdir(directory):
                continue
            for name, metadata_path, data_path in _directory_collections(directory):
                metadata = _read_metadata(metadata_path) if metadata_path else {}
                namespace = f"{db_name}.{metadata.get('collectionName') or name}"
                if not run.begin(namespace, metadata):
                    continue
                if data_path is not None:
                    with open_read(data_path, data_path.endswith(".gz")) as fh:
                        for data, count in _file_batches(fh, data_path):
                            run.documents(namespace, data, count)
                run.end(namespace)
        if oplog is None or not run.options.oplog_replay:
            return run.finish()
        with open_read(oplog, oplog.endswith(".gz")) as fh:
            return run.finish(data for data, _ in _file_batches(fh, oplog))
    finally:
        run.close()


def _oplog_file(source: str) -> str | None:
    for name in (OPLOG_FILE, OPLOG_FILE + ".gz"):
        if os.path.isfile(os.path.join(source, name)):
            return os.path.join(source, name)
    return None


def restore_archive(
    client: Any, stream: IO[bytes], options: Options | None = None, reporter: Reporter = SILENT
) -> RestoreReport:
    """Restore a mongodump archive read from ``stream`` (already decompressed)."""
    reader = ArchiveReader(stream, BATCH_DOCUMENTS, BATCH_BYTES)
    run = Loader(client, options or Options(), reporter)
    oplog = tempfile.SpooledTemporaryFile(max_size=BATCH_BYTES)  # noqa: SIM115 - closed below
    try:
        wanted: dict[str, bool] = {}
        for entry in reader.entries:
            if entry.namespace == OPLOG_NAMESPACE:
                wanted[entry.namespace] = run.options.oplog_replay
                if not run.options.oplog_replay:
                    run.report.ignored.append("the archive's oplog (replay it with --oplogReplay)")
                continue
            where = f"the archive's metadata of {entry.namespace}"
            metadata = _metadata(entry.metadata, where) if entry.metadata else {}
            wanted[entry.namespace] = run.begin(entry.namespace, metadata)
        if run.options.oplog_replay and OPLOG_NAMESPACE not in wanted:
            raise ValueError("no oplog in the archive to replay; make sure you run mongodump with --oplog")
        for block in reader.blocks():
            if block.namespace not in wanted:
                # Data of a namespace the prelude does not list (MongoDB's time-series buckets,
                # system.buckets.<name>): restored or reported as a directory's file would be.
                wanted[block.namespace] = run.begin(block.namespace, {})
            if not wanted[block.namespace]:
                continue
            if block.namespace == OPLOG_NAMESPACE:
                if isinstance(block, Segment):
                    oplog.write(block.data)  # replayed at the end, once every collection is restored
                continue
            if isinstance(block, Segment):
                run.documents(block.namespace, block.data, block.count)
            elif isinstance(block, End):
                run.end(block.namespace)
        if not wanted.get(OPLOG_NAMESPACE):
            return run.finish()
        oplog.seek(0)
        return run.finish(data for data, _ in _file_batches(oplog, "the archive's oplog"))
    finally:
        oplog.close()
        run.close()


@dataclass
class _Namespace:
    source: str
    target: str
    metadata: dict[str, Any]
    collection: Any = None
    kind: str = "collection"  # "collection", "view", "users", "roles"
    buffered: list[bytes] = field(default_factory=list)  # users and roles wait for the end (BSON runs)
    buffered_count: int = 0
    pending: list[Future[None]] = field(default_factory=list)


class Loader:
    """One restore: namespaces are begun, fed batches, ended; views and users come last.
    ``foliodb sync`` copies through it too (:mod:`foliodb.tools.sync`)."""

    def __init__(self, client: Any, options: Options, reporter: Reporter, verb: str = "restored") -> None:
        self.client = client
        self.verb = verb  # in the notes: "restored", or "copied" for sync
        self.options = options
        self.reporter = reporter
        self.include = Matcher(options.include)
        self.exclude = Matcher(options.exclude)
        self.renamer = Renamer(*options.renames)
        self.report = RestoreReport()
        self.namespaces: dict[str, _Namespace] = {}
        self.codec = _RAW if _speaks_wire(client) else _DECODE
        self.pool = ThreadPoolExecutor(options.workers) if options.workers > 1 else None
        self.counting = threading.Lock()
        self.deferred: list[_Namespace] = []  # indexed after the oplog's replay
        if options.oplog_replay:  # mongorestore's checks: the oplog names the dump's namespaces
            for given, what in ((options.include, "includes"), (options.exclude, "excludes")):
                if given:
                    raise ValueError(f"cannot use --oplogReplay with {what} specified")
            if any(options.renames):
                raise ValueError("cannot use --oplogReplay with namespace renames specified")

    # -- per namespace ------------------------------------------------------------

    def begin(self, namespace: str, metadata: dict[str, Any]) -> bool:
        """Prepare a source namespace; False when it is not restored."""
        db, name = split(namespace)
        kind = self._kind(db, name)
        if kind is None:
            return False
        if (self.include and not self.include.matches(namespace)) or self.exclude.matches(namespace):
            return False
        if kind in ("users", "roles"):
            self.namespaces[namespace] = _Namespace(namespace, namespace, metadata, kind=kind)
            return True
        target = self.renamer.rename(namespace)
        target_db, target_name = split(target)
        database = self.client[target_db]
        options = dict(metadata.get("options") or {})
        state = _Namespace(namespace, target, metadata)
        if "viewOn" in options:
            state.kind = "view"
        else:
            if self.options.drop:
                database.drop_collection(target_name)
            if not database.list_collection_names(filter={"name": target_name}):
                database.create_collection(target_name, **options)
            state.collection = database.get_collection(target_name, codec_options=self.codec)
            self.report.documents.setdefault(target, 0)
        self.namespaces[namespace] = state
        return True

    def _kind(self, db: str, name: str) -> str | None:
        if db == "admin" and name in ("system.users", "system.roles"):
            return name.removeprefix("system.")
        if name in ("$admin.system.users", "$admin.system.roles"):
            if self.options.restore_db_users_and_roles:
                return name.removeprefix("$admin.system.")
            self.report.ignored.append(f"{db}.{name} (restore it with --restoreDbUsersAndRoles)")
            return None
        if name.startswith("system.buckets."):
            # mongodump's time-series data (before MongoDB 8.3): buckets, which FolioDB does not unpack.
            self.report.unrestored.append(
                f"{db}.{name}: MongoDB's time-series buckets are not restored"
                f" ({db}.{name.removeprefix('system.buckets.')} is left without them)"
            )
            return None
        if name.startswith(("system.", "$admin.")):
            self.report.ignored.append(f"{db}.{name} (a system collection)")
            return None
        return "collection"

    def documents(self, namespace: str, data: bytes, count: int) -> None:
        """A batch of the namespace's documents: ``count`` of them, their BSON concatenated."""
        state = self.namespaces[namespace]
        if state.kind in ("users", "roles"):
            state.buffered.append(data)
            state.buffered_count += count
            return
        if state.kind == "view" or not count:
            return
        if self.pool is None:
            self._insert(state, data)
        else:
            # Bounded: at most two batches a worker in flight, so memory stays flat.
            state.pending = [f for f in state.pending if not f.done()]
            while len(state.pending) >= 2 * self.options.workers:
                state.pending.pop(0).result()
            state.pending.append(self.pool.submit(self._insert, state, data))

    def _insert(self, state: _Namespace, batch: bytes) -> None:
        with collector.PAUSED:  # decoded BSON holds no cycles (foliodb/collector.py)
            documents = _decode(batch, self.codec, state.source)  # RawBSONDocuments for pymongo, else dicts
            try:
                state.collection.insert_many(
                    documents, ordered=False, bypass_document_validation=self.options.bypass_document_validation or None
                )
                inserted = len(documents)  # pymongo lists no inserted_ids for RawBSONDocuments
            except BSONError as exc:  # a RawBSONDocument's bytes are checked only when encoded
                raise _corrupt(state.source, exc) from None
            except BulkWriteError as exc:
                details = exc.details
                inserted = details["nInserted"]
                duplicates = [e for e in details["writeErrors"] if e["code"] == _DUPLICATE_KEY]
                others = [e for e in details["writeErrors"] if e["code"] != _DUPLICATE_KEY]
                self._count(self.report.skipped, state.target, len(duplicates))
                if others:
                    self._count(self.report.failures, state.target, len(others))
                    with self.counting:
                        self.report.errors.setdefault(state.target, others[0]["errmsg"])
        self._count(self.report.documents, state.target, inserted)

    def _count(self, counts: dict[str, int], key: str, n: int) -> None:
        with self.counting:  # insert workers finish batches concurrently
            counts[key] = counts.get(key, 0) + n

    def end(self, namespace: str) -> None:
        state = self.namespaces[namespace]
        for future in state.pending:
            future.result()
        state.pending = []
        if state.kind != "collection":
            return
        restored = self.report.documents.get(state.target, 0)
        skipped = self.report.skipped.get(state.target, 0)
        extra = f", {skipped} already there (duplicate _id)" if skipped else ""
        failed = self.report.failures.get(state.target, 0)
        if failed:
            extra += f", {failed} failed: {self.report.errors[state.target]}"
        indexes = 0 if self.options.no_index_restore else len(_index_specs(state))
        self.report.indexes[state.target] = indexes
        if self.options.oplog_replay:
            self.deferred.append(state)
            extra += f", {indexes} indexes after the oplog"
        else:
            self._indexes(state)
            extra += f", {indexes} indexes"
        self.reporter.note(f"{self.verb} {restored} documents to {state.target}{extra}")

    def _indexes(self, state: _Namespace) -> None:
        models = [] if self.options.no_index_restore else [index_model(spec) for spec in _index_specs(state)]
        if models:
            state.collection.create_indexes(models)

    # -- at the end -------------------------------------------------------------------

    def finish(self, oplog: Iterable[bytes] = ()) -> RestoreReport:
        """Views, then users and roles, then (``oplog_replay``) the oplog's entries (BSON runs)
        and the indexes, as mongorestore orders them."""
        for state in self.namespaces.values():
            if state.kind == "view":
                self._view(state)
        users = [s for s in self.namespaces.values() if s.kind in ("users", "roles")]
        if users:
            self._users_and_roles(users)
        if self.options.oplog_replay:
            replayer = Replayer(self.client, self.options.oplog_limit)
            for data in oplog:
                replayer.entries(data)
            replayer.flush()
            self.report.oplog = replayer.applied
            self.reporter.note(f"applied {replayer.applied} oplog entries")
            for state in self.deferred:
                self._indexes(state)
        return self.report

    def _view(self, state: _Namespace) -> None:
        db, name = split(state.target)
        database = self.client[db]
        options = dict(state.metadata.get("options") or {})
        if self.options.drop:
            database.drop_collection(name)
        elif database.list_collection_names(filter={"name": name}):
            self.report.existing_views.append(state.target)
            self.reporter.note(f"view {state.target} already exists: left as it is")
            return
        database.create_collection(name, **options)
        self.report.views.append(state.target)
        self.reporter.note(f"{self.verb} view {state.target}")

    def _users_and_roles(self, states: list[_Namespace]) -> None:
        """As mongorestore's RestoreUsersOrRoles: fill temporary collections, merge them in."""
        admin = self.client.admin
        merge: dict[str, Any] = {}
        scope = ""  # "" means every database's users, as for a full dump's admin.system.users
        for state in states:
            db, _ = split(state.target)
            if db != "admin":
                scope = db
            temp = TEMP_USERS if state.kind == "users" else TEMP_ROLES
            admin.drop_collection(temp)
            if state.buffered:
                admin[temp].insert_many(_decode(b"".join(state.buffered), _DECODE, state.source))
            merge["tempUsersCollection" if state.kind == "users" else "tempRolesCollection"] = f"admin.{temp}"
            setattr(self.report, state.kind, state.buffered_count)
        try:
            admin.command({"_mergeAuthzCollections": 1, **merge, "drop": self.options.drop, "db": scope})
        except OperationFailure as exc:
            if exc.code != _COMMAND_NOT_FOUND:
                raise
            self._write_users_and_roles(merge, scope)
        finally:
            for temp in (TEMP_USERS, TEMP_ROLES):
                admin.drop_collection(temp)
        self.reporter.note(f"restored {self.report.users} users and {self.report.roles} roles")

    def _write_users_and_roles(self, merge: dict[str, Any], scope: str) -> None:
        """What _mergeAuthzCollections does, for a server without it (FolioDB keeps users in
        ``admin.system.users`` and lets a client write them): with ``drop``, the scope's
        users are replaced; without, each dumped user replaces its namesake or is added."""
        admin = self.client.admin
        for option, target in (("tempUsersCollection", "system.users"), ("tempRolesCollection", "system.roles")):
            if option not in merge:
                continue
            temp = merge[option].removeprefix("admin.")
            if self.options.drop:
                admin[target].delete_many({"db": scope} if scope else {})
            for doc in admin[temp].find():
                admin[target].replace_one({"_id": doc["_id"]}, doc, upsert=True)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None


def _index_specs(state: _Namespace) -> list[Any]:
    return [spec for spec in state.metadata.get("indexes", []) if spec.get("name") != "_id_"]


def _decode(data: bytes, codec: CodecOptions[Any], namespace: str) -> list[Any]:
    try:
        return bson.decode_all(data, codec)
    except BSONError as exc:
        raise _corrupt(namespace, exc) from None


def _corrupt(namespace: str, exc: BSONError) -> DamagedInputError:
    return DamagedInputError(f"{namespace}: corrupt BSON document in the dump ({exc})")


def _speaks_wire(client: Any) -> bool:
    """pymongo's own client sends RawBSONDocument bytes as they are. FolioDB's embedded
    client is a subclass of it, yet decodes each RawBSONDocument in full (two decodes
    a document, a third of a restore's time): it gets dicts."""
    import pymongo

    return isinstance(client, pymongo.MongoClient) and not isinstance(client, foliodb.MongoClient)


def _directory_collections(directory: str) -> Iterator[tuple[str, str | None, str | None]]:
    """``(collection, metadata file, data file)`` for each collection in a database directory."""
    found: dict[str, dict[str, str]] = {}
    for filename in os.listdir(directory):
        bare = filename.removesuffix(".gz")
        for suffix, kind in ((".metadata.json", "metadata"), (".bson", "data")):
            if bare.endswith(suffix):
                found.setdefault(bare.removesuffix(suffix), {})[kind] = os.path.join(directory, filename)
    for stem in sorted(found):
        files = found[stem]
        yield urllib.parse.unquote_plus(stem), files.get("metadata"), files.get("data")


def _read_metadata(path: str) -> dict[str, Any]:
    with open_read(path, path.endswith(".gz")) as fh:
        return _metadata(fh.read(), path)


def _metadata(text: bytes | str, where: str) -> dict[str, Any]:
    """A ``.metadata.json`` document; DamagedInputError when it is not one."""
    try:
        metadata = json_util.loads(text)
    except (ValueError, TypeError, BSONError) as exc:
        raise DamagedInputError(f"{where}: not valid Extended JSON metadata ({str(exc).splitlines()[0]})") from None
    if not isinstance(metadata, dict):
        raise DamagedInputError(f"{where}: the metadata is not a JSON document")
    return metadata


def _file_batches(fh: IO[bytes], path: str) -> Iterator[tuple[bytes, int]]:
    """The file's documents in batches ``(BSON, count)``, read a chunk at a time and cut
    at document boundaries: no read or copy per document."""
    buffer, pos, count, eof = b"", 0, 0, False  # the batch so far is buffer[:pos], count documents
    while not eof:
        more = fh.read(_CHUNK)
        eof = not more
        buffer += more
        while pos + 4 <= len(buffer):
            length = int.from_bytes(buffer[pos : pos + 4], "little", signed=True)
            if not 5 <= length <= MAX_DOCUMENT_BYTES:
                raise DamagedInputError(f"{path}: corrupt BSON document length {length}")
            if count and pos + length > BATCH_BYTES:
                yield buffer[:pos], count
                buffer, pos, count = buffer[pos:], 0, 0
                continue
            if pos + length > len(buffer):
                break  # the document continues in the next chunk
            pos += length
            count += 1
            if count == BATCH_DOCUMENTS:
                yield buffer[:pos], count
                buffer, pos, count = buffer[pos:], 0, 0
    if pos < len(buffer):
        raise DamagedInputError(f"{path}: truncated BSON document (the file is cut short)")
    if count:
        yield buffer[:pos], count
