"""DISTINCT_SCAN: a distinct command's values read from an index's keys (see
:class:`DistinctScan`), an access stage beside those of :mod:`.plans`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import bson

from foliodb import interrupt
from foliodb.engine.catalog import CODEC, IndexInfo
from foliodb.engine.index_keys import UNDEFINED_KEY
from foliodb.engine.planner.bounds import Interval, KeyRange, next_prefix
from foliodb.engine.planner.covering import KeyLayout
from foliodb.engine.planner.plans import AccessStage, index_scan_explain
from foliodb.engine.records import CollectionStore
from foliodb.query import keystring
from foliodb.query.keystring import decode_key
from foliodb.query.paths import MISSING, leaf_values, split


class DistinctScan(AccessStage):
    """A distinct command's values from an index (DISTINCT_SCAN): one seek
    per distinct value of the field at ``position`` (with the fields before
    it), within the key ranges.

    A key gives its value itself when the index is neither multikey nor
    lossy (equal keys then hold identical values) and the value is not null
    (null or missing?). Otherwise the value comes from a document: without a
    filter, the lowest record id under that value (the document a collection
    scan meets first, so the same representative of equal values of
    different types); a null key is followed until a document holds a null.
    With ``layout`` and ``matcher`` (a filter on indexed fields, read from
    the keys) the entries of a value are walked until one matches."""

    stage = "DISTINCT_SCAN"

    def __init__(
        self,
        store: CollectionStore,
        index: IndexInfo,
        ranges: list[KeyRange],
        position: int,
        bounds: dict[str, list[str]],
        layout: KeyLayout | None,
        matcher: Callable[[dict[str, Any]], bool] | None,
        next_field: list[Interval] | None = None,
    ) -> None:
        self.store = store
        self.index = index
        self.ranges = ranges
        self.position = position
        # The key-space intervals of the field after the distinct one, when
        # bounded: a value's entries are walked from the first one's start.
        self.next_field = next_field
        self.bounds = bounds
        self.layout = layout
        self.matcher = matcher
        self.keys_examined = 0
        self.docs_examined = 0
        self.path = split(list(index.key)[position])
        self.descending = [d for _, d in index.fields]
        # Keys hold the values themselves: no document is read but for nulls.
        self.from_keys = not index.multikey and not index.lossy

    def summary(self) -> str:
        key = ", ".join(f"{name}: {direction}" for name, direction in self.index.key.items())
        return f"DISTINCT_SCAN {{ {key} }}"

    def values(self) -> Iterator[Any]:
        """A value for each distinct key value of the field (maybe repeated
        across key ranges; the caller keeps one of each)."""
        for key_range in self.ranges:
            start: bytes | None = key_range.start
            while start is not None:
                first = next(self._entries(start, key_range.stop, 1), None)
                if first is None:
                    break
                interrupt.check()
                prefix, values = self._prefix(first[0])
                end = next_prefix(prefix)
                if key_range.stop is not None and (end is None or end > key_range.stop):
                    end = key_range.stop
                found = self._value(prefix, values, first, end)
                if found is not _NONE:
                    yield found
                start = end

    def _value(self, prefix: bytes, values: list[Any], first: tuple[bytes, int], end: bytes | None) -> Any:
        value = values[self.position]
        if value is _UNDEFINED:
            return _NONE  # an empty array: no value
        field_key = keystring.encode(value)
        if self.layout is None and value is not None:
            if self.from_keys:
                self.keys_examined += 1
                return value
            # The document a collection scan meets first among those with this value.
            self.keys_examined += 1
            rid = self.store.index_min_rid(self.index, prefix, end)
            doc = self._fetch(rid) if rid is not None else None
            found = _leaf_equal(doc, self.path, field_key) if doc is not None else _NONE
            if found is not _NONE:
                return found
        walk_from = first[0]
        if self.next_field:
            lo = self.next_field[0]
            skip_to = prefix + lo.lo if lo.lo_inclusive else next_prefix(prefix + lo.lo)
            if skip_to is not None and skip_to > walk_from:
                walk_from = skip_to
        for key, rid in self._entries(walk_from, end, 8):
            self.keys_examined += 1
            if not self.keys_examined & 255:
                interrupt.check()
            if self.layout is not None and value is not None:
                # A filter on indexed fields: the key answers it unless a
                # field it reads is null (then the document does, below).
                rebuilt = self.layout.document(decode_key(key, self.descending))
                if rebuilt is not None:
                    if self.matcher is None or self.matcher(rebuilt):
                        return value
                    continue
            doc = self._fetch(rid)
            if doc is None or (self.matcher is not None and not self.matcher(doc)):
                continue
            found = _leaf_equal(doc, self.path, field_key)
            if found is not _NONE:
                return found
        return _NONE

    def _fetch(self, rid: int) -> dict[str, Any] | None:
        data = self.store.get_raw(rid)
        if data is None:
            return None
        self.docs_examined += 1
        return bson.decode(data, CODEC)

    def _prefix(self, key: bytes) -> tuple[bytes, list[Any]]:
        """The key's bytes and values up to the distinct field, included
        (``_UNDEFINED`` for an empty array's key)."""
        pos = 0
        values: list[Any] = []
        for desc in self.descending[: self.position + 1]:
            if key[pos] ^ (0xFF if desc else 0) == UNDEFINED_KEY[0]:
                values.append(_UNDEFINED)
                pos += 1
                continue
            value = decode_key(key[pos:], [desc])[0]
            values.append(value)
            pos += len(keystring.encode(value))  # a value's key bytes are unique to it
        return key[:pos], values

    def _entries(self, start: bytes, stop: bytes | None, batch: int) -> Iterator[tuple[bytes, int]]:
        """(key, rid) from ``start`` up to ``stop`` (excluded), in key order."""
        while True:
            rows = self.store.index_rows(self.index, start, stop, True, True, batch)
            for key, rid, _ in rows:
                yield key, rid
            if len(rows) < batch:
                return
            start = rows[-1][0] + b"\x00"
            batch = min(batch * 4, 512)

    def explain(self) -> dict[str, Any]:
        return index_scan_explain("DISTINCT_SCAN", self.index, 1, self.bounds)


_NONE = object()  # no value found
_UNDEFINED = object()  # an empty array's key


def _leaf_equal(doc: dict[str, Any], path: tuple[str, ...], key: bytes) -> Any:
    """The first value the path reaches in ``doc`` whose key is ``key``."""
    for value in leaf_values(doc, path):
        if value is not MISSING and keystring.encode(value) == key:
            return value
    return _NONE
