"""Evaluation query operators: $regex $options $mod $expr $where $comment.

``$where`` runs JavaScript (:mod:`foliodb.javascript`).

Manual: https://www.mongodb.com/docs/manual/reference/operator/query-evaluation/
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from bson import Code, Regex

from foliodb import javascript
from foliodb.errors import CommandError, ErrorCode, bad_value, failed_to_parse, location
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import INT64_MAX, INT64_MIN, is_string
from foliodb.query.context import Context
from foliodb.query.expr import Scope, compile_expression, root_variables, truthy
from foliodb.query.filter import FIELD_OPS, TOP_OPS, Clause, Leaf, Matcher
from foliodb.query.pcre import OPTION_FLAGS, Pattern, compile_regex, from_python
from foliodb.query.render import render

if TYPE_CHECKING:
    from foliodb.javascript.runtime import Runtime

# RegexMatchExpression's limit on a pattern's length (pcre's MaxPatternSize).
_MAX_PATTERN = 32764


def filter_regex_pattern(pattern: str, options: str) -> Pattern:
    """A query regex ($regex, a regex value, $in's regexes), checked as
    RegexMatchExpression checks it."""
    if len(pattern.encode()) > _MAX_PATTERN:
        raise bad_value("Regular expression is too long")
    if "\x00" in pattern:
        raise bad_value("Regular expression cannot contain an embedded null byte")
    return compile_regex(pattern, options)


def to_pattern(value: Any) -> Pattern:
    """The bounded pattern of a regex value (BSON's, or a Python ``re`` pattern)."""
    if isinstance(value, Regex):
        flags = value.flags
        letters = flags if is_string(flags) else cmp.regex_parts(value)[1]
        return filter_regex_pattern(value.pattern, "".join(ch for ch in letters if ch in OPTION_FLAGS))
    return from_python(value)


def regex_single(regex: Pattern, original: Any) -> Callable[[Any], bool]:
    """Does a value match: a string the regex finds in, or an equal regex."""
    search = regex.search

    def single(v: Any) -> bool:
        if v.__class__ is str:
            return search(v) is not None
        b = cmp.bracket(v)
        if b == cmp.STRING:
            return search(str(v)) is not None
        return b == cmp.REGEX and cmp.compare(v, original) == 0

    return single


@FIELD_OPS.register("$regex")
def filter_regex(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    # parseRegexDocument reads the operator document in order: options given
    # twice (a regex value with flags, and $options) is 51074 when $options
    # came first and 51075 when it came second.
    pattern = ""
    flags = ""
    for name, value in spec.items():
        if name == "$regex":
            if is_string(value):
                pattern = value
            elif cmp.bracket(value) == cmp.REGEX:
                pattern, regex_flags = cmp.regex_parts(value)
                if regex_flags:
                    if flags:
                        raise location(51074, "options set in both $regex and $options")
                    flags = regex_flags
            else:
                raise bad_value("$regex has to be a string")
        elif name == "$options":
            if not is_string(value):
                raise bad_value("$options has to be a string")
            if flags:
                raise location(51075, "options set in both $regex and $options")
            flags = value
    regex = filter_regex_pattern(pattern, flags)
    return Leaf(regex_single(regex, Regex(pattern, flags)))


def _mod_operand(value: Any, what: str) -> int:
    """A divisor or remainder, truncated toward zero to a 64-bit integer."""
    if not cmp.is_number(value):
        raise bad_value(f"malformed mod, {what} not a number")
    if not cmp.is_finite_number(value):
        raise bad_value(
            f"malformed mod, {what} value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type"
        )
    n = int(cmp.number_value(value))
    if not INT64_MIN <= n <= INT64_MAX:
        raise bad_value(
            f"malformed mod, {what} value is invalid :: caused by :: Out of bounds coercing to integral value"
        )
    return n


@FIELD_OPS.register("$mod")
def filter_mod(arg: Any, spec: Mapping[str, Any], ctx: Context) -> Clause:
    if not isinstance(arg, list):
        raise bad_value("malformed mod, needs to be an array")
    if len(arg) < 2:
        raise bad_value("malformed mod, not enough elements")
    if len(arg) > 2:
        raise bad_value("malformed mod, too many elements")
    divisor = _mod_operand(arg[0], "divisor")
    remainder = _mod_operand(arg[1], "remainder")
    if divisor == 0:
        raise bad_value("divisor cannot be 0")

    def single(v: Any) -> bool:
        # NaN and infinities have no remainder: they never match.
        if not cmp.is_number(v) or not cmp.is_finite_number(v):
            return False
        n = int(cmp.number_value(v))
        # C++'s % truncates toward zero: the remainder takes the dividend's sign.
        r = abs(n) % abs(divisor)
        return (-r if n < 0 else r) == remainder

    return Leaf(single)


@TOP_OPS.register("$expr")
def filter_expr(arg: Any, ctx: Context) -> Matcher:
    expr = compile_expression(arg, Scope(frozenset(ctx.variables), ctx.collator))
    let = ctx.variables
    now = ctx.now

    def match_expr(doc: Any, details: Any = None) -> bool:
        return truthy(expr(doc, root_variables(doc, let, now)))

    return match_expr


@TOP_OPS.register("$where")
def filter_where(arg: Any, ctx: Context) -> Matcher:
    # Manual: https://www.mongodb.com/docs/manual/reference/operator/query/where/
    # As mongod's parseWhereParams: code or a string; code with scope is refused since 4.4.
    if isinstance(arg, Code):
        if arg.scope is not None:
            raise location(4649201, "$where no longer supports deprecated BSON type CodeWScope")
        code = str(arg)
    elif is_string(arg):
        code = arg
    else:
        raise bad_value("$where got bad type")
    if not code:
        raise bad_value("code for $where cannot be empty")
    if not javascript.settings()[0]:
        # As mongod started with --noscripting: the check is at parse time.
        raise CommandError(ErrorCode.BadValue, "no globalScriptEngine in $where parsing")
    # The context is made on first use, so a $where that meets no document costs nothing.
    compiled: list[tuple[Runtime, Any]] = []

    def match_where(doc: Any, details: Any = None) -> bool:
        if not compiled:
            js = javascript.new_runtime(None, stored=True)
            compiled.append((js, js.function(code)))
        js, fn = compiled[0]
        return js.where(fn, doc)

    return match_where


@TOP_OPS.register("$comment")
def filter_comment(arg: Any, ctx: Context) -> Matcher:
    return lambda doc, details=None: True


def _always_argument(arg: Any, name: str) -> None:
    """parseAlwaysBoolean: the argument is the integer 1 (FailedToParse otherwise)."""
    shown = f"{name}: {render(arg)}"
    if not cmp.is_number(arg):
        raise failed_to_parse(f"Expected a number in: {shown}")
    if cmp.is_nan(arg):
        raise failed_to_parse(f"Expected an integer, but found NaN in: {shown}")
    if not cmp.is_finite_number(arg):
        raise failed_to_parse(f"Cannot represent as a 64-bit integer: {shown}")
    n = cmp.number_value(arg)
    if n != int(n):
        raise failed_to_parse(f"Expected an integer: {shown}")
    if n != 1:
        raise failed_to_parse(f"{name} must be an integer value of 1")


@TOP_OPS.register("$alwaysTrue")
def filter_alwaysTrue(arg: Any, ctx: Context) -> Matcher:
    _always_argument(arg, "$alwaysTrue")
    return lambda doc, details=None: True


@TOP_OPS.register("$alwaysFalse")
def filter_alwaysFalse(arg: Any, ctx: Context) -> Matcher:
    _always_argument(arg, "$alwaysFalse")
    return lambda doc, details=None: False


@TOP_OPS.register("$text")
def filter_text(arg: Any, ctx: Context) -> Matcher:
    # Manual: https://www.mongodb.com/docs/manual/reference/operator/query/text/
    # The query planner runs the text search and hands its matcher over in the context (so $text may sit
    # in an $or); anywhere else (validators, partial indexes, update filters of arrays...) mongod's
    # parseText refuses it.
    judge = ctx.text
    if judge is None:
        raise bad_value("$text is not allowed in this context")
    return lambda doc, details=None: judge(doc)
