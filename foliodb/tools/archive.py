"""mongodump's archive format (``mongodump --archive``), read and written.

As mongo-tools defines it (``common/archive/spec.md``, ``prelude.go``,
``multiplexer.go``, ``parser.go``)::

    archive   = magic header *collection-metadata terminator *(segment | eof)
    magic     = 6d e2 99 81                  (0x8199e26d, little-endian)
    header    = {concurrent_collections: int32, version: "0.1",
                 server_version: string, tool_version: string}
    collection-metadata = {db, collection, metadata: string, size: int32, type: string}
    segment   = {db, collection, EOF: false, CRC: int64 0} +document terminator
    eof       = {db, collection, EOF: true, CRC: int64 <sum>} terminator
    terminator = ff ff ff ff

``metadata`` is the namespace's ``.metadata.json`` text (canonical Extended
JSON). A namespace's documents may come in several segments, interleaved with
other namespaces'; its EOF block carries the CRC-64/ECMA of all its document
bytes (:mod:`foliodb.tools.crc64`), which the reader checks. ``--gzip`` with
an archive compresses the whole stream.

As mongodump writes it, and so as :class:`ArchiveWriter` does: every
namespace in the prelude, views included, gets one segment (possibly empty:
``MuxIn.Close`` flushes its buffer even when nothing was written, and
``dumpValidatedQueryToIntent`` opens a view's file "as the trigger to create
the view") and then its EOF block; ``size`` is 0 (``NewPrelude`` never sets
it, and mongorestore orders an archive's namespaces by the archive itself,
its demultiplexer's prioritizer, not by size). The writer emits one namespace
at a time, so its archives hold one segment per namespace and declare
``concurrent_collections`` 1.

The reader takes any ``size``, and a view with no blocks at all (it holds no
data). As mongorestore's demultiplexer (``Demultiplexer.End``), it refuses an
archive that ends before every collection of the prelude has had its EOF
block: one cut at a block boundary would otherwise lose the rest silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import bson
from bson import Int64
from bson.errors import BSONError
from bson.son import SON

from foliodb.tools import crc64

MAGIC = (0x8199E26D).to_bytes(4, "little")
TERMINATOR = b"\xff\xff\xff\xff"
FORMAT_VERSION = "0.1"
MAX_BSON_SIZE = 16 * 1024 * 1024
_MIN_BSON_SIZE = 5


class ArchiveError(ValueError):
    """The stream is not a mongodump archive, or it is corrupt."""


@dataclass(frozen=True)
class Entry:
    """One namespace of the prelude."""

    db: str
    collection: str
    metadata: str  # the .metadata.json text; "" when mongodump had none
    type: str  # "collection", "view", "timeseries" or ""

    @property
    def namespace(self) -> str:
        return f"{self.db}.{self.collection}"


@dataclass(frozen=True)
class Header:
    server_version: str
    tool_version: str
    concurrent_collections: int = 1
    version: str = FORMAT_VERSION


def _int64_bits(value: int) -> Int64:
    """A CRC (an unsigned 64-bit sum) as the int64 with its bits, as mongo-tools marshals it."""
    return Int64(value - (1 << 64) if value >= 1 << 63 else value)


class ArchiveWriter:
    """Writes the prelude at once, then one namespace at a time."""

    def __init__(self, out: IO[bytes], header: Header, entries: Iterable[Entry]) -> None:
        self.out = out
        out.write(MAGIC)
        out.write(
            bson.encode(
                SON(
                    [
                        ("concurrent_collections", header.concurrent_collections),
                        ("version", header.version),
                        ("server_version", header.server_version),
                        ("tool_version", header.tool_version),
                    ]
                )
            )
        )
        for entry in entries:
            out.write(
                bson.encode(
                    SON(
                        [
                            ("db", entry.db),
                            ("collection", entry.collection),
                            ("metadata", entry.metadata),
                            ("size", 0),  # mongodump never fills it in
                            ("type", entry.type),
                        ]
                    )
                )
            )
        out.write(TERMINATOR)

    def namespace(self, db: str, collection: str, documents: Iterable[bytes]) -> int:
        """Write a namespace's documents (raw BSON) and its EOF block; return how many."""
        out = self.out
        out.write(_namespace_header(db, collection, False, 0))
        crc = count = 0
        pending: list[bytes] = []
        for raw in documents:
            pending.append(raw)
            count += 1
            if len(pending) >= 1000:
                crc = self._flush(pending, crc)
        crc = self._flush(pending, crc)
        out.write(TERMINATOR)
        out.write(_namespace_header(db, collection, True, crc))
        out.write(TERMINATOR)
        return count

    def _flush(self, pending: list[bytes], crc: int) -> int:
        """Write the pending documents; the CRC with them, summed in one call."""
        block = b"".join(pending)
        pending.clear()
        self.out.write(block)
        return crc64.update(crc, block)


def _decode(raw: bytes, what: str) -> dict[str, Any]:
    try:
        return bson.decode(raw)
    except BSONError as exc:
        raise ArchiveError(f"corruption found in archive; invalid {what} ({exc})") from None


def _namespace_header(db: str, collection: str, eof: bool, crc: int) -> bytes:
    return bson.encode(SON([("db", db), ("collection", collection), ("EOF", eof), ("CRC", _int64_bits(crc))]))


@dataclass
class Segment:
    """A run of one namespace's documents: their BSON, concatenated, and how many."""

    db: str
    collection: str
    data: bytes
    count: int

    @property
    def namespace(self) -> str:
        return f"{self.db}.{self.collection}"


@dataclass
class End:
    """A namespace's EOF block: no more of its documents follow (the CRC matched)."""

    db: str
    collection: str

    @property
    def namespace(self) -> str:
        return f"{self.db}.{self.collection}"


class ArchiveReader:
    """Reads the prelude on construction; :meth:`blocks` then streams the rest.

    ``batch`` and ``batch_bytes`` bound a :class:`Segment`: a long segment
    comes out as several, so a reader never holds more of it than that."""

    def __init__(self, stream: IO[bytes], batch: int = 1000, batch_bytes: int = MAX_BSON_SIZE) -> None:
        self.stream = stream
        self.batch = batch
        self.batch_bytes = batch_bytes
        if self._read(4) != MAGIC:
            raise ArchiveError("stream or file does not appear to be a mongodump archive")
        raw = self._document_or_terminator()
        if raw is None:
            raise ArchiveError("corruption found in archive; no header")
        header = _decode(raw, "header")
        self.header = Header(
            server_version=str(header.get("server_version", "")),
            tool_version=str(header.get("tool_version", "")),
            concurrent_collections=int(header.get("concurrent_collections", 1)),
            version=str(header.get("version", "")),
        )
        if self.header.version != FORMAT_VERSION:
            raise ArchiveError(f"unsupported archive format version {self.header.version!r}")
        self.entries: list[Entry] = []
        while (raw := self._document_or_terminator()) is not None:
            doc = _decode(raw, "collection metadata")
            if not isinstance(doc.get("db"), str) or not isinstance(doc.get("collection"), str):
                raise ArchiveError("corruption found in archive; collection metadata without db and collection")
            self.entries.append(
                Entry(doc["db"], doc["collection"], str(doc.get("metadata", "")), str(doc.get("type", "")))
            )

    def blocks(self) -> Iterator[Segment | End]:
        sums: dict[str, int] = {}
        closed: set[str] = set()
        while True:
            raw = self._document_or_terminator(eof_ok=True)
            if raw is None:
                raise ArchiveError("corruption found in archive; consecutive terminators / headerless blocks")
            if raw == b"":
                self._check_all_seen(closed)
                return
            head = _decode(raw, "namespace header")
            db, collection = str(head.get("db", "")), str(head.get("collection", ""))
            namespace = f"{db}.{collection}"
            if namespace in closed:
                raise ArchiveError(f"corruption found in archive; {namespace} continues after its EOF")
            if head.get("EOF"):
                if self._document_or_terminator() is not None:
                    raise ArchiveError(f"corruption found in archive; documents after the EOF of {namespace}")
                expected = int(head.get("CRC", 0)) & 0xFFFFFFFFFFFFFFFF
                if sums.get(namespace, 0) != expected:
                    raise ArchiveError(f"CRC mismatch for namespace {namespace}, {sums.get(namespace, 0)}!={expected}")
                closed.add(namespace)
                yield End(db, collection)
                continue
            documents: list[bytes] = []
            size = 0
            while (doc := self._document_or_terminator()) is not None:
                documents.append(doc)
                size += len(doc)
                if len(documents) >= self.batch or size >= self.batch_bytes:
                    yield self._segment(db, collection, documents, sums)
                    documents, size = [], 0
            yield self._segment(db, collection, documents, sums)

    def _check_all_seen(self, closed: set[str]) -> None:
        unfinished = [
            e.namespace
            for e in self.entries
            # A time-series collection's data is system.buckets.<name> in MongoDB's archives (before 8.3).
            if e.type != "view" and not {e.namespace, f"{e.db}.system.buckets.{e.collection}"} & closed
        ]
        if unfinished:
            raise ArchiveError(
                f"corruption found in archive; it ends before all collections were seen ({', '.join(unfinished)})"
            )

    @staticmethod
    def _segment(db: str, collection: str, documents: list[bytes], sums: dict[str, int]) -> Segment:
        data = b"".join(documents)
        namespace = f"{db}.{collection}"
        # One sum over the batch: a call per document would cost more than the sum.
        sums[namespace] = crc64.update(sums.get(namespace, 0), data)
        return Segment(db, collection, data, len(documents))

    def _read(self, n: int) -> bytes:
        data = self.stream.read(n)
        while len(data) < n:
            more = self.stream.read(n - len(data))
            if not more:
                break
            data += more
        return data

    def _document_or_terminator(self, eof_ok: bool = False) -> bytes | None:
        """The next BSON document; None at a terminator; b"" at the end of the stream when ``eof_ok``."""
        head = self._read(4)
        if not head and eof_ok:
            return b""
        if len(head) < 4:
            raise ArchiveError("corruption found in archive; unexpected end of the archive")
        if head == TERMINATOR:
            return None
        size = int.from_bytes(head, "little")
        if size < _MIN_BSON_SIZE or size > MAX_BSON_SIZE:
            raise ArchiveError(f"corruption found in archive; {size} is neither a valid bson length nor a terminator")
        body = self._read(size - 4)
        if len(body) < size - 4 or body[-1] != 0:
            raise ArchiveError("corruption found in archive; truncated BSON document")
        return head + body
