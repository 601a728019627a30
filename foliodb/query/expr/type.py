"""Type expressions: $convert $toBool $toDate $toDecimal $toDouble $toInt
$toLong $toObjectId $toString $toUUID $type $isNumber.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/convert/
and https://www.mongodb.com/docs/manual/reference/operator/aggregation/#type-expression-operators

$convert follows MongoDB's conversion table (:data:`CONVERSIONS`, keyed by
input and target type name); a pair not in it is unsupported. A failed
conversion raises ConversionFailure (241), which ``onError`` replaces; a
null or missing input gives ``onNull`` (default null). The ``$toX``
operators are $convert without ``onError``/``onNull``. Numbers go to
strings in their shortest round-trip form (``2.5`` -> ``"2.5"``, ``1.0`` ->
``"1"``), doubles to decimals with 15 significant digits.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, NamedTuple

from bson import Decimal128, Int64, ObjectId
from bson.errors import InvalidId

from foliodb.errors import CommandError, ErrorCode, bad_value, failed_to_parse, location
from foliodb.query.bsontypes import INT32_MAX, INT32_MIN, TYPE_NAMES, TYPE_NUMBERS
from foliodb.query.expr.bindata import (
    DOUBLE_SIZES,
    INT_SIZES,
    LONG_SIZES,
    Options,
    binary_to_binary,
    binary_to_number,
    binary_to_string,
    byte_order_option,
    conversion_failure,
    format_option,
    number_to_binary,
    string_to_binary,
    subtype_option,
)
from foliodb.query.expr.core import (
    EXPR_OPS,
    Expr,
    Scope,
    compile_expression,
    is_string,
    nullish,
    operands,
    type_of,
)
from foliodb.query.expr.date_format import ISO_FORMAT_Z, format_date, parse_date
from foliodb.query.expr.numeric import decimal128, double_to_decimal, fits_long, integral, is_number, to_long
from foliodb.query.expr.timezones import UTC, coerce_date_ms, to_date

_TWO_63 = 2.0**63


class Target(NamedTuple):
    type: str
    subtype: int


def _overflow(shown: str) -> CommandError:
    return conversion_failure(f"Conversion would overflow target type in $convert with no onError value: {shown}")


def _type_number(value: Any) -> str:
    if is_string(value):
        if value == "missing":
            return value
        if value not in TYPE_NUMBERS:
            raise bad_value(f"Unknown type name: {value}")
        return value
    if is_number(value):
        if not integral(value):
            raise failed_to_parse("In $convert, numeric 'to' argument is not an integer")
        code = to_long(value)
        if code not in TYPE_NAMES:
            raise failed_to_parse(f"In $convert, numeric value for 'to' does not correspond to a BSON type: {code}")
        return TYPE_NAMES[code]
    raise failed_to_parse(f"$convert's 'to' argument must be a string or number, but is {type_of(value)}")


def target(value: Any) -> Target:
    """The ``to`` argument: a type name or number, or ``{type, subtype}``."""
    if isinstance(value, Mapping):
        return Target(_type_number(value.get("type")), subtype_option(value["subtype"]) if "subtype" in value else 0)
    return Target(_type_number(value), 0)


# --- conversions ----------------------------------------------------------------


def double_to_string(x: float) -> str:
    if math.isinf(x):
        return "-Infinity" if x < 0 else "Infinity"
    if x != x:
        return "NaN"
    if x == 0 and math.copysign(1, x) < 0:
        return "-0"
    text = repr(x)
    return text[:-2] if text.endswith(".0") else text


def _double_to_long(x: float, low: float, high: float, upper_open: bool) -> int:
    if x != x:
        raise conversion_failure("Attempt to convert NaN value to integer type in $convert with no onError value")
    if math.isinf(x):
        raise conversion_failure("Attempt to convert infinity value to integer type in $convert with no onError value")
    if not (low <= x and (x < high if upper_open else x <= high)):
        raise _overflow(format(x, "g"))
    return int(x)


def _decimal_to_integer(d: Decimal, low: int, high: int) -> int:
    if d.is_nan():
        raise conversion_failure("Attempt to convert NaN value to integer type in $convert with no onError value")
    if d.is_infinite():
        raise conversion_failure("Attempt to convert infinity value to integer type in $convert with no onError value")
    n = int(d)  # toward zero
    if not low <= n <= high:
        raise _overflow(str(Decimal128(d)))
    return n


def _number_to_int(v: Any, bits: int) -> int:
    low, high = (INT32_MIN, INT32_MAX) if bits == 32 else (-(2**63), 2**63 - 1)
    if isinstance(v, float):
        return _double_to_long(v, low, float(high) if bits == 32 else _TWO_63, bits == 64)
    if isinstance(v, Decimal128):
        return _decimal_to_integer(v.to_decimal(), low, high)
    if not low <= v <= high:
        raise _overflow("")
    return int(v)


_DOUBLE_TEXT = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)", re.ASCII | re.IGNORECASE)
_INTEGER_TEXT = re.compile(r"[+-]?\d+", re.ASCII)


def _parse_number(text: str, to: str) -> Any:
    def fail(reason: str) -> CommandError:
        return conversion_failure(f"Failed to parse number '{text}' in $convert with no onError value: {reason}")

    if text.startswith("0x"):
        raise conversion_failure(f"Illegal hexadecimal input in $convert with no onError value: {text}")
    if to in ("int", "long"):
        if not _INTEGER_TEXT.fullmatch(text):
            raise fail("Did not consume whole string.")
        n = int(text)
        if not (INT32_MIN <= n <= INT32_MAX if to == "int" else fits_long(n)):
            raise fail("Overflow")
        return n if to == "int" else Int64(n)
    if not _DOUBLE_TEXT.fullmatch(text):
        raise fail("Did not consume whole string.")
    if to == "decimal":
        return decimal128(Decimal(text))
    x = float(text)
    mantissa = re.sub(r"[eE].*", "", text)
    if (math.isinf(x) and "inf" not in text.lower()) or (x == 0 and any(c in "123456789" for c in mantissa)):
        raise fail("Out of range")
    return x


def _true(v: Any, o: Options) -> bool:
    return True


def _same(v: Any, o: Options) -> Any:
    return v


def _to_bool(v: Any, o: Options) -> bool:
    if isinstance(v, Decimal128):
        return not v.to_decimal().is_zero()
    return bool(v)


def _to_date_from_number(v: Any, o: Options) -> Any:
    return to_date(_number_to_int(v, 64))


def _decimal_to_double(v: Any, o: Options) -> float:
    d = v.to_decimal()
    x = float(d)
    if (math.isinf(x) and d.is_finite()) or (x == 0 and not d.is_zero()):
        raise _overflow(str(v))
    return x


Conversion = Callable[[Any, Options], Any]
CONVERSIONS: dict[tuple[str, str], Conversion] = {
    ("double", "double"): _same,
    ("double", "string"): lambda v, o: double_to_string(v),
    ("double", "bool"): _to_bool,
    ("double", "date"): _to_date_from_number,
    ("double", "int"): lambda v, o: _number_to_int(v, 32),
    ("double", "long"): lambda v, o: Int64(_number_to_int(v, 64)),
    ("double", "decimal"): lambda v, o: decimal128(double_to_decimal(v)),
    ("double", "binData"): number_to_binary("d"),
    ("string", "double"): lambda v, o: _parse_number(v, "double"),
    ("string", "string"): _same,
    ("string", "objectId"): lambda v, o: _object_id(v),
    ("string", "bool"): _true,
    ("string", "date"): lambda v, o: to_date(parse_date(v, UTC)),
    ("string", "int"): lambda v, o: _parse_number(v, "int"),
    ("string", "long"): lambda v, o: _parse_number(v, "long"),
    ("string", "decimal"): lambda v, o: _parse_number(v, "decimal"),
    ("string", "binData"): string_to_binary,
    ("binData", "binData"): lambda v, o: binary_to_binary(v, o),
    ("binData", "string"): binary_to_string,
    ("binData", "int"): lambda v, o: binary_to_number(v, o, INT_SIZES),
    ("binData", "long"): lambda v, o: binary_to_number(v, o, LONG_SIZES),
    ("binData", "double"): lambda v, o: binary_to_number(v, o, DOUBLE_SIZES),
    ("objectId", "string"): lambda v, o: str(v),
    ("objectId", "objectId"): _same,
    ("objectId", "bool"): _true,
    ("objectId", "date"): lambda v, o: to_date(coerce_date_ms(v)),
    ("bool", "double"): lambda v, o: 1.0 if v else 0.0,
    ("bool", "string"): lambda v, o: "true" if v else "false",
    ("bool", "bool"): _same,
    ("bool", "int"): lambda v, o: int(v),
    ("bool", "long"): lambda v, o: Int64(int(v)),
    ("bool", "decimal"): lambda v, o: Decimal128(Decimal(int(v))),
    ("date", "double"): lambda v, o: float(coerce_date_ms(v)),
    ("date", "string"): lambda v, o: format_date(coerce_date_ms(v), ISO_FORMAT_Z, UTC),
    ("date", "bool"): _true,
    ("date", "date"): _same,
    ("date", "long"): lambda v, o: Int64(coerce_date_ms(v)),
    ("date", "decimal"): lambda v, o: Decimal128(Decimal(coerce_date_ms(v))),
    ("timestamp", "date"): lambda v, o: to_date(coerce_date_ms(v)),
    ("int", "double"): lambda v, o: float(v),
    ("int", "string"): lambda v, o: str(v),
    ("int", "bool"): _to_bool,
    ("int", "int"): _same,
    ("int", "long"): lambda v, o: Int64(v),
    ("int", "decimal"): lambda v, o: Decimal128(Decimal(v)),
    ("int", "binData"): number_to_binary("i"),
    ("long", "double"): lambda v, o: float(v),
    ("long", "string"): lambda v, o: str(int(v)),
    ("long", "bool"): _to_bool,
    ("long", "date"): lambda v, o: to_date(int(v)),
    ("long", "int"): lambda v, o: _number_to_int(v, 32),
    ("long", "long"): lambda v, o: Int64(v),
    ("long", "decimal"): lambda v, o: Decimal128(Decimal(int(v))),
    ("long", "binData"): number_to_binary("q"),
    ("decimal", "double"): _decimal_to_double,
    ("decimal", "string"): lambda v, o: str(v),
    ("decimal", "bool"): _to_bool,
    ("decimal", "date"): _to_date_from_number,
    ("decimal", "int"): lambda v, o: _number_to_int(v, 32),
    ("decimal", "long"): lambda v, o: Int64(_number_to_int(v, 64)),
    ("decimal", "decimal"): _same,
}
for _source in (
    "object",
    "array",
    "regex",
    "dbPointer",
    "javascript",
    "symbol",
    "javascriptWithScope",
    "timestamp",
    "minKey",
    "maxKey",
    "binData",
):
    CONVERSIONS[(_source, "bool")] = _true


def _object_id(text: str) -> ObjectId:
    if len(text) != 24:
        raise conversion_failure(
            f"Failed to parse objectId '{text}' in $convert with no onError value: "
            f"Invalid string length for parsing to OID, expected 24 but found {len(text)}"
        )
    try:
        return ObjectId(text)
    except InvalidId:
        raise conversion_failure(
            f"Failed to parse objectId '{text}' in $convert with no onError value: "
            "Invalid character found in hex string"
        ) from None


def convert(value: Any, to: Target, options: Options) -> Any:
    """Convert a non-null value, raising ConversionFailure when it cannot."""
    source = type_of(value)
    fn = CONVERSIONS.get((source, to.type))
    if fn is None:
        raise conversion_failure(f"Unsupported conversion from {source} to {to.type} in $convert with no onError value")
    return fn(value, options._replace(subtype=to.subtype))


_FIELDS = ("input", "to", "onError", "onNull", "format", "byteOrder")


@EXPR_OPS.register("$convert")
def expr_convert(arg: Any, scope: Scope) -> Expr:
    if not isinstance(arg, Mapping):
        raise failed_to_parse(f"$convert expects an object of named arguments but found: {type_of(arg)}")
    for key in arg:
        if key not in _FIELDS:
            raise failed_to_parse(f"$convert found an unknown argument: {key}")
    for key in ("input", "to"):
        if key not in arg:
            raise failed_to_parse(f"Missing '{key}' parameter to $convert")
    parts = {key: compile_expression(arg[key], scope) for key in _FIELDS if key in arg}
    return _converter(parts)


def _converter(parts: dict[str, Expr]) -> Expr:
    source, to = parts["input"], parts["to"]
    on_error, on_null = parts.get("onError"), parts.get("onNull")
    fmt, order = parts.get("format"), parts.get("byteOrder")

    def convert_(doc: Any, vars: dict[str, Any]) -> Any:
        to_value = to(doc, vars)
        value = source(doc, vars)
        format_value = fmt(doc, vars) if fmt is not None else None
        order_value = order(doc, vars) if order is not None else None
        goal = None if nullish(to_value) else target(to_value)
        if nullish(value):
            return on_null(doc, vars) if on_null is not None else None
        if goal is None:
            return None
        options = Options(0, format_option(format_value), byte_order_option(order_value))
        try:
            return convert(value, goal, options)
        except CommandError as exc:
            if exc.code != ErrorCode.ConversionFailure or on_error is None:
                raise
            return on_error(doc, vars)

    return convert_


def _shortcut(name: str, to: Any, fmt: str | None = None) -> None:
    """Register ``$toX``: $convert of one argument to ``to`` with ``fmt``."""

    def compile_shortcut(arg: Any, scope: Scope) -> Expr:
        items = arg if isinstance(arg, list) else [arg]
        if len(items) != 1:
            raise location(50723, f"{name} requires a single argument, got {len(items)}")
        parts = {"input": compile_expression(items[0], scope), "to": lambda doc, vars: to}
        if fmt is not None:
            parts["format"] = lambda doc, vars: fmt
        return _converter(parts)

    compile_shortcut.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_shortcut)


_shortcut("$toString", "string", "auto")
_shortcut("$toObjectId", "objectId")
_shortcut("$toDate", "date")
_shortcut("$toDouble", "double")
_shortcut("$toInt", "int")
_shortcut("$toLong", "long")
_shortcut("$toDecimal", "decimal")
_shortcut("$toBool", "bool")
_shortcut("$toUUID", {"type": "binData", "subtype": 4}, "uuid")


@EXPR_OPS.register("$type")
def expr_type(arg: Any, scope: Scope) -> Expr:
    (operand,) = operands(arg, "$type", 1, 1, scope)
    return lambda doc, vars: type_of(operand(doc, vars))


@EXPR_OPS.register("$isNumber")
def expr_isNumber(arg: Any, scope: Scope) -> Expr:
    (operand,) = operands(arg, "$isNumber", 1, 1, scope)
    return lambda doc, vars: is_number(operand(doc, vars))
