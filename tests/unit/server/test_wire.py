"""The wire protocol's framing, byte for byte: OP_MSG sections and flags,
legacy OP_QUERY for the handshake only, OP_COMPRESSED with zlib, and the
limits that close a connection rather than trust its stream.

Layouts: https://www.mongodb.com/docs/manual/reference/mongodb-wire-protocol/
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import bson
import pytest
import snappy
import zstandard

from foliodb.server import wire

WIRE = "https://www.mongodb.com/docs/manual/reference/mongodb-wire-protocol/"
LEGACY = "https://www.mongodb.com/docs/manual/legacy-opcodes/"


def op_msg(flags: int, *sections: bytes, checksum: bool = False) -> bytes:
    """An OP_MSG payload (no header), built by hand from the layout in WIRE."""
    payload = struct.pack("<I", flags | (wire.CHECKSUM_PRESENT if checksum else 0)) + b"".join(sections)
    return payload + (b"\x00\x00\x00\x00" if checksum else b"")


def body(doc: dict[str, Any]) -> bytes:
    return b"\x00" + bson.encode(doc)


def sequence(identifier: str, docs: list[dict[str, Any]]) -> bytes:
    data = identifier.encode() + b"\x00" + b"".join(bson.encode(d) for d in docs)
    return b"\x01" + struct.pack("<i", 4 + len(data)) + data


def test_body_section_gives_the_command_and_its_database() -> None:
    message = wire.decode(7, wire.OP_MSG, op_msg(0, body({"find": "c", "filter": {"a": 1}, "$db": "shop"})))
    assert (message.request_id, message.db, message.command) == (7, "shop", {"find": "c", "filter": {"a": 1}})
    assert not message.more_to_come and message.error is None


def test_document_sequences_become_array_fields() -> None:
    # WIRE, "Kind 1: Document Sequence": drivers send insert's documents this way.
    docs = [{"_id": 1}, {"_id": 2, "x": "y"}]
    payload = op_msg(0, body({"insert": "c", "$db": "d"}), sequence("documents", docs))
    assert wire.decode(1, wire.OP_MSG, payload).command == {"insert": "c", "documents": docs}


def test_flags_more_to_come_exhaust_and_checksum() -> None:
    flags = wire.MORE_TO_COME | wire.EXHAUST_ALLOWED
    message = wire.decode(1, wire.OP_MSG, op_msg(flags, body({"ping": 1, "$db": "admin"}), checksum=True))
    assert message.more_to_come and message.exhaust_allowed
    assert message.command == {"ping": 1}  # the 4 checksum bytes are not read as a section


def test_unknown_required_flag_bit_is_an_error_reply() -> None:
    # WIRE: bits 0-15 are required; a parser that does not know one must error.
    message = wire.decode(1, wire.OP_MSG, op_msg(1 << 5, body({"ping": 1, "$db": "admin"})))
    assert message.command is None and message.error is not None and message.error.code == 223


def test_missing_db_is_error_40571() -> None:
    message = wire.decode(1, wire.OP_MSG, op_msg(0, body({"ping": 1})))
    assert message.error is not None and message.error.code == 40571


def test_invalid_bson_in_a_well_framed_body_is_an_error_reply() -> None:
    bad = bytearray(bson.encode({"a": "xyz", "$db": "d"}))
    bad[4] = 0x7F  # an element type that does not exist
    message = wire.decode(1, wire.OP_MSG, op_msg(0, b"\x00" + bytes(bad)))
    assert message.error is not None and message.error.code == 22  # InvalidBSON


@pytest.mark.parametrize(
    "payload",
    [
        op_msg(0),  # no body section
        op_msg(0, body({"a": 1, "$db": "d"}), body({"b": 1, "$db": "d"})),  # two bodies
        op_msg(0, b"\x05" + bson.encode({"a": 1})),  # unknown section kind
        op_msg(0, b"\x00" + struct.pack("<i", 1000) + b"\x00" * 10),  # size past the end
        b"\x00\x00",  # shorter than the flags
    ],
    ids=["no-body", "two-bodies", "section-kind", "truncated", "short"],
)
def test_untrustworthy_framing_closes_the_connection(payload: bytes) -> None:
    with pytest.raises(wire.ProtocolError):
        wire.decode(1, wire.OP_MSG, payload)


@pytest.mark.parametrize("length", [0, 15, wire.MAX_MESSAGE_SIZE + 1])
def test_message_length_limits(length: int) -> None:
    # The header's length counts itself (16 bytes); MongoDB's maxMessageSizeBytes is 48 MB.
    with pytest.raises(wire.ProtocolError):
        wire.read_header(struct.pack("<iiii", length, 1, 0, wire.OP_MSG))


def test_unsupported_opcode_closes_the_connection() -> None:
    with pytest.raises(wire.ProtocolError):
        wire.decode(1, 2001, b"\x00" * 20)  # OP_UPDATE, removed in MongoDB 6.0


def legacy_query(namespace: str, query: dict[str, Any]) -> bytes:
    return struct.pack("<i", 0) + namespace.encode() + b"\x00" + struct.pack("<ii", 0, -1) + bson.encode(query)


def test_op_query_carries_the_handshake_command() -> None:
    # LEGACY: drivers may open with OP_QUERY isMaster on admin.$cmd, possibly wrapped in $query.
    message = wire.decode(3, wire.OP_QUERY, legacy_query("admin.$cmd", {"$query": {"isMaster": 1}}))
    assert (message.op_code, message.db, message.command) == (wire.OP_QUERY, "admin", {"isMaster": 1})


def test_op_query_on_a_collection_is_refused_with_352() -> None:
    message = wire.decode(3, wire.OP_QUERY, legacy_query("shop.items", {"a": 1}))
    assert message.error is not None and message.error.code == 352
    assert message.error.code_name == "UnsupportedOpQueryCommand"


def test_op_reply_layout() -> None:
    frame = wire.encode_op_reply(response_to=3, reply={"ok": 1.0}, request_id=9)
    length, request_id, response_to, op_code = struct.unpack_from("<iiii", frame)
    assert (length, request_id, response_to, op_code) == (len(frame), 9, 3, wire.OP_REPLY)
    flags, cursor_id, starting_from, returned = struct.unpack_from("<iqii", frame, 16)
    assert (flags, cursor_id, starting_from, returned) == (0, 0, 0, 1)
    assert bson.decode(frame[36:]) == {"ok": 1.0}


def test_op_msg_reply_layout() -> None:
    frame = wire.encode_op_msg(response_to=5, reply={"n": 1, "ok": 1.0}, request_id=6)
    assert struct.unpack_from("<iiii", frame) == (len(frame), 6, 5, wire.OP_MSG)
    assert frame[16:21] == b"\x00\x00\x00\x00\x00"  # flags 0, then a kind-0 section
    assert bson.decode(frame[21:]) == {"n": 1, "ok": 1.0}


def test_zlib_compressed_request_and_reply() -> None:
    # WIRE, OP_COMPRESSED: originalOpcode, uncompressedSize, compressorId (2 = zlib), data.
    inner = op_msg(0, body({"find": "c", "$db": "d"}))
    payload = struct.pack("<iiB", wire.OP_MSG, len(inner), 2) + zlib.compress(inner)
    message = wire.decode(1, wire.OP_COMPRESSED, payload)
    assert message.command == {"find": "c"} and message.compressor == wire.ZLIB
    frame = wire.encode_op_msg(1, {"ok": 1.0}, 2, compressor=wire.ZLIB)
    assert struct.unpack_from("<i", frame, 12)[0] == wire.OP_COMPRESSED
    original, size, compressor = struct.unpack_from("<iiB", frame, 16)
    data = zlib.decompress(frame[25:])
    assert (original, size, compressor, len(data)) == (wire.OP_MSG, len(data), 2, size)
    assert bson.decode(data[5:]) == {"ok": 1.0}


@pytest.mark.parametrize(
    ("compressor_id", "compress", "decompress"),
    [
        # WIRE, OP_COMPRESSED: 1 = snappy (raw blocks, python-snappy's format), 3 = zstd (frames).
        (1, lambda data: snappy.compress(data), lambda data: snappy.uncompress(data)),
        (
            3,
            lambda data: zstandard.ZstdCompressor().compress(data),
            lambda data: zstandard.ZstdDecompressor().decompress(data),
        ),
    ],
    ids=["snappy", "zstd"],
)
def test_snappy_and_zstd_requests_and_replies(compressor_id: int, compress: Any, decompress: Any) -> None:
    inner = op_msg(0, body({"find": "c", "filter": {"s": "x" * 2000}, "$db": "d"}))
    payload = struct.pack("<iiB", wire.OP_MSG, len(inner), compressor_id) + compress(inner)
    message = wire.decode(1, wire.OP_COMPRESSED, payload)
    assert message.command == {"find": "c", "filter": {"s": "x" * 2000}} and message.compressor == compressor_id
    frame = wire.encode_op_msg(1, {"ok": 1.0, "s": "y" * 2000}, 2, compressor=compressor_id)
    original, size, compressor = struct.unpack_from("<iiB", frame, 16)
    data = decompress(frame[25:])
    assert (original, size, compressor, len(data)) == (wire.OP_MSG, len(data), compressor_id, size)
    assert bson.decode(data[5:]) == {"ok": 1.0, "s": "y" * 2000}
    # A body announcing fewer bytes than it holds never inflates past them: the connection closes.
    short = struct.pack("<iiB", wire.OP_MSG, len(inner) - 1, compressor_id) + compress(inner)
    with pytest.raises(wire.ProtocolError):
        wire.decode(1, wire.OP_COMPRESSED, short)


def test_compressed_size_mismatch_and_unknown_compressor_close() -> None:
    inner = op_msg(0, body({"ping": 1, "$db": "d"}))
    with pytest.raises(wire.ProtocolError):
        wire.decode(1, wire.OP_COMPRESSED, struct.pack("<iiB", wire.OP_MSG, len(inner) + 1, 2) + zlib.compress(inner))
    with pytest.raises(wire.ProtocolError):
        wire.decode(1, wire.OP_COMPRESSED, struct.pack("<iiB", wire.OP_MSG, len(inner), 1) + inner)  # not snappy
    with pytest.raises(wire.ProtocolError):
        wire.decode(1, wire.OP_COMPRESSED, struct.pack("<iiB", wire.OP_MSG, len(inner), 4) + inner)  # no such id
