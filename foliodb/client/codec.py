"""Documents crossing between a caller and the engine.

The engine takes and returns plain dicts decoded with the engine's own codec
options. A caller whose codec options are the default ones ("plain") shares
its documents with the engine as they are; any other caller's documents make a
BSON round trip through its codec options, so it gets pymongo's exact
conversions (document class, tz-aware datetimes, UUIDs, custom types), as on
the wire. A RawBSONDocument is always decoded.

"As they are" holds only for values whose type the engine's codec itself
produces (``commands/native.py``): any other document makes the BSON round
trip too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import bson
from bson import ObjectId
from bson.binary import UuidRepresentation
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from pymongo import common

from foliodb.commands import CODEC
from foliodb.commands.native import native, native_items


class DocumentCodec:
    __slots__ = ("options", "plain")

    def __init__(self, options: CodecOptions[Any]) -> None:
        self.options = options
        self.plain = is_plain(options)

    def encode(self, doc: Any) -> Any:
        """A caller's document as the engine takes it."""
        if type(doc) is dict:  # the usual case, before the ABC check below (a Python-level call)
            if self.plain and native_items(doc.values()):
                return doc
        elif isinstance(doc, RawBSONDocument):
            return bson.decode(doc.raw, CODEC)
        elif self.plain and native(doc):
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
