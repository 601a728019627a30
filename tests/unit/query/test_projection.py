"""Projection: find's projection and the $project stage.

Expected documents are written out by hand from the manual's rules (and, for
field order and arrays, from MongoDB's projection executor, which the manual
describes only by example).
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from foliodb.errors import CommandError
from foliodb.query.context import Context
from foliodb.query.filter import MatchDetails, compile_filter
from foliodb.query.projection import compile_projection

FIND = "https://www.mongodb.com/docs/manual/reference/method/db.collection.find/#projection"
TUTORIAL = "https://www.mongodb.com/docs/manual/tutorial/project-fields-from-query-results/"
SLICE = "https://www.mongodb.com/docs/manual/reference/operator/projection/slice/"
ELEM_MATCH = "https://www.mongodb.com/docs/manual/reference/operator/projection/elemMatch/"
POSITIONAL = "https://www.mongodb.com/docs/manual/reference/operator/projection/positional/"
META = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/meta/"
PROJECT = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/project/"

DOC: dict[str, Any] = {
    "_id": 1,
    "a": 1,
    "b": {"c": 2, "d": 3},
    "arr": [{"x": 1, "y": 2}, {"x": 3}, 5, [{"x": 9, "y": 0}]],
    "tags": ["p", "q", "r", "s"],
}

INVENTORY = {"_id": 7, "item": "socks", "qty": 100, "details": {"colors": ["blue", "red"], "sizes": ["S", "M", "L"]}}


def _without(doc: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in names}


CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    # (manual page, spec, input, expected)
    (TUTORIAL, {"a": 1}, DOC, {"_id": 1, "a": 1}),
    (TUTORIAL, {"a": True, "_id": 0}, DOC, {"a": 1}),
    (FIND, {"a": 5}, DOC, {"_id": 1, "a": 1}),  # any non-zero number includes
    (FIND, {"a": -0.5, "_id": False}, DOC, {"a": 1}),
    (TUTORIAL, {"b.c": 1}, DOC, {"_id": 1, "b": {"c": 2}}),
    (FIND, {"b": {"c": 1}}, DOC, {"_id": 1, "b": {"c": 2}}),  # nested form
    (FIND, {"b": {"c": 1}, "b.d": 1}, DOC, {"_id": 1, "b": {"c": 2, "d": 3}}),
    # Output keeps the document's field order, not the spec's.
    (FIND, {"tags": 1, "a": 1}, DOC, {"_id": 1, "a": 1, "tags": ["p", "q", "r", "s"]}),
    # Through an array: each document element keeps x; other elements drop out;
    # nested arrays are projected too.
    (TUTORIAL, {"arr.x": 1, "_id": 0}, DOC, {"arr": [{"x": 1}, {"x": 3}, [{"x": 9}]]}),
    (TUTORIAL, {"missing": 1}, DOC, {"_id": 1}),
    (TUTORIAL, {"a.z": 1}, DOC, {"_id": 1}),  # a path into a scalar reaches nothing
    (TUTORIAL, {"_id": 1}, DOC, {"_id": 1}),
    # Exclusion.
    (TUTORIAL, {"a": 0}, DOC, _without(DOC, "a")),
    (TUTORIAL, {"_id": 0}, DOC, _without(DOC, "_id")),
    (TUTORIAL, {"_id": 0, "a": False, "tags": 0}, DOC, _without(DOC, "_id", "a", "tags")),
    (TUTORIAL, {"b.c": 0}, DOC, {**DOC, "b": {"d": 3}}),
    (TUTORIAL, {"arr.x": 0}, DOC, {**DOC, "arr": [{"y": 2}, {}, 5, [{"y": 0}]]}),
    (FIND, {"_id": 1, "a": 0}, DOC, _without(DOC, "a")),  # _id: 1 is allowed in an exclusion
    # Literals and expressions (find accepts them since 4.4).
    (FIND, {"a": 1, "lit": "hello"}, DOC, {"_id": 1, "a": 1, "lit": "hello"}),
    (FIND, {"n": None}, DOC, {"_id": 1, "n": None}),
    (FIND, {"when": datetime.datetime(2020, 1, 1)}, DOC, {"_id": 1, "when": datetime.datetime(2020, 1, 1)}),
    (FIND, {"x": "$b.c", "_id": 0}, DOC, {"x": 2}),
    (FIND, {"x": [1, "$a", "$nope"], "_id": 0}, DOC, {"x": [1, 1, None]}),
    (FIND, {"x": {"$literal": 1}}, DOC, {"_id": 1, "x": 1}),
    (FIND, {"x": {"$cond": [{"$gt": ["$a", 0]}, "pos", "neg"]}, "_id": 0}, DOC, {"x": "pos"}),
    (FIND, {"x": "$nope"}, DOC, {"_id": 1}),  # a missing value leaves the field out
    (FIND, {"b.e": {"$literal": 1}}, DOC, {"_id": 1, "b": {"e": 1}}),
    (FIND, {"b": {"c": 1, "e": "$a"}}, DOC, {"_id": 1, "b": {"c": 2, "e": 1}}),
    # A computed field goes after the kept fields, or stays where the document has it.
    (FIND, {"x": 1, "c": {"$literal": 9}}, {"_id": 1, "c": 0, "x": 2}, {"_id": 1, "x": 2, "c": 9}),
    (FIND, {"x": 1, "a.b": {"$literal": 9}}, {"_id": 1, "a": 5, "x": 2}, {"_id": 1, "a": {"b": 9}, "x": 2}),
    (PROJECT, {"arr.z": {"$literal": 0}, "_id": 0}, {"arr": [{"x": 1}, 2]}, {"arr": [{"z": 0}, {"z": 0}]}),
    # $slice.
    (SLICE, {"tags": {"$slice": 2}}, DOC, {**DOC, "tags": ["p", "q"]}),
    (SLICE, {"tags": {"$slice": -2}}, DOC, {**DOC, "tags": ["r", "s"]}),
    (SLICE, {"tags": {"$slice": 10}}, DOC, DOC),
    (SLICE, {"tags": {"$slice": [1, 2]}}, DOC, {**DOC, "tags": ["q", "r"]}),
    (SLICE, {"tags": {"$slice": [-3, 2]}}, DOC, {**DOC, "tags": ["q", "r"]}),
    (SLICE, {"tags": {"$slice": [-10, 2]}}, DOC, {**DOC, "tags": ["p", "q"]}),
    (SLICE, {"tags": {"$slice": [10, 2]}}, DOC, {**DOC, "tags": []}),
    (SLICE, {"tags": {"$slice": 1.9}}, DOC, {**DOC, "tags": ["p"]}),  # truncated to an int
    (SLICE, {"a": {"$slice": 1}}, DOC, DOC),  # not an array: unchanged
    (SLICE, {"tags": {"$slice": 1}, "_id": 1}, DOC, {"_id": 1, "tags": ["p"]}),
    (SLICE, {"tags": {"$slice": 1}, "_id": 0}, DOC, {**_without(DOC, "_id"), "tags": ["p"]}),
    # The manual's inventory example: inclusion drops the nested siblings, exclusion keeps them.
    (SLICE, {"qty": 1, "details.colors": {"$slice": 1}}, INVENTORY,
     {"_id": 7, "qty": 100, "details": {"colors": ["blue"]}}),
    (SLICE, {"_id": 0, "details.colors": {"$slice": 1}}, INVENTORY,
     {"item": "socks", "qty": 100, "details": {"colors": ["blue"], "sizes": ["S", "M", "L"]}}),
    (SLICE, {"arr.v": {"$slice": 1}, "_id": 0}, {"arr": [{"v": [1, 2]}, 3, {"v": 4}]},
     {"arr": [{"v": [1]}, 3, {"v": 4}]}),
    # $elemMatch: the first matching element only, after the other fields.
    (ELEM_MATCH, {"s": {"$elemMatch": {"g": "b"}}},
     {"_id": 1, "s": [{"n": 1, "g": "a"}, {"n": 2, "g": "b"}, {"n": 3, "g": "b"}], "z": 0},
     {"_id": 1, "s": [{"n": 2, "g": "b"}]}),
    (ELEM_MATCH, {"s": {"$elemMatch": {"g": "b"}}, "z": 1},
     {"_id": 1, "s": [{"g": "b"}], "z": 0}, {"_id": 1, "z": 0, "s": [{"g": "b"}]}),
    (ELEM_MATCH, {"s": {"$elemMatch": {"g": "c"}}}, {"_id": 1, "s": [{"g": "b"}]}, {"_id": 1}),
    (ELEM_MATCH, {"s": {"$elemMatch": {"g": "c"}}}, {"_id": 1, "s": {"g": "c"}}, {"_id": 1}),
    (ELEM_MATCH, {"nums": {"$elemMatch": {"$gt": 2}}}, {"_id": 1, "nums": [1, 3, 5]}, {"_id": 1, "nums": [3]}),
    (ELEM_MATCH, {"s": {"$elemMatch": {"g": "b"}}, "z": 0},  # with an exclusion: replaced in place
     {"_id": 1, "s": [{"g": "a"}, {"g": "b"}], "z": 0, "w": 1}, {"_id": 1, "s": [{"g": "b"}], "w": 1}),
]  # fmt: skip


@pytest.mark.parametrize(("source", "spec", "doc", "expected"), CASES)
def test_find_projection(source: str, spec: dict[str, Any], doc: dict[str, Any], expected: dict[str, Any]) -> None:
    before = repr(doc)
    out = compile_projection(spec, Context(), find=True).apply(doc)
    assert out == expected
    assert list(out) == list(expected)  # field order too
    assert repr(doc) == before  # the input is not modified


def test_empty_find_projection_is_identity() -> None:
    # FIND: an empty projection returns every field.
    p = compile_projection({}, Context())
    assert p.is_identity and not p.is_exclusion
    assert p.apply(DOC) == DOC


@pytest.mark.parametrize(
    ("spec", "exclusion"),
    [
        ({"a": 1}, False),
        ({"a": 0}, True),
        ({"_id": 0}, True),
        ({"_id": 1}, False),
        ({"_id": 0, "a": 1}, False),
        ({"t": {"$slice": 1}}, True),  # SLICE: "$slice projection by itself is considered an exclusion"
        ({"t": {"$slice": 1}, "_id": 1}, False),
        ({"t": {"$elemMatch": {"a": 1}}}, False),
        ({"t": {"$elemMatch": {"a": 1}}, "b": 0}, True),
        ({"s": {"$meta": "textScore"}}, True),
        ({"s": {"$meta": "textScore"}, "_id": 1}, False),
        ({"s": {"$meta": "textScore"}, "a": 1}, False),
    ],
)
def test_projection_kind(spec: dict[str, Any], exclusion: bool) -> None:
    # FIND / SLICE / ELEM_MATCH: which specs are inclusions.
    assert compile_projection(spec, Context()).is_exclusion is exclusion


META_CASES = [
    # (spec, find, meta, expected) -- META: {$meta: "textScore"} in find and in $project
    ({"score": {"$meta": "textScore"}}, True, {"textScore": 1.5}, {**DOC, "score": 1.5}),
    ({"score": {"$meta": "textScore"}, "a": 1}, True, {"textScore": 1.5}, {"_id": 1, "a": 1, "score": 1.5}),
    ({"score": {"$meta": "textScore"}}, False, {"textScore": 1.5}, {"_id": 1, "score": 1.5}),
    ({"score": {"$meta": "textScore"}}, False, None, {"_id": 1}),
    ({"k": {"$meta": "indexKey"}, "_id": 0, "a": 1}, True, {"indexKey": {"a": 1}}, {"a": 1, "k": {"a": 1}}),
    ({"a": {"$meta": "recordId"}}, True, {"recordId": 42}, {**DOC, "a": 42}),  # replaced in place
]


@pytest.mark.parametrize(("spec", "find", "meta", "expected"), META_CASES)
def test_meta(spec: dict[str, Any], find: bool, meta: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    p = compile_projection(spec, Context(), find=find)
    out = p.apply(DOC, meta=meta)
    assert out == expected
    assert list(out) == list(expected)
    assert p.meta_fields == {next(iter(v.values())) for v in spec.values() if isinstance(v, dict)}


def test_let_variables_and_now() -> None:
    # FIND: "let" variables are visible to projection expressions.
    now = datetime.datetime(2024, 5, 1)
    p = compile_projection({"v": "$$v", "t": "$$NOW", "_id": 0}, Context(variables={"v": 7}, now=now))
    assert p.apply(DOC) == {"v": 7, "t": now}


POSITIONAL_DOC = {"_id": 1, "grades": [80, 85, 90], "x": 1}


@pytest.mark.parametrize(
    ("spec", "filter_spec", "doc", "expected"),
    [
        ({"grades.$": 1}, {"grades": {"$gte": 85}}, POSITIONAL_DOC, {"_id": 1, "grades": [85]}),
        ({"grades.$": 1, "_id": 0}, {"grades": 90}, POSITIONAL_DOC, {"grades": [90]}),
        ({"a.b.$": 1}, {"a.b": 2}, {"_id": 1, "a": {"b": [1, 2], "c": 0}}, {"_id": 1, "a": {"b": [2]}}),
        # Through an array of documents the first array takes the matching element.
        ({"a.b.$": 1}, {"a.b": 2}, {"_id": 1, "a": [{"b": 1, "c": 1}, {"b": 2, "c": 2}]}, {"_id": 1, "a": [{"b": 2}]}),
        # The query matched a non-array: the field is projected as it is.
        ({"grades.$": 1}, {"grades": 7}, {"_id": 1, "grades": 7}, {"_id": 1, "grades": 7}),
    ],
)
def test_positional(spec: dict[str, Any], filter_spec: dict[str, Any], doc: dict[str, Any], expected: Any) -> None:
    # POSITIONAL: "a.$" projects the first element the query matched.
    p = compile_projection(spec, Context())
    assert p.uses_positional
    details = MatchDetails()
    assert compile_filter(filter_spec, Context())(doc, details)
    assert p.apply(doc, details) == expected


def test_positional_runtime_errors() -> None:
    # POSITIONAL: no matched array element is an error when the path holds an array.
    p = compile_projection({"grades.$": 1}, Context())
    with pytest.raises(CommandError) as err:
        p.apply(POSITIONAL_DOC, MatchDetails())
    assert err.value.code == 51246
    assert err.value.errmsg == "positional operator '.$' couldn't find a matching element in the array"
    details = MatchDetails()
    details.array_index = 5
    with pytest.raises(CommandError) as err:
        p.apply(POSITIONAL_DOC, details)
    assert err.value.code == 51247


def test_project_stage() -> None:
    # PROJECT: inclusion, exclusion and computed fields in $project.
    p = compile_projection({"a": 1, "x": "$b.d"}, Context(), find=False)
    assert p.apply(DOC) == {"_id": 1, "a": 1, "x": 3}
    assert compile_projection({"tags": 0, "arr": 0, "b": 0}, Context(), find=False).apply(DOC) == {"_id": 1, "a": 1}


ERRORS: list[tuple[str, dict[str, Any], bool, int, str]] = [
    # (manual page, spec, find, code, errmsg)
    (TUTORIAL, {"a": 1, "b": 0}, True, 31254, "Cannot do exclusion on field b in inclusion projection"),
    (TUTORIAL, {"a": 0, "b": 1}, True, 31253, "Cannot do inclusion on field b in exclusion projection"),
    (TUTORIAL, {"a": {"b": 1, "c": 0}}, True, 31254, "Cannot do exclusion on field c in inclusion projection"),
    (TUTORIAL, {"x": "$a", "b": 0}, True, 31254, "Cannot do exclusion on field b in inclusion projection"),
    (FIND, {"a": 0, "b": "x"}, True, 31310, 'Cannot use an expression b: "x" in an exclusion projection'),
    (FIND, {"a": 0, "b": {"$literal": 1}}, True, 31252,
     "Cannot use expression other than $meta in exclusion projection"),
    (FIND, {"a": 1, "a.b": 1}, True, 31249, "Path collision at a.b remaining portion b"),
    (FIND, {"a.b": 1, "a.b.c": 1}, True, 31249, "Path collision at a.b.c remaining portion b.c"),
    (FIND, {"a.b": 1, "a": 1}, True, 31250, "Path collision at a"),
    (FIND, {"a": {"b": 1}, "a.b": 0}, True, 31250, "Path collision at a.b"),
    (FIND, {"a": {}}, True, 51270, "Invalid empty sub-projection: a"),
    (FIND, {"a": {"$foo": 1}}, True, 31325, "Unknown expression $foo"),
    (FIND, {"$a": 1}, True, 16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField."),
    (FIND, {"": 1}, True, 40352, "FieldPath cannot be constructed with empty string"),
    (FIND, {"a.": 1}, True, 40353, "FieldPath must not end with a '.'."),
    (FIND, {"a..b": 1}, True, 15998, "FieldPath field names may not be empty strings."),
    (POSITIONAL, {"a.$": 1, "b.$": 1}, True, 31276, "Cannot specify more than one positional projection per query."),
    (POSITIONAL, {"a.$": 0}, True, 31395, "positional projection cannot be used with exclusion"),
    (POSITIONAL, {"a.$": "x"}, True, 31308, "positional projection cannot be used with a literal"),
    (POSITIONAL, {"a.$": {"$slice": 1}}, True, 31271,
     "positional projection cannot be used with an expression or sub object"),
    (POSITIONAL, {".$": 1}, True, 5392900, "Projection on field .$ is invalid"),
    (POSITIONAL, {"a.$": 1, "b": {"$elemMatch": {"x": 1}}}, True, 31255,
     "Cannot specify positional operator and $elemMatch."),
    (POSITIONAL, {"b": {"$elemMatch": {"x": 1}}, "a.$": 1}, True, 31256,
     "Cannot specify positional operator and $elemMatch."),
    (POSITIONAL, {"a": 0, "b.$": 1}, True, 31253, "Cannot do inclusion on field b.$ in exclusion projection"),
    (ELEM_MATCH, {"a": {"$elemMatch": 1}}, True, 31274, "elemMatch: Invalid argument, object required, but got int"),
    (ELEM_MATCH, {"a.b": {"$elemMatch": {"x": 1}}}, True, 31275, "Cannot use $elemMatch projection on a nested field."),
    (ELEM_MATCH, {"a": {"b": {"$elemMatch": {"x": 1}}}}, True, 31275,
     "Cannot use $elemMatch projection on a nested field."),
    (META, {"s": {"$meta": 1}}, True, 17307, "$meta only supports string arguments"),
    (META, {"s": {"$meta": "bogus"}}, True, 17308, "Unsupported argument to $meta: bogus"),
    (PROJECT, {}, False, 51272, "Invalid $project :: caused by :: projection specification must have at least one field"),
    (PROJECT, {"a": 1, "b": 0}, False, 31254,
     "Invalid $project :: caused by :: Cannot do exclusion on field b in inclusion projection"),
    (PROJECT, {"a.$": 1}, False, 31324,
     "Invalid $project :: caused by :: Cannot use positional projection in aggregation projection"),
    (PROJECT, {"a": {"$elemMatch": {"x": 1}}}, False, 168,
     "Invalid $project :: caused by :: Cannot use $elemMatch in this context"),
]  # fmt: skip


@pytest.mark.parametrize(("source", "spec", "find", "code", "errmsg"), ERRORS)
def test_errors(source: str, spec: dict[str, Any], find: bool, code: int, errmsg: str) -> None:
    with pytest.raises(CommandError) as err:
        compile_projection(spec, Context(), find=find)
    assert err.value.code == code
    assert err.value.errmsg == errmsg


def test_error_code_names() -> None:
    # PROJECT: errors MongoDB reports by number only carry "Location<code>".
    with pytest.raises(CommandError) as err:
        compile_projection({"a": {"$elemMatch": {}}}, Context(), find=False)
    assert err.value.code_name == "InvalidPipelineOperator"
    with pytest.raises(CommandError) as err:
        compile_projection({"a": 1, "b": 0}, Context())
    assert err.value.code_name == "Location31254"


def test_middle_positional_is_rejected() -> None:
    # POSITIONAL: since 4.4 "$" may only end a path.
    with pytest.raises(CommandError) as err:
        compile_projection({"a.$.b": 1}, Context())
    assert err.value.code == 31394


def test_find_slice_falls_back_to_the_expression() -> None:
    # SLICE: a $slice that is not find's syntax is read as the $slice expression;
    # when that fails too, the error explains both readings.
    with pytest.raises(CommandError) as err:
        compile_projection({"tags": {"$slice": [1]}}, Context())
    assert err.value.errmsg.startswith(
        "Invalid $slice syntax. The given syntax { $slice: [ 1 ] } did not match the find() syntax because :: "
        "Location31272: $slice array argument should be of form [skip, limit] :: The given syntax did not match "
        "the expression $slice syntax. :: caused by :: "
    )


def test_non_document_spec() -> None:
    # PROJECT: "$project specification must be an object" (15969).
    with pytest.raises(CommandError) as err:
        compile_projection([("a", 1)], Context(), find=False)
    assert err.value.code == 15969
    with pytest.raises(CommandError) as err:
        compile_projection(5, Context())
    assert err.value.code == 14
