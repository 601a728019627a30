"""$min $max $first $last pick one value; $push $addToSet $mergeObjects
collect them. ``$min`` and ``$max`` ignore null and missing; ``$push`` and
``$addToSet`` hold at most ``LIMITS.push_bytes``. Under a collation
``$min``/``$max`` order strings by it and ``$addToSet`` keeps one of the
strings it calls equal (the scope's collation).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from foliodb.aggregation.accumulators.core import ACCUMULATORS, Accumulator, const_start, nullish, register_simple
from foliodb.aggregation.pipeline import LIMITS, approx_size
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query import keystring
from foliodb.query.bsontypes import type_name
from foliodb.query.collation import key_encoder
from foliodb.query.compare import compare
from foliodb.query.expr import Scope, compile_expression
from foliodb.query.paths import MISSING
from foliodb.query.render import render


class MinMaxState:
    __slots__ = ("compare", "sign", "value")

    def __init__(self, sign: int, compare: Callable[[Any, Any], int] = compare) -> None:
        self.sign = sign  # -1 keeps the minimum, 1 the maximum
        self.compare = compare
        self.value: Any = MISSING

    def add(self, v: Any) -> int:
        if nullish(v):
            return 0
        if self.value is MISSING or self.compare(v, self.value) * self.sign > 0:
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


def _check_memory(held: int, name: str) -> None:
    """$push and $addToSet cannot spill: past their limit they fail."""
    if held > LIMITS.push_bytes:
        raise CommandError(
            ErrorCode.ExceededMemoryLimit,
            f"{name} used too much memory and cannot spill to disk. Memory limit: {LIMITS.push_bytes} bytes",
        )


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
        _check_memory(self.bytes, "$push")
        return size

    def merge(self, other: PushState) -> None:
        for v in other.items:
            self.add(v)

    def result(self) -> Any:
        return list(self.items)


class AddToSetState:
    __slots__ = ("bytes", "encode", "items")

    def __init__(self, encode: Callable[[Any], bytes] = keystring.encode) -> None:
        self.items: dict[bytes, Any] = {}
        self.bytes = 0
        self.encode = encode

    def add(self, v: Any) -> int:
        if v is MISSING:
            return 0
        key = self.encode(v)
        if key in self.items:
            return 0
        self.items[key] = v
        size = approx_size(v) + len(key)
        self.bytes += size
        _check_memory(self.bytes, "$addToSet")
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
        if nullish(v):
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


register_simple("$first", FirstState)
register_simple("$last", LastState)
register_simple("$push", PushState)
register_simple("$mergeObjects", MergeObjectsState)


def _min_max(name: str, sign: int) -> None:
    def compile_acc(arg: Any, scope: Scope) -> Accumulator:
        order = scope.compare
        return Accumulator(name, compile_expression(arg, scope), const_start(lambda: MinMaxState(sign, order)))

    compile_acc.__name__ = f"acc_{name[1:]}"
    ACCUMULATORS.register(name)(compile_acc)


_min_max("$min", -1)
_min_max("$max", 1)


@ACCUMULATORS.register("$addToSet")
def acc_addToSet(arg: Any, scope: Scope) -> Accumulator:
    encode = key_encoder(scope.collator)
    return Accumulator("$addToSet", compile_expression(arg, scope), const_start(lambda: AddToSetState(encode)))
