"""Dates, time zones and the proleptic Gregorian calendar for expressions.

A BSON date is a count of milliseconds since the epoch, UTC. Python holds it
as a naive ``datetime`` (UTC, millisecond precision) or, outside years
1-9999, as ``bson.DatetimeMS``; results follow the same rule
(:func:`to_date`). Calendar arithmetic works on day numbers (days since
1970-01-01, Howard Hinnant's algorithms), so it holds for any year.

A :class:`TimeZone` is UTC, a fixed offset (``±HH``, ``±HHMM``, ``±HH:MM``)
or an Olson zone from :mod:`zoneinfo`. Olson offsets outside years 1-9999
are those of the nearest representable instant. A local time that a zone
skips or repeats resolves with the offset in force before the transition
(``fold=0``).
"""

from __future__ import annotations

import datetime
import re
import zoneinfo
from typing import Any, NamedTuple

from bson import ObjectId, Timestamp
from bson.datetime_ms import DatetimeMS

from foliodb.errors import location
from foliodb.query.compare import date_millis
from foliodb.query.expr.core import is_string, type_of

MS_PER_DAY = 86_400_000
_EPOCH = datetime.datetime(1970, 1, 1)
_MIN_MS = -62_135_596_800_000  # 0001-01-01T00:00:00Z
_MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z


def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


def is_leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def days_in_month(y: int, m: int) -> int:
    if m == 2:
        return 29 if is_leap(y) else 28
    return 30 if m in (4, 6, 9, 11) else 31


def day_of_year(y: int, m: int, d: int) -> int:
    return days_from_civil(y, m, d) - days_from_civil(y, 1, 1) + 1


def iso_weekday(days: int) -> int:
    """1 (Monday) to 7 (Sunday) of a day number; 1970-01-01 was a Thursday."""
    return (days + 3) % 7 + 1


def _iso_weeks_in(y: int) -> int:
    jan1 = iso_weekday(days_from_civil(y, 1, 1))
    return 53 if jan1 == 4 or (jan1 == 3 and is_leap(y)) else 52


def iso_week(y: int, m: int, d: int) -> tuple[int, int]:
    """(ISO week-numbering year, ISO week) of a date."""
    week = (day_of_year(y, m, d) - iso_weekday(days_from_civil(y, m, d)) + 10) // 7
    if week < 1:
        return y - 1, _iso_weeks_in(y - 1)
    if week > _iso_weeks_in(y):
        return y + 1, 1
    return y, week


def days_from_iso(iso_year: int, week: int, weekday: int) -> int:
    """Day number of an ISO (year, week, weekday), weeks and days may overflow."""
    jan4 = days_from_civil(iso_year, 1, 4)
    week1_monday = jan4 - (iso_weekday(jan4) - 1)
    return week1_monday + (week - 1) * 7 + (weekday - 1)


def add_months(y: int, m: int, amount: int) -> tuple[int, int]:
    total = y * 12 + (m - 1) + amount
    return total // 12, total % 12 + 1


# --- BSON dates --------------------------------------------------------------


def to_date(ms: int) -> Any:
    """A BSON date value for milliseconds since the epoch."""
    if _MIN_MS <= ms <= _MAX_MS:
        return _EPOCH + datetime.timedelta(milliseconds=ms)
    return DatetimeMS(ms)


def date_ms(value: Any) -> int:
    """Milliseconds since the epoch of a BSON date."""
    return date_millis(value)


def is_date(value: Any) -> bool:
    return isinstance(value, (datetime.datetime, DatetimeMS))


def coercible_to_date(value: Any) -> bool:
    return is_date(value) or isinstance(value, (Timestamp, ObjectId))


def coerce_date_ms(value: Any) -> int:
    """``Value::coerceToDate``: a date, a timestamp's seconds or an ObjectId's
    creation time, in milliseconds; anything else raises 16006."""
    if is_date(value):
        return date_millis(value)
    if isinstance(value, Timestamp):
        return value.time * 1000
    if isinstance(value, ObjectId):
        return int.from_bytes(value.binary[:4], "big") * 1000
    raise location(16006, f"can't convert from BSON type {type_of(value)} to Date")


# --- time zones --------------------------------------------------------------


class Parts(NamedTuple):
    """A moment as a wall clock shows it in some zone."""

    days: int  # local day number
    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    millisecond: int
    offset: int  # seconds east of UTC


class TimeZone:
    __slots__ = ("_fixed", "_zone", "name")

    def __init__(self, name: str, fixed: int = 0, zone: zoneinfo.ZoneInfo | None = None) -> None:
        self.name = name
        self._fixed = fixed  # seconds east of UTC
        self._zone = zone

    @property
    def is_utc(self) -> bool:
        return self._zone is None and self._fixed == 0

    def offset(self, utc_ms: int) -> int:
        """Seconds east of UTC in force at an instant."""
        if self._zone is None:
            return self._fixed
        clamped = min(max(utc_ms, _MIN_MS + 2 * MS_PER_DAY), _MAX_MS - 2 * MS_PER_DAY)
        moment = (_EPOCH + datetime.timedelta(milliseconds=clamped)).replace(tzinfo=datetime.UTC)
        delta = moment.astimezone(self._zone).utcoffset()
        return int(delta.total_seconds()) if delta is not None else 0

    def to_utc(self, local_ms: int) -> int:
        """The instant a wall-clock time (milliseconds on the local epoch) names."""
        if self._zone is None:
            return local_ms - self._fixed * 1000
        clamped = min(max(local_ms, _MIN_MS + 2 * MS_PER_DAY), _MAX_MS - 2 * MS_PER_DAY)
        wall = _EPOCH + datetime.timedelta(milliseconds=clamped)
        delta = wall.replace(tzinfo=self._zone, fold=0).utcoffset()
        return local_ms - (int(delta.total_seconds()) * 1000 if delta is not None else 0)

    def parts(self, utc_ms: int) -> Parts:
        offset = self.offset(utc_ms)
        local = utc_ms + offset * 1000
        days, ms = divmod(local, MS_PER_DAY)
        y, m, d = civil_from_days(days)
        seconds, millisecond = divmod(ms, 1000)
        hour, rest = divmod(seconds, 3600)
        minute, second = divmod(rest, 60)
        return Parts(days, y, m, d, hour, minute, second, millisecond, offset)


UTC = TimeZone("UTC")
_OFFSET = re.compile(r"([+-])(\d\d)(?::?(\d\d))?\Z", re.ASCII)
_ZONE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*\Z")


def parse_timezone(text: str) -> TimeZone | None:
    """The zone an identifier names: "UTC", an Olson name or a UTC offset."""
    if text == "UTC":
        return UTC
    m = _OFFSET.match(text)
    if m is not None:
        sign = 1 if m.group(1) == "+" else -1
        return TimeZone(text, sign * (int(m.group(2)) * 3600 + int(m.group(3) or 0) * 60))
    if _ZONE_NAME.match(text) is None:
        return None
    try:
        return TimeZone(text, zone=zoneinfo.ZoneInfo(text))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return None


def timezone_from(value: Any) -> TimeZone:
    """The zone a ``timezone`` argument names (the caller handles null)."""
    if not is_string(value):
        raise location(40517, f"timezone must evaluate to a string, found {type_of(value)}")
    tz = parse_timezone(value)
    if tz is None:
        raise location(40485, f'unrecognized time zone identifier: "{value}"')
    return tz
