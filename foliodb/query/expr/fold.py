"""Expressions as explain shows them after mongod's optimization (``Expression::optimize``).

``folded(spec, scope)`` returns a specification in which every operator expression whose
operands are all constants is replaced by ``{$const: value}`` (its value, computed by the
expression compiler), and ``$and``/``$or`` short-circuit as mongod's ExpressionAnd/ExpressionOr
do: their constant operands gather into one at the end, a deciding one (false for ``$and``, true
for ``$or``) replaces the whole expression, an undeciding one is dropped, and one operand left is
``{$coerceToBool: [operand]}``. Field paths, variables and literal operands stay as written; an
expression whose folding raises (a division by zero) or that is not deterministic stays too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.errors import CommandError
from foliodb.query.bsontypes import is_string
from foliodb.query.expr.core import Scope, compile_expression
from foliodb.query.paths import MISSING

# Operators whose value is not a function of their operands.
_VARYING = frozenset({"$rand", "$function", "$accumulator", "$meta", "$sampleRate", "$createObjectId"})


def folded(spec: Any, scope: Scope) -> Any:
    if isinstance(spec, list):
        return [folded(item, scope) for item in spec]
    if not isinstance(spec, Mapping) or not spec:
        return spec
    name = next(iter(spec))
    if len(spec) != 1 or not name.startswith("$"):
        return {key: folded(value, scope) for key, value in spec.items()}  # an object literal
    if name in ("$literal", "$const"):
        return spec
    if is_constant(spec):
        value = _value(spec, scope)
        return spec if value is _FAILED else {"$const": value}
    if name in ("$and", "$or") and isinstance(spec[name], list):
        return _short_circuit(name, [folded(item, scope) for item in spec[name]], scope)
    arg = spec[name]
    return {name: folded(arg, scope) if isinstance(arg, (list, Mapping)) else arg}


def is_constant(spec: Any) -> bool:
    """Does a specification read no field or variable (and call nothing varying)?"""
    if is_string(spec):
        return not spec.startswith("$")
    if isinstance(spec, list):
        return all(is_constant(item) for item in spec)
    if isinstance(spec, Mapping):
        if len(spec) == 1 and next(iter(spec)) in ("$literal", "$const"):
            return True
        if any(key in _VARYING for key in spec):
            return False
        return all(is_constant(value) for value in spec.values())
    return True


_FAILED = object()


def _value(spec: Any, scope: Scope) -> Any:
    try:
        value = compile_expression(spec, scope)({}, {})
    except CommandError:
        return _FAILED
    return None if value is MISSING else value


def _short_circuit(name: str, operands: list[Any], scope: Scope) -> Any:
    constants = [item for item in operands if is_constant(item)]
    if not constants:
        return {name: operands}
    deciding = name == "$or"  # the value one operand settles the whole expression with
    if _value({name: constants}, scope) is deciding:
        return {"$const": deciding}
    rest = [item for item in operands if not is_constant(item)]
    if len(rest) == 1:
        return {"$coerceToBool": rest}
    return {name: rest}
