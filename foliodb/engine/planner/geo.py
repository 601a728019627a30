"""Geo index access: a region's key ranges, and the distance-ordered scan.

``$geoWithin``/``$geoIntersects`` on a ``2dsphere`` field become the
intervals of the region's S2 covering (a query cell's descendants as a
range, its ancestors from :data:`~foliodb.engine.geo_keys.COARSEST_LEVEL`
on as points: the cells of large documents); on a ``2d`` field, the
geohash ranges of quadtree cells covering the shape's bounding box. Either
is a superset: fetched documents are checked against the exact predicate.

:class:`GeoNearScan` (``GEO_NEAR_2DSPHERE`` / ``GEO_NEAR_2D``) yields the
records in distance order: it scans the covering of a disc of radius ``r``,
measures each new record, returns those no farther than ``r`` (every record
that near has a key in the covering), and grows ``r`` fourfold until it
passes ``$maxDistance`` or covers everything. Without an index (indexes
switched off) it measures every record and sorts, giving the same answer.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Mapping
from typing import Any

import bson
import s2geometry as s2

from foliodb import interrupt
from foliodb.engine.catalog import CODEC, IndexInfo
from foliodb.engine.geo_keys import COARSEST_LEVEL, FlatGrid, geo_values, shown, stored
from foliodb.engine.planner.bounds import ALL, Interval, KeyRange, key_ranges
from foliodb.engine.planner.plans import AccessStage, IndexScan
from foliodb.engine.records import CollectionStore
from foliodb.errors import CommandError, bad_value
from foliodb.query import geometry as geo
from foliodb.query.filter import is_operator_doc
from foliodb.query.filter_ops.geo import NEAR_OPS, NearQuery, intersects_geometry, nearest, within_region
from foliodb.query.paths import split

QUERY_MAX_CELLS = 20
FLAT_MAX_CELLS = 64


def _range(lo: int, hi: int) -> Interval:
    return Interval(stored(lo), True, stored(hi), True, shown(lo), shown(hi))


def cell_intervals(cells: list[Any]) -> list[Interval]:
    """Keys of documents whose cells meet ``cells``: descendants and ancestors."""
    spans = []
    for cell in cells:
        spans.append((int(cell.range_min().id()), int(cell.range_max().id())))
        for level in range(COARSEST_LEVEL, cell.level()):
            ancestor = int(cell.parent(level).id())
            spans.append((ancestor, ancestor))
    return _merged(spans)


def _merged(spans: list[tuple[int, int]]) -> list[Interval]:
    """Intervals of integer spans, overlapping or adjacent ones joined (fewer scans)."""
    spans.sort()
    out: list[list[int]] = []
    for lo, hi in spans:
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [_range(lo, hi) for lo, hi in out]


def _sphere_covering(region: Any) -> list[Any]:
    coverer = s2.S2RegionCoverer()
    coverer.set_max_cells(QUERY_MAX_CELLS)
    return list(coverer.GetCovering(region))


def _geometry_cells(g: geo.Geometry) -> list[Any]:
    cells = [s2.S2CellId(p) for p in g.points]
    for region in (*g.lines, *g.polygons):
        cells.extend(_sphere_covering(region))
    return cells


def sphere_condition_intervals(cond: Any) -> list[Interval] | None:
    """A 2dsphere field's intervals for one condition, or None (not geo)."""
    if not is_operator_doc(cond):
        return None
    for op in ("$geoWithin", "$within"):
        if op in cond:
            region = within_region(cond[op])
            if isinstance(region, geo.SphereRegion):
                return cell_intervals([cell for poly in region.polygons for cell in _sphere_covering(poly)])
            if isinstance(region, geo.Cap):
                return cell_intervals(_sphere_covering(geo.sphere_cap(region.center, region.radius)))
    if "$geoIntersects" in cond:
        return cell_intervals(_geometry_cells(intersects_geometry(cond["$geoIntersects"])))
    return None


def flat_box_intervals(grid: FlatGrid, x1: float, y1: float, x2: float, y2: float) -> list[Interval]:
    """Geohash ranges of quadtree cells covering a box (at most about
    :data:`FLAT_MAX_CELLS`, coarser where the budget runs out)."""
    n = 1 << grid.bits
    lo_x, hi_x = grid.cell(max(x1, grid.low)), grid.cell(min(x2, grid.high))
    lo_y, hi_y = grid.cell(max(y1, grid.low)), grid.cell(min(y2, grid.high))
    if x2 < grid.low or y2 < grid.low or x1 >= grid.high or y1 >= grid.high:
        return []
    # A cell: (level, ix, iy) with side n >> level in grid units.
    done: list[tuple[int, int, int]] = []
    frontier = [(0, 0, 0)]
    while frontier:
        if len(done) + 4 * len(frontier) > FLAT_MAX_CELLS:
            done.extend(frontier)
            break
        nxt = []
        for level, ix, iy in frontier:
            side = n >> level
            x0, y0 = ix * side, iy * side
            if (x0 >= lo_x and x0 + side - 1 <= hi_x and y0 >= lo_y and y0 + side - 1 <= hi_y) or level == grid.bits:
                done.append((level, ix, iy))
                continue
            for dx in (0, 1):
                for dy in (0, 1):
                    cx, cy = ix * 2 + dx, iy * 2 + dy
                    half = side // 2
                    if (
                        cx * half <= hi_x
                        and (cx + 1) * half - 1 >= lo_x
                        and cy * half <= hi_y
                        and (cy + 1) * half - 1 >= lo_y
                    ):
                        nxt.append((level + 1, cx, cy))
        frontier = nxt
    spans = []
    for level, ix, iy in done:
        prefix = 0
        for i in range(level - 1, -1, -1):
            prefix = (prefix << 2) | (((ix >> i) & 1) << 1) | ((iy >> i) & 1)
        shift = 64 - 2 * level
        spans.append((prefix << shift, ((prefix + 1) << shift) - 1))
    return _merged(spans)


def _cap_box(x: float, y: float, radius: float) -> tuple[float, float, float, float]:
    """A lng/lat box around a cap of ``radius`` radians centred on (x, y)."""
    dlat = math.degrees(radius)
    if radius >= math.pi / 2 or abs(y) + dlat >= 90:
        return -180.0, max(-90.0, y - dlat), 180.0, min(90.0, y + dlat)
    dlng = math.degrees(math.asin(min(1.0, math.sin(radius) / math.cos(math.radians(y)))))
    if x - dlng < -180 or x + dlng > 180:
        return -180.0, y - dlat, 180.0, y + dlat  # across the antimeridian: every longitude
    return x - dlng, y - dlat, x + dlng, y + dlat


def flat_condition_intervals(grid: FlatGrid, cond: Any) -> list[Interval] | None:
    """A 2d field's intervals for one ``$geoWithin`` flat shape, or None."""
    if not is_operator_doc(cond):
        return None
    for op in ("$geoWithin", "$within"):
        if op in cond:
            region = within_region(cond[op])
            if isinstance(region, geo.Box):
                return flat_box_intervals(grid, *region.low, *region.high)
            if isinstance(region, geo.FlatPolygon):
                xs = [p[0] for p in region.vertices]
                ys = [p[1] for p in region.vertices]
                return flat_box_intervals(grid, min(xs), min(ys), max(xs), max(ys))
            if isinstance(region, geo.Circle):
                (x, y), r = region.center, region.radius
                return flat_box_intervals(grid, x - r, y - r, x + r, y + r)
            if isinstance(region, geo.Cap):
                lat, lng = s2.S2LatLng(region.center).lat().degrees(), s2.S2LatLng(region.center).lng().degrees()
                return flat_box_intervals(grid, *_cap_box(lng, lat, region.radius))
    return None


def sphere_bounds_message(x: float, y: float) -> str:
    return f"longitude/latitude is out of bounds, lng: {geo.format_number(x)} lat: {geo.format_number(y)}"


def _check_in_grid(grid: FlatGrid, point: tuple[float, float]) -> None:
    """mongod's GeoHashConverter::hash of a near point: inside the 2d index's [min, max] (16433)."""
    x, y = point
    if not (grid.low <= x <= grid.high and grid.low <= y <= grid.high):
        low, high = geo.format_number(grid.low), geo.format_number(grid.high)
        shown = f"[ {geo.format_number(x)}, {geo.format_number(y)} ]"
        raise CommandError(16433, f"point not in interval of [ {low}, {high} ] :: caused by :: {shown}")


def grid_of(index: IndexInfo) -> FlatGrid:
    spec = index.spec
    return FlatGrid(int(spec.get("bits", 26)), float(spec.get("min", -180.0)), float(spec.get("max", 180.0)))


def geo_field_intervals(index: IndexInfo, conds: list[Any]) -> list[Interval] | None:
    """The geo field's intervals from its conditions (None: none is geo)."""
    grid = grid_of(index) if index.kind == "2d" else None
    for cond in conds:
        found = sphere_condition_intervals(cond) if grid is None else flat_condition_intervals(grid, cond)
        if found is not None:
            return found
    return None


def geo_field(index: IndexInfo) -> str:
    return next(name for name, d in index.key.items() if d in ("2dsphere", "2d"))


def split_near(filter_spec: Mapping[str, Any] | None) -> tuple[str, str, Any, Mapping[str, Any]] | None:
    """(path, operator, operand, the field's whole condition) of a top-level
    ``$near``/``$nearSphere``, or None. Every find asks: kept to dict lookups."""
    if not filter_spec:
        return None
    found = None
    for path, cond in filter_spec.items():
        if isinstance(cond, dict) and ("$near" in cond or "$nearSphere" in cond or "$geoNear" in cond):
            if path.startswith("$"):
                continue
            ops = [op for op in NEAR_OPS if op in cond]
            if found is not None or len(ops) > 1:
                raise bad_value("Too many geoNear expressions")
            found = path, ops[0], cond[ops[0]], cond
    return found


class GeoNearScan(AccessStage):
    """Records in increasing distance from a ``$near`` point (see module doc);
    ``distances`` gets each yielded record's (distance, nearest location)."""

    def __init__(
        self,
        store: CollectionStore,
        index: IndexInfo | None,
        path: str,
        query: NearQuery,
        others: list[list[Interval]] | None = None,
    ) -> None:
        self.store = store
        self.index = index
        self.parts = split(path)
        self.query = query
        self.others = others  # per key field: intervals of the other fields (the geo one ignored)
        self.stage = "GEO_NEAR_2D" if index is not None and index.kind == "2d" else "GEO_NEAR_2DSPHERE"
        if index is not None and index.kind == "2d":
            _check_in_grid(grid_of(index), query.flat)
        self.distances: dict[int, tuple[float, Any]] = {}
        self.scans: list[IndexScan] = []
        self.keys_examined = 0
        self.docs_examined = 0

    def summary(self) -> str:
        key = ", ".join(f"{n}: {d!r}" for n, d in (self.index.key if self.index else {}).items())
        return f"{self.stage} {{ {key} }}"

    def _measure(self, data: bytes) -> tuple[float, Any] | None:
        doc = bson.decode(data, CODEC)
        best: tuple[float, Any] | None = None
        for value in geo_values(doc, self.parts):
            found = nearest(self.query, value)
            if found is not None and (best is None or found[0] < best[0]):
                best = found
        if best is None or not self.query.in_range(best[0]):
            return None
        return best

    def rows(self) -> Iterator[tuple[int, bytes]]:
        if self.index is None:
            yield from self._all_sorted()
            return
        seen: set[int] = set()
        heap: list[tuple[float, int, bytes, Any]] = []
        radius = self._first_radius()
        while True:
            final = self._covers_all(radius)
            scan = self._ring_scan(radius, final)
            for rid, data in scan.rows():
                if rid in seen:
                    continue
                seen.add(rid)
                self.docs_examined += 1
                if not self.docs_examined & 255:
                    interrupt.check()  # a ring holds what its radius reaches: up to the whole index
                found = self._measure(data)
                if found is not None:
                    heapq.heappush(heap, (found[0], rid, data, found[1]))
            self.keys_examined += scan.keys_examined
            while heap and (final or heap[0][0] <= radius):
                d, rid, data, where = heapq.heappop(heap)
                self.distances[rid] = (d, where)
                yield rid, data
            if final:
                return
            radius *= 4

    def _all_sorted(self) -> Iterator[tuple[int, bytes]]:
        found = []
        for rid, data in self.store.scan():
            self.docs_examined += 1
            if not self.docs_examined & 255:
                interrupt.check()
            measured = self._measure(data)
            if measured is not None:
                found.append((measured[0], rid, data, measured[1]))
        found.sort(key=lambda item: (item[0], item[1]))
        for d, rid, data, where in found:
            self.distances[rid] = (d, where)
            yield rid, data

    def _first_radius(self) -> float:
        q = self.query
        if not q.spherical:
            grid = grid_of(self.index) if self.index is not None else None
            start = (grid.high - grid.low) / 4096 if grid is not None else 1.0
        else:
            start = 1000.0 if q.geojson else 1000.0 / geo.EARTH_RADIUS_METERS
        return max(start, q.min_distance)

    def _covers_all(self, radius: float) -> bool:
        q = self.query
        if radius >= q.max_distance:
            return True
        if q.spherical:
            return (radius / geo.EARTH_RADIUS_METERS if q.geojson else radius) >= math.pi
        assert self.index is not None
        grid = grid_of(self.index)
        x, y = q.flat
        return x - radius <= grid.low and y - radius <= grid.low and x + radius >= grid.high and y + radius >= grid.high

    def _ring_scan(self, radius: float, final: bool) -> IndexScan:
        q, index = self.query, self.index
        assert index is not None
        reach = min(radius, q.max_distance)
        if index.kind == "2dsphere":
            angle = reach / geo.EARTH_RADIUS_METERS if q.geojson else reach
            geo_ivs = cell_intervals(_sphere_covering(geo.sphere_cap(q.center, angle * (1 + 1e-9))))
        elif q.spherical:
            lng, lat = q.flat
            geo_ivs = flat_box_intervals(grid_of(index), *_cap_box(lng, lat, reach * (1 + 1e-9)))
        else:
            (x, y), r = q.flat, reach * (1 + 1e-9)
            geo_ivs = flat_box_intervals(grid_of(index), x - r, y - r, x + r, y + r)
        name = geo_field(index)
        per_field = [
            geo_ivs if field == name else (self.others[i] if self.others is not None else [ALL])
            for i, field in enumerate(index.key)
        ]
        ranges = key_ranges(per_field, [False] * len(per_field))
        if ranges is None:  # too many prefixes to list: the whole index
            ranges = [KeyRange(b"", None)]
        bounds = {field: [iv.show() for iv in ivs] for field, ivs in zip(index.key, per_field, strict=True)}
        scan = IndexScan(self.store, index, ranges, 1, bounds, None, per_field)
        self.scans.append(scan)
        return scan

    def explain(self) -> dict[str, Any]:
        node: dict[str, Any] = {"stage": self.stage}
        if self.index is not None:
            node.update(keyPattern=dict(self.index.key), indexName=self.index.name, indexVersion=2)
            first = self.scans[0] if self.scans else self._ring_scan(self._first_radius(), False)
            node["inputStages"] = [{"stage": "FETCH", "inputStage": first.explain()}]
        return node
