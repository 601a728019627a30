"""Date expressions: $year $month $dayOfMonth $hour $minute $second
$millisecond $dayOfYear $dayOfWeek $week $isoDayOfWeek $isoWeek $isoWeekYear
$dateToParts $dateFromParts $dateToString $dateFromString.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#date-expression-operators

A date argument may be a date, a timestamp or an ObjectId (its creation
time); anything else raises 16006. ``timezone`` is an Olson name or a UTC
offset (see :mod:`foliodb.query.expr.timezones`); a constant one is checked
when the expression is compiled. A null or missing date, timezone or other
argument gives null (``onNull`` where the operator has one). $dateAdd,
$dateSubtract, $dateDiff and $dateTrunc are in
:mod:`foliodb.query.expr.date_math`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bson import Int64

from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.expr.core import (
    EXPR_OPS,
    NOT_CONSTANT,
    Expr,
    Scope,
    compile_expression,
    constant_of,
    is_string,
    nullish,
    show,
    type_of,
)
from foliodb.query.expr.date_format import (
    FROM_STRING_SPECIFIERS,
    ISO_FORMAT,
    ISO_FORMAT_Z,
    TO_STRING_SPECIFIERS,
    format_date,
    parse_date,
    validate_format,
    week_of_year,
)
from foliodb.query.expr.numeric import integral64, to_long
from foliodb.query.expr.timezones import (
    MS_PER_DAY,
    UTC,
    Parts,
    TimeZone,
    add_months,
    coerce_date_ms,
    day_of_year,
    days_from_civil,
    days_from_iso,
    iso_week,
    iso_weekday,
    timezone_from,
    to_date,
)
from foliodb.query.render import render_document

# Evaluates a timezone argument: a TimeZone, or None when it is null.
ZoneExpr = Callable[[Any, dict[str, Any]], TimeZone | None]


def zone_expression(spec: Any, scope: Scope, present: bool = True) -> ZoneExpr:
    """Compile a ``timezone`` argument; a constant one is checked now."""
    if not present:
        return lambda doc, vars: UTC
    value = constant_of(spec)
    if value is not NOT_CONSTANT and not nullish(value):
        tz = timezone_from(value)
        return lambda doc, vars: tz
    expr = compile_expression(spec, scope)

    def zone(doc: Any, vars: dict[str, Any]) -> TimeZone | None:
        v = expr(doc, vars)
        return None if nullish(v) else timezone_from(v)

    return zone


def _date_operand(name: str, arg: Any, scope: Scope) -> tuple[Expr, ZoneExpr]:
    """``{$year: date}``, ``{$year: [date]}`` or ``{$year: {date, timezone}}``."""
    if isinstance(arg, Mapping) and not (arg and next(iter(arg)).startswith("$")):
        for key in arg:
            if key not in ("date", "timezone"):
                raise location(40535, f'unrecognized option to {name}: "{key}"')
        if "date" not in arg:
            raise location(40539, f"missing 'date' argument to {name}, provided: {name}: {render_document(dict(arg))}")
        return compile_expression(arg["date"], scope), zone_expression(arg.get("timezone"), scope, "timezone" in arg)
    if isinstance(arg, list):
        if len(arg) != 1:
            raise location(40536, f"{name} accepts exactly one argument if given an array, but was given {len(arg)}")
        arg = arg[0]
    return compile_expression(arg, scope), zone_expression(None, scope, present=False)


def _date_part(name: str, part: Callable[[Parts], Any]) -> None:
    def compile_part(arg: Any, scope: Scope) -> Expr:
        date, zone = _date_operand(name, arg, scope)

        def date_part(doc: Any, vars: dict[str, Any]) -> Any:
            v = date(doc, vars)
            if nullish(v):
                return None
            ms = coerce_date_ms(v)
            tz = zone(doc, vars)
            return None if tz is None else part(tz.parts(ms))

        return date_part

    compile_part.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_part)


_date_part("$year", lambda p: p.year)
_date_part("$month", lambda p: p.month)
_date_part("$dayOfMonth", lambda p: p.day)
_date_part("$hour", lambda p: p.hour)
_date_part("$minute", lambda p: p.minute)
_date_part("$second", lambda p: p.second)
_date_part("$millisecond", lambda p: p.millisecond)
_date_part("$dayOfYear", lambda p: day_of_year(p.year, p.month, p.day))
_date_part("$dayOfWeek", lambda p: iso_weekday(p.days) % 7 + 1)
_date_part("$week", lambda p: week_of_year(p.year, p.month, p.day, p.days))
_date_part("$isoDayOfWeek", lambda p: iso_weekday(p.days))
_date_part("$isoWeek", lambda p: iso_week(p.year, p.month, p.day)[1])
_date_part("$isoWeekYear", lambda p: Int64(iso_week(p.year, p.month, p.day)[0]))


_TO_PARTS = ("date", "timezone", "iso8601")
_CALENDAR = ("year", "month", "day")
_ISO = ("isoWeekYear", "isoWeek", "isoDayOfWeek")
_CLOCK = ("hour", "minute", "second", "millisecond")
_DEFAULTS = {"year": 1970, "month": 1, "day": 1, "isoWeekYear": 1970, "isoWeek": 1, "isoDayOfWeek": 1}
# Parts MongoDB bounds to 16-bit integers (its calendar code loops on them).
_BOUNDED = frozenset({"month", "day", "hour", "minute", "isoWeek", "isoDayOfWeek"})


def _object_argument(name: str, arg: Any, code: int, message: str, allowed: tuple[str, ...], unknown: int) -> None:
    if not isinstance(arg, Mapping):
        raise location(code, message)
    for key in arg:
        if key not in allowed:
            raise location(unknown, f"Unrecognized argument to {name}: {key}")


@EXPR_OPS.register("$dateToParts")
def expr_dateToParts(arg: Any, scope: Scope) -> Expr:
    _object_argument(
        "$dateToParts", arg, 40524, "$dateToParts only supports an object as its argument", _TO_PARTS, 40520
    )
    if "date" not in arg:
        raise location(40522, "Missing 'date' parameter to $dateToParts")
    date = compile_expression(arg["date"], scope)
    zone = zone_expression(arg.get("timezone"), scope, "timezone" in arg)
    iso8601 = compile_expression(arg["iso8601"], scope) if "iso8601" in arg else None

    def date_to_parts(doc: Any, vars: dict[str, Any]) -> Any:
        v = date(doc, vars)
        tz = zone(doc, vars)
        if tz is None:
            return None
        iso = False
        if iso8601 is not None:
            flag = iso8601(doc, vars)
            if nullish(flag):
                return None
            if not isinstance(flag, bool):
                raise location(40521, f"iso8601 must evaluate to a bool, found {type_of(flag)}")
            iso = flag
        if nullish(v):
            return None
        p = tz.parts(coerce_date_ms(v))
        clock = {"hour": p.hour, "minute": p.minute, "second": p.second, "millisecond": p.millisecond}
        if iso:
            year, week = iso_week(p.year, p.month, p.day)
            return {"isoWeekYear": year, "isoWeek": week, "isoDayOfWeek": iso_weekday(p.days), **clock}
        return {"year": p.year, "month": p.month, "day": p.day, **clock}

    return date_to_parts


def _part_value(name: str, value: Any) -> int:
    if not integral64(value):
        raise location(40515, f"'{name}' must evaluate to an integer, found {type_of(value)} with value {show(value)}")
    n = to_long(value)
    if name in _BOUNDED and not -32768 <= n <= 32767:
        raise location(
            31034, f"'{name}' must evaluate to a value in the range [-32768, 32767]; value {n} is not in range"
        )
    return n


@EXPR_OPS.register("$dateFromParts")
def expr_dateFromParts(arg: Any, scope: Scope) -> Expr:
    allowed = (*_CALENDAR, *_ISO, *_CLOCK, "timezone")
    _object_argument(
        "$dateFromParts", arg, 40519, "$dateFromParts only supports an object as its argument", allowed, 40518
    )
    if "year" not in arg and "isoWeekYear" not in arg:
        raise location(40516, "$dateFromParts requires either 'year' or 'isoWeekYear' to be present")
    if "year" in arg and any(k in arg for k in _ISO):
        raise location(40489, "$dateFromParts does not allow mixing natural dates with ISO dates")
    if "isoWeekYear" in arg and any(k in arg for k in _CALENDAR):
        raise location(40525, "$dateFromParts does not allow mixing ISO dates with natural dates")
    date_names = _CALENDAR if "year" in arg else _ISO
    parts = {k: compile_expression(arg[k], scope) for k in (*_CLOCK, *date_names) if k in arg}
    zone = zone_expression(arg.get("timezone"), scope, "timezone" in arg)

    def values(names: tuple[str, ...], doc: Any, vars: dict[str, Any]) -> list[int] | None:
        out = []
        for name in names:
            if name not in parts:
                out.append(_DEFAULTS.get(name, 0))
                continue
            v = parts[name](doc, vars)
            if nullish(v):
                return None
            out.append(_part_value(name, v))
        return out

    def date_from_parts(doc: Any, vars: dict[str, Any]) -> Any:
        clock = values(_CLOCK, doc, vars)
        if clock is None:
            return None
        tz = zone(doc, vars)
        if tz is None:
            return None
        date = values(date_names, doc, vars)
        if date is None:
            return None
        year = date[0]
        if not 1 <= year <= 9999:
            which = "year" if date_names is _CALENDAR else "isoWeekYear"
            code = 40523 if which == "year" else 31095
            raise location(code, f"'{which}' must evaluate to an integer in the range 1 to 9999, found {year}")
        if date_names is _CALENDAR:
            y, m = add_months(year, 1, date[1] - 1)
            days = days_from_civil(y, m, 1) + date[2] - 1
        else:
            days = days_from_iso(*date)
        hour, minute, second, millisecond = clock
        if not -(2**63) <= millisecond * 1000 < 2**63:
            # mongod's createFromDateParts takes the milliseconds as microseconds (Duration's checked cast).
            raise CommandError(
                ErrorCode.DurationOverflow,
                "Overflow casting from a lower-precision duration to a higher-precision duration",
            )
        local = days * MS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1000 + millisecond
        return to_date(tz.to_utc(local))

    return date_from_parts


def _format_expression(spec: Any, scope: Scope, name: str, code: int, allowed: frozenset[str]) -> Expr:
    """Compile a ``format`` argument, checking a constant one now."""

    def check(value: Any) -> Any:
        if not nullish(value):
            if not is_string(value):
                raise location(
                    code, f"{name} requires that 'format' be a string, found: {type_of(value)} with value {show(value)}"
                )
            validate_format(value, allowed)
        return value

    value = constant_of(spec)
    if value is not NOT_CONSTANT:
        checked = check(value)
        return lambda doc, vars: checked
    expr = compile_expression(spec, scope)
    return lambda doc, vars: check(expr(doc, vars))


@EXPR_OPS.register("$dateToString")
def expr_dateToString(arg: Any, scope: Scope) -> Expr:
    if not isinstance(arg, Mapping):
        raise location(18629, "$dateToString only supports an object as its argument")
    for key in arg:
        if key not in ("format", "date", "timezone", "onNull"):
            raise location(18534, f"Unrecognized argument to $dateToString: {key}")
    if "date" not in arg:
        raise location(18628, "Missing 'date' parameter to $dateToString")
    date = compile_expression(arg["date"], scope)
    fmt = (
        _format_expression(arg["format"], scope, "$dateToString", 18533, TO_STRING_SPECIFIERS)
        if "format" in arg
        else None
    )
    zone = zone_expression(arg.get("timezone"), scope, "timezone" in arg)
    on_null = compile_expression(arg["onNull"], scope) if "onNull" in arg else None

    def date_to_string(doc: Any, vars: dict[str, Any]) -> Any:
        v = date(doc, vars)
        pattern = fmt(doc, vars) if fmt is not None else None
        tz = zone(doc, vars)
        if nullish(v):
            return on_null(doc, vars) if on_null is not None else None
        if tz is None or (fmt is not None and nullish(pattern)):
            return None
        if pattern is None:
            pattern = ISO_FORMAT_Z if tz.is_utc else ISO_FORMAT
        return format_date(coerce_date_ms(v), pattern, tz)

    return date_to_string


@EXPR_OPS.register("$dateFromString")
def expr_dateFromString(arg: Any, scope: Scope) -> Expr:
    if not isinstance(arg, Mapping):
        raise location(40540, f"$dateFromString only supports an object as an argument, found: {type_of(arg)}")
    for key in arg:
        if key not in ("format", "dateString", "timezone", "onNull", "onError"):
            raise location(40541, f"Unrecognized argument to $dateFromString: {key}")
    if "dateString" not in arg:
        raise location(40542, "Missing 'dateString' parameter to $dateFromString")
    text = compile_expression(arg["dateString"], scope)
    fmt = (
        _format_expression(arg["format"], scope, "$dateFromString", 40684, FROM_STRING_SPECIFIERS)
        if "format" in arg
        else None
    )
    zone = zone_expression(arg.get("timezone"), scope, "timezone" in arg)
    on_null = compile_expression(arg["onNull"], scope) if "onNull" in arg else None
    on_error = compile_expression(arg["onError"], scope) if "onError" in arg else None

    def date_from_string(doc: Any, vars: dict[str, Any]) -> Any:
        s = text(doc, vars)
        pattern = fmt(doc, vars) if fmt is not None else None
        tz = zone(doc, vars)
        if nullish(s):
            return on_null(doc, vars) if on_null is not None else None
        try:
            if not is_string(s):
                raise CommandError(
                    ErrorCode.ConversionFailure,
                    f"$dateFromString requires that 'dateString' be a string, found: {type_of(s)} with value {show(s)}",
                )
            if tz is None or (fmt is not None and nullish(pattern)):
                return None
            return to_date(parse_date(s, tz, pattern))
        except CommandError as exc:
            if exc.code != ErrorCode.ConversionFailure or on_error is None:
                raise
            return on_error(doc, vars)

    return date_from_string
