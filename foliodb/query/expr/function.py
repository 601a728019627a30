"""$function: a JavaScript function's value (:mod:`foliodb.javascript`).

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/function/

``body`` must be a constant string or Code; ``args`` an array expression,
checked when evaluated; ``lang`` the string ``"js"``. The JavaScript context is made on
first evaluation, so scripting being off (31264) shows only then, as in mongod.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from foliodb import javascript
from foliodb.errors import location
from foliodb.query.bsontypes import type_name
from foliodb.query.expr.core import EXPR_OPS, NOT_CONSTANT, Expr, Scope, compile_expression, constant_of
from foliodb.query.paths import MISSING

if TYPE_CHECKING:
    from foliodb.javascript.runtime import Runtime


def js_code(spec: Any, what: str) -> str:
    """The source of a constant string or Code field (``$function`` and ``$accumulator``)."""
    value = constant_of(spec)
    if value is NOT_CONSTANT:
        raise location(31432, f"The {what} function must be a constant expression")
    if not isinstance(value, str):  # a string, or Code (a str subclass)
        raise location(31262, f"The {what} function must evaluate to type string or code")
    return str(value)


def check_lang(spec: Mapping[str, Any]) -> None:
    if "lang" not in spec:
        raise location(31418, "The lang field must be specified.")
    if spec["lang"] != "js":
        raise location(31419, "Currently the only supported language specifier is 'js'.")


@EXPR_OPS.register("$function")
def expr_function(arg: Any, scope: Scope) -> Expr:
    if not isinstance(arg, Mapping):
        raise location(31260, f"$function requires an object as an argument, found: {type_name(arg)}")
    if "body" not in arg:
        raise location(31261, "The body function must be specified.")
    body = js_code(arg["body"], "body")
    if "args" not in arg:
        raise location(31263, "The args field must be specified.")
    args = compile_expression(arg["args"], scope)
    check_lang(arg)
    compiled: list[tuple[Runtime, Any]] = []

    def function_expr(doc: Any, vars: dict[str, Any]) -> Any:
        values = args(doc, vars)
        if not isinstance(values, list):
            raise location(31266, "The args field must be of type array")
        if not compiled:
            js = javascript.new_runtime()
            compiled.append((js, js.function(body)))
        js, fn = compiled[0]
        return js.call(fn, [None if v is MISSING else v for v in values])

    return function_expr
