"""Index keys of geo indexes: S2 cells (``2dsphere``) and geohashes (``2d``).

A ``2dsphere`` (version 3) entry's geo part is an S2 cell id: a point's leaf
cell, or each cell of a line's or polygon's covering (at most
:data:`MAX_CELLS`, levels :data:`COARSEST_LEVEL` to :data:`FINEST_LEVEL`).
A cell's descendants have the ids in ``[range_min, range_max]``, so a
query region's covering becomes key ranges (the cells inside a covering
cell) and point keys (its ancestors, coarse cells of large documents):
see :mod:`foliodb.engine.planner.geo`.

A ``2d`` entry's geo part is the geohash of a legacy point: ``bits`` bits of
x and of y over ``[min, max)``, interleaved (x first), so a quadtree cell is
a range of hashes.

Either is stored as the keystring of its 8 big-endian bytes (BinData, all
of one length, so byte order is numeric order). Other fields of a compound geo index key as in a B-tree.
A document whose geo field is missing, null or an empty array has no
entries (geo indexes are sparse); a value that is not a geometry, or is a
big polygon (strict-winding CRS), fails the write: 16755 for ``2dsphere``,
16804 and 13027 for ``2d``, as mongod; a ``2d`` field holding a scalar (or an
empty object) has no entry, as mongod's get2DKeys skips it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import s2geometry as s2

from foliodb.engine.index_keys import encode_key_value, field_values
from foliodb.errors import CommandError
from foliodb.query import compare as cmp
from foliodb.query import geometry as geo
from foliodb.query import keystring
from foliodb.query.paths import MISSING, reach
from foliodb.query.render import render_document

COARSEST_LEVEL = 6  # ~100 km cells, mongod's coarsest indexed level
FINEST_LEVEL = 23
MAX_CELLS = 20
GEO_KINDS = ("2dsphere", "2d")


# keystring.encode(bytes) of 8 bytes is this prefix and the bytes (checked in tests).
_BINARY8 = keystring.encode(bytes(8))[:-8]


def stored(value: int) -> bytes:
    """The key of an unsigned 64-bit cell id or geohash."""
    return _BINARY8 + value.to_bytes(8, "big")


def shown(value: int) -> str:
    return str(value)


def coverer() -> Any:
    c = s2.S2RegionCoverer()
    c.set_min_level(COARSEST_LEVEL)
    c.set_max_level(FINEST_LEVEL)
    c.set_max_cells(MAX_CELLS)
    return c


def geometry_cells(g: geo.Geometry) -> set[int]:
    cells = {int(s2.S2CellId(p).id()) for p in g.points}
    if g.lines or g.polygons:  # a coverer only where one is needed: most documents are points
        cover = coverer()
        for region in (*g.lines, *g.polygons):
            cells.update(int(c.id()) for c in cover.GetCovering(region))
    return cells


def geo_values(doc: Any, parts: tuple[str, ...]) -> list[Any]:
    """The geometries a path holds: a legacy pair or GeoJSON object, or each
    element of an array of them."""
    out: list[Any] = []
    for value, _ in reach(doc, parts, expand=False):
        if value is MISSING or value is None:
            continue
        if isinstance(value, list) and value and not isinstance(value[0], (int, float)):
            out.extend(value)  # an array of geometries (multikey)
        elif not (isinstance(value, (list, dict)) and not value):
            out.append(value)  # an empty array or document is no geometry (mongod's S2 key generation)
    return out


def flat_locations(doc: Any, parts: tuple[str, ...]) -> list[Any]:
    """The locations a ``2d`` index reads at a path, by mongod's get2DKeys grammar: a value is one
    location when its first element is a number, else an array (or object) of locations, each an array
    or object (16804 otherwise); what is not an array or object, and empty ones, are passed over."""
    out: list[Any] = []
    for value, _ in reach(doc, parts, expand=False):
        if not isinstance(value, (dict, list)) or not value:
            continue
        items = list(value.values()) if isinstance(value, dict) else value
        if cmp.is_number(items[0]):
            out.append(value)
            continue
        for item in items:
            if not isinstance(item, (dict, list)):
                raise CommandError(16804, "location object expected, location array not in correct format")
            if item:
                out.append(item)
    return out


def _combine(per_field: list[list[tuple[bytes, Any]]]) -> dict[bytes, tuple[Any, ...]]:
    if any(not keys for keys in per_field):
        return {}
    return {b"".join(k for k, _ in combo): tuple(v for _, v in combo) for combo in itertools.product(*per_field)}


def _point_cell(value: Any) -> int | None:
    """The leaf cell of a plainly well-formed GeoJSON Point (two in-bounds
    floats or ints, nothing else to check), the common document; None: parse
    it in full (which also finds what is wrong with it)."""
    if value.__class__ is not dict or len(value) != 2 or value.get("type") != "Point":
        return None
    coords = value.get("coordinates")
    if coords.__class__ is not list or len(coords) != 2:
        return None
    x, y = coords
    if x.__class__ not in (float, int) or y.__class__ not in (float, int) or not geo.valid_lng_lat(x, y):
        return None
    return int(s2.S2CellId(s2.S2LatLng.FromDegrees(y, x).ToPoint()).id())


def sphere_document_keys(
    doc: Any, fields: Sequence[tuple[tuple[str, ...], bool]], kinds: Sequence[str]
) -> dict[bytes, tuple[Any, ...]]:
    per_field: list[list[tuple[bytes, Any]]] = []
    for (parts, descending), kind in zip(fields, kinds, strict=True):
        if kind == "2dsphere":
            cells: set[int] = set()
            for value in geo_values(doc, parts):
                cell = _point_cell(value)
                if cell is not None:
                    cells.add(cell)
                    continue
                try:
                    g = geo.parse_geometry(value)
                    if not g.geojson and not g.points:
                        geo.sphere_point(*geo.flat_point(value))  # raises the bounds error
                    if g.big:  # mongod's S2GetKeysForElement: big polygons are for queries only
                        raise geo.GeoError("can't index geometry with strict winding order")
                except geo.GeoError as exc:
                    raise CommandError(16755, f"Can't extract geo keys: {render_document(doc)}  {exc}") from None
                cells |= geometry_cells(g)
            per_field.append([(stored(c), c) for c in sorted(cells)])
        else:
            values, _ = field_values(doc, parts)
            encoded = [(encode_key_value(v), v) for v in values]
            per_field.append([(keystring.complement(k), v) for k, v in encoded] if descending else encoded)
    return _combine(per_field)


class FlatGrid:
    """A ``2d`` index's plane: ``bits`` per coordinate over ``[low, high)``."""

    def __init__(self, bits: int, low: float, high: float) -> None:
        self.bits = bits
        self.low = low
        self.high = high
        self.scale = (1 << bits) / (high - low)

    def cell(self, v: float) -> int:
        """The grid column (or row) of ``v``, clamped to the grid (NaN: the first)."""
        if not v > self.low:
            return 0
        return min(int(min(v - self.low, self.high - self.low) * self.scale), (1 << self.bits) - 1)

    def hash(self, x: float, y: float) -> int:
        """The point's geohash, left-aligned in 64 bits."""
        ix, iy = self.cell(x), self.cell(y)
        h = 0
        for i in range(self.bits - 1, -1, -1):
            h = (h << 2) | (((ix >> i) & 1) << 1) | ((iy >> i) & 1)
        return h << (64 - 2 * self.bits)

    def point(self, doc: Any, value: Any) -> tuple[float, float]:
        """A location's coordinates, checked as mongod's GeoHashConverter::hash checks a document's:
        two numbers first (13068, 13026), within the closed interval [min, max] (13027)."""
        items = list(value.values()) if isinstance(value, dict) else value
        shown = " :: caused by :: " + render_document(doc)
        if len(items) < 2:
            raise CommandError(13068, "geo field only has 1 element" + shown)
        if not (cmp.is_number(items[0]) and cmp.is_number(items[1])):
            raise CommandError(13026, "geo values must be 'legacy coordinate pairs' for 2d indexes" + shown)
        x, y = float(cmp.number_value(items[0])), float(cmp.number_value(items[1]))
        if not (self.low <= x <= self.high and self.low <= y <= self.high):
            interval = f"[ {geo.format_number(self.low)}, {geo.format_number(self.high)} ]"
            raise CommandError(13027, f"point not in interval of {interval}" + shown)
        return x, y


def flat_document_keys(
    doc: Any, fields: Sequence[tuple[tuple[str, ...], bool]], kinds: Sequence[str], grid: FlatGrid
) -> dict[bytes, tuple[Any, ...]]:
    per_field: list[list[tuple[bytes, Any]]] = []
    for (parts, descending), kind in zip(fields, kinds, strict=True):
        if kind == "2d":
            hashes = {grid.hash(*grid.point(doc, v)) for v in flat_locations(doc, parts)}
            per_field.append([(stored(h), h) for h in sorted(hashes)])
        else:
            values, _ = field_values(doc, parts)
            encoded = [(encode_key_value(v), v) for v in values]
            per_field.append([(keystring.complement(k), v) for k, v in encoded] if descending else encoded)
    return _combine(per_field)
