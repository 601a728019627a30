"""Change stream resume tokens: ``{_data: <hex>}``, FolioDB's own encoding (not mongod's).

The hex of, big-endian: the oplog entry's cluster time (8 bytes), the op's index inside a
transaction's ``applyOps`` (4 bytes), a kind byte (an event, an invalidate, or a high-water mark: past
everything at that time) and, for a fragment of an event split by ``$changeStreamSplitLargeEvent``, the
fragment's index (4 bytes). Byte order is event order (a fragment after its event's own token, before
the next event's). A token that does not parse is 40647.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from foliodb.errors import location

EVENT, INVALIDATE, HIGH_WATER = 0, 1, 255


def token(ts: int, index: int, kind: int, fragment: int | None = None) -> dict[str, str]:
    data = struct.pack(">QIB", ts, index, kind) + (b"" if fragment is None else struct.pack(">I", fragment))
    return {"_data": data.hex().upper()}


def parse_token(value: Any) -> tuple[int, int, int]:
    """(packed ts, op index, kind) of a resume token."""
    return _parse(value)[:3]


def fragment_of(value: Any) -> int | None:
    """The fragment index of a split event's resume token (None: a whole event's)."""
    return _parse(value)[3]


def _parse(value: Any) -> tuple[int, int, int, int | None]:
    data = value.get("_data") if isinstance(value, Mapping) else None
    try:
        if not isinstance(data, str):
            raise ValueError
        raw = bytes.fromhex(data)
        ts, index, kind = struct.unpack(">QIB", raw[:13])
        fragment = struct.unpack(">I", raw[13:])[0] if len(raw) > 13 else None
    except (ValueError, struct.error):
        raise location(40647, f"Bad resume token: {value!r}") from None
    return ts, index, kind, fragment


def delivered_at(event: Mapping[str, Any]) -> tuple[int, int, int | None]:
    """(packed ts, op index, fragment) of an event's or fragment's token."""
    ts, index, _, fragment = _parse(event["_id"])
    return ts, index, fragment
