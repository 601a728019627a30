"""Bitwise update operator: $bit.

Manual: https://www.mongodb.com/docs/manual/reference/operator/update/bit/

Operands and fields are int32 or int64; an int32 result stays int32 only
when both sides are int32 (as MongoDB's SafeNum). A missing field counts as
int32 zero.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

from bson import Int64

from foliodb.errors import bad_value
from foliodb.query.bsontypes import type_name
from foliodb.query.context import Context
from foliodb.query.update_ops.arithmetic import is_int32
from foliodb.query.update_ops.core import UPDATE_OPS, Modifier, Where, is_integral, render_element

_OPS = {"and": operator.and_, "or": operator.or_, "xor": operator.xor}
_FORMAT = "{$bit: {field: {and/or/xor: #}}"


@UPDATE_OPS.register("$bit")
def update_bit(path: str, arg: Any, ctx: Context) -> Modifier:
    if not isinstance(arg, Mapping):
        raise bad_value(
            f"The $bit modifier is not compatible with a {type_name(arg)}. You must pass in an embedded document: "
            + _FORMAT
        )
    steps = []
    for name, operand in arg.items():
        if name not in _OPS:
            raise bad_value(
                f"The $bit modifier only supports 'and', 'or', and 'xor', not '{name}' which is an unknown operator: "
                f"{{{render_element(name, operand)}}}"
            )
        if not is_integral(operand):
            raise bad_value(
                f"The $bit modifier field must be an Integer(32/64 bit); a '{type_name(operand)}' is not supported "
                f"here: {{{render_element(name, operand)}}}"
            )
        steps.append((_OPS[name], operand))
    if not steps:
        raise bad_value("You must pass in at least one bitwise operation. The format is: " + _FORMAT)

    def run(value: Any) -> Any:
        for op, operand in steps:
            result = op(int(value), int(operand))
            value = result if is_int32(value) and is_int32(operand) else Int64(result)
        return value

    def update(old: Any, where: Where) -> Any:
        if not is_integral(old):
            raise bad_value(
                f"Cannot apply $bit to a value of non-integral type.{where.id_text()} has the field {where.field} "
                f"of non-integer type {type_name(old)}"
            )
        return run(old)

    created = run(0)
    return Modifier(update=update, create=lambda where: created)
