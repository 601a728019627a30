"""Documents crossing between a caller and the engine.

The engine takes and returns plain dicts decoded with the engine's own codec
options. A caller whose codec options are the default ones ("plain") shares
its documents with the engine as they are; any other caller's documents make a
BSON round trip through its codec options, so it gets pymongo's exact
conversions (document class, tz-aware datetimes, UUIDs, custom types), as on
the wire. A RawBSONDocument is always decoded.

"As they are" holds only for values whose type the engine's codec itself
produces: a tuple, an enum member, a ``str``/``int``/``dict`` subclass, a
``re.Pattern``, an aware datetime... becomes something else on the wire (an
array, a string, an int, a ``Regex``, UTC), and the engine, which trusts its
codec's types, would index, match and validate it differently from what it
stores. Such a document makes the BSON round trip too.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import bson
from bson import DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import Binary, UuidRepresentation
from bson.code import Code
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from pymongo import common

from foliodb.commands import CODEC


class DocumentCodec:
    __slots__ = ("options", "plain")

    def __init__(self, options: CodecOptions[Any]) -> None:
        self.options = options
        self.plain = is_plain(options)

    def encode(self, doc: Any) -> Any:
        """A caller's document as the engine takes it."""
        if type(doc) is dict:  # the usual case, before the ABC check below (a Python-level call)
            if self.plain and _native_items(doc.values()):
                return doc
        elif isinstance(doc, RawBSONDocument):
            return bson.decode(doc.raw, CODEC)
        elif self.plain and _native(doc):
            return doc
        return bson.decode(bson.encode(doc, codec_options=self.options), CODEC)

    def encode_update(self, update: Any) -> Any:
        """An update document encoded; an update pipeline (a list) as it is."""
        return self.encode(update) if type(update) is dict or isinstance(update, Mapping) else update

    def decode(self, docs: list[dict[str, Any]]) -> list[Any]:
        """The engine's documents as the caller's codec options make them."""
        if self.plain:
            return docs
        return [bson.decode(bson.encode(doc, codec_options=CODEC), self.options) for doc in docs]


# The exact types the engine's codec (CODEC) decodes BSON into, besides dict, list and
# naive datetime; subclasses are not among them (bool, Int64 are listed on their own).
_NATIVE_SCALARS = frozenset(
    {str, int, float, bool, type(None), bytes, ObjectId, Int64, Decimal128, Regex, Code, Timestamp}
    | {MinKey, MaxKey, DBRef}
)


def _native(value: Any) -> bool:
    """Whether ``value`` holds only types the engine's codec produces, so that a
    BSON round trip would give it back equal and of the same types."""
    kind = type(value)
    if kind is dict:
        return _native_items(value.values())
    if kind is list:
        return _native_items(value)
    return _native_items((value,))


def _native_items(values: Any) -> bool:
    # Inline for scalars, which most values are: a call per value would double the cost.
    for item in values:
        kind = type(item)
        if kind in _NATIVE_SCALARS:
            continue
        if kind is dict:
            if not _native_items(item.values()):
                return False
        elif kind is list:
            if not _native_items(item):
                return False
        elif kind is datetime.datetime:
            if item.tzinfo is not None:
                return False
        elif kind is not Binary or item.subtype == 0:  # subtype 0 comes back as bytes
            return False
    return True


def is_plain(options: CodecOptions[Any]) -> bool:
    return (
        options.document_class is dict
        and not options.tz_aware
        and options.uuid_representation == UuidRepresentation.UNSPECIFIED
        and not options.type_registry._encoder_map
        and not options.type_registry._decoder_map
        and options.unicode_decode_error_handler == "strict"
    )


def with_id(document: Any) -> Any:
    """A document to insert, checked as pymongo checks it, given an ObjectId
    ``_id`` (in the caller's document, as pymongo does) when it has none."""
    if type(document) is not dict:  # a dict passes pymongo's check (an ABC check, slow per call)
        common.validate_is_document_type("document", document)
        if isinstance(document, RawBSONDocument):
            return document
    if "_id" not in document:
        document["_id"] = ObjectId()
    return document
