"""Bucketing stages: $bucket $bucketAuto.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/bucket/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/bucketAuto/

``$bucket`` is a ``$group`` keyed by the lower boundary of the value's range
(MongoDB's full BSON order, missing as null; the ``default`` bucket for the
rest) followed by a sort on ``_id``.

``$bucketAuto`` sorts the documents by the ``groupBy`` value (through the
external sorter), fills each bucket with ``round(n / buckets)`` documents,
extends a bucket while the next value equals its last (and, with a
``granularity``, while the next value is below the rounded-up boundary), and
makes each bucket's max the next bucket's min (the last bucket's max is its
largest value). The accumulators see a bucket's documents in *input* order,
as MongoDB's positional accumulators do (a bucket's documents are held
until the bucket closes, so the accumulators can be fed in that order).
Granularity series follow MongoDB's
``GranularityRounder`` (Renard, E, 1-2-5 and powers of two).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from typing import Any

from bson import Decimal128, Int64

from foliodb.aggregation.accumulators import (
    DECIMAL,
    Accumulator,
    compile_accumulator,
    constant_value,
    is_numeric,
)
from foliodb.aggregation.pipeline import LIMITS, STAGES, Docs, Stage, Where
from foliodb.aggregation.stages.group import group_documents
from foliodb.engine.sorter import sort_documents
from foliodb.errors import location
from foliodb.query.bsontypes import INT32_MAX, INT32_MIN, is_string, type_name
from foliodb.query.collation import key_encoder
from foliodb.query.compare import bracket, compare
from foliodb.query.expr import Expr
from foliodb.query.paths import MISSING
from foliodb.query.render import render


def _is_group_by(spec: Any) -> bool:
    if is_string(spec):
        return len(spec) > 1 and spec.startswith("$")
    return isinstance(spec, Mapping) and bool(spec) and next(iter(spec)).startswith("$")


def _outputs(spec: Mapping[str, Any], where: Where) -> tuple[list[str], list[Accumulator]]:
    names, accs = [], []
    for name, value in spec.items():
        accs.append(compile_accumulator(name, value, where.scope))
        names.append(name)
    return names, accs


def _default_outputs(where: Where) -> tuple[list[str], list[Accumulator]]:
    return _outputs({"count": {"$sum": 1}}, where)


def _document(key: Any, names: list[str], states: list[Any]) -> dict[str, Any]:
    out = {"_id": key}
    for name, state in zip(names, states, strict=True):
        value = state.result()
        out[name] = None if value is MISSING else value
    return out


@STAGES.register("$bucket")
def stage_bucket(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise location(40201, f"Argument to $bucket stage must be an object, but found type: {type_name(spec)}.")
    group_by: Expr | None = None
    boundaries: list[Any] | None = None
    default: Any = MISSING
    names: list[str] | None = None
    accs: list[Accumulator] = []
    for key, value in spec.items():
        if key == "groupBy":
            if not _is_group_by(value):
                raise location(
                    40202,
                    "The $bucket 'groupBy' field must be defined as a $-prefixed path or an expression, "
                    f"but found: {render(value)}.",
                )
            group_by = where.expression(value)
        elif key == "boundaries":
            if not isinstance(value, list):
                raise location(
                    40200, f"The $bucket 'boundaries' field must be an array, but found type: {type_name(value)}."
                )
            boundaries = value
        elif key == "default":
            default = value
        elif key == "output":
            if not isinstance(value, Mapping):
                raise location(
                    40196, f"The $bucket 'output' field must be an object, but found type: {type_name(value)}."
                )
            names, accs = _outputs(value, where)
        else:
            raise location(40197, f"Unrecognized option to $bucket: {key}.")
    if group_by is None or boundaries is None:
        raise location(40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.")
    encode = key_encoder(where.scope.collator)  # boundaries are ordered, and values placed, by the collation
    bounds = _check_boundaries(boundaries, where, encode)
    if default is not MISSING:
        default = constant_value(default, where.scope)
        if default is MISSING:
            raise location(40195, "The $bucket 'default' field must be a constant expression")
        if encode(bounds[0]) <= encode(default) < encode(bounds[-1]):
            raise location(
                40199,
                "The $bucket 'default' field must be less than the lowest boundary or greater than or equal to "
                "the highest boundary.",
            )
    if names is None:
        names, accs = _default_outputs(where)
    keys = [encode(b) for b in bounds]
    fallback = default
    by = group_by

    def bucket_of(doc: Any, vars: dict[str, Any]) -> Any:
        value = by(doc, vars)
        k = encode(None if value is MISSING else value)
        i = bisect.bisect_right(keys, k) - 1
        if 0 <= i < len(keys) - 1:
            return bounds[i]
        if fallback is MISSING:
            raise location(
                40066, "$switch could not find a matching branch for an input, and no default was specified."
            )
        return fallback

    vars_for = where.variables()
    allow_disk_use = where.env.allow_disk_use
    out_names = names

    def run(docs: Docs) -> Docs:
        groups = list(group_documents(docs, bucket_of, accs, vars_for, allow_disk_use, "$bucket"))
        groups.sort(key=lambda g: encode(g[0]))
        for key, states in groups:
            yield _document(key, out_names, states)

    return Stage("$bucket", spec, run)


def _check_boundaries(values: list[Any], where: Where, encode: Callable[[Any], bytes]) -> list[Any]:
    if len(values) < 2:
        raise location(
            40192, f"The $bucket 'boundaries' field must have at least 2 values, but found {len(values)} value(s)."
        )
    out = []
    for value in values:
        v = constant_value(value, where.scope)
        if v is MISSING:
            raise location(
                40191,
                "The $bucket 'boundaries' field must be an array of constant values, but found value: "
                f"{render(value)}.",
            )
        out.append(v)
    for i in range(1, len(out)):
        a, b = out[i - 1], out[i]
        if bracket(a) != bracket(b):
            raise location(
                40193,
                "The $bucket 'boundaries' field must be an array of values of the same type, but found two "
                f"different types: {type_name(a)} and {type_name(b)}.",
            )
        if encode(a) >= encode(b):
            raise location(
                40194,
                "The $bucket 'boundaries' field must be sorted in ascending order, but found values "
                f"{render(a)} and {render(b)} in the wrong order.",
            )
    return out


# ---------------------------------------------------------------------------
# $bucketAuto


class Rounder:
    """MongoDB's GranularityRounder for one series."""

    def __init__(self, name: str, series: tuple[int, ...] | None) -> None:
        self.name = name
        self.series = series  # None: powers of two

    def round_up(self, value: Any) -> Any:
        _check_roundable(value)
        if _as_float(value) == 0.0:
            return value
        if self.series is None:
            return _power_of_two(value, up=True)
        if value.__class__ is Decimal128:
            return Decimal128(_preferred_decimal(value.to_decimal(), self.series, up=True))
        return _preferred_float(float(value), self.series, up=True)

    def round_down(self, value: Any) -> Any:
        _check_roundable(value)
        if _as_float(value) == 0.0:
            return value
        if self.series is None:
            return _power_of_two(value, up=False)
        if value.__class__ is Decimal128:
            return Decimal128(_preferred_decimal(value.to_decimal(), self.series, up=False))
        return _preferred_float(float(value), self.series, up=False)


def _as_float(value: Any) -> float:
    return float(value.to_decimal()) if value.__class__ is Decimal128 else float(value)


def _check_roundable(value: Any) -> None:
    if not is_numeric(value):
        raise location(
            40262, f"A granularity rounder can only round numeric values, but found type: {type_name(value)}"
        )
    f = _as_float(value)
    if f != f:
        raise location(40263, "A granularity rounder cannot round NaN")
    if f < 0:
        raise location(40268, "A granularity rounder can only round non-negative numbers")


def _preferred_float(number: float, series: tuple[int, ...], up: bool) -> float:
    first, last = float(series[0]), float(series[-1])
    multiplier = 1.0
    if up:
        while number >= last * multiplier:
            multiplier *= 10.0
        while number < first * multiplier:
            previous = first * multiplier
            multiplier /= 10.0
            if number >= last * multiplier:
                return previous
        return next(s * multiplier for s in series if number < s * multiplier)
    while number <= first * multiplier:
        multiplier /= 10.0
    while number > last * multiplier:
        previous = last * multiplier
        multiplier *= 10.0
        if number <= first * multiplier:
            return previous
    i = next(i for i, s in enumerate(series) if not s * multiplier < number)
    return series[i - 1] * multiplier


def _preferred_decimal(number: Decimal, series: tuple[int, ...], up: bool) -> Decimal:
    values = [Decimal(s) for s in series]
    first, last = values[0], values[-1]
    multiplier = Decimal(1)
    ten = Decimal(10)
    mul, div = DECIMAL.multiply, DECIMAL.divide
    if up:
        while number >= mul(last, multiplier):
            multiplier = mul(multiplier, ten)
        while number < mul(first, multiplier):
            previous = mul(first, multiplier)
            multiplier = div(multiplier, ten)
            if number >= mul(last, multiplier):
                return previous
        return next(mul(s, multiplier) for s in values if number < mul(s, multiplier))
    while number <= mul(first, multiplier):
        multiplier = div(multiplier, ten)
    while number > mul(last, multiplier):
        previous = mul(last, multiplier)
        multiplier = mul(multiplier, ten)
        if number <= mul(first, multiplier):
            return previous
    i = next(i for i, s in enumerate(values) if not mul(s, multiplier) < number)
    return mul(values[i - 1], multiplier)


def _int_value(n: int) -> Any:
    return n if INT32_MIN <= n <= INT32_MAX else Int64(n)


def _power_of_two(value: Any, up: bool) -> Any:
    """The power of two strictly above (up) or below a positive number, as
    MongoDB's $pow(2, exponent) gives it."""
    cls = value.__class__
    if cls is Decimal128:
        log2 = float(value.to_decimal().ln() / Decimal(2).ln())
        exp = math.floor(log2) + 1 if up else math.ceil(log2) - 1
        return Decimal128(DECIMAL.power(Decimal(2), Decimal(exp)))
    if cls is float:
        log2 = math.log2(value)
        exp = math.floor(log2) + 1 if up else math.ceil(log2) - 1
        return _int_value(2**exp) if exp >= 0 else 2.0**exp
    n = int(value)
    if up:
        return _int_value(1 << n.bit_length())
    return _int_value(1 << ((n - 1).bit_length() - 1))


_SERIES: dict[str, tuple[int, ...] | None] = {
    "R5": (10, 16, 25, 40, 63),
    "R10": (100, 125, 160, 200, 250, 315, 400, 500, 630, 800),
    "R20": (100, 112, 125, 140, 160, 180, 200, 224, 250, 280, 315, 355, 400, 450, 500, 560, 630, 710, 800, 900),
    "R40": (100, 106, 112, 118, 125, 132, 140, 150, 160, 170, 180, 190, 200, 212, 224, 236, 250, 265, 280, 300,
            315, 355, 375, 400, 425, 450, 475, 500, 530, 560, 600, 630, 670, 710, 750, 800, 850, 900, 950),
    "R80": (103, 109, 115, 122, 128, 136, 145, 155, 165, 175, 185, 195, 206, 218, 230, 243, 258, 272, 290, 307,
            325, 345, 365, 387, 412, 437, 462, 487, 515, 545, 575, 615, 650, 690, 730, 775, 825, 875, 925, 975),
    "1-2-5": (10, 20, 50),
    "E6": (10, 15, 22, 33, 47, 68),
    "E12": (10, 12, 15, 18, 22, 27, 33, 39, 47, 56, 68, 82),
    "E24": (10, 11, 12, 13, 15, 16, 18, 20, 22, 24, 27, 30, 33, 36, 39, 43, 47, 51, 56, 62, 68, 75, 82, 91),
    "E48": (100, 105, 110, 115, 121, 127, 133, 140, 147, 154, 162, 169, 178, 187, 196, 205, 215, 226, 237, 249,
            261, 274, 287, 301, 316, 332, 348, 365, 383, 402, 422, 442, 464, 487, 511, 536, 562, 590, 619, 649,
            681, 715, 750, 787, 825, 866, 909, 953),
    "E96": (100, 102, 105, 107, 110, 113, 115, 118, 121, 124, 127, 130, 133, 137, 140, 143, 147, 150, 154, 158,
            162, 165, 169, 174, 178, 182, 187, 191, 196, 200, 205, 210, 215, 221, 226, 232, 237, 243, 249, 255,
            261, 267, 274, 280, 287, 294, 301, 309, 316, 324, 332, 340, 348, 357, 365, 374, 383, 392, 402, 412,
            422, 432, 442, 453, 464, 475, 487, 499, 511, 523, 536, 549, 562, 576, 590, 604, 619, 634, 649, 665,
            681, 698, 715, 732, 750, 768, 787, 806, 825, 845, 866, 887, 909, 931, 953, 976),
    "E192": (100, 101, 102, 104, 105, 106, 107, 109, 110, 111, 113, 114, 115, 117, 118, 120, 121, 123, 124, 126,
             127, 129, 130, 132, 133, 135, 137, 138, 140, 142, 143, 145, 147, 149, 150, 152, 154, 156, 158, 160,
             162, 164, 165, 167, 169, 172, 174, 176, 178, 180, 182, 184, 187, 189, 191, 193, 196, 198, 200, 203,
             205, 208, 210, 213, 215, 218, 221, 223, 226, 229, 232, 234, 237, 240, 243, 246, 249, 252, 255, 258,
             261, 264, 267, 271, 274, 277, 280, 284, 287, 291, 294, 298, 301, 305, 309, 312, 316, 320, 324, 328,
             332, 336, 340, 344, 348, 352, 357, 361, 365, 370, 374, 379, 383, 388, 392, 397, 402, 407, 412, 417,
             422, 427, 432, 437, 442, 448, 453, 459, 464, 470, 475, 481, 487, 493, 499, 505, 511, 517, 523, 530,
             536, 542, 549, 556, 562, 569, 576, 583, 590, 597, 604, 612, 619, 626, 634, 642, 649, 657, 665, 673,
             681, 690, 698, 706, 715, 723, 732, 741, 750, 759, 768, 777, 787, 796, 806, 816, 825, 835, 845, 856,
             866, 876, 887, 898, 909, 920, 931, 942, 953, 965, 976, 988),
    "POWERSOF2": None,
}  # fmt: skip


def rounder(name: Any) -> Rounder:
    if not is_string(name):
        raise location(
            40261, f"The $bucketAuto 'granularity' field must be a string, but found type: {type_name(name)}"
        )
    if name not in _SERIES:
        raise location(40257, f"Unknown rounding granularity '{name}'")
    return Rounder(name, _SERIES[name])


class _Bucket:
    __slots__ = ("docs", "max", "min")

    def __init__(self, key: Any) -> None:
        self.min = key
        self.max = key
        self.docs: list[tuple[int, dict[str, Any]]] = []

    def add(self, entry: dict[str, Any]) -> None:
        self.max = entry["k"]
        self.docs.append((entry["p"], entry["d"]))


@STAGES.register("$bucketAuto")
def stage_bucketAuto(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise location(40240, f"The argument to $bucketAuto must be an object, but found type: {type_name(spec)}")
    group_by: Expr | None = None
    buckets: int | None = None
    names: list[str] | None = None
    accs: list[Accumulator] = []
    granularity: Rounder | None = None
    for key, value in spec.items():
        if key == "groupBy":
            if not _is_group_by(value):
                raise location(
                    40239,
                    "The $bucketAuto 'groupBy' field must be defined as a $-prefixed path or an expression object, "
                    f"but found: {render(value)}",
                )
            group_by = where.expression(value)
        elif key == "buckets":
            if not is_numeric(value):
                raise location(
                    40241,
                    f"The $bucketAuto 'buckets' field must be a numeric value, but found type: {type_name(value)}",
                )
            f = _as_float(value)
            if not (math.isfinite(f) and f == int(f) and INT32_MIN <= f <= INT32_MAX):
                raise location(
                    40242, f"The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but found {f:g}"
                )
            buckets = int(f)
        elif key == "output":
            if not isinstance(value, Mapping):
                raise location(
                    40244, f"The $bucketAuto 'output' field must be an object, but found type: {type_name(value)}"
                )
            names, accs = _outputs(value, where)
        elif key == "granularity":
            granularity = rounder(value)
        else:
            raise location(40245, f"Unrecognized option to $bucketAuto: {key}")
    if group_by is None or buckets is None:
        raise location(40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified")
    if buckets <= 0:
        raise location(40243, f"The $bucketAuto 'buckets' field must be greater than 0, but found: {buckets}")
    if names is None:
        names, accs = _default_outputs(where)
    vars_for = where.variables()
    allow_disk_use = where.env.allow_disk_use
    by = group_by
    n_buckets = buckets
    out_names = names

    def key_of(doc: dict[str, Any]) -> Any:
        value = by(doc, vars_for(doc))
        if granularity is not None:
            if not is_numeric(value):
                shown = "missing" if value is MISSING else type_name(value)
                raise location(
                    40258,
                    "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a value with "
                    f"type: {shown}",
                )
            f = _as_float(value)
            if f != f:
                raise location(
                    40259, "$bucketAuto can specify a 'granularity' with numeric boundaries only, but found a NaN"
                )
            if f < 0:
                raise location(
                    40260,
                    "$bucketAuto can specify a 'granularity' with non-negative numbers only, but found a negative "
                    "number",
                )
        return None if value is MISSING else value

    def finish(bucket: _Bucket) -> dict[str, Any]:
        bucket.docs.sort(key=lambda entry: entry[0])
        states = []
        for acc in accs:
            state = acc.start({}, vars_for({}))
            for _, doc in bucket.docs:
                state.add(acc.input(doc, vars_for(doc)))
            states.append(state)
        return _document({"min": bucket.min, "max": bucket.max}, out_names, states)

    encode = key_encoder(where.scope.collator)  # the collation orders the values and says which are equal

    def run(docs: Docs) -> Docs:
        count = 0

        def wrapped() -> Iterator[dict[str, Any]]:
            nonlocal count
            for doc in docs:
                yield {"k": key_of(doc), "p": count, "d": doc}
                count += 1

        ordered = sort_documents(
            wrapped(),
            lambda entry: encode(entry["k"]),
            max_memory_bytes=LIMITS.bucket_auto_bytes,
            allow_disk_use=allow_disk_use,
        )
        entries = _Peekable(ordered)
        if not entries.more():
            return
        size = max(1, math.floor(count / n_buckets + 0.5))
        previous_max: Any = MISSING
        for number in range(1, n_buckets + 1):
            if not entries.more():
                return
            first = entries.next()
            bucket = _Bucket(first["k"])
            if granularity is not None:
                bucket.min = previous_max if previous_max is not MISSING else granularity.round_down(first["k"])
            bucket.add(first)
            last = number == n_buckets
            i = 1
            while entries.more() and (i < size or last):
                bucket.add(entries.next())
                i += 1
            _close(bucket, entries, granularity, encode)
            previous_max = bucket.max
            yield finish(bucket)

    return Stage("$bucketAuto", spec, run)


def _close(bucket: _Bucket, entries: _Peekable, granularity: Rounder | None, encode: Callable[[Any], bytes]) -> None:
    """Absorb the values that must share this bucket (equal under the collation) and set its max."""
    if granularity is not None:
        boundary = granularity.round_up(bucket.max)
        while entries.more() and (
            compare(boundary, entries.peek()["k"]) > 0 or compare(bucket.max, entries.peek()["k"]) == 0
        ):
            bucket.add(entries.next())
        if _as_float(boundary) == 0.0 and entries.more():
            bucket.max = granularity.round_down(entries.peek()["k"])
        else:
            bucket.max = boundary
        return
    while entries.more() and encode(bucket.max) == encode(entries.peek()["k"]):
        bucket.add(entries.next())
    if entries.more():
        bucket.max = entries.peek()["k"]


class _Peekable:
    __slots__ = ("_it", "_next")

    _END: Any = object()

    def __init__(self, it: Iterator[Any]) -> None:
        self._it = it
        self._next = next(it, self._END)

    def more(self) -> bool:
        return self._next is not self._END

    def peek(self) -> Any:
        return self._next

    def next(self) -> Any:
        value = self._next
        self._next = next(self._it, self._END)
        return value
