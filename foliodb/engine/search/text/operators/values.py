"""Operators on values: equals, in, range, exists, near.

* ``equals`` / ``in``: a boolean, ObjectId, UUID, number, date, or a string of a ``token``
  field (lower-cased first under ``normalizer: "lowercase"``); constant score 1.
* ``range``: ``gt``/``gte``/``lt``/``lte`` on numbers, dates, ``token`` strings (by code
  point) or ObjectIds; constant score 1.
* ``exists``: a path holding any indexed value (or, for a document, under it); score 1.
* ``near``: numbers, dates and geo points, scored ``pivot / (pivot + distance)`` by the
  nearest value of the document (distance in milliseconds for dates, in meters along the
  earth's surface for points); every document with a value matches.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping
from typing import Any

from bson import Decimal128, Int64, ObjectId
from bson.binary import Binary

from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.mapping import EXISTS, TextDefinition, geo_point, millis, uuid_text
from foliodb.engine.search.text.operators import (
    OPERATORS,
    Query,
    Run,
    check_fields,
    number,
    of_roots,
    search_error,
    strings,
)
from foliodb.engine.search.text.scoring import Hits, constant, empty

EARTH_RADIUS_METERS = 6_371_008.7714  # Lucene's GeoUtils.EARTH_MEAN_RADIUS_METERS


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | Int64 | Decimal128) and not isinstance(value, bool)


Test = tuple[str, str, Any]  # (path, "term" | "terms" | "number", argument)


class ValueQuery(Query):
    """Entries whose value at a path passes a test: a term of a key, a range of terms, or a
    range of a numeric column (``(suffix, low, high, low inclusive, high inclusive)``)."""

    def __init__(self, tests: list[Test]) -> None:
        self.tests = tests

    def match(self, run: Run) -> Hits:
        reader = run.reader
        found = []
        for path, kind, arg in self.tests:
            if kind == "term":
                suffix, term = arg
                found.append(reader.postings(path + suffix, term)[0])
                continue
            suffix, low, high, low_incl, high_incl = arg
            if kind == "terms":
                key = path + suffix
                for term in reader.terms_between(key, low or "", None):
                    if high is not None and (term > high or (term == high and not high_incl)):
                        break
                    if not (low is not None and term == low and not low_incl):
                        found.append(reader.postings(key, term)[0])
                continue
            ords, values = reader.column(path + suffix)
            keep = np.ones(len(ords), dtype=bool)
            if low is not None:
                keep &= values >= low if low_incl else values > low
            if high is not None:
                keep &= values <= high if high_incl else values < high
            found.append(ords[keep])
        if not found:
            return empty()
        return of_roots(run, constant(np.concatenate(found)))


def _equality(path: str, value: Any, place: str, definition: TextDefinition) -> Test:
    if isinstance(value, bool):
        return path, "term", ("\x00b", "true" if value else "false")
    if isinstance(value, ObjectId):
        return path, "term", ("\x00o", str(value))
    if _is_number(value):
        v = number(value, place)
        return path, "number", ("\x00n", v, v, True, True)
    if isinstance(value, datetime.datetime):
        ms = millis(value)
        return path, "number", ("\x00d", ms, ms, True, True)
    if isinstance(value, str):
        specs, _ = definition.specs_at(path)
        lower = any(s.type == "token" and s.lowercase for s in specs)
        return path, "term", ("\x00tok", value.lower() if lower else value)
    if isinstance(value, uuid.UUID | Binary) and (text := uuid_text(value)) is not None:
        return path, "term", ("\x00u", text)
    raise search_error(f'"{place}" must be a boolean, objectId, number, date, string or uuid')


@OPERATORS.register("equals")
def op_equals(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    check_fields(body, place, ("path", "value"), ("path", "value"))
    if not isinstance(body["path"], str):
        raise search_error(f'"{place}.path" must be a string')
    return ValueQuery([_equality(body["path"], body["value"], f"{place}.value", definition)])


@OPERATORS.register("in")
def op_in(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    check_fields(body, place, ("path", "value"), ("path", "value"))
    values = body["value"] if isinstance(body["value"], list) else [body["value"]]
    if not values:
        raise search_error(f'"{place}.value" must not be empty')
    paths = strings(body["path"], f"{place}.path")
    return ValueQuery([_equality(path, v, f"{place}.value", definition) for path in paths for v in values])


@OPERATORS.register("range")
def op_range(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    check_fields(body, place, ("path", "gt", "gte", "lt", "lte"), ("path",))
    low_key = "gte" if "gte" in body else "gt" if "gt" in body else None
    high_key = "lte" if "lte" in body else "lt" if "lt" in body else None
    if low_key is None and high_key is None:
        raise search_error(f'"{place}" must have at least one of [gt, gte, lt, lte]')
    bounds = [body[k] for k in (low_key, high_key) if k is not None]
    kinds = {_range_kind(v, place) for v in bounds}
    if len(kinds) != 1:
        raise search_error(f'"{place}" bounds must be of one type')
    suffix = kinds.pop()

    def convert(key: str | None) -> Any:
        if key is None:
            return None
        value = body[key]
        if suffix == "\x00d":
            return millis(value)
        return number(value, f"{place}.{key}") if suffix == "\x00n" else str(value)

    arg = (suffix, convert(low_key), convert(high_key), low_key == "gte", high_key == "lte")
    kind = "number" if suffix in ("\x00n", "\x00d") else "terms"
    return ValueQuery([(path, kind, arg) for path in strings(body["path"], f"{place}.path")])


def _range_kind(value: Any, place: str) -> str:
    if _is_number(value):
        return "\x00n"
    if isinstance(value, datetime.datetime):
        return "\x00d"
    if isinstance(value, str):
        return "\x00tok"
    if isinstance(value, ObjectId):
        return "\x00o"
    raise search_error(f'"{place}" bounds must be numbers, dates, strings or objectIds')


class ExistsQuery(Query):
    def __init__(self, path: str) -> None:
        self.path = path

    def match(self, run: Run) -> Hits:
        reader = run.reader
        terms = [self.path, *reader.terms_between(EXISTS, self.path + ".", self.path + "/")]
        parts = [reader.postings(EXISTS, t)[0] for t in terms]
        found = constant(np.concatenate(parts)) if parts else empty()
        return of_roots(run, found)


@OPERATORS.register("exists")
def op_exists(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    check_fields(body, place, ("path",), ("path",))
    if not isinstance(body["path"], str):
        raise search_error(f'"{place}.path" must be a string')
    return ExistsQuery(body["path"])


def haversine_meters(origin: tuple[float, float], lon: Any, lat: Any) -> Any:
    """The great-circle distances (meters) from ``origin`` (lon, lat) to points, as Lucene's."""
    lon0, lat0 = np.radians(origin[0]), np.radians(origin[1])
    la, lo = np.radians(lat), np.radians(lon)
    h = np.sin((la - lat0) / 2) ** 2 + np.cos(lat0) * np.cos(la) * np.sin((lo - lon0) / 2) ** 2
    return 2 * EARTH_RADIUS_METERS * np.arcsin(np.sqrt(np.minimum(h, 1.0)))


class NearQuery(Query):
    def __init__(self, paths: list[str], origin: Any, pivot: float) -> None:
        self.paths, self.origin, self.pivot = paths, origin, pivot

    def _distances(self, run: Run, path: str) -> tuple[Any, Any]:
        reader = run.reader
        if isinstance(self.origin, tuple):
            ords, lon = reader.column(path + "\x00glon")
            _, lat = reader.column(path + "\x00glat")
            return ords, haversine_meters(self.origin, lon, lat)
        suffix = "\x00d" if isinstance(self.origin, datetime.datetime) else "\x00n"
        origin = millis(self.origin) if suffix == "\x00d" else float(self.origin)
        ords, values = reader.column(path + suffix)
        return ords, np.abs(values - origin)

    def match(self, run: Run) -> Hits:
        ords_parts, score_parts = [], []
        for path in self.paths:
            ords, distances = self._distances(run, path)
            ords_parts.append(ords)
            score_parts.append(self.pivot / (self.pivot + distances))
        if not ords_parts or not sum(len(o) for o in ords_parts):
            return empty()
        ords = np.concatenate(ords_parts)
        scores = np.concatenate(score_parts)
        order = np.lexsort((-scores, ords))  # by ordinal, best score first
        ords, scores = ords[order], scores[order]
        first = np.ones(len(ords), dtype=bool)
        first[1:] = ords[1:] != ords[:-1]
        return of_roots(run, (ords[first], scores[first]))


@OPERATORS.register("near")
def op_near(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    check_fields(body, place, ("path", "origin", "pivot"), ("path", "origin", "pivot"))
    pivot = number(body["pivot"], f"{place}.pivot")
    if pivot <= 0:
        raise search_error(f'"{place}.pivot" must be positive')
    origin = body["origin"]
    if isinstance(origin, Mapping):
        point = geo_point(origin)
        if point is None:
            raise search_error(f'"{place}.origin" must be a GeoJSON point')
        origin = point
    elif _is_number(origin):
        origin = number(origin, f"{place}.origin")
    elif not isinstance(origin, datetime.datetime):
        raise search_error(f'"{place}.origin" must be a number, a date or a GeoJSON point')
    return NearQuery(strings(body["path"], f"{place}.path"), origin, pivot)
