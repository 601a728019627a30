"""MongoDB's wire protocol: message framing, OP_MSG, legacy OP_QUERY/OP_REPLY
and OP_COMPRESSED, as pure functions over bytes.

Every message starts with a 16-byte header (length, requestID, responseTo,
opCode), little-endian. A message whose framing cannot be trusted raises
:class:`ProtocolError` and the connection is closed; a message that frames
well but holds bad BSON gets an error reply (the peer can still read it).
Nothing else escapes :func:`decode`: the bytes are the peer's, and any way
they fail to decode is one of those two outcomes (scripts/wire_fuzz.py and
tests/server/test_wire_fuzz.py hold it to that).

Manual: https://www.mongodb.com/docs/manual/reference/mongodb-wire-protocol/
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import bson
import cramjam
from bson import Code
from bson.errors import BSONError

from foliodb.engine.catalog import CODEC
from foliodb.errors import CommandError, ErrorCode

OP_REPLY = 1
OP_QUERY = 2004
OP_COMPRESSED = 2012
OP_MSG = 2013

HEADER = struct.Struct("<iiii")
MAX_MESSAGE_SIZE = 48_000_000

# OP_MSG flag bits. Bits 0-15 are "required": a receiver that does not know
# one must fail the message; bits 16-31 are optional.
CHECKSUM_PRESENT = 1 << 0
MORE_TO_COME = 1 << 1
EXHAUST_ALLOWED = 1 << 16
_KNOWN_REQUIRED = CHECKSUM_PRESENT | MORE_TO_COME

# OP_REPLY responseFlags.
QUERY_FAILURE = 1 << 1

# Compressor ids (the wire protocol's); snappy (raw blocks) and zstd (frames) through cramjam's wheels.
NOOP, SNAPPY, ZLIB, ZSTD = 0, 1, 2, 3
COMPRESSORS = {"snappy": SNAPPY, "zlib": ZLIB, "zstd": ZSTD}


def _zlib_into(data: bytes, out: bytearray) -> int:
    inflated = zlib.decompressobj().decompress(data, len(out) + 1)  # one byte more: a longer body is caught
    out[: len(inflated)] = inflated[: len(out)]
    return len(inflated)


# id -> (compress, decompress into a buffer of the announced size: a body can never inflate past it).
_CODECS: dict[int, tuple[Callable[[bytes], bytes], Callable[[bytes, bytearray], int]]] = {
    SNAPPY: (lambda data: bytes(cramjam.snappy.compress_raw(data)), cramjam.snappy.decompress_raw_into),
    ZLIB: (zlib.compress, _zlib_into),
    ZSTD: (lambda data: bytes(cramjam.zstd.compress(data)), cramjam.zstd.decompress_into),
}

_INT32 = struct.Struct("<i")
_UINT32 = struct.Struct("<I")
_OP_QUERY_FIXED = struct.Struct("<ii")  # numberToSkip, numberToReturn
_OP_REPLY_FIXED = struct.Struct("<iqii")  # responseFlags, cursorID, startingFrom, numberReturned
_COMPRESSED_FIXED = struct.Struct("<iiB")  # originalOpcode, uncompressedSize, compressorId


class ProtocolError(Exception):
    """The byte stream cannot be trusted any further: close the connection."""


@dataclass
class Message:
    """One decoded request: the command, where it goes and how to answer."""

    request_id: int
    op_code: int  # OP_MSG or OP_QUERY (after any decompression)
    db: str | None
    command: dict[str, Any] | None  # None when the body was not valid BSON
    error: CommandError | None = None  # why ``command`` is None
    more_to_come: bool = False  # the client wants no reply (w: 0)
    exhaust_allowed: bool = False
    compressor: int | None = None  # the request came compressed with this


def read_header(data: bytes | bytearray, limit: int = MAX_MESSAGE_SIZE) -> tuple[int, int, int, int]:
    """``(length, request_id, response_to, op_code)``; the length is checked
    against ``limit`` (MongoDB's 48 MB message limit, or less)."""
    length, request_id, response_to, op_code = HEADER.unpack(data)
    if length < HEADER.size or length > limit:
        raise ProtocolError(f"message length {length} is out of range (at most {limit} bytes)")
    return length, request_id, response_to, op_code


def decode(request_id: int, op_code: int, payload: bytes, limit: int = MAX_MESSAGE_SIZE) -> Message:
    """The request in ``payload`` (the bytes after the header); ``limit`` bounds
    a compressed message's size once inflated, as the header's bounds its own."""
    compressor = None
    if op_code == OP_COMPRESSED:
        op_code, payload, compressor = _decompress(payload, limit)
    if op_code == OP_MSG:
        message = _decode_op_msg(request_id, payload)
    elif op_code == OP_QUERY:
        message = _decode_op_query(request_id, payload)
    else:
        raise ProtocolError(f"unsupported opCode {op_code}")
    message.compressor = compressor
    return message


def _decompress(payload: bytes, limit: int) -> tuple[int, bytes, int]:
    if len(payload) < _COMPRESSED_FIXED.size:
        raise ProtocolError("OP_COMPRESSED message is too short")
    original, size, compressor = _COMPRESSED_FIXED.unpack_from(payload)
    body = payload[_COMPRESSED_FIXED.size :]
    if size < 0 or size > limit:
        raise ProtocolError(f"OP_COMPRESSED uncompressedSize is out of range (at most {limit} bytes)")
    if compressor == NOOP:
        data = body
    elif compressor in _CODECS:
        out = bytearray(size)
        try:
            written = _CODECS[compressor][1](body, out)
        except (zlib.error, cramjam.DecompressionError) as exc:
            raise ProtocolError(f"OP_COMPRESSED: {exc}") from None
        if written != size:
            raise ProtocolError("OP_COMPRESSED uncompressedSize does not match the data")
        data = bytes(out)
    else:
        raise ProtocolError(f"unsupported compressor id {compressor}")
    if len(data) != size:
        raise ProtocolError("OP_COMPRESSED uncompressedSize does not match the data")
    return original, data, compressor


def _decode_op_msg(request_id: int, payload: bytes) -> Message:
    if len(payload) < 5:
        raise ProtocolError("OP_MSG message is too short")
    (flags,) = _UINT32.unpack_from(payload)
    end = len(payload) - (4 if flags & CHECKSUM_PRESENT else 0)
    message = Message(
        request_id,
        OP_MSG,
        None,
        None,
        more_to_come=bool(flags & MORE_TO_COME),
        exhaust_allowed=bool(flags & EXHAUST_ALLOWED),
    )
    if flags & 0xFFFF & ~_KNOWN_REQUIRED:
        message.error = CommandError(ErrorCode.IllegalOpMsgFlag, f"Unrecognized required flags: {flags:#x}")
        return message
    body: dict[str, Any] | None = None
    sequences: list[tuple[str, list[dict[str, Any]]]] = []
    pos = 4
    try:
        while pos < end:
            kind = payload[pos]
            pos += 1
            if kind == 0:
                if body is not None:
                    raise ProtocolError("OP_MSG has more than one body section")
                size = _document_size(payload, pos, end)
                body = bson.decode(payload[pos : pos + size], CODEC)
                pos += size
            elif kind == 1:
                size = _document_size(payload, pos, end)
                section_end = pos + size
                name_end = payload.index(b"\x00", pos + 4, section_end)
                identifier = payload[pos + 4 : name_end].decode()
                docs = bson.decode_all(payload[name_end + 1 : section_end], CODEC)
                sequences.append((identifier, docs))
                pos = section_end
            else:
                raise ProtocolError(f"OP_MSG has an unknown section kind {kind}")
    except (BSONError, ValueError, OverflowError, TypeError, RecursionError, MemoryError) as exc:
        # The C decoder reports bad input through all of these (deep nesting, dates out of range...).
        message.error = CommandError(ErrorCode.InvalidBSON, f"invalid BSON in OP_MSG: {type(exc).__name__}: {exc}")
        return message
    if body is None:
        raise ProtocolError("OP_MSG has no body section")
    for identifier, docs in sequences:
        if identifier in body:
            message.error = CommandError(
                ErrorCode.BadValue, f"Duplicate field {identifier!r} in OP_MSG body and document sequence"
            )
            return message
        body[identifier] = docs
    db = body.pop("$db", None)
    if not isinstance(db, str) or isinstance(db, Code):  # Code subclasses str but is JavaScript
        message.error = CommandError(40571, "OP_MSG requests require a $db argument")
        return message
    message.db = db
    message.command = body
    return message


def _document_size(payload: bytes, pos: int, end: int) -> int:
    if pos + 4 > end:
        raise ProtocolError("OP_MSG section is truncated")
    (size,) = _INT32.unpack_from(payload, pos)
    if size < 5 or pos + size > end:
        raise ProtocolError("OP_MSG section size is out of range")
    return size


def _decode_op_query(request_id: int, payload: bytes) -> Message:
    """Legacy OP_QUERY: MongoDB 8 still takes it for the handshake (hello,
    isMaster) on ``<db>.$cmd``; the caller refuses every other command."""
    try:
        name_end = payload.index(b"\x00", 4)
        namespace = payload[4:name_end].decode()
        pos = name_end + 1 + _OP_QUERY_FIXED.size
        size = _document_size(payload, pos, len(payload))
        query = bson.decode(payload[pos : pos + size], CODEC)
    except (BSONError, ValueError, OverflowError, TypeError, RecursionError, MemoryError) as exc:
        raise ProtocolError(f"malformed OP_QUERY: {type(exc).__name__}: {exc}") from None
    db, _, collection = namespace.partition(".")
    message = Message(request_id, OP_QUERY, db, None)
    if collection != "$cmd":
        message.error = unsupported_op_query(f"query on {namespace}")
        return message
    # Drivers may wrap the command as {$query: cmd, $readPreference: ...}.
    command = query.get("$query", query)
    if not isinstance(command, dict):
        message.error = CommandError(ErrorCode.TypeMismatch, "the $query of an OP_QUERY command must be a document")
        return message
    message.command = dict(command)
    return message


def unsupported_op_query(what: str) -> CommandError:
    return CommandError(
        ErrorCode.UnsupportedOpQueryCommand,
        f"Unsupported OP_QUERY command: {what}. The client driver may require an upgrade. "
        "For more details see https://dochub.mongodb.org/core/legacy-opcode-removal",
    )


def encode_op_msg(
    response_to: int, reply: dict[str, Any], request_id: int, compressor: int | None = None, flags: int = 0
) -> bytes:
    """An OP_MSG reply; ``flags`` MORE_TO_COME when more replies follow (exhaust cursors)."""
    body = _UINT32.pack(flags) + b"\x00" + bson.encode(reply, codec_options=CODEC)
    return _frame(request_id, response_to, OP_MSG, body, compressor)


def encode_op_reply(response_to: int, reply: dict[str, Any], request_id: int, failure: bool = False) -> bytes:
    body = _OP_REPLY_FIXED.pack(QUERY_FAILURE if failure else 0, 0, 0, 1) + bson.encode(reply, codec_options=CODEC)
    return _frame(request_id, response_to, OP_REPLY, body, None)


def _frame(request_id: int, response_to: int, op_code: int, body: bytes, compressor: int | None) -> bytes:
    if compressor is not None:
        data = _CODECS[compressor][0](body) if compressor in _CODECS else body
        body = _COMPRESSED_FIXED.pack(op_code, len(body), compressor) + data
        op_code = OP_COMPRESSED
    return HEADER.pack(HEADER.size + len(body), request_id, response_to, op_code) + body
