"""Accumulators of ``$group``, ``$bucket``, ``$bucketAuto`` and ``$setWindowFields``.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#accumulators---group---bucket---bucketauto---setwindowfields-

An accumulator compiles once (``ACCUMULATORS.get("$sum")(arg, scope)``) into
an :class:`Accumulator`: the expression evaluated per input document, and
``start(key_doc, vars)``, which makes a fresh *state* for one group (the
N-accumulators evaluate their ``n`` there, against the group key when it is a
document, as MongoDB does). A state is a small mutable object:

* ``add(value) -> int`` takes one evaluated input and returns the bytes it
  added to the state (for the stage memory limits);
* ``merge(other)`` folds in the partial state of the same group built from
  *later* input (``$group`` spills partial groups to disk and merges them);
* ``result()`` is the value the stage outputs (MISSING becomes null there);
  it never shares mutable state, so a window can keep adding after it.

States hold only plain data (no closures), so they pickle for spilling.

Result types as MongoDB's: ``$sum`` of int32 stays int32 and widens to int64
(``bson.Int64``), then to double on int64 overflow; any double makes it a
double, any Decimal128 a decimal. Doubles are summed exactly and rounded
once. ``$avg`` is a double (decimal if any input is), null with no numeric
input. Non-numbers are ignored by the arithmetic accumulators; ``$min`` and
``$max`` ignore null and missing.

``$median``/``$percentile`` with ``method: "approximate"``: MongoDB uses a
t-digest; on inputs where every centroid holds one value (all but large
inputs) that returns the *discrete* percentile, the value at 0-based rank
``ceil(p*n) - 1`` of the sorted numeric inputs (NaN skipped). FolioDB
computes that discrete percentile exactly for every input size.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Protocol

from bson import Decimal128, Int64
from bson.decimal128 import create_decimal128_context

from foliodb.aggregation.pipeline import LIMITS, approx_size
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query import keystring
from foliodb.query.bsontypes import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, type_name
from foliodb.query.compare import compare
from foliodb.query.expr import Expr, Scope, compile_expression
from foliodb.query.paths import MISSING
from foliodb.query.registry import Registry
from foliodb.query.render import render

DECIMAL = create_decimal128_context()


class State(Protocol):
    def add(self, value: Any) -> int: ...

    def merge(self, other: Any) -> None: ...

    def result(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class Accumulator:
    name: str
    input: Expr  # evaluated per document
    start: Callable[[Any, dict[str, Any]], State]  # (group key, vars) -> fresh state


AccumulatorCompiler = Callable[[Any, Scope], Accumulator]


def _unknown(name: str) -> CommandError:
    return location(15952, f"unknown group operator '{name}'")


ACCUMULATORS: Registry[AccumulatorCompiler] = Registry(
    "accumulator", _unknown, unbuilt=("$accumulator", "$concatArrays", "$setUnion")
)


def _const_start(factory: Callable[[], State]) -> Callable[[Any, dict[str, Any]], State]:
    return lambda key, vars: factory()


def _nullish(v: Any) -> bool:
    return v is None or v is MISSING


# ---------------------------------------------------------------------------
# Sums


_INT, _LONG, _DOUBLE, _DEC = 0, 1, 2, 3


class SumState:
    """Exact running sum of numbers of mixed BSON types: integers in a Python
    int, finite doubles as Shewchuk's non-overlapping partials (exact, like
    ``math.fsum``), decimals in Decimal128 arithmetic; rounded once at the end."""

    __slots__ = ("count", "dec", "inf", "ints", "nan", "ninf", "partials", "widest")

    def __init__(self) -> None:
        self.widest = _INT
        self.ints = 0
        self.partials: list[float] = []
        self.dec = Decimal(0)
        self.nan = self.inf = self.ninf = False
        self.count = 0  # numeric inputs seen

    def add(self, v: Any) -> int:
        cls = v.__class__
        if cls is int:
            self.ints += v
            if self.widest == _INT and not INT32_MIN <= v <= INT32_MAX:
                self.widest = _LONG
        elif cls is float:
            if v - v == 0.0:  # finite
                self._add_double(v)
            elif v != v:
                self.nan = True
            elif v > 0:
                self.inf = True
            else:
                self.ninf = True
            if self.widest < _DOUBLE:
                self.widest = _DOUBLE
        elif cls is Int64:
            self.ints += int(v)
            if self.widest < _LONG:
                self.widest = _LONG
        elif cls is Decimal128:
            self.dec = DECIMAL.add(self.dec, v.to_decimal())
            self.widest = _DEC
        else:
            return 0
        self.count += 1
        return 0

    def _add_double(self, x: float) -> None:
        partials = self.partials
        i = 0
        for y in partials:
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                partials[i] = lo
                i += 1
            x = hi
        partials[i:] = [x]

    def merge(self, other: SumState) -> None:
        self.widest = max(self.widest, other.widest)
        self.ints += other.ints
        for x in other.partials:
            self._add_double(x)
        self.dec = DECIMAL.add(self.dec, other.dec)
        self.nan |= other.nan
        self.inf |= other.inf
        self.ninf |= other.ninf
        self.count += other.count

    def _nonfinite(self) -> float | None:
        if self.nan or (self.inf and self.ninf):
            return math.nan
        if self.inf:
            return math.inf
        if self.ninf:
            return -math.inf
        return None

    def _exact(self) -> Fraction:
        return sum((Fraction(x) for x in self.partials), Fraction(self.ints))

    def total_double(self) -> float:
        special = self._nonfinite()
        if special is not None:
            return special
        if not self.ints:
            return math.fsum(self.partials)
        return float(self._exact())

    def total_decimal(self) -> Decimal:
        special = self._nonfinite()
        doubles = Decimal(special) if special is not None else DECIMAL.create_decimal(math.fsum(self.partials))
        return DECIMAL.add(DECIMAL.add(self.dec, Decimal(self.ints)), doubles)

    def result(self) -> Any:
        if self.widest == _DEC:
            return Decimal128(self.total_decimal())
        if self.widest == _DOUBLE:
            return self.total_double()
        total = self.ints
        if not INT64_MIN <= total <= INT64_MAX:
            return float(total)
        if self.widest == _INT and INT32_MIN <= total <= INT32_MAX:
            return total
        return Int64(total)


class AvgState(SumState):
    __slots__ = ()

    def result(self) -> Any:
        if self.count == 0:
            return None
        if self.widest == _DEC:
            return Decimal128(DECIMAL.divide(self.total_decimal(), Decimal(self.count)))
        return self.total_double() / self.count


def _to_float(v: Any) -> float:
    return float(v.to_decimal()) if v.__class__ is Decimal128 else float(v)


def is_numeric(v: Any) -> bool:
    cls = v.__class__
    return cls is int or cls is float or cls is Int64 or cls is Decimal128


class StdDevState:
    """Welford's running mean and squared deviations (as MongoDB, in doubles)."""

    __slots__ = ("count", "m2", "mean", "sample")

    def __init__(self, sample: bool) -> None:
        self.sample = sample
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0

    def add(self, v: Any) -> int:
        if not is_numeric(v):
            return 0
        x = _to_float(v)
        self.count += 1
        delta = x - self.mean
        self.mean += delta / self.count
        self.m2 += delta * (x - self.mean)
        return 0

    def merge(self, other: StdDevState) -> None:
        if other.count == 0:
            return
        total = self.count + other.count
        delta = other.mean - self.mean
        self.m2 += other.m2 + delta * delta * self.count * other.count / total
        self.mean += delta * other.count / total
        self.count = total

    def result(self) -> Any:
        n = self.count - 1 if self.sample else self.count
        if n <= 0:
            return None
        return math.sqrt(self.m2 / n)


# ---------------------------------------------------------------------------
# Selection


class MinMaxState:
    __slots__ = ("sign", "value")

    def __init__(self, sign: int) -> None:
        self.sign = sign  # -1 keeps the minimum, 1 the maximum
        self.value: Any = MISSING

    def add(self, v: Any) -> int:
        if _nullish(v):
            return 0
        if self.value is MISSING or compare(v, self.value) * self.sign > 0:
            self.value = v
        return 0

    def merge(self, other: MinMaxState) -> None:
        self.add(other.value)

    def result(self) -> Any:
        return None if self.value is MISSING else self.value


class FirstState:
    __slots__ = ("seen", "value")

    def __init__(self) -> None:
        self.seen = False
        self.value: Any = MISSING

    def add(self, v: Any) -> int:
        if not self.seen:
            self.seen = True
            self.value = v
            return approx_size(v)
        return 0

    def merge(self, other: FirstState) -> None:
        if not self.seen and other.seen:
            self.seen = True
            self.value = other.value

    def result(self) -> Any:
        return self.value


class LastState(FirstState):
    __slots__ = ()

    def add(self, v: Any) -> int:
        self.seen = True
        self.value = v
        return 0

    def merge(self, other: FirstState) -> None:
        if other.seen:
            self.seen = True
            self.value = other.value


class PushState:
    __slots__ = ("bytes", "items")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.bytes = 0

    def add(self, v: Any) -> int:
        if v is MISSING:
            return 0
        self.items.append(v)
        size = approx_size(v)
        self.bytes += size
        if self.bytes > LIMITS.push_bytes:
            raise CommandError(
                ErrorCode.ExceededMemoryLimit,
                f"$push used too much memory and cannot spill to disk. Memory limit: {LIMITS.push_bytes} bytes",
            )
        return size

    def merge(self, other: PushState) -> None:
        for v in other.items:
            self.add(v)

    def result(self) -> Any:
        return list(self.items)


class AddToSetState:
    __slots__ = ("bytes", "items")

    def __init__(self) -> None:
        self.items: dict[bytes, Any] = {}
        self.bytes = 0

    def add(self, v: Any) -> int:
        if v is MISSING:
            return 0
        key = keystring.encode(v)
        if key in self.items:
            return 0
        self.items[key] = v
        size = approx_size(v) + len(key)
        self.bytes += size
        if self.bytes > LIMITS.push_bytes:
            raise CommandError(
                ErrorCode.ExceededMemoryLimit,
                f"$addToSet used too much memory and cannot spill to disk. Memory limit: {LIMITS.push_bytes} bytes",
            )
        return size

    def merge(self, other: AddToSetState) -> None:
        for v in other.items.values():
            self.add(v)

    def result(self) -> Any:
        return list(self.items.values())


class MergeObjectsState:
    __slots__ = ("doc",)

    def __init__(self) -> None:
        self.doc: dict[str, Any] = {}

    def add(self, v: Any) -> int:
        if _nullish(v):
            return 0
        if not isinstance(v, Mapping):
            raise location(
                40400, f"$mergeObjects requires object inputs, but input {render(v)} is of type {type_name(v)}"
            )
        self.doc.update(v)
        return approx_size(v)

    def merge(self, other: MergeObjectsState) -> None:
        self.doc.update(other.doc)

    def result(self) -> Any:
        return dict(self.doc)


# ---------------------------------------------------------------------------
# The N family


def validate_n(value: Any) -> int:
    """MongoDB's check of an accumulator's ``n``: a positive integral number."""
    if not is_numeric(value):
        raise location(5787902, f"Value for 'n' must be of integral type, but found {render(_value(value))}")
    f = _to_float(value)
    if math.isnan(f) or math.isinf(f) or f != int(f):
        raise location(5787903, f"Value for 'n' must be of integral type, but found {render(value)}")
    n = int(f)
    if n <= 0:
        raise location(5787908, f"'n' must be greater than 0, found {n}")
    return n


def _value(v: Any) -> Any:
    return None if v is MISSING else v


class FirstNState:
    __slots__ = ("items", "n")

    def __init__(self, n: int) -> None:
        self.n = n
        self.items: list[Any] = []

    def add(self, v: Any) -> int:
        if len(self.items) < self.n:
            v = _value(v)
            self.items.append(v)
            return approx_size(v)
        return 0

    def merge(self, other: FirstNState) -> None:
        for v in other.items:
            self.add(v)

    def result(self) -> Any:
        return list(self.items)


class LastNState:
    __slots__ = ("items", "n")

    def __init__(self, n: int) -> None:
        self.n = n
        self.items: deque[Any] = deque(maxlen=n)

    def add(self, v: Any) -> int:
        v = _value(v)
        self.items.append(v)
        return approx_size(v)

    def merge(self, other: LastNState) -> None:
        self.items.extend(other.items)

    def result(self) -> Any:
        return list(self.items)


class MinMaxNState:
    """The n smallest (sign -1) or largest (sign 1) non-null values, best first."""

    __slots__ = ("items", "n", "sign")

    def __init__(self, n: int, sign: int) -> None:
        self.n = n
        self.sign = sign
        self.items: list[tuple[bytes, Any]] = []  # ascending by key

    def add(self, v: Any) -> int:
        if _nullish(v):
            return 0
        key = keystring.encode(v)
        items = self.items
        if len(items) == self.n:
            worst = items[0] if self.sign > 0 else items[-1]
            if (key <= worst[0]) if self.sign > 0 else (key >= worst[0]):
                return 0
            items.pop(0 if self.sign > 0 else -1)
        bisect.insort(items, (key, v), key=lambda item: item[0])
        return approx_size(v)

    def merge(self, other: MinMaxNState) -> None:
        for _, v in other.items:
            self.add(v)

    def result(self) -> Any:
        values = [v for _, v in self.items]
        return values[::-1] if self.sign > 0 else values


class TopBottomState:
    """The first (top) or last (bottom) n outputs in a sort order; on ties the
    earlier input wins. Inputs are ``(sort key bytes, output)`` pairs."""

    __slots__ = ("bottom", "items", "n", "seq", "single")

    def __init__(self, n: int, bottom: bool, single: bool) -> None:
        self.n = n
        self.bottom = bottom
        self.single = single
        self.seq = 0
        self.items: list[tuple[bytes, int, Any]] = []  # ascending by (key, arrival)

    def add(self, pair: Any) -> int:
        key, output = pair
        items = self.items
        self.seq += 1
        if len(items) == self.n:
            if self.bottom:
                if key <= items[0][0]:
                    return 0
                items.pop(0)
            else:
                if key >= items[-1][0]:
                    return 0
                items.pop()
        bisect.insort(items, (key, self.seq, output), key=lambda item: (item[0], item[1]))
        return approx_size(output) + len(key)

    def merge(self, other: TopBottomState) -> None:
        for key, _, output in other.items:
            self.add((key, output))

    def result(self) -> Any:
        outputs = [output for _, _, output in self.items]
        if self.single:
            if not outputs:
                return None
            return outputs[-1] if self.bottom else outputs[0]
        return outputs


class QuantileState:
    """The numeric inputs as doubles; discrete percentiles (see module doc)."""

    __slots__ = ("ps", "single", "values")

    def __init__(self, ps: tuple[float, ...], single: bool) -> None:
        self.ps = ps
        self.single = single
        self.values: list[float] = []

    def add(self, v: Any) -> int:
        if not is_numeric(v):
            return 0
        f = _to_float(v)
        if f != f:
            return 0
        self.values.append(f)
        return 16

    def merge(self, other: QuantileState) -> None:
        self.values.extend(other.values)

    def result(self) -> Any:
        found = discrete_percentiles(self.values, self.ps)
        return found[0] if self.single else found


def discrete_percentiles(values: list[float], ps: tuple[float, ...]) -> list[Any]:
    if not values:
        return [None] * len(ps)
    values = sorted(values)
    n = len(values)
    out = []
    for p in ps:
        rank = n - 1 if p >= 1.0 else max(0, math.ceil(n * p) - 1)
        out.append(values[rank])
    return out


# ---------------------------------------------------------------------------
# Compilers


def _simple(name: str, factory: Callable[[], State]) -> None:
    def compile_acc(arg: Any, scope: Scope) -> Accumulator:
        return Accumulator(name, compile_expression(arg, scope), _const_start(factory))

    compile_acc.__name__ = f"acc_{name[1:]}"
    ACCUMULATORS.register(name)(compile_acc)


_simple("$sum", SumState)
_simple("$avg", AvgState)
_simple("$min", lambda: MinMaxState(-1))
_simple("$max", lambda: MinMaxState(1))
_simple("$first", FirstState)
_simple("$last", LastState)
_simple("$push", PushState)
_simple("$addToSet", AddToSetState)
_simple("$mergeObjects", MergeObjectsState)
_simple("$stdDevPop", lambda: StdDevState(False))
_simple("$stdDevSamp", lambda: StdDevState(True))


@ACCUMULATORS.register("$count")
def acc_count(arg: Any, scope: Scope) -> Accumulator:
    if not isinstance(arg, Mapping) or arg:
        raise CommandError(ErrorCode.TypeMismatch, "$count takes no arguments, i.e. $count:{}")
    return Accumulator("$count", lambda doc, vars: 1, _const_start(SumState))


def _n_start(n_expr: Expr, make: Callable[[int], State]) -> Callable[[Any, dict[str, Any]], State]:
    def start(key: Any, vars: dict[str, Any]) -> State:
        return make(validate_n(n_expr(key if isinstance(key, dict) else {}, vars)))

    return start


def _n_args(name: str, arg: Any, scope: Scope, spec_code: int) -> tuple[Expr, Expr]:
    if not isinstance(arg, Mapping):
        raise location(spec_code, f"specification must be an object; found {name}: {render(arg)}")
    n = value = None
    for key, spec in arg.items():
        if key == "input":
            value = compile_expression(spec, scope)
        elif key == "n":
            n = compile_expression(spec, scope)
        else:
            raise location(5787901, f"Unknown argument for 'n' operator: {key}")
    if n is None:
        raise location(5787906, "Missing value for 'n'")
    if value is None:
        raise location(5787907, "Missing value for 'input'")
    return n, value


@ACCUMULATORS.register("$firstN")
def acc_firstN(arg: Any, scope: Scope) -> Accumulator:
    n, value = _n_args("$firstN", arg, scope, 5787801)
    return Accumulator("$firstN", value, _n_start(n, FirstNState))


@ACCUMULATORS.register("$lastN")
def acc_lastN(arg: Any, scope: Scope) -> Accumulator:
    n, value = _n_args("$lastN", arg, scope, 5787801)
    return Accumulator("$lastN", value, _n_start(n, LastNState))


@ACCUMULATORS.register("$maxN")
def acc_maxN(arg: Any, scope: Scope) -> Accumulator:
    n, value = _n_args("$maxN", arg, scope, 5787900)
    return Accumulator("$maxN", value, _n_start(n, lambda k: MinMaxNState(k, 1)))


@ACCUMULATORS.register("$minN")
def acc_minN(arg: Any, scope: Scope) -> Accumulator:
    n, value = _n_args("$minN", arg, scope, 5787900)
    return Accumulator("$minN", value, _n_start(n, lambda k: MinMaxNState(k, -1)))


def _top_bottom(name: str, bottom: bool, single: bool) -> None:
    def compile_acc(arg: Any, scope: Scope) -> Accumulator:
        if not isinstance(arg, Mapping):
            raise location(5788001, f"specification must be an object; found {name}: {render(arg)}")
        n_spec: Any = MISSING
        output_spec: Any = MISSING
        sort_by: Any = MISSING
        for key, spec in arg.items():
            if key == "n" and not single:
                n_spec = spec
            elif key == "output":
                output_spec = spec
            elif key == "sortBy":
                sort_by = spec
            else:
                raise location(5788002, f"Unknown argument to {name} '{key}'")
        if not single and n_spec is MISSING:
            raise location(5788003, "Missing value for 'n'")
        if output_spec is MISSING:
            raise location(5788004, "Missing value for 'output'")
        if sort_by is MISSING:
            raise location(5788005, "Missing value for 'sortBy'")
        if not isinstance(sort_by, Mapping) or not sort_by:
            raise location(9657900, "Value for 'sortBy' must be a non-empty object")
        key_of = sort_key_function(sort_by)
        output = compile_expression(output_spec, scope)

        def pair(doc: Any, vars: dict[str, Any]) -> Any:
            return key_of(doc), _value(output(doc, vars))

        if single:
            start = _const_start(lambda: TopBottomState(1, bottom, True))
        else:
            start = _n_start(compile_expression(n_spec, scope), lambda k: TopBottomState(k, bottom, False))
        return Accumulator(name, pair, start)

    compile_acc.__name__ = f"acc_{name[1:]}"
    ACCUMULATORS.register(name)(compile_acc)


def sort_key_function(sort_by: Mapping[str, Any]) -> Callable[[Any], bytes]:
    """Sort-key bytes of a document under a sort pattern (memcmp order is the
    pattern's order)."""
    from foliodb.query.sort import compile_sort

    return compile_sort(sort_by).key


_top_bottom("$top", False, True)
_top_bottom("$bottom", True, True)
_top_bottom("$topN", False, False)
_top_bottom("$bottomN", True, False)


def quantile_args(name: str, arg: Any, scope: Scope) -> tuple[Expr, tuple[float, ...]]:
    """Parse ``{input, p, method}`` of $percentile / ``{input, method}`` of $median."""
    single = name == "$median"
    if not isinstance(arg, Mapping):
        raise location(7436100 if single else 7429703, f"specification must be an object; found {render(arg)}")
    allowed = ("input", "method") if single else ("input", "p", "method")
    for key in arg:
        if key not in allowed:
            raise location(40415, f"BSON field '{name}.{key}' is an unknown field.")
    for key in allowed:
        if key not in arg:
            raise location(40414, f"BSON field '{name}.{key}' is missing but a required field")
    method = arg["method"]
    if not isinstance(method, str):
        raise CommandError(
            ErrorCode.TypeMismatch,
            f"BSON field '{name}.method' is the wrong type '{type_name(method)}', expected type 'string'",
        )
    if method != "approximate":
        raise CommandError(ErrorCode.BadValue, "Currently only 'approximate' can be used as percentile 'method'.")
    value = compile_expression(arg["input"], scope)
    if single:
        return value, (0.5,)
    return value, _percentiles(arg["p"], scope)


def _percentiles(spec: Any, scope: Scope) -> tuple[float, ...]:
    p = constant_value(spec, scope)
    if p is MISSING:
        raise location(
            7750300, f"The $percentile 'p' field must be an array of constant values, but found value: {render(spec)}."
        )
    message = "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: "
    if not isinstance(p, list) or not p:
        raise location(7750301, message + render(_value(p)))
    out = []
    for item in p:
        if not is_numeric(item):
            raise location(7750302, message + render(item))
        f = _to_float(item)
        if not 0 <= f <= 1:
            raise location(7750303, message + repr(f))
        out.append(f)
    return tuple(out)


def constant_value(spec: Any, scope: Scope) -> Any:
    """The value of an expression that reads no field and no variable, or
    MISSING when it does (MongoDB's "must be a constant" checks)."""
    if _references_fields(spec):
        return MISSING
    return compile_expression(spec, scope)({}, {})


def _references_fields(spec: Any) -> bool:
    if isinstance(spec, str):
        return spec.startswith("$")
    if isinstance(spec, Mapping):
        if len(spec) == 1 and "$literal" in spec:
            return False
        return any(_references_fields(v) for v in spec.values())
    if isinstance(spec, list):
        return any(_references_fields(v) for v in spec)
    return False


@ACCUMULATORS.register("$percentile")
def acc_percentile(arg: Any, scope: Scope) -> Accumulator:
    value, ps = quantile_args("$percentile", arg, scope)
    return Accumulator("$percentile", value, _const_start(lambda: QuantileState(ps, False)))


@ACCUMULATORS.register("$median")
def acc_median(arg: Any, scope: Scope) -> Accumulator:
    value, ps = quantile_args("$median", arg, scope)
    return Accumulator("$median", value, _const_start(lambda: QuantileState(ps, True)))


def compile_accumulator(field: str, spec: Any, scope: Scope) -> Accumulator:
    """One ``field: {$acc: arg}`` entry of $group/$bucket/$bucketAuto output."""
    if not isinstance(spec, Mapping) or not spec or not next(iter(spec)).startswith("$"):
        raise location(40234, f"The field '{field}' must be an accumulator object")
    if "." in field:
        raise location(40235, f"The field name '{field}' cannot contain '.'")
    if field.startswith("$"):
        raise location(40236, f"The field name '{field}' cannot be an operator name")
    if len(spec) != 1:
        raise location(40238, f"The field '{field}' must specify one accumulator")
    name, arg = next(iter(spec.items()))
    if isinstance(arg, list):
        raise location(40237, f"The {name} accumulator is a unary operator")
    return ACCUMULATORS.get(name)(arg, scope)
