"""BinData conversions for $convert: to and from strings (``format``), to
and from numbers (``byteOrder``), and between subtypes.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/convert/

Formats: base64, base64url, hex (upper case out), utf8, uuid (subtype 4
only) and auto (a UUID for a 16-byte subtype 4, else base64). Numbers are
read from 1, 2, 4 or 8 bytes (4 or 8 for doubles) and written as 4 (int) or
8 bytes, little-endian unless ``byteOrder`` is "big". BinData of subtype 0
comes back as ``bytes``, as pymongo reads it.
"""

from __future__ import annotations

import base64
import binascii
import struct
import uuid
from collections.abc import Callable
from typing import Any, NamedTuple

from bson import Binary, Int64

from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.compare import binary_parts
from foliodb.query.expr.core import is_string, nullish, show, type_of
from foliodb.query.expr.numeric import integral, is_number, to_long

_FORMATS = ("auto", "base64", "base64url", "hex", "utf8", "uuid")


class Options(NamedTuple):
    """How a $convert treats BinData: the subtype to make, the string format
    and the byte order of numbers."""

    subtype: int
    format: str | None
    byte_order: str  # "little" or "big"


def conversion_failure(message: str) -> CommandError:
    """ConversionFailure (241), the error ``onError`` replaces."""
    return CommandError(ErrorCode.ConversionFailure, message)


def subtype_option(value: Any) -> int:
    if not is_number(value):
        raise location(4341108, f"For BinData, $convert's 'subtype' argument must be a number, but is {type_of(value)}")
    if not integral(value):
        raise location(4341106, "In $convert, numeric 'subtype' argument is not an integer")
    code = to_long(value)
    if not (0 <= code <= 9 or 128 <= code <= 255):
        raise location(
            4341107, f"In $convert, numeric value for 'subtype' does not correspond to a BinData type: {code}"
        )
    return code


def binary_value(data: bytes, subtype: int) -> Any:
    # pymongo reads binData of subtype 0 as bytes.
    return data if subtype == 0 else Binary(data, subtype)


def binary_to_string(v: Any, o: Options) -> str:
    subtype, data = binary_parts(v)
    fmt = o.format
    if fmt is None:
        raise location(4341115, "Format must be speficied when converting from 'binData' to 'string'")
    is_uuid = subtype == 4 and len(data) == 16
    if fmt == "uuid" or (fmt == "auto" and is_uuid):
        if not is_uuid:
            raise conversion_failure(
                f"Failed to convert '{show(v)}' to string in $convert with no onError value: "
                "BinData does not represent a valid UUID"
            )
        return str(uuid.UUID(bytes=data))
    if fmt == "hex":
        return data.hex().upper()
    if fmt == "base64url":
        return base64.urlsafe_b64encode(data).decode()
    if fmt == "utf8":
        try:
            return data.decode()
        except UnicodeDecodeError:
            raise conversion_failure(
                f"Failed to convert '{show(v)}' to string in $convert with no onError value: "
                "BinData does not represent a valid UTF-8 string"
            ) from None
    return base64.b64encode(data).decode()


def string_to_binary(v: str, o: Options) -> Any:
    if o.format is None:
        raise location(4341115, "Format must be speficied when converting from 'string' to 'binData'")

    def fail(reason: str) -> CommandError:
        return conversion_failure(f"Failed to parse BinData '{v}' in $convert with no onError value: {reason}")

    if (o.format == "uuid") != (o.subtype == 4):
        raise fail("Only the 'uuid' format is allowed with the UUID subtype")
    try:
        if o.format == "uuid":
            return Binary(uuid.UUID(v).bytes, 4)
        if o.format == "hex":
            data = bytes.fromhex(v)
        elif o.format == "utf8":
            data = v.encode()
        elif o.format == "base64url":
            data = base64.urlsafe_b64decode(v + "=" * (-len(v) % 4))
        else:
            data = base64.b64decode(v, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise fail(str(exc)) from None
    return binary_value(data, o.subtype)


def binary_to_number(v: Any, o: Options, sizes: dict[int, str]) -> Any:
    _, data = binary_parts(v)
    code = sizes.get(len(data))
    if code is None:
        raise conversion_failure(
            f"Failed to convert '{show(v)}' to number in $convert because of invalid length: {len(data)}"
        )
    n = struct.unpack(("<" if o.byte_order == "little" else ">") + code, data)[0]
    return Int64(n) if sizes is LONG_SIZES else n


INT_SIZES = {1: "b", 2: "h", 4: "i"}
LONG_SIZES = {1: "b", 2: "h", 4: "i", 8: "q"}
DOUBLE_SIZES = {4: "f", 8: "d"}


def number_to_binary(code: str) -> Callable[[Any, Options], Any]:
    def convert(v: Any, o: Options) -> Any:
        data = struct.pack(("<" if o.byte_order == "little" else ">") + code, v)
        return binary_value(data, o.subtype)

    return convert


def binary_to_binary(v: Any, o: Options) -> Any:
    subtype, data = binary_parts(v)
    if subtype != o.subtype:
        raise conversion_failure("Conversions between different BinData subtypes are not supported")
    return binary_value(data, subtype)


def format_option(value: Any) -> str | None:
    if nullish(value):
        return None
    if not is_string(value):
        raise location(
            4341114, f"$convert requires that 'format' be a string, found: {type_of(value)} with value {show(value)}"
        )
    if value not in _FORMATS:
        raise location(4341125, f"Invalid 'format' argument for $convert: {value}")
    return value


def byte_order_option(value: Any) -> str:
    if nullish(value):
        return "little"
    if not is_string(value):
        raise location(
            9130001, f"$convert requires that 'byteOrder' be a string, found: {type_of(value)} with value {show(value)}"
        )
    if value not in ("little", "big"):
        raise location(9130002, f"Invalid 'byteOrder' argument for $convert: {value}")
    return value
