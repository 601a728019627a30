"""Element query operators: $exists $type.

Manual: https://www.mongodb.com/docs/manual/reference/operator/query-element/
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.errors import bad_value, failed_to_parse, type_mismatch
from foliodb.query import bsontypes
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import is_string
from foliodb.query.context import Context
from foliodb.query.expr.core import truthy
from foliodb.query.filter import FIELD_OPS, Clause, Leaf, Not


def _exists_single(v: Any) -> bool:
    return True


@FIELD_OPS.register("$exists")
def filter_exists(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    present = Leaf(_exists_single, expand=False)
    return present if truthy(arg) else Not(present)


def type_names(arg: Any, op: str = "$type") -> frozenset[str]:
    """The set of type aliases a ``$type`` argument names ("number" expands)."""
    items = arg if isinstance(arg, list) else [arg]
    if isinstance(arg, list) and not arg and op == "$type":
        # MongoDB names the field path where this says the operator.
        raise failed_to_parse(f"{op} must match at least one type")
    names: set[str] = set()
    for item in items:
        if is_string(item):
            if item == "number":
                names |= bsontypes.NUMERIC_TYPES
            elif item in bsontypes.TYPE_NUMBERS:
                names.add(item)
            else:
                raise bad_value(f"Unknown type name alias: {item}")
        elif cmp.is_number(item):
            number = cmp.number_value(item)
            if number != int(number) if cmp.is_finite_number(item) else True:
                raise bad_value(f"Invalid numerical type code: {item}")
            code = int(number)
            if code not in bsontypes.TYPE_NAMES:
                raise bad_value(f"Invalid numerical type code: {code}")
            names.add(bsontypes.TYPE_NAMES[code])
        else:
            raise type_mismatch("type must be represented as a number or a string")
    return frozenset(names)


@FIELD_OPS.register("$type")
def filter_type(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    names = type_names(arg)
    type_name = bsontypes.type_name
    # An array field is offered whole as well as element by element, so
    # {"$type": "array"} matches arrays and other types match elements.
    return Leaf(lambda v: type_name(v) in names)
