"""A wire-protocol fuzzer for ``foliodb serve``: mutate real frames, send them,
and check that the server survives every one.

    python scripts/wire_fuzz.py --frames 1000000 [--seed 1] [--findings DIR]

The corpus is captured, not written: a recording proxy sits between pymongo
and a first server while a workload runs (CRUD, cursors, aggregation, indexes,
SCRAM, unacknowledged writes; half the clients compress with zlib), so it
holds the OP_QUERY handshake, OP_MSG with body and document-sequence
sections, and OP_COMPRESSED. The fuzzer then sends mutated frames to a second
server (bit flips, interesting bytes and integers, truncation, extension,
lying lengths, spliced frames, shuffled or duplicated sections, re-encoded
BSON with values of other types, mutations under a valid zlib wrapper).

A finding is any of: a thread that dies with an exception
(``threading.excepthook``), a log record carrying a traceback or at ERROR
level (the server logs a malformed message in one INFO line and a bug with
its traceback), a connection that neither answers nor closes in time, a
server that stops answering ``ping``, and at the end data that changed or a
collection that fails ``validate``, and a resident set at the end more than
:data:`RSS_GROWTH_LIMIT` past the one at the start (the server runs in this
process: memory must not grow with the frames sent). Findings are printed (deduplicated by
their message) with the frame that caused them, in hex, to replay.

tests/server/test_wire_fuzz.py runs a bounded number of frames in the suite.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import random
import socket
import struct
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bson
import pymongo
from bson import Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from foliodb.server import Server  # noqa: E402

HEADER = struct.Struct("<iiii")
OP_QUERY, OP_COMPRESSED, OP_MSG = 2004, 2012, 2013
GUARD_DB = "zz_fuzz_guard"  # far from anything a mutation of the workload's names produces
INTERESTING_INTS = (0, 1, -1, 4, 5, 16, 127, 128, 255, 256, 0x7FFF, 0x7FFFFFFF, -0x80000000, 48_000_000, 16 << 20)
INTERESTING_BYTES = (0x00, 0x01, 0x02, 0x03, 0x04, 0x7F, 0x80, 0xFF)
STRANGE_VALUES: tuple[Any, ...] = (
    None,
    True,
    0,
    -1,
    2**31,
    Int64(2**62),
    1.5,
    float("nan"),
    "",
    "x" * 300,
    "$where",
    b"\x00\x01",
    [],
    [1, [2, [3]]],
    {},
    {"$gt": 1},
    {"$db": "admin"},
    Decimal128("1E+6144"),
    Regex("(a+)+$"),
    Code("return 1"),
    MinKey(),
    MaxKey(),
    Timestamp(0, 0),
    ObjectId(),
)


# -- capture -------------------------------------------------------------------------------


def _split_frames(data: bytes) -> Iterator[bytes]:
    pos = 0
    while pos + HEADER.size <= len(data):
        (length,) = struct.unpack_from("<i", data, pos)
        if length < HEADER.size or pos + length > len(data):
            return
        yield data[pos : pos + length]
        pos += length


def _proxy(upstream: tuple[str, int], recorded: list[bytes], stop: threading.Event) -> tuple[socket.socket, int]:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def pump(src: socket.socket, dst: socket.socket, record: bytearray | None) -> None:
        with contextlib.suppress(OSError):
            while chunk := src.recv(65536):
                if record is not None:
                    record.extend(chunk)
                dst.sendall(chunk)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def accept() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(upstream)
            record = bytearray()
            threads = [
                threading.Thread(target=pump, args=(client, server, record), daemon=True),
                threading.Thread(target=pump, args=(server, client, None), daemon=True),
            ]
            for thread in threads:
                thread.start()

            def finish(threads: list[threading.Thread] = threads, record: bytearray = record) -> None:
                for thread in threads:
                    thread.join()
                recorded.extend(_split_frames(bytes(record)))

            threading.Thread(target=finish, daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener, port


def _workload(port: int, compressors: str | None) -> None:
    # Through the recording proxy: a replica set member names its own address, which a discovering client would use.
    options: dict[str, Any] = {"serverSelectionTimeoutMS": 5000, "directConnection": True}
    if compressors:
        options["compressors"] = compressors
    with pymongo.MongoClient("127.0.0.1", port, **options) as client:
        client.admin.command("createUser", f"fuzz{compressors}", pwd="pw", roles=["root"])
        client.drop_database("shop")
        db = client.shop
        db.orders.insert_one({"_id": 1, "sku": "a", "qty": 5, "tags": ["x", "y"], "at": {"w": 1.5}})
        db.orders.insert_many([{"_id": i, "sku": "abc"[i % 3], "qty": i} for i in range(2, 60)])
        list(db.orders.find({"qty": {"$gt": 3}}, {"sku": 1}).sort("qty", -1).batch_size(7))
        db.orders.create_index([("sku", 1), ("qty", -1)], name="sku_qty")
        db.orders.update_many({"sku": "a"}, {"$inc": {"qty": 1}, "$push": {"tags": "z"}})
        db.orders.find_one_and_update({"_id": 2}, {"$set": {"done": True}}, upsert=True)
        db.orders.count_documents({"sku": "b"})
        db.orders.distinct("sku")
        list(
            db.orders.aggregate(
                [
                    {"$match": {"qty": {"$gte": 1}}},
                    {"$lookup": {"from": "orders", "localField": "sku", "foreignField": "sku", "as": "same"}},
                    {"$facet": {"n": [{"$count": "n"}], "g": [{"$group": {"_id": "$sku", "t": {"$sum": "$qty"}}}]}},
                ]
            )
        )
        cursor = db.orders.find().batch_size(2)
        next(cursor)
        cursor.close()  # killCursors
        db.orders.with_options(write_concern=pymongo.WriteConcern(w=0)).insert_one({"_id": "unack"})  # moreToCome
        db.orders.bulk_write([pymongo.InsertOne({"_id": "b1"}), pymongo.DeleteOne({"_id": 3})])
        db.command("explain", {"find": "orders", "filter": {"sku": "a"}})
        db.list_collection_names()
        db.orders.delete_many({"qty": {"$lt": 2}})
        db.scratch.drop()
    with pymongo.MongoClient(
        "127.0.0.1",
        port,
        username=f"fuzz{compressors}",
        password="pw",
        serverSelectionTimeoutMS=5000,
        directConnection=True,
    ) as authed:
        authed.admin.command("connectionStatus")


def _op_query(command: dict[str, Any], request_id: int) -> bytes:
    """A legacy OP_QUERY command, as drivers older than pymongo's current one open a connection
    (pymongo now says hello in OP_MSG, so the capture holds none)."""
    body = struct.pack("<i", 0) + b"admin.$cmd\x00" + struct.pack("<ii", 0, -1) + bson.encode(command)
    return HEADER.pack(HEADER.size + len(body), request_id, 0, OP_QUERY) + body


LEGACY_HANDSHAKES = (
    {"isMaster": 1, "helloOk": True, "client": {"driver": {"name": "legacy", "version": "1"}}, "compression": []},
    {"$query": {"ismaster": 1}, "$readPreference": {"mode": "secondaryPreferred"}},
    {"hello": 1, "saslSupportedMechs": "admin.fuzz", "speculativeAuthenticate": {"saslStart": 1}},
    {"find": "orders"},
)


def capture_corpus() -> list[bytes]:
    """Client-to-server frames of a pymongo workload against a scratch server, and legacy handshakes."""
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(str(Path(tmp) / "capture"), "127.0.0.1", 0)
        upstream = server.start()
        recorded: list[bytes] = []
        stop = threading.Event()
        listener, port = _proxy(upstream, recorded, stop)
        try:
            _workload(port, None)
            _workload(port, "zlib")
            time.sleep(0.5)  # the proxies record as connections close
        finally:
            stop.set()
            listener.close()
            server.shutdown()
    legacy = [_op_query(command, 9000 + i) for i, command in enumerate(LEGACY_HANDSHAKES)]
    return [frame for frame in recorded if len(frame) >= HEADER.size] + legacy * 5


# -- mutation --------------------------------------------------------------------------------


@dataclass
class Mutant:
    data: bytes
    consistent: bool  # the header's length is the frame's: the server reads exactly this frame


def _with_length(frame: bytes) -> bytes:
    return struct.pack("<i", len(frame)) + frame[4:]


def _op_code(frame: bytes) -> int:
    return int(HEADER.unpack_from(frame)[3])


def _strange_document(rng: random.Random, doc: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    out = dict(doc)
    if out and rng.random() < 0.7:
        key = rng.choice(list(out))
        if isinstance(out[key], dict) and depth < 3 and rng.random() < 0.5:
            out[key] = _strange_document(rng, out[key], depth + 1)
        else:
            out[key] = rng.choice(STRANGE_VALUES)
    else:
        out[rng.choice(["pipeline", "filter", "cursor", "$query", "documents", "updates", "x"])] = rng.choice(
            STRANGE_VALUES
        )
    return out


def _reencoded(rng: random.Random, frame: bytes) -> bytes | None:
    """An OP_MSG or OP_QUERY frame whose command document has a value of another type."""
    op_code = _op_code(frame)
    try:
        if op_code == OP_MSG and len(frame) > 21 and frame[20] == 0:
            (size,) = struct.unpack_from("<i", frame, 21)
            doc = bson.decode(frame[21 : 21 + size])
            body = bson.encode(_strange_document(rng, doc))
            return _with_length(frame[:21] + body + frame[21 + size :])
        if op_code == OP_QUERY:
            name_end = frame.index(b"\x00", 20)
            pos = name_end + 9
            (size,) = struct.unpack_from("<i", frame, pos)
            doc = bson.decode(frame[pos : pos + size])
            if rng.random() < 0.3:
                doc = {"$query": rng.choice(STRANGE_VALUES)}
            body = bson.encode(_strange_document(rng, doc))
            return _with_length(frame[:pos] + body + frame[pos + size :])
    except (bson.errors.BSONError, ValueError, struct.error, OverflowError):
        return None
    return None


def _deep(rng: random.Random, frame: bytes) -> bytes:
    """An OP_MSG whose body nests far deeper than MongoDB's limit."""
    nested: dict[str, Any] = {"x": 1}
    for _ in range(rng.choice((120, 400, 900))):
        nested = {"a": nested}
    body = bson.encode({"find": "orders", "filter": nested, "$db": "shop"})
    request_id = rng.randrange(1 << 31)
    return HEADER.pack(HEADER.size + 5 + len(body), request_id, 0, OP_MSG) + b"\x00\x00\x00\x00\x00" + body


def _compressed(rng: random.Random, frame: bytes, inner: bytes) -> bytes:
    """``inner`` (a frame) wrapped in a valid OP_COMPRESSED with zlib."""
    body = inner[HEADER.size :]
    payload = struct.pack("<iiB", _op_code(inner), len(body), 2) + zlib.compress(body)
    return HEADER.pack(HEADER.size + len(payload), rng.randrange(1 << 31), 0, OP_COMPRESSED) + payload


def mutate(rng: random.Random, corpus: list[bytes]) -> Mutant:
    frame = rng.choice(corpus)
    body = bytearray(frame)
    kind = rng.random()
    if kind < 0.25:  # bit flips and interesting bytes past the length field
        for _ in range(rng.randint(1, 8)):
            pos = rng.randrange(4, len(body))
            if rng.random() < 0.5:
                body[pos] ^= 1 << rng.randrange(8)
            else:
                body[pos] = rng.choice(INTERESTING_BYTES)
        return Mutant(bytes(body), True)
    if kind < 0.37:  # an interesting int32 somewhere (sizes of sections and documents)
        pos = rng.randrange(4, max(5, len(body) - 4))
        body[pos : pos + 4] = struct.pack("<i", rng.choice(INTERESTING_INTS))
        return Mutant(bytes(body), True)
    if kind < 0.47:  # truncated or extended, length fixed up
        if rng.random() < 0.5:
            cut = rng.randrange(HEADER.size, len(body) + 1)
            return Mutant(_with_length(bytes(body[:cut])), True)
        extra = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        return Mutant(_with_length(bytes(body) + extra), True)
    if kind < 0.52:  # a header that lies about the length
        claimed = rng.choice((0, 1, 15, 16, len(body) - 1, len(body) + 1, len(body) + 1000, 48_000_001, -5))
        return Mutant(struct.pack("<i", claimed) + bytes(body[4:]), claimed == len(body))
    if kind < 0.57:  # another opCode
        op_code = rng.choice((1, 2001, 2002, 2004, 2005, 2006, 2007, 2010, 2011, 2012, 2013, 0, -1, 9999))
        body[12:16] = struct.pack("<i", op_code)
        return Mutant(bytes(body), True)
    if kind < 0.64:  # spliced: the head of one frame, the tail of another
        other = rng.choice(corpus)
        cut_a, cut_b = rng.randrange(HEADER.size, len(frame) + 1), rng.randrange(HEADER.size, len(other) + 1)
        return Mutant(_with_length(frame[:cut_a] + other[cut_b:]), True)
    if kind < 0.70 and _op_code(frame) == OP_MSG and len(frame) > 21:  # sections repeated or of another kind
        sections = frame[20:]
        if rng.random() < 0.5:
            sections = sections + sections
        else:
            sections = bytes([rng.choice((0, 1, 2, 3, 255))]) + sections[1:]
        return Mutant(_with_length(frame[:20] + sections), True)
    if kind < 0.85:  # a well-formed frame whose command has values of other types
        reencoded = _reencoded(rng, frame)
        if reencoded is not None:
            return Mutant(reencoded, True)
    if kind < 0.88:
        return Mutant(_deep(rng, frame), True)
    if _op_code(frame) in (OP_MSG, OP_QUERY):  # a mutation that survives decompression
        inner = _reencoded(rng, frame) or frame
        mutated = bytearray(inner)
        pos = rng.randrange(HEADER.size, len(mutated))
        mutated[pos] ^= 1 << rng.randrange(8)
        return Mutant(_compressed(rng, frame, bytes(mutated)), True)
    return Mutant(frame, True)


# -- the run --------------------------------------------------------------------------------


@dataclass
class Findings:
    seen: dict[str, bytes] = field(default_factory=dict)  # message -> the first frame that caused it

    def add(self, message: str, frame: bytes) -> None:
        self.seen.setdefault(message, frame)

    def __len__(self) -> int:
        return len(self.seen)

    def report(self) -> str:
        return "\n".join(f"FINDING: {message}\n  frame: {frame.hex()}" for message, frame in self.seen.items())


class _Recorder(logging.Handler):
    """Log records that carry a traceback or are errors: the server's bugs."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.bad: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.ERROR:
            text = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                text += f": {type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
            self.bad.append(text)


_PING = bson.encode({"ping": 1, "$db": "admin"})


def _ping_frame(request_id: int) -> bytes:
    return HEADER.pack(HEADER.size + 5 + len(_PING), request_id, 0, OP_MSG) + b"\x00\x00\x00\x00\x00" + _PING


def _read_until(sock: socket.socket, request_id: int | None, deadline: float) -> str:
    """Read replies until the one answering ``request_id`` (None: until the server closes).
    'answered', 'closed' or 'timeout'."""
    buffer = b""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "timeout"
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            return "timeout"
        except OSError:
            return "closed"
        if not chunk:
            return "closed"
        buffer += chunk
        while len(buffer) >= HEADER.size:
            length, _rid, response_to, _op = HEADER.unpack_from(buffer)
            if len(buffer) < length:
                break
            buffer = buffer[length:]
            if request_id is not None and response_to == request_id:
                return "answered"


RSS_GROWTH_LIMIT = 100 * 1024 * 1024  # bytes the process may hold at the end past the start


def resident_bytes() -> int:
    """This process's resident set size (Linux's /proc; 0 elsewhere)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


@dataclass
class Result:
    frames: int
    seconds: float
    findings: Findings
    closed: int  # connections the server closed on a frame
    rss_start: int = 0  # bytes resident once the server and its guard data were up
    rss_end: int = 0  # bytes resident after the last frame


def run(
    frames: int,
    seed: int = 1,
    corpus: list[bytes] | None = None,
    dbpath: str | None = None,
    exchange_timeout: float = 10.0,
    progress: Callable[[int, int], None] | None = None,
) -> Result:
    """Send ``frames`` mutated frames to a fresh server; what went wrong."""
    rng = random.Random(seed)
    corpus = corpus if corpus is not None else capture_corpus()
    findings = Findings()
    recorder = _Recorder()
    logger = logging.getLogger("foliodb")
    logger.addHandler(recorder)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    crashed: list[str] = []
    old_hook = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        crashed.append(
            f"thread {args.thread.name if args.thread else '?'} died: {args.exc_type.__name__}: {args.exc_value}"
        )

    threading.excepthook = hook
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(dbpath or str(Path(tmp) / "fuzz"), "127.0.0.1", 0, handshake_timeout=5.0, frame_timeout=2.0)
        host, port = server.start()
        monitor: Any = pymongo.MongoClient(host, port, serverSelectionTimeoutMS=5000)
        guard = [{"_id": i, "v": f"value {i}", "n": i * 1.5} for i in range(200)]
        monitor[GUARD_DB].data.insert_many(guard)
        monitor[GUARD_DB].data.create_index("n")
        started = time.monotonic()
        rss_start = rss_end = resident_bytes()
        sock: socket.socket | None = None
        closed = 0
        try:
            for number in range(frames):
                mutant = mutate(rng, corpus)
                ping_id = 0x7F000000 + number % 0xFFFFFF
                if sock is None or not mutant.consistent:
                    if sock is not None:
                        sock.close()
                    sock = socket.create_connection((host, port), timeout=5)
                try:
                    if mutant.consistent:
                        sock.sendall(mutant.data + _ping_frame(ping_id))
                        outcome = _read_until(sock, ping_id, time.monotonic() + exchange_timeout)
                    else:
                        sock.sendall(mutant.data)
                        sock.shutdown(socket.SHUT_WR)
                        outcome = _read_until(sock, None, time.monotonic() + exchange_timeout)
                except OSError:
                    outcome = "closed"
                if outcome == "timeout":
                    findings.add("a connection neither answered nor closed in time", mutant.data)
                if outcome != "answered":
                    closed += outcome == "closed"
                    sock.close()
                    sock = None
                for message in recorder.bad + crashed:
                    findings.add(message, mutant.data)
                recorder.bad.clear()
                crashed.clear()
                if number % 500 == 499:
                    try:
                        monitor.admin.command("ping")
                    except pymongo.errors.PyMongoError as exc:
                        findings.add(f"the server stopped answering ping: {exc}", mutant.data)
                    if progress is not None:
                        progress(number + 1, len(findings))
        finally:
            if sock is not None:
                sock.close()
            seconds = time.monotonic() - started
            rss_end = resident_bytes()
            if rss_end - rss_start > RSS_GROWTH_LIMIT:
                findings.add(f"resident memory grew from {rss_start} to {rss_end} bytes", b"")
            try:
                if list(monitor[GUARD_DB].data.find().sort("_id", 1)) != guard:
                    findings.add("the guard data changed", b"")
                if not monitor[GUARD_DB].command("validate", "data")["valid"]:
                    findings.add("the guard collection fails validate", b"")
                monitor.admin.command("ping")
            except pymongo.errors.PyMongoError as exc:
                findings.add(f"the server is unusable after the run: {exc}", b"")
            monitor.close()
            server.shutdown()
            threading.excepthook = old_hook
            logger.removeHandler(recorder)
            logger.setLevel(old_level)
    return Result(frames, seconds, findings, closed, rss_start, rss_end)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    corpus = capture_corpus()
    print(f"captured {len(corpus)} frames", flush=True)

    def progress(done: int, found: int) -> None:
        if done % 50_000 == 0:
            print(f"{done} frames, {found} findings", flush=True)

    result = run(args.frames, args.seed, corpus, progress=progress)
    print(result.findings.report())
    print(
        f"{result.frames} frames in {result.seconds:.0f} s ({result.frames / result.seconds:.0f}/s), "
        f"{result.closed} connections closed by the server, {len(result.findings)} findings; "
        f"resident {result.rss_start / 2**20:.0f} MiB at the start, {result.rss_end / 2**20:.0f} MiB at the end"
    )
    return 1 if len(result.findings) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
