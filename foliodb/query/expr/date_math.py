"""Date arithmetic: $dateAdd $dateSubtract $dateDiff $dateTrunc.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/dateAdd/
(and dateSubtract/, dateDiff/, dateTrunc/)

Units: year, quarter, month, week, day, hour, minute, second, millisecond.
Days and larger move the wall clock in ``timezone`` (so adding a day across
a daylight-saving change keeps the hour), and a month added to the 31st
lands on the month's last day. Hours and smaller move the instant.
$dateDiff counts unit boundaries crossed between the two wall clocks (weeks
start on ``startOfWeek``, default Sunday). $dateTrunc rounds down to a bin of
``binSize`` units counted from 2000-01-01 in ``timezone`` (for weeks, the
first ``startOfWeek`` on or after it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson import Int64

from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.expr.core import EXPR_OPS, Expr, Scope, compile_expression, is_string, nullish, show, type_of
from foliodb.query.expr.date import ZoneExpr, zone_expression
from foliodb.query.expr.numeric import fits_long, integral64, to_long
from foliodb.query.expr.timezones import (
    MS_PER_DAY,
    TimeZone,
    add_months,
    coerce_date_ms,
    coercible_to_date,
    days_from_civil,
    days_in_month,
    iso_weekday,
    to_date,
)

UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond")
_UNIT_MS = {"week": 7 * MS_PER_DAY, "day": MS_PER_DAY, "hour": 3_600_000, "minute": 60_000, "second": 1000}
_DAYS = {"monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5, "saturday": 6, "sunday": 7}
_DAY_NAMES = {**_DAYS, **{name[:3]: n for name, n in _DAYS.items()}}
_SUNDAY = 7

# Amounts of each unit that keep a date within a 64-bit count of milliseconds.
_MAX_DAYS = (2**64 - 1) // MS_PER_DAY + 1
_MAX_YEARS = _MAX_DAYS // 365 + 1
_MAX_AMOUNT = {
    "year": _MAX_YEARS,
    "quarter": _MAX_YEARS * 4,
    "month": _MAX_YEARS * 12,
    "week": _MAX_DAYS // 7,
    "day": _MAX_DAYS,
    "hour": _MAX_DAYS * 24,
    "minute": _MAX_DAYS * 24 * 60,
    "second": _MAX_DAYS * 24 * 3600,
}


def parse_unit(value: Any, name: str) -> str:
    if not is_string(value):
        raise location(5439013, f"{name} requires 'unit' to be a string, but got {type_of(value)}")
    if value not in UNITS:
        raise CommandError(
            ErrorCode.FailedToParse,
            f"{name} parameter 'unit' value parsing failed :: caused by :: unknown time unit value: {value}",
        )
    return value


def parse_day_of_week(value: Any, name: str) -> int:
    if not is_string(value):
        raise location(5439015, f"{name} requires 'startOfWeek' to be a string, but got {type_of(value)}")
    day = _DAY_NAMES.get(value.lower())
    if day is None:
        raise location(
            5439016, f"{name} parameter 'startOfWeek' value cannot be recognized as a day of a week: {value}"
        )
    return day


def _week_start(unit: str, start_of_week: Expr | None, doc: Any, vars: dict[str, Any], name: str) -> int | None:
    """The first day of a week for ``unit`` ("week" reads 'startOfWeek',
    Sunday by default); None when 'startOfWeek' is null or missing."""
    if unit != "week" or start_of_week is None:
        return _SUNDAY
    w = start_of_week(doc, vars)
    if nullish(w):
        return None
    return parse_day_of_week(w, name)


def _with_context(zone: ZoneExpr, name: str) -> ZoneExpr:
    def zone_in_context(doc: Any, vars: dict[str, Any]) -> TimeZone | None:
        try:
            return zone(doc, vars)
        except CommandError as exc:
            raise CommandError(
                exc.code, f"{name} parameter 'timezone' value parsing failed :: caused by :: {exc.errmsg}"
            ) from None

    return zone_in_context


def date_add(ms: int, unit: str, amount: int, tz: TimeZone) -> int:
    if unit == "millisecond":
        result = ms + amount
    else:
        limit = _MAX_AMOUNT[unit]
        if not -limit < amount < limit:
            raise location(5976500, f"invalid dateAdd 'amount' parameter value: {amount} {unit}")
        if unit in ("hour", "minute", "second"):
            result = ms + amount * _UNIT_MS[unit]
        else:
            p = tz.parts(ms)
            clock = ((p.hour * 60 + p.minute) * 60 + p.second) * 1000 + p.millisecond
            if unit in ("week", "day"):
                days = p.days + amount * (7 if unit == "week" else 1)
            else:
                months = amount * {"year": 12, "quarter": 3, "month": 1}[unit]
                y, m = add_months(p.year, p.month, months)
                days = days_from_civil(y, m, min(p.day, days_in_month(y, m)))
            result = tz.to_utc(days * MS_PER_DAY + clock)
    if not fits_long(result):
        raise location(5166406, "dateAdd overflowed")
    return result


def _arithmetic(name: str, sign: int) -> None:
    def compile_arithmetic(arg: Any, scope: Scope) -> Expr:
        if not isinstance(arg, Mapping):
            raise location(5166400, f"{name} expects an object as its argument")
        for key in arg:
            if key not in ("startDate", "unit", "amount", "timezone"):
                raise location(
                    5166401,
                    f"Unrecognized argument to {name}: {key}. Expected arguments are startDate, unit, amount, "
                    "and optionally timezone.",
                )
        if not all(k in arg for k in ("startDate", "unit", "amount")):
            raise location(5166402, f"{name} requires startDate, unit, and amount to be present")
        start = compile_expression(arg["startDate"], scope)
        unit = compile_expression(arg["unit"], scope)
        amount = compile_expression(arg["amount"], scope)
        zone = zone_expression(arg.get("timezone"), scope, "timezone" in arg)

        def arithmetic(doc: Any, vars: dict[str, Any]) -> Any:
            date = start(doc, vars)
            if nullish(date):
                return None
            u = unit(doc, vars)
            if nullish(u):
                return None
            unit_name = parse_unit(u, name)
            n = amount(doc, vars)
            if nullish(n):
                return None
            tz = zone(doc, vars)
            if tz is None:
                return None
            if not coercible_to_date(date):
                raise location(5166403, f"{name} requires startDate to be convertible to a date")
            if not integral64(n):
                raise location(5166405, f"{name} expects integer amount of time units")
            count = to_long(n)
            if sign < 0 and count == -(2**63):
                raise location(6045000, f"invalid $dateSubtract 'amount' parameter value: {count}")
            return to_date(date_add(coerce_date_ms(date), unit_name, sign * count, tz))

        return arithmetic

    compile_arithmetic.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_arithmetic)


_arithmetic("$dateAdd", 1)
_arithmetic("$dateSubtract", -1)


def _week_day(days: int, start_of_week: int) -> int:
    """0 for the first day of a week starting on ``start_of_week``, to 6."""
    return (iso_weekday(days) - start_of_week + 7) % 7


def _c_div(a: int, b: int) -> int:
    """C's integer division, truncating toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def calendar_diff(start: tuple[int, int, int, int], end: tuple[int, int, int, int], unit: str, sow: int) -> int:
    """Boundaries of ``unit`` crossed between two local dates given as
    (year, month, day, day number)."""
    (y1, m1, _, d1), (y2, m2, _, d2) = start, end
    if unit == "year":
        return y2 - y1
    if unit == "quarter":
        return (m2 - 1) // 3 - (m1 - 1) // 3 + (y2 - y1) * 4
    if unit == "month":
        return m2 - m1 + (y2 - y1) * 12
    if unit == "week":
        return (d2 - d1 + _week_day(d1, sow) - _week_day(d2, sow)) // 7
    return d2 - d1  # day


def date_diff(start: int, end: int, unit: str, tz: TimeZone, sow: int) -> int:
    if unit == "millisecond":
        if not fits_long(end - start):
            raise location(5166308, "dateDiff overflowed")
        return end - start
    s, e = tz.parts(start), tz.parts(end)
    if unit not in ("hour", "minute", "second"):
        return calendar_diff((s.year, s.month, s.day, s.days), (e.year, e.month, e.day, e.days), unit, sow)
    shift = s.offset - e.offset  # seconds the zone's offset moved
    hours = e.hour - s.hour + (e.days - s.days) * 24
    if unit == "hour":
        return hours + _c_div(shift, 3600)
    minutes = e.minute - s.minute + hours * 60
    if unit == "minute":
        return minutes + _c_div(shift, 60)
    return e.second - s.second + minutes * 60 + shift


def _date_of(value: Any, name: str, what: str, code: int) -> int:
    if not coercible_to_date(value):
        raise location(code, f"{name} requires '{what}' to be a date, but got {type_of(value)}")
    return coerce_date_ms(value)


@EXPR_OPS.register("$dateDiff")
def expr_dateDiff(arg: Any, scope: Scope) -> Expr:
    if not isinstance(arg, Mapping):
        raise location(5166301, "$dateDiff only supports an object as its argument")
    for key in arg:
        if key not in ("startDate", "endDate", "unit", "timezone", "startOfWeek"):
            raise location(5166302, f"Unrecognized argument to $dateDiff: {key}")
    for code, key in ((5166303, "startDate"), (5166304, "endDate"), (5166305, "unit")):
        if key not in arg:
            raise location(code, f"Missing '{key}' parameter to $dateDiff")
    start, end, unit = (compile_expression(arg[k], scope) for k in ("startDate", "endDate", "unit"))
    start_of_week = compile_expression(arg["startOfWeek"], scope) if "startOfWeek" in arg else None
    zone = _with_context(zone_expression(arg.get("timezone"), scope, "timezone" in arg), "$dateDiff")

    def date_diff_(doc: Any, vars: dict[str, Any]) -> Any:
        values = []
        for part in (start, end, unit):
            v = part(doc, vars)
            if nullish(v):
                return None
            values.append(v)
        first, second, u = values
        unit_name = parse_unit(u, "$dateDiff")
        sow = _week_start(unit_name, start_of_week, doc, vars, "$dateDiff")
        if sow is None:
            return None
        tz = zone(doc, vars)
        if tz is None:
            return None
        a = _date_of(first, "$dateDiff", "startDate", 5166307)
        b = _date_of(second, "$dateDiff", "endDate", 5166307)
        return Int64(date_diff(a, b, unit_name, tz, sow))

    return date_diff_


_REFERENCE_MS = 946_684_800_000  # 2000-01-01T00:00:00Z, a Saturday
_SATURDAY = 6


def date_trunc(ms: int, unit: str, bin_size: int, tz: TimeZone, sow: int) -> int:
    reference = _REFERENCE_MS - tz.offset(_REFERENCE_MS) * 1000
    reference_day = 1
    if unit == "week":
        shift = (7 - (_SATURDAY - sow + 7) % 7) % 7
        reference += shift * MS_PER_DAY
        reference_day += shift
    if unit in ("millisecond", "second", "minute", "hour"):
        width = bin_size * {"millisecond": 1, **_UNIT_MS}[unit]
        if not fits_long(width):
            raise location(5439002, "dateTrunc overflowed")
        return ms - (ms - reference) % width
    if bin_size > 100_000_000_000:
        raise location(5439006, "dateTrunc unsupported binSize value")
    p = tz.parts(ms)
    origin = (2000, 1, reference_day, days_from_civil(2000, 1, reference_day))
    distance = calendar_diff(origin, (p.year, p.month, p.day, p.days), unit, sow)
    return date_add(reference, unit, distance - distance % bin_size, tz)


@EXPR_OPS.register("$dateTrunc")
def expr_dateTrunc(arg: Any, scope: Scope) -> Expr:
    if not isinstance(arg, Mapping):
        raise location(5439007, "$dateTrunc only supports an object as its argument")
    for key in arg:
        if key not in ("date", "unit", "binSize", "timezone", "startOfWeek"):
            raise location(
                5439008,
                f"Unrecognized argument to $dateTrunc: {key}. Expected arguments are date, unit, and optionally, "
                "binSize, timezone, startOfWeek",
            )
    if "date" not in arg:
        raise location(5439009, "Missing 'date' parameter to $dateTrunc")
    if "unit" not in arg:
        raise location(5439010, "Missing 'unit' parameter to $dateTrunc")
    date, unit = compile_expression(arg["date"], scope), compile_expression(arg["unit"], scope)
    bin_size = compile_expression(arg["binSize"], scope) if "binSize" in arg else None
    start_of_week = compile_expression(arg["startOfWeek"], scope) if "startOfWeek" in arg else None
    zone = _with_context(zone_expression(arg.get("timezone"), scope, "timezone" in arg), "$dateTrunc")

    def date_trunc_(doc: Any, vars: dict[str, Any]) -> Any:
        v = date(doc, vars)
        if nullish(v):
            return None
        size = 1
        if bin_size is not None:
            b = bin_size(doc, vars)
            if nullish(b):
                return None
            if not integral64(b):
                raise location(
                    5439017,
                    f"$dateTrunc requires 'binSize' to be a 64-bit integer, but got value '{show(b)}' "
                    f"of type {type_of(b)}",
                )
            size = to_long(b)
            if size <= 0:
                raise location(5439018, f"$dateTrunc requires 'binSize' to be greater than 0, but got value {size}")
        u = unit(doc, vars)
        if nullish(u):
            return None
        unit_name = parse_unit(u, "$dateTrunc")
        sow = _week_start(unit_name, start_of_week, doc, vars, "$dateTrunc")
        if sow is None:
            return None
        tz = zone(doc, vars)
        if tz is None:
            return None
        ms = _date_of(v, "$dateTrunc", "date", 5439012)
        return to_date(date_trunc(ms, unit_name, size, tz, sow))

    return date_trunc_
