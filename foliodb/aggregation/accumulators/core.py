"""The accumulator record and state protocol, the registry, and the
helpers the families share (see the package docstring for the contract).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from bson import Decimal128, Int64
from bson.decimal128 import create_decimal128_context

from foliodb.errors import CommandError, location
from foliodb.query.bsontypes import is_string
from foliodb.query.expr import Expr, Scope, compile_expression
from foliodb.query.paths import MISSING
from foliodb.query.registry import Registry

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


ACCUMULATORS: Registry[AccumulatorCompiler] = Registry("accumulator", _unknown, unbuilt=("$concatArrays", "$setUnion"))


# Accumulators of $group, $bucket and $bucketAuto only, not window functions (their manual pages).
GROUP_ONLY = frozenset({"$accumulator"})


def const_start(factory: Callable[[], State]) -> Callable[[Any, dict[str, Any]], State]:
    return lambda key, vars: factory()


def register_simple(name: str, factory: Callable[[], State]) -> None:
    def compile_acc(arg: Any, scope: Scope) -> Accumulator:
        return Accumulator(name, compile_expression(arg, scope), const_start(factory))

    compile_acc.__name__ = f"acc_{name[1:]}"
    ACCUMULATORS.register(name)(compile_acc)


def nullish(v: Any) -> bool:
    return v is None or v is MISSING


def value_or_null(v: Any) -> Any:
    return None if v is MISSING else v


def to_float(v: Any) -> float:
    return float(v.to_decimal()) if v.__class__ is Decimal128 else float(v)


def is_numeric(v: Any) -> bool:
    cls = v.__class__
    return cls is int or cls is float or cls is Int64 or cls is Decimal128


def constant_value(spec: Any, scope: Scope) -> Any:
    """The value of an expression that reads no field and no variable, or
    MISSING when it does (MongoDB's "must be a constant" checks)."""
    if _references_fields(spec):
        return MISSING
    return compile_expression(spec, scope)({}, {})


def _references_fields(spec: Any) -> bool:
    if is_string(spec):
        return spec.startswith("$")
    if isinstance(spec, Mapping):
        if len(spec) == 1 and "$literal" in spec:
            return False
        return any(_references_fields(v) for v in spec.values())
    if isinstance(spec, list):
        return any(_references_fields(v) for v in spec)
    return False


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
