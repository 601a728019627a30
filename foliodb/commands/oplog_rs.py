"""``local.oplog.rs``: the oplog, read as the capped collection tools tail.

A ``find`` on ``local.oplog.rs`` (tailable and ``awaitData`` or not, in
natural order either way, with a filter, projection, skip and limit; sorted on
fields, not tailable, through a blocking sort) reads the oplog table, each entry in mongod's shape:

    {op, ns, ui, o, o2, ts, t, v: 2, wall, lsid?, txnNumber?}

with one departure: an update's ``o`` is the whole document after it (a
replacement, which any applier applies to the same result) rather than
mongod's ``$v: 2`` diff. The documents before writes, which FolioDB keeps
for change streams, are not shown. A filter on ``ts`` ($gt, $gte) starts
the read there; every filter is applied as usual. Nothing can create or
write to it (engine.validate_collection_name).

``count`` (so ``estimatedDocumentCount``), collStats, ``$collStats`` and the
``local`` database's dbStats count its entries (a transaction is one
``applyOps`` entry); sizes are those of the stored entries, which hold the
documents before updates and deletes too.

Manual: https://www.mongodb.com/docs/manual/core/replica-set-oplog/
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from bson import Timestamp

from foliodb.commands.tailable import PositionedRows
from foliodb.engine.engine import Engine
from foliodb.engine.oplog import Oplog, decoded, pack
from foliodb.engine.query import FindSpec
from foliodb.engine.sorter import sort_documents
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.context import Context
from foliodb.query.projection import compile_projection
from foliodb.query.sort import compile_sort

NAME = "oplog.rs"
BATCH = 256
_SHOWN = ("op", "ns", "ui", "o", "o2", "ts", "t", "v", "wall", "lsid", "txnNumber")


def is_oplog(db: str, name: str) -> bool:
    return db == "local" and name == NAME


def rendered(entry: Mapping[str, Any], inner: bool = False) -> dict[str, Any]:
    """A stored entry as mongod shows it; ``inner``: an op inside a transaction's applyOps."""
    shown = dict(entry) if inner else dict(entry, v=2)
    o = shown.get("o")
    if shown.get("op") == "c" and isinstance(o, Mapping) and "applyOps" in o:
        shown["o"] = {"applyOps": [rendered(op, inner=True) for op in o["applyOps"]]}
    return {key: shown[key] for key in _SHOWN if key in shown}


def _start_after(filter_spec: Mapping[str, Any] | None) -> int:
    """The packed time the filter's top-level ``ts`` bound lets the read skip to (0: the start)."""
    bound = filter_spec.get("ts") if filter_spec else None
    if isinstance(bound, Mapping):
        if isinstance(bound.get("$gt"), Timestamp):
            return pack(bound["$gt"])
        if isinstance(bound.get("$gte"), Timestamp):
            return max(pack(bound["$gte"]) - 1, 0)
    return 0


class _Entries(PositionedRows):
    """Rendered entries in one direction (positions: packed cluster times)."""

    def __init__(self, engine: Engine, spec: FindSpec, ctx: Context) -> None:
        super().__init__(spec, ctx)
        self.engine = engine

    def _document(self, data: bytes) -> dict[str, Any]:
        return rendered(decoded(data))


class OldestFirst(_Entries):
    """Natural order: tailable when asked, like any capped collection's cursor."""

    def __init__(self, engine: Engine, spec: FindSpec, ctx: Context, tailable: bool) -> None:
        super().__init__(engine, spec, ctx)
        self.tailable = tailable
        self.last = _start_after(spec.filter)  # the packed time of the last entry read

    def _more(self) -> list[tuple[int, bytes]]:
        storage = self.engine.storage
        if self.tailable and self.last and self.last < storage.oplog.trimmed_through:
            raise CommandError(
                ErrorCode.CappedPositionLost,
                f"CollectionScan died due to position in capped collection being deleted. Last seen: {self.last}",
            )
        return Oplog.entries_after(storage.reader(), self.last, BATCH)


class NewestFirst(_Entries):
    """``sort({$natural: -1})``: never tailable, as mongod's."""

    last = (1 << 63) - 1

    def _more(self) -> list[tuple[int, bytes]]:
        rows: list[tuple[int, bytes]] = (
            self.engine.storage.reader()
            .execute("SELECT ts, entry FROM oplog WHERE ts < ? ORDER BY ts DESC LIMIT ?", (self.last, BATCH))
            .fetchall()
        )
        return rows


def _sorted(engine: Engine, spec: FindSpec, ctx: Context) -> Iterator[dict[str, Any]]:
    """A find sorted on fields (``sort({ts: -1})``): the matching entries through a blocking sort,
    as mongod sorts any collection's documents."""
    sort = compile_sort(spec.sort)
    entries = OldestFirst(engine, FindSpec(filter=spec.filter), ctx, tailable=False)
    ordered = sort_documents(entries, sort.key, skip=spec.skip, limit=spec.limit, allow_disk_use=spec.allow_disk_use)
    projection = compile_projection(spec.projection, ctx, find=True) if spec.projection else None
    return ordered if projection is None else (projection.apply(entry) for entry in ordered)


def oplog_find(engine: Engine, spec: FindSpec, ctx: Context, tailable: bool) -> Iterator[dict[str, Any]]:
    """The source of a find on ``local.oplog.rs``, after mongod's checks on its sort."""
    natural = dict(spec.sort) if spec.sort else {"$natural": 1}
    if set(natural) != {"$natural"}:
        if tailable:
            raise CommandError(ErrorCode.BadValue, "cannot use tailable option with a sort other than {$natural: 1}")
        return _sorted(engine, spec, ctx)
    if natural["$natural"] not in (1, -1):
        raise CommandError(ErrorCode.BadValue, "$natural sort cannot be set to a value other than -1 or 1")
    if natural["$natural"] == -1:
        if tailable:
            raise CommandError(ErrorCode.BadValue, "cannot use tailable option with a sort other than {$natural: 1}")
        return NewestFirst(engine, spec, ctx)
    return OldestFirst(engine, spec, ctx, tailable)


def collection_entry(engine: Engine) -> dict[str, Any]:
    """Its listCollections entry: a capped collection of the oplog's size bound."""
    size = engine.storage.oplog.size_bytes
    return {
        "name": NAME,
        "type": "collection",
        "options": {"capped": True, "size": size, "autoIndexId": False},
        "info": {"readOnly": False},
    }


def oplog_count(engine: Engine, query: Mapping[str, Any] | None, skip: int, limit: int | None, ctx: Context) -> int:
    """The count command on the oplog: its entries matching ``query``, after ``skip``, at most ``limit``."""
    if not query or set(query) == {"$comment"}:
        found = int(engine.storage.reader().execute("SELECT count(*) FROM oplog").fetchone()[0])
    else:
        enough = None if limit is None else skip + limit
        found = 0
        for _ in OldestFirst(engine, FindSpec(filter=query), ctx, tailable=False):
            found += 1
            if found == enough:
                break
    left = max(found - skip, 0)
    return left if limit is None else min(left, limit)


def data_stats(engine: Engine) -> tuple[int, int, int]:
    """(entries, their bytes, bytes of the pages holding them)."""
    storage = engine.storage
    count, size = storage.reader().execute("SELECT count(*), coalesce(sum(length(entry)), 0) FROM oplog").fetchone()
    pages = storage.table_bytes("oplog")
    return int(count), int(size), int(size if pages is None else pages)


def storage_stats(engine: Engine, scale: int) -> dict[str, Any]:
    """collStats' (and ``$collStats``' ``storageStats``) fields for the oplog: a capped collection without indexes."""
    count, size, pages = data_stats(engine)
    out: dict[str, Any] = {"size": size // scale, "count": count}
    if count:
        out["avgObjSize"] = size // count
    out.update(
        numOrphanDocs=0,
        storageSize=pages // scale,
        capped=True,
        max=0,
        maxSize=engine.storage.oplog.size_bytes // scale,
        nindexes=0,
        indexBuilds=[],
        totalIndexSize=0,
        totalSize=pages // scale,
        indexSizes={},
        scaleFactor=scale,
    )
    return out
