"""Which Python values the engine may take as they are: those of the types its codec decodes.

The engine computes index keys, matches and validates on decoded documents
and trusts their types to be the ones its codec (``CODEC``) produces. A
caller's value of another type - a tuple, an enum member, a ``str``/``int``/
``dict`` subclass, a ``re.Pattern``, an aware datetime, a ``Binary`` of
subtype 0 - becomes something else on the wire (an array, a string, an int, a
``Regex``, UTC, ``bytes``), so such a document must make a BSON round trip
before the engine sees it (``client/codec.py``), or its encoded bytes be the
only form the engine reads (``commands/insert.py``'s point insert).
"""

from __future__ import annotations

import datetime
from typing import Any

from bson import DBRef, Decimal128, Int64, MaxKey, MinKey, ObjectId, Regex, Timestamp
from bson.binary import Binary
from bson.code import Code

# The exact types the engine's codec (CODEC) decodes BSON into, besides dict, list and
# naive datetime; subclasses are not among them (bool, Int64 are listed on their own).
_NATIVE_SCALARS = frozenset(
    {str, int, float, bool, type(None), bytes, ObjectId, Int64, Decimal128, Regex, Code, Timestamp}
    | {MinKey, MaxKey, DBRef}
)


def native(value: Any) -> bool:
    """Whether ``value`` holds only types the engine's codec produces, so that a
    BSON round trip would give it back equal and of the same types."""
    kind = type(value)
    if kind is dict:
        return native_items(value.values())
    if kind is list:
        return native_items(value)
    return native_items((value,))


def native_items(values: Any) -> bool:
    """:func:`native` of each of ``values``."""
    # Inline for scalars, which most values are: a call per value would double the cost.
    for item in values:
        kind = type(item)
        if kind in _NATIVE_SCALARS:
            continue
        if kind is dict:
            if not native_items(item.values()):
                return False
        elif kind is list:
            if not native_items(item):
                return False
        elif kind is datetime.datetime:
            if item.tzinfo is not None:
                return False
        elif kind is not Binary or item.subtype == 0:  # subtype 0 comes back as bytes
            return False
    return True
