"""Dates to strings and back, in MongoDB's format language.

Format specifiers (``%`` followed by one letter; ``%%`` is a percent sign):

====  ==========================================  ========  =========
spec  meaning                                     to text   from text
====  ==========================================  ========  =========
%b    month, 3 letters (Jan)                       yes       yes
%B    month, full name (January)                   yes       yes
%d    day of month, 2 digits                       yes       yes
%G    ISO week-numbering year, 4 digits            yes       yes
%H    hour 00-23                                   yes       yes
%j    day of year, 3 digits                        yes       yes
%L    millisecond, 3 digits                        yes       yes
%m    month, 2 digits                              yes       yes
%M    minute, 2 digits                             yes       yes
%S    second, 2 digits                             yes       yes
%u    ISO day of week, 1 (Monday) - 7              yes       yes
%U    week of year 00-53 (weeks start Sunday)      yes       no
%V    ISO week 01-53                               yes       yes
%w    day of week, 1 (Sunday) - 7                  yes       no
%Y    year, 4 digits                               yes       yes
%z    UTC offset, +hhmm                            yes       yes
%Z    UTC offset in minutes (+330, -300)           yes       yes
====  ==========================================  ========  =========

Writing a year outside 0-9999 fails (18537). Reading without a format
accepts ISO 8601 dates and times (``2017-02-08``, ``2017-02-08T12:10:40.787``,
``2017-02-08 12:10:40.787Z``, ``...+05:30``), ``YYYY/MM/DD``,
``MM/DD/YYYY`` and month names (``Feb 8, 2017``, ``8 February 2017``); a
string without a date fails. Failures to read raise ConversionFailure (241)
so ``onError`` can catch them.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.expr.timezones import (
    MS_PER_DAY,
    TimeZone,
    civil_from_days,
    day_of_year,
    days_from_civil,
    days_from_iso,
    days_in_month,
    iso_week,
    iso_weekday,
)

ISO_FORMAT_Z = "%Y-%m-%dT%H:%M:%S.%LZ"
ISO_FORMAT = "%Y-%m-%dT%H:%M:%S.%L"
TO_STRING_SPECIFIERS = frozenset("bBdGHjLmMSuUVwYzZ")
FROM_STRING_SPECIFIERS = frozenset("bBdGHjLmMSuVYzZ")
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def validate_format(fmt: str, allowed: frozenset[str]) -> None:
    i = 0
    while i < len(fmt):
        if fmt[i] == "%":
            i += 1
            if i == len(fmt):
                raise location(18535, "Unmatched '%' at end of format string")
            if fmt[i] != "%" and fmt[i] not in allowed:
                raise location(18536, f"Invalid format character '%{fmt[i]}' in format string")
        i += 1


def _padded(n: int, width: int) -> str:
    if not 0 <= n <= 9999:
        raise location(
            18537, f"Could not convert date to string: date component was outside the supported range of 0-9999: {n}"
        )
    return str(n).zfill(width)


def format_date(ms: int, fmt: str, tz: TimeZone, context: str | None = None) -> str:
    """A date as ``$dateToString`` writes it (the format already validated)."""
    try:
        return _format(ms, fmt, tz)
    except CommandError as exc:
        if context is None:
            raise
        raise CommandError(exc.code, f"{context} :: caused by :: {exc.errmsg}") from None


def _format(ms: int, fmt: str, tz: TimeZone) -> str:
    p = tz.parts(ms)
    out: list[str] = []
    i = 0
    while i < len(fmt):
        c = fmt[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        spec = fmt[i + 1]
        i += 2
        if spec == "Y":
            out.append(_padded(p.year, 4))
        elif spec == "G":
            out.append(_padded(iso_week(p.year, p.month, p.day)[0], 4))
        elif spec in "dHMSmLjuwUV":
            out.append(_number(spec, p.year, p.month, p.day, p.hour, p.minute, p.second, p.millisecond, p.days))
        elif spec == "z":
            sign = "-" if p.offset < 0 else "+"
            hours, minutes = divmod(abs(p.offset) // 60, 60)
            out.append(f"{sign}{hours:02d}{minutes:02d}")
        elif spec == "Z":
            minutes = abs(p.offset) // 60
            out.append(str(-minutes if p.offset < 0 else minutes))
        elif spec == "b":
            out.append(MONTHS[p.month - 1][:3])
        elif spec == "B":
            out.append(MONTHS[p.month - 1])
        else:  # "%%"
            out.append("%")
    return "".join(out)


def _number(spec: str, y: int, m: int, d: int, h: int, mi: int, s: int, ms: int, days: int) -> str:
    if spec == "d":
        return f"{d:02d}"
    if spec == "H":
        return f"{h:02d}"
    if spec == "M":
        return f"{mi:02d}"
    if spec == "S":
        return f"{s:02d}"
    if spec == "m":
        return f"{m:02d}"
    if spec == "L":
        return f"{ms:03d}"
    if spec == "j":
        return f"{day_of_year(y, m, d):03d}"
    if spec == "u":
        return str(iso_weekday(days))
    if spec == "w":
        return str(iso_weekday(days) % 7 + 1)
    if spec == "U":
        return f"{week_of_year(y, m, d, days):02d}"
    return f"{iso_week(y, m, d)[1]:02d}"  # "V"


def week_of_year(y: int, m: int, d: int, days: int) -> int:
    """Week 0-53 with weeks starting on Sunday (``$week``, ``%U``)."""
    weekday = iso_weekday(days) % 7 + 1  # 1 = Sunday
    return (day_of_year(y, m, d) - weekday + 7) // 7


# --- reading -------------------------------------------------------------------


def _failure(message: str) -> CommandError:
    return CommandError(ErrorCode.ConversionFailure, message)


def _parse_error(text: str, position: int, reason: str) -> CommandError:
    char = text[position] if position < len(text) else ""
    return _failure(f"Error parsing date string '{text}'; {position}: {reason} '{char}'")


class Fields:
    """What a date string said; None for what it did not."""

    __slots__ = (
        "day",
        "hour",
        "iso_day",
        "iso_week",
        "iso_year",
        "millis",
        "minute",
        "month",
        "offset",
        "second",
        "year",
        "year_day",
        "zone_name",
    )

    def __init__(self) -> None:
        self.year: int | None = None
        self.month: int | None = None
        self.day: int | None = None
        self.year_day: int | None = None
        self.iso_year: int | None = None
        self.iso_week: int | None = None
        self.iso_day: int | None = None
        self.hour: int | None = None
        self.minute: int | None = None
        self.second: int | None = None
        self.millis = 0
        self.offset: int | None = None  # seconds east, when the string gave one
        self.zone_name: str | None = None  # an abbreviation such as "Z"


class _Zone(NamedTuple):
    offset: int
    name: str | None  # None for a numeric offset


_NUMERIC_ZONE = re.compile(r"(?:GMT|UTC)?([+-])(\d{1,2})(?::?(\d\d))?", re.ASCII | re.IGNORECASE)
# Abbreviations timelib knows (timezonemap.h, fallbackmap.h), hours east of UTC: the common ones
# and the military letters (A-I +1..+9, K-M +10..+12, N-Y -1..-12, Z 0).
_ABBREVIATIONS: dict[str, float] = {
    "utc": 0, "gmt": 0, "ut": 0, "wet": 0, "west": 1, "bst": 1, "cet": 1, "cest": 2, "met": 1, "mest": 2,
    "eet": 2, "eest": 3, "msk": 3, "est": -5, "edt": -4, "cst": -6, "cdt": -5, "mst": -7, "mdt": -6,
    "pst": -8, "pdt": -7, "akst": -9, "akdt": -8, "hst": -10, "ast": -4, "adt": -3, "nst": -3.5, "ndt": -2.5,
    **{c: n for n, c in enumerate("abcdefghi", start=1)},
    **{c: n for n, c in enumerate("klm", start=10)},
    **{c: -n for n, c in enumerate("nopqrstuvwxy", start=1)},
    "z": 0,
}  # fmt: skip
_NAMED_ZONE = re.compile(r"([A-Za-z]{1,4})(?![A-Za-z/_])", re.ASCII)


def _zone_at(text: str, pos: int) -> tuple[_Zone, int] | None:
    m = _NUMERIC_ZONE.match(text, pos)
    if m is not None:
        sign = 1 if m.group(1) == "+" else -1
        return _Zone(sign * (int(m.group(2)) * 3600 + int(m.group(3) or 0) * 60), None), m.end()
    m = _NAMED_ZONE.match(text, pos)
    if m is not None and m.group(1).lower() in _ABBREVIATIONS:
        return _Zone(round(_ABBREVIATIONS[m.group(1).lower()] * 3600), m.group(1)), m.end()
    return None


def _month_named(word: str) -> int | None:
    word = word.lower()
    for n, name in enumerate(MONTHS, start=1):
        if word in (name.lower(), name[:3].lower()) or (word == "sept" and n == 9):
            return n
    return None


# timelib's timelong24 / iso8601long: hour24 [:.] minute [:.] second frac
# and timetiny12/timeshort12/timelong12: hour12 ([:.] minute ([:.] second)?)? space? meridian.
_CLOCK = (
    r"(?P<h>\d{1,2})(?:[:.](?P<mi>\d\d)(?:[:.](?P<s>\d\d)(?:[.,](?P<f>\d+))?)?)?"
    r"(?: ?(?P<ap>[AaPp])\.?[Mm]\.?(?![A-Za-z]))?"
)
# A clock, or timelib's 'noon' and 'midnight'.
_TIME = r"(?:[Tt ]+(?:" + _CLOCK + r"|(?P<kw>noon|midnight)(?![A-Za-z])))?"
_FREE_FORMS = [
    re.compile(r"(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})" + _TIME, re.ASCII),
    re.compile(r"(?P<y>\d{4})(?P<m>\d\d)(?P<d>\d\d)" + _TIME.replace("[Tt ]+", "[Tt]"), re.ASCII),
    re.compile(r"(?P<y>\d{4})/(?P<m>\d{1,2})/(?P<d>\d{1,2})" + _TIME, re.ASCII),
    # american: month / day / year (two digits: 00-69 are 20xx, 70-99 19xx)
    re.compile(r"(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4}|\d\d)(?!\d)" + _TIME, re.ASCII),
    # pointeddate4: day [.-] month [.-] year4; pgtextreverse: year4 - monthabbr - day
    re.compile(r"(?P<d>\d{1,2})[.\t-](?P<m>\d{1,2})[.-](?P<y>\d{4})" + _TIME, re.ASCII),
    re.compile(r"(?P<y>\d{4})-(?P<mn>[A-Za-z]{3})-(?P<d>\d{1,2})" + _TIME, re.ASCII),
    # (timelib's datenoyear: a month and day alone parse, and then fail for want of a year)
    re.compile(r"(?P<mn>[A-Za-z]{3,9})\.? +(?P<d>\d{1,2})(?:st|nd|rd|th)?(?:,? +(?P<y>\d{4}))?" + _TIME, re.ASCII),
    re.compile(r"(?P<d>\d{1,2}) +(?P<mn>[A-Za-z]{3,9})\.?,? +(?P<y>\d{4})" + _TIME, re.ASCII),
    # A time alone parses, and then fails for want of a date.
    re.compile(_CLOCK, re.ASCII),
]


def _parse_free(text: str) -> Fields:
    fields = Fields()
    stripped = text.strip()
    lead = len(text) - len(text.lstrip())
    for form in _FREE_FORMS:
        m = form.match(stripped)
        if m is None:
            continue
        g = m.groupdict()
        if g.get("d") is not None:
            month = _month_named(g["mn"]) if g.get("mn") else int(g["m"])
            if month is None:
                continue
            fields.month, fields.day = month, int(g["d"])
        if g.get("y") is not None:
            year = int(g["y"])
            if len(g["y"]) == 2:  # timelib_process_year
                year += 2000 if year < 70 else 1900
            fields.year = year
        if g.get("kw") is not None:
            fields.hour, fields.minute, fields.second = (12 if g["kw"] == "noon" else 0), 0, 0
        if g["h"] is not None:
            hour = int(g["h"])
            if g["ap"] is not None:  # a 12-hour clock: 12am is midnight, 12pm noon
                if not 1 <= hour <= 12:
                    raise _parse_error(text, lead + m.start("h"), "Unexpected character")
                hour = hour % 12 + (12 if g["ap"] in "Pp" else 0)
            elif g["mi"] is None:  # an hour alone needs its meridian
                raise _parse_error(text, lead + m.start("h"), "Unexpected character")
            fields.hour, fields.minute, fields.second = hour, int(g["mi"] or 0), int(g["s"] or 0)
            fields.millis = int((g["f"] or "0")[:3].ljust(3, "0"))
        _finish_zone(text, lead + m.end(), fields)
        return fields
    if stripped and not stripped[0].isdigit() and stripped[0].isalpha():
        raise _parse_error(text, lead, "The timezone could not be found in the database")
    raise _parse_error(text, lead, "Unexpected character")


def _finish_zone(text: str, pos: int, fields: Fields) -> None:
    while pos < len(text) and text[pos] == " ":
        pos += 1
    if pos < len(text):
        zone = _zone_at(text, pos)
        if zone is not None:
            fields.offset, fields.zone_name = zone[0].offset, zone[0].name
            pos = zone[1]
        elif text[pos].isalpha():
            raise _failure(
                f"Error parsing date string '{text}'; {pos}: passing a time zone identifier as part of the "
                f"string is not allowed '{text[pos]}'"
            )
    while pos < len(text) and text[pos] == " ":
        pos += 1
    if pos < len(text):
        raise _parse_error(text, pos, "Unexpected character")


def _digits(text: str, pos: int, most: int) -> tuple[int, int] | None:
    end = pos
    while end < len(text) and end - pos < most and text[end].isdigit():
        end += 1
    return (int(text[pos:end]), end) if end > pos else None


_NUMBER_FIELDS = {
    "d": ("day", 2),
    "m": ("month", 2),
    "H": ("hour", 2),
    "M": ("minute", 2),
    "S": ("second", 2),
    "Y": ("year", 4),
    "G": ("iso_year", 4),
    "V": ("iso_week", 2),
    "u": ("iso_day", 1),
    "j": ("year_day", 3),
    "L": ("millis", 3),
}


def _parse_with_format(text: str, fmt: str) -> Fields:
    fields = Fields()
    pos = i = 0
    # timelib reads C strings: a NUL ends either; parse_from_format stops when either runs out.
    text, fmt = text.split("\x00", 1)[0], fmt.split("\x00", 1)[0]
    while i < len(fmt) and pos < len(text):
        c = fmt[i]
        if c == "%" and fmt[i + 1] != "%":
            spec = fmt[i + 1]
            i += 2
            if spec in _NUMBER_FIELDS:
                name, most = _NUMBER_FIELDS[spec]
                found = _digits(text, pos, most)
                if found is None:
                    raise _parse_error(text, pos, f"A {name} could not be found")
                value = found[0]
                if spec == "L":  # timelib reads the digits as a fraction: ".81" is 810 ms
                    value *= 10 ** (3 - (found[1] - pos))
                setattr(fields, name, value)
                pos = found[1]
            elif spec in "bB":
                m = re.compile(r"[A-Za-z]+").match(text, pos)
                month = _month_named(m.group()) if m else None
                if m is None or month is None:
                    raise _parse_error(text, pos, "A textual month could not be found")
                fields.month, pos = month, m.end()
            elif spec == "z":
                while pos < len(text) and text[pos] in " \t(":  # timelib_parse_zone skips these
                    pos += 1
                zone = _zone_at(text, pos)
                if zone is None:
                    raise _parse_error(text, pos, "The timezone could not be found in the database")
                fields.offset, fields.zone_name, pos = zone[0].offset, zone[0].name, zone[1]
            else:  # "Z": minutes east of UTC
                m = re.compile(r"[+-]?\d+", re.ASCII).match(text, pos)
                if m is None:
                    raise _parse_error(text, pos, "A timezone offset could not be found")
                fields.offset, pos = int(m.group()) * 60, m.end()
            continue
        literal = "%" if c == "%" else c
        i += 2 if c == "%" else 1
        if pos >= len(text) or text[pos] != literal:
            raise _parse_error(text, pos, "Format literal not found")
        pos += 1
    if pos < len(text):
        raise _parse_error(text, pos, "Trailing data")
    if i < len(fmt):
        raise _parse_error(text, pos, "Data missing")
    return fields


def parse_date(text: str, tz: TimeZone, fmt: str | None = None) -> int:
    """Milliseconds since the epoch of a date string, as ``$dateFromString``
    reads it; ``tz`` applies when the string names no zone of its own."""
    fields = _parse_free(text) if fmt is None else _parse_with_format(text, fmt)
    iso = (fields.iso_year, fields.iso_week, fields.iso_day) != (None, None, None)
    if iso and (fields.year, fields.month, fields.day, fields.year_day) != (None, None, None, None):
        # timelib keeps ISO week dates and calendar dates apart.
        raise _parse_error(text, len(text), "Mixing of ISO dates with natural dates is not allowed")
    if iso and fields.iso_year is None:
        # A week or weekday without its ISO year names no date (timelib's "invalid date").
        raise _failure(f"Error parsing date string '{text}'; 0: The parsed date was invalid ''")
    if fields.iso_year is not None and fields.year is None:
        days = days_from_iso(fields.iso_year, fields.iso_week or 1, fields.iso_day or 1)
        fields.year, fields.month, fields.day = civil_from_days(days)
    elif fields.year is not None and fields.year_day is not None and fields.month is None:
        fields.year, fields.month, fields.day = civil_from_days(
            days_from_civil(fields.year, 1, 1) + fields.year_day - 1
        )
    # A time with some parts given has the others zero; no time at all is midnight.
    fields.hour, fields.minute, fields.second = fields.hour or 0, fields.minute or 0, fields.second or 0
    y, m, d = fields.year, fields.month, fields.day
    if y is None or m is None or d is None:
        raise _failure(f'an incomplete date/time string has been found, with elements missing: "{text}"')
    if not 1 <= m <= 12 or not 1 <= d <= days_in_month(y, m):
        raise _failure(f"Error parsing date string '{text}'; 0: The parsed date was invalid ''")
    if fields.hour > 23 or fields.minute > 59 or fields.second > 59:
        raise _failure(f"Error parsing date string '{text}'; 0: The parsed time was invalid ''")
    local = (
        days_from_civil(y, m, d) * MS_PER_DAY
        + ((fields.hour * 60 + fields.minute) * 60 + fields.second) * 1000
        + fields.millis
    )
    if fields.offset is None:
        return tz.to_utc(local)
    if not tz.is_utc:
        if fields.zone_name is None:
            raise _failure("you cannot pass in a date/time string with GMT offset together with a timezone argument")
        raise _failure(
            f"you cannot pass in a date/time string with time zone information ('{fields.zone_name}') "
            "together with a timezone argument"
        )
    return local - fields.offset * 1000
