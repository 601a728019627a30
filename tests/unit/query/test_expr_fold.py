"""Explain's constant folding (foliodb.query.expr.fold), checked against values computed here in
plain Python and against mongod's ExpressionAnd/ExpressionOr::optimize rules, found by MongoDB's
jstests/aggregation/bugs/server6192_server6193.js."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from foliodb.query.expr.core import Scope
from foliodb.query.expr.fold import folded

SCOPE = Scope()


def _truthy(value: Any) -> bool:
    # mongod's Value::coerceToBool: false, null and numeric zero are false; "" is true.
    return not (value is False or value is None or (type(value) in (int, float) and value == 0))


arithmetic: st.SearchStrategy[Any] = st.recursive(
    st.integers(-1000, 1000),
    lambda inner: st.tuples(st.sampled_from(["$add", "$multiply", "$subtract"]), inner, inner).map(
        lambda t: {t[0]: [t[1], t[2]]}
    ),
    max_leaves=8,
)


INT64 = range(-(2**63), 2**63)


def _python(spec: Any) -> int | float:
    """The value as mongod computes it: exact while integers fit in 64 bits; a result past them
    is computed in doubles, as is anything after (the manual's $add/$multiply/$subtract: a long
    overflow converts to double)."""
    if isinstance(spec, int):
        return spec
    name, (left, right) = next(iter(spec.items()))
    a, b = _python(left), _python(right)

    def apply(x: Any, y: Any) -> Any:
        return x + y if name == "$add" else x * y if name == "$multiply" else x - y

    exact = apply(a, b)
    if isinstance(exact, int) and exact not in INT64:
        return float(apply(float(a), float(b)))
    return exact


@given(arithmetic.filter(lambda spec: isinstance(spec, dict)))
@example({"$multiply": [{"$multiply": [{"$multiply": [{"$multiply": [-55, 228]}, 665]}, 572]}] * 2})  # past int64
def test_constant_arithmetic_folds_to_its_value(spec: Any) -> None:
    assert folded(spec, SCOPE) == {"$const": _python(spec)}


@given(st.lists(st.sampled_from([0, 1, "", "s", True, False, None, 2.5, "$x", "$y"]), min_size=1, max_size=5))
def test_and_or_short_circuit_as_mongod(operands: list[Any]) -> None:
    paths = [item for item in operands if isinstance(item, str) and item.startswith("$")]
    constants = [item for item in operands if not (isinstance(item, str) and item.startswith("$"))]
    for name, deciding in (("$and", False), ("$or", True)):
        got = folded({name: operands}, SCOPE)
        if not paths:
            settled = all(map(_truthy, constants)) if name == "$and" else any(map(_truthy, constants))
            assert got == {"$const": settled}
        elif not constants:
            assert got == {name: operands}
        elif any(_truthy(c) is deciding for c in constants):  # $and: a false one; $or: a true one
            assert got == {"$const": deciding}
        elif len(paths) == 1:
            assert got == {"$coerceToBool": paths}
        else:
            assert got == {name: paths}


def test_field_paths_literals_and_failures_stay_as_written() -> None:
    assert folded({"$add": ["$a", {"$multiply": [2, 3]}]}, SCOPE) == {"$add": ["$a", {"$const": 6}]}
    assert folded({"$divide": [1, 0]}, SCOPE) == {"$divide": [1, 0]}  # folding would raise: runs later
    assert folded({"$rand": {}}, SCOPE) == {"$rand": {}}
    assert folded({"$literal": "$a"}, SCOPE) == {"$literal": "$a"}
    assert folded({"x": {"$toUpper": "a"}, "y": "$b"}, SCOPE) == {"x": {"$const": "A"}, "y": "$b"}


def test_explain_shows_a_projects_folded_expressions(db: Any) -> None:
    db.c.insert_one({"x": True})
    pipeline = [{"$project": {"a": {"$and": [1, 0, "$x"]}, "b": {"$or": [0, "$x"]}, "x": 1}}]
    explained = db.command("aggregate", "c", pipeline=pipeline, explain=True)
    assert explained["stages"][1] == {"$project": {"a": {"$const": False}, "b": {"$coerceToBool": ["$x"]}, "x": 1}}
    assert [doc["a"] for doc in db.c.aggregate(pipeline)] == [False]
