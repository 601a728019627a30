"""Miscellaneous expressions: $rand $meta $binarySize $bsonSize $tsSecond
$tsIncrement, and the bitwise $bitAnd $bitOr $bitXor $bitNot.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/rand/
(and meta/, binarySize/, bsonSize/, tsSecond/, tsIncrement/, bitAnd/,
bitOr/, bitXor/, bitNot/)

$meta reads the document metadata a stage left in ``vars[METADATA]`` (see
:mod:`foliodb.query.expr.core`); metadata nobody produced is missing.
Bitwise operators take ints and longs only; a long operand makes the result
a long.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

import bson
from bson import DBRef, Int64, Timestamp

from foliodb.errors import location, type_mismatch
from foliodb.query.compare import binary_parts
from foliodb.query.expr.arithmetic import unary_numeric
from foliodb.query.expr.core import (
    EXPR_OPS,
    METADATA,
    Expr,
    Scope,
    compile_expression,
    is_string,
    nullish,
    operands,
    type_of,
)
from foliodb.query.expr.numeric import Kind, int_or_long, kind
from foliodb.query.hashing import hash64
from foliodb.query.paths import MISSING

META_NAMES = frozenset(
    {
        "textScore",
        "randVal",
        "searchScore",
        "searchHighlights",
        "searchScoreDetails",
        "searchSequenceToken",
        "searchRootDocumentId",
        "vectorSearchScore",
        "score",
        "scoreDetails",
        "geoNearDistance",
        "geoNearPoint",
        "recordId",
        "indexKey",
        "sortKey",
        "timeseriesBucketMinTime",
        "timeseriesBucketMaxTime",
    }
)


@EXPR_OPS.register("$rand")
def expr_rand(arg: Any, scope: Scope) -> Expr:
    if not isinstance(arg, Mapping):
        raise location(10065, "invalid parameter: expected an object ($rand)")
    if arg:
        raise location(3040501, "$rand does not currently accept arguments")
    return lambda doc, vars: random.random()


@EXPR_OPS.register("$meta")
def expr_meta(arg: Any, scope: Scope) -> Expr:
    if not is_string(arg):
        raise location(17307, "$meta only supports string arguments")
    if arg not in META_NAMES:
        raise location(17308, f"Unsupported argument to $meta: {arg}")
    return lambda doc, vars: vars.get(METADATA, {}).get(arg, MISSING)


@EXPR_OPS.register("$toHashedIndexKey")
def expr_toHashedIndexKey(arg: Any, scope: Scope) -> Expr:
    """The value's hash as a hashed index stores it (missing hashes as null)."""
    operand = compile_expression(arg, scope)

    def to_hashed(doc: Any, vars: dict[str, Any]) -> Any:
        v = operand(doc, vars)
        return hash64(None if v is MISSING else v)

    return to_hashed


@EXPR_OPS.register("$binarySize")
def expr_binarySize(arg: Any, scope: Scope) -> Expr:
    (operand,) = operands(arg, "$binarySize", 1, 1, scope)

    def binary_size(doc: Any, vars: dict[str, Any]) -> Any:
        v = operand(doc, vars)
        if nullish(v):
            return None
        if is_string(v):
            return len(v.encode())
        if type_of(v) != "binData":
            raise location(51276, f"$binarySize requires a string or BinData argument, found: {type_of(v)}")
        return len(binary_parts(v)[1])

    return binary_size


@EXPR_OPS.register("$bsonSize")
def expr_bsonSize(arg: Any, scope: Scope) -> Expr:
    (operand,) = operands(arg, "$bsonSize", 1, 1, scope)

    def bson_size(doc: Any, vars: dict[str, Any]) -> Any:
        v = operand(doc, vars)
        if nullish(v):
            return None
        if isinstance(v, DBRef):
            v = v.as_doc()
        if not isinstance(v, Mapping):
            raise location(31393, f"$bsonSize requires a document input, found: {type_of(v)}")
        return len(bson.encode(v))

    return bson_size


def _timestamp_part(name: str, code: int, part: Callable[[Timestamp], int]) -> None:
    def compile_part(arg: Any, scope: Scope) -> Expr:
        (operand,) = operands(arg, name, 1, 1, scope)

        def timestamp_part(doc: Any, vars: dict[str, Any]) -> Any:
            v = operand(doc, vars)
            if nullish(v):
                return None
            if not isinstance(v, Timestamp):
                raise location(code, f" Argument to {name} must be a timestamp, but is {type_of(v)}")
            return Int64(part(v))

        return timestamp_part

    compile_part.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_part)


_timestamp_part("$tsSecond", 5687301, lambda ts: ts.time)
_timestamp_part("$tsIncrement", 5687302, lambda ts: ts.inc)


def _bitwise(name: str, identity: int, op: Callable[[int, int], int]) -> None:
    def compile_bitwise(arg: Any, scope: Scope) -> Expr:
        items = operands(arg, name, 0, None, scope)

        def bitwise(doc: Any, vars: dict[str, Any]) -> Any:
            result, long = identity, False
            for item in items:
                v = item(doc, vars)
                if nullish(v):
                    return None
                k = kind(v)
                if k not in (Kind.INT, Kind.LONG):
                    raise type_mismatch(f"{name} only supports int and long operands.")
                long = long or k is Kind.LONG
                result = op(result, int(v))
            return Int64(result) if long else int_or_long(result)

        return bitwise

    compile_bitwise.__name__ = f"expr_{name[1:]}"
    EXPR_OPS.register(name)(compile_bitwise)


_bitwise("$bitAnd", -1, lambda a, b: a & b)
_bitwise("$bitOr", 0, lambda a, b: a | b)
_bitwise("$bitXor", 0, lambda a, b: a ^ b)


@unary_numeric("$bitNot")
def _bit_not(v: Any, k: Kind) -> Any:
    if k is Kind.INT:
        return ~v
    if k is Kind.LONG:
        return Int64(~int(v))
    raise type_mismatch(f"$bitNot only supports int and long, not: {type_of(v)}.")
