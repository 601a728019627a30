"""Evaluation query operators: $regex (and $options), $mod, $expr, $comment, $where.

Each case is (manual page, filter, documents, the _ids that match), worked
out by hand from the page. $where's JavaScript is tested in
tests/unit/javascript; here only its parse errors.
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import Decimal128, Int64, Regex

from foliodb.errors import CommandError
from foliodb.query.context import Context
from foliodb.query.filter import compile_filter

OPS = "https://www.mongodb.com/docs/manual/reference/operator/query/"
REGEX = OPS + "regex/"
MOD = OPS + "mod/"
EXPR = OPS + "expr/"
COMMENT = OPS + "comment/"
WHERE = OPS + "where/"
IN = OPS + "in/"


def matched(spec: dict[str, Any], docs: list[dict[str, Any]], ctx: Context | None = None) -> list[Any]:
    match = compile_filter(spec, ctx)
    return [d["_id"] for d in docs if match(d)]


# The $regex page's products.
PRODUCTS = [
    {"_id": 100, "sku": "abc123", "description": "Single line description."},
    {"_id": 101, "sku": "abc789", "description": "First line\nSecond line"},
    {"_id": 102, "sku": "xyz456", "description": "Many spaces before     line"},
    {"_id": 103, "sku": "xyz789", "description": "Multiple\nline description"},
    {"_id": 104, "sku": "Abc789", "description": "SKU should be case-insensitive"},
]

# Values a regex may meet: strings, arrays of strings, a regex value, non-strings.
VALUES = [
    {"_id": 1, "v": "apple"},
    {"_id": 2, "v": ["kiwi", "Apricot"]},
    {"_id": 3, "v": Regex("^ap")},
    {"_id": 4, "v": 5},
    {"_id": 5, "v": None},
    {"_id": 6},
    {"_id": 7, "v": {"x": "apple"}},
    {"_id": 8, "v": "line one\nap two"},
]

PATTERN_X = "abc #category code\n123 #item number"

# The $mod page's inventory, with numbers of every type and non-numbers.
QTY = [
    {"_id": 1, "qty": 0},
    {"_id": 2, "qty": 5},
    {"_id": 3, "qty": 12},
    {"_id": 4, "qty": Int64(16)},
    {"_id": 5, "qty": 8.5},
    {"_id": 6, "qty": Decimal128("20.9")},
    {"_id": 7, "qty": "12"},
    {"_id": 8, "qty": float("nan")},
    {"_id": 9, "qty": float("inf")},
    {"_id": 10, "qty": [3, 4]},
    {"_id": 11},
]

NEGATIVE = [{"_id": i, "qty": q} for i, q in enumerate([-5, -4, -3, -2, -1, 0], 1)]

BUDGETS = [
    {"_id": 1, "category": "food", "budget": 400, "spent": 450},
    {"_id": 2, "category": "drinks", "budget": 100, "spent": 150},
    {"_id": 3, "category": "clothes", "budget": 100, "spent": 50},
    {"_id": 4, "category": "misc", "budget": 500, "spent": 300},
    {"_id": 5, "category": "travel", "budget": 200, "spent": 650},
]

CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[Any]]] = [
    # $regex: the page's examples.
    (REGEX, {"sku": {"$regex": Regex("789$")}}, PRODUCTS, [101, 103, 104]),
    (REGEX, {"sku": {"$regex": "789$"}}, PRODUCTS, [101, 103, 104]),
    (REGEX, {"sku": Regex("789$")}, PRODUCTS, [101, 103, 104]),
    (REGEX, {"sku": {"$regex": Regex("^ABC", "i")}}, PRODUCTS, [100, 101, 104]),
    (REGEX, {"sku": {"$regex": "^ABC", "$options": "i"}}, PRODUCTS, [100, 101, 104]),
    (REGEX, {"sku": {"$options": "i", "$regex": "^ABC"}}, PRODUCTS, [100, 101, 104]),
    (REGEX, {"sku": {"$regex": Regex("^ABC"), "$options": "i"}}, PRODUCTS, [100, 101, 104]),
    (REGEX, {"sku": Regex("^ABC", "i")}, PRODUCTS, [100, 101, 104]),
    # m: ^ and $ at each line.
    (REGEX, {"description": {"$regex": Regex("^S"), "$options": "m"}}, PRODUCTS, [100, 101, 104]),
    (REGEX, {"description": {"$regex": Regex("^S")}}, PRODUCTS, [100, 104]),
    (REGEX, {"description": {"$regex": "line$", "$options": "m"}}, PRODUCTS, [101, 102]),
    # s: . matches a newline.
    (REGEX, {"description": {"$regex": Regex("m.*line"), "$options": "si"}}, PRODUCTS, [102, 103]),
    (REGEX, {"description": {"$regex": Regex("m.*line"), "$options": "i"}}, PRODUCTS, [102]),
    (REGEX, {"description": Regex("m.*line", "is")}, PRODUCTS, [102, 103]),
    # x: white space and # comments in the pattern are ignored.
    (REGEX, {"sku": {"$regex": PATTERN_X, "$options": "x"}}, PRODUCTS, [100]),
    (REGEX, {"sku": {"$regex": PATTERN_X}}, PRODUCTS, []),
    # A regex matches strings (and array elements) and an equal regex value only.
    (REGEX, {"v": {"$regex": "^ap"}}, VALUES, [1, 3]),
    (REGEX, {"v": {"$regex": "^ap", "$options": "i"}}, VALUES, [1, 2]),
    (REGEX, {"v": {"$regex": "^ap", "$options": "m"}}, VALUES, [1, 8]),
    (REGEX, {"v": Regex("^ap")}, VALUES, [1, 3]),
    (REGEX, {"v": {"$regex": "5"}}, VALUES, []),
    (REGEX, {"v.x": {"$regex": "pp"}}, VALUES, [7]),
    (REGEX, {"v": {"$regex": ""}}, VALUES, [1, 2, 8]),
    # PCRE syntax: \z, \Z and named groups.
    (REGEX, {"v": {"$regex": "two\\z"}}, VALUES, [8]),
    (REGEX, {"v": {"$regex": "(?<first>a)p\\k<first>?p"}}, VALUES, [1]),
    (REGEX, {"v": {"$regex": "(?<=p)r"}}, VALUES, [2]),
    # In $in, regexes match (the $in page: /^be/, /^st/).
    (IN, {"v": {"$in": [Regex("^kiw"), 5]}}, VALUES, [2, 4]),
    (IN, {"v": {"$nin": [Regex("^a")]}}, VALUES, [2, 3, 4, 5, 6, 7, 8]),  # /^ap/ is not /^a/
    # $mod: [divisor, remainder], numbers only, truncated toward zero.
    (MOD, {"qty": {"$mod": [4, 0]}}, QTY, [1, 3, 4, 5, 6, 10]),
    (MOD, {"qty": {"$mod": [4.0, 0]}}, QTY, [1, 3, 4, 5, 6, 10]),
    (MOD, {"qty": {"$mod": [4.5, 0]}}, QTY, [1, 3, 4, 5, 6, 10]),
    (MOD, {"qty": {"$mod": [4.99, 0]}}, QTY, [1, 3, 4, 5, 6, 10]),
    (MOD, {"qty": {"$mod": [Int64(4), Decimal128("0.7")]}}, QTY, [1, 3, 4, 5, 6, 10]),
    (MOD, {"qty": {"$mod": [5, 0]}}, QTY, [1, 2, 6]),  # 20.9 truncates to 20
    (MOD, {"qty": {"$mod": [3, 2]}}, QTY, [2, 5, 6]),
    (MOD, {"qty": {"$mod": [-4, 1]}}, QTY, [2]),  # the remainder keeps the dividend's sign
    # A negative dividend gives a negative remainder.
    (MOD, {"qty": {"$mod": [4, -1]}}, NEGATIVE, [1, 5]),
    (MOD, {"qty": {"$mod": [4, 0]}}, NEGATIVE, [2, 6]),
    (MOD, {"qty": {"$mod": [4, 3]}}, NEGATIVE, []),
    (MOD, {"qty": {"$mod": [-4, -1]}}, NEGATIVE, [1, 5]),
    # $expr: aggregation expressions over the document.
    (EXPR, {"$expr": {"$gt": ["$spent", "$budget"]}}, BUDGETS, [1, 2, 5]),
    (EXPR, {"$expr": {"$lt": [{"$multiply": ["$budget", 2]}, "$spent"]}}, BUDGETS, [5]),
    (EXPR, {"category": {"$ne": "food"}, "$expr": {"$gt": ["$spent", "$budget"]}}, BUDGETS, [2, 5]),
    (EXPR, {"$expr": "$missing"}, BUDGETS, []),
    (EXPR, {"$expr": 1}, BUDGETS, [1, 2, 3, 4, 5]),
    (EXPR, {"$or": [{"$expr": {"$eq": ["$budget", 100]}}, {"_id": 5}]}, BUDGETS, [2, 3, 5]),
    # $comment changes nothing.
    (COMMENT, {"$comment": "over budget", "$expr": {"$gt": ["$spent", "$budget"]}}, BUDGETS, [1, 2, 5]),
    (COMMENT, {"$comment": {"any": ["value"]}}, BUDGETS, [1, 2, 3, 4, 5]),
    # $alwaysTrue / $alwaysFalse (the parser's constants, as validation errors name them).
    (OPS, {"$alwaysTrue": 1}, BUDGETS, [1, 2, 3, 4, 5]),
    (OPS, {"$alwaysFalse": 1.0}, BUDGETS, []),
    (OPS, {"$or": [{"$alwaysFalse": 1}, {"_id": 3}]}, BUDGETS, [3]),
]


@pytest.mark.parametrize(("page", "spec", "docs", "expected"), CASES, ids=[repr(c[1]) for c in CASES])
def test_evaluation(page: str, spec: dict[str, Any], docs: list[dict[str, Any]], expected: list[Any]) -> None:
    assert matched(spec, docs) == expected, page


def test_expr_sees_let_variables() -> None:
    # EXPR: "$expr can ... use variables from the let option".
    ctx = Context(variables={"limit": 200})
    assert matched({"$expr": {"$gt": ["$spent", "$$limit"]}}, BUDGETS, ctx) == [1, 4, 5], EXPR


ERRORS: list[tuple[str, dict[str, Any], int, str, str]] = [
    # (manual page, filter, code, codeName, errmsg)
    (REGEX, {"a": {"$regex": "a", "$options": "z"}}, 51108, "Location51108", "invalid flag in regex options: z"),
    (REGEX, {"a": {"$regex": "a", "$options": "ig"}}, 51108, "Location51108", "invalid flag in regex options: g"),
    (REGEX, {"a": {"$regex": Regex("a", "i"), "$options": "m"}}, 51075, "Location51075", "options set in both $regex and $options"),
    (REGEX, {"a": {"$options": "m", "$regex": Regex("a", "i")}}, 51074, "Location51074", "options set in both $regex and $options"),
    (REGEX, {"a": {"$regex": 5}}, 2, "BadValue", "$regex has to be a string"),
    (REGEX, {"a": {"$regex": "a", "$options": 1}}, 2, "BadValue", "$options has to be a string"),
    (REGEX, {"a": {"$options": "i"}}, 2, "BadValue", "$options needs a $regex"),
    (REGEX, {"a": {"$regex": "a\x00b"}}, 2, "BadValue", "Regular expression cannot contain an embedded null byte"),
    (REGEX, {"a": {"$regex": "a" * 40000}}, 2, "BadValue", "Regular expression is too long"),
    (MOD, {"a": {"$mod": 4}}, 2, "BadValue", "malformed mod, needs to be an array"),
    (MOD, {"a": {"$mod": []}}, 2, "BadValue", "malformed mod, not enough elements"),
    (MOD, {"a": {"$mod": [4]}}, 2, "BadValue", "malformed mod, not enough elements"),
    (MOD, {"a": {"$mod": [4, 1, 2]}}, 2, "BadValue", "malformed mod, too many elements"),
    (MOD, {"a": {"$mod": ["4", 1]}}, 2, "BadValue", "malformed mod, divisor not a number"),
    (MOD, {"a": {"$mod": [4, None]}}, 2, "BadValue", "malformed mod, remainder not a number"),
    (MOD, {"a": {"$mod": [0, 1]}}, 2, "BadValue", "divisor cannot be 0"),
    (MOD, {"a": {"$mod": [0.5, 1]}}, 2, "BadValue", "divisor cannot be 0"),  # truncated to 0
    (MOD, {"a": {"$mod": [float("nan"), 1]}}, 2, "BadValue", "malformed mod, divisor value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type"),
    (MOD, {"a": {"$mod": [4, float("inf")]}}, 2, "BadValue", "malformed mod, remainder value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type"),
    (MOD, {"a": {"$mod": [1e30, 1]}}, 2, "BadValue", "malformed mod, divisor value is invalid :: caused by :: Out of bounds coercing to integral value"),
    (MOD, {"a": {"$mod": [4, Decimal128("1E+20")]}}, 2, "BadValue", "malformed mod, remainder value is invalid :: caused by :: Out of bounds coercing to integral value"),
    (WHERE, {"$where": 5}, 2, "BadValue", "$where got bad type"),
    (WHERE, {"$or": [{"$where": {"a": 1}}]}, 2, "BadValue", "$where got bad type"),
    (WHERE, {"a": {"$where": "true"}}, 2, "BadValue", "$where cannot be applied to a field"),
    (EXPR, {"$expr": {"$foo": 1}}, 168, "InvalidPipelineOperator", "Unrecognized expression '$foo'"),
    (EXPR, {"a": {"$expr": {"$eq": ["$a", 1]}}}, 2, "BadValue", "unknown operator: $expr"),
    (OPS, {"$alwaysTrue": 2}, 9, "FailedToParse", "$alwaysTrue must be an integer value of 1"),
    (OPS, {"$alwaysFalse": "1"}, 9, "FailedToParse", 'Expected a number in: $alwaysFalse: "1"'),
    (OPS, {"$alwaysTrue": 1.5}, 9, "FailedToParse", "Expected an integer: $alwaysTrue: 1.5"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("page", "spec", "code", "code_name", "message"), ERRORS, ids=[repr(e[1])[:80] for e in ERRORS]
)
def test_evaluation_errors(page: str, spec: dict[str, Any], code: int, code_name: str, message: str) -> None:
    with pytest.raises(CommandError) as info:
        compile_filter(spec)
    assert (info.value.code, info.value.code_name, info.value.errmsg) == (code, code_name, message), page


def test_invalid_pattern_is_51091() -> None:
    # REGEX: the pattern is compiled once, when the filter is parsed.
    with pytest.raises(CommandError) as info:
        compile_filter({"a": {"$regex": "a("}})
    assert (info.value.code, info.value.code_name) == (51091, "Location51091")
    assert info.value.errmsg.startswith("Regular expression is invalid: "), REGEX
