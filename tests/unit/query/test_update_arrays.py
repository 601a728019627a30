"""Array update operators and the positional operators $, $[] and $[<id>].

The documents and results of the manual's examples, written out by hand.
"""

from __future__ import annotations

import bson
import pytest

from foliodb.errors import CommandError
from foliodb.query.context import Context
from foliodb.query.filter import MatchDetails, compile_filter
from foliodb.query.update import UPDATE_OPS, compile_update

M = "https://www.mongodb.com/docs/manual/reference/operator/update/"


def run(spec, doc, array_filters=None, array_index=None, inserting=False):
    update = compile_update(spec, Context(), array_filters)
    return update.apply(doc, array_index, inserting)


def matched_index(filter_spec, doc):
    details = MatchDetails()
    assert compile_filter(filter_spec)(doc, details)
    return details.array_index


QUIZZES = [{"wk": 1, "score": 10}, {"wk": 2, "score": 8}, {"wk": 3, "score": 5}, {"wk": 4, "score": 6}]
RESULTS = [
    {"item": "A", "score": 5, "answers": [{"q": 1, "a": 4}, {"q": 2, "a": 6}]},
    {"item": "B", "score": 8, "answers": [{"q": 1, "a": 8}, {"q": 2, "a": 9}]},
]

CASES = [
    # $push and its modifiers.
    (M + "push/", {"$push": {"scores": 89}}, {"scores": [44, 78, 38, 80]}, {"scores": [44, 78, 38, 80, 89]}),
    (M + "push/", {"$push": {"scores": {"$each": [90, 92, 85]}}}, {"scores": [1]}, {"scores": [1, 90, 92, 85]}),
    (
        M + "push/",
        {
            "$push": {
                "quizzes": {
                    "$each": [{"wk": 5, "score": 8}, {"wk": 6, "score": 7}, {"wk": 7, "score": 6}],
                    "$sort": {"score": -1},
                    "$slice": 3,
                }
            }
        },
        {"quizzes": QUIZZES},
        {"quizzes": [{"wk": 1, "score": 10}, {"wk": 2, "score": 8}, {"wk": 5, "score": 8}]},
    ),
    (M + "push/", {"$push": {"a": [1, 2]}}, {}, {"a": [[1, 2]]}),
    (M + "push/", {"$push": {"a": {"$slice": 1}}}, {"a": []}, {"a": [{"$slice": 1}]}),
    (
        M + "slice/",
        {"$push": {"scores": {"$each": [80, 78, 86], "$slice": -5}}},
        {"scores": [40, 50, 60]},
        {"scores": [50, 60, 80, 78, 86]},
    ),
    (
        M + "slice/",
        {"$push": {"scores": {"$each": [100, 20], "$slice": 3}}},
        {"scores": [89, 90]},
        {"scores": [89, 90, 100]},
    ),
    (
        M + "slice/",
        {"$push": {"scores": {"$each": [], "$slice": -3}}},
        {"scores": [89, 70, 100, 20]},
        {"scores": [70, 100, 20]},
    ),
    (M + "slice/", {"$push": {"scores": {"$each": [1], "$slice": 0}}}, {"scores": [2]}, {"scores": []}),
    (
        M + "sort/",
        {
            "$push": {
                "quizzes": {
                    "$each": [{"id": 3, "score": 8}, {"id": 4, "score": 7}, {"id": 5, "score": 6}],
                    "$sort": {"score": 1},
                }
            }
        },
        {"quizzes": [{"id": 1, "score": 6}, {"id": 2, "score": 9}]},
        {
            "quizzes": [
                {"id": 1, "score": 6},
                {"id": 5, "score": 6},
                {"id": 4, "score": 7},
                {"id": 3, "score": 8},
                {"id": 2, "score": 9},
            ]
        },
    ),
    (
        M + "sort/",
        {"$push": {"tests": {"$each": [40, 60], "$sort": 1}}},
        {"tests": [89, 70, 89, 50]},
        {"tests": [40, 50, 60, 70, 89, 89]},
    ),
    (M + "sort/", {"$push": {"tests": {"$each": [], "$sort": -1}}}, {"tests": [40, 50, 60]}, {"tests": [60, 50, 40]}),
    # Sorting by a field puts elements without it (and non-documents) first, as null.
    (
        M + "sort/",
        {"$push": {"a": {"$each": [{"s": 2}], "$sort": {"s": 1}}}},
        {"a": [{"s": 3}, 7, {"t": 1}]},
        {"a": [7, {"t": 1}, {"s": 2}, {"s": 3}]},
    ),
    (
        M + "sort/",
        {"$push": {"a": {"$each": [], "$sort": {"s.v": -1}}}},
        {"a": [{"s": {"v": 1}}, {"s": {"v": 2}}]},
        {"a": [{"s": {"v": 2}}, {"s": {"v": 1}}]},
    ),
    (
        M + "position/",
        {"$push": {"scores": {"$each": [50, 60, 70], "$position": 0}}},
        {"scores": [100]},
        {"scores": [50, 60, 70, 100]},
    ),
    (
        M + "position/",
        {"$push": {"scores": {"$each": [20, 30], "$position": 2}}},
        {"scores": [50, 60, 70, 100]},
        {"scores": [50, 60, 20, 30, 70, 100]},
    ),
    (
        M + "position/",
        {"$push": {"scores": {"$each": [90, 80], "$position": -2}}},
        {"scores": [50, 60, 20, 30, 70, 100]},
        {"scores": [50, 60, 20, 30, 90, 80, 70, 100]},
    ),
    (M + "position/", {"$push": {"a": {"$each": [9], "$position": -10}}}, {"a": [1, 2]}, {"a": [9, 1, 2]}),
    (M + "position/", {"$push": {"a": {"$each": [9], "$position": 10}}}, {"a": [1, 2]}, {"a": [1, 2, 9]}),
    (M + "each/", {"$push": {"a": {"$each": [3, 1], "$sort": 1, "$slice": 1}}}, {}, {"a": [1]}),
    # $addToSet
    (
        M + "addToSet/",
        {"$addToSet": {"letters": ["c", "d"]}},
        {"letters": ["a", "b"]},
        {"letters": ["a", "b", ["c", "d"]]},
    ),
    (
        M + "addToSet/",
        {"$addToSet": {"tags": {"$each": ["camera", "electronics", "accessories"]}}},
        {"tags": ["electronics", "supplies"]},
        {"tags": ["electronics", "supplies", "camera", "accessories"]},
    ),
    (M + "addToSet/", {"$addToSet": {"colors": "mauve"}}, {"colors": ["mauve"]}, {"colors": ["mauve"]}),
    (M + "addToSet/", {"$addToSet": {"a": 1.0}}, {"a": [1]}, {"a": [1]}),
    (M + "addToSet/", {"$addToSet": {"a": {"$each": [2, 2, 3]}}}, {}, {"a": [2, 3]}),
    (M + "addToSet/", {"$addToSet": {"a": {"x": 1, "$each": [2]}}}, {"a": []}, {"a": [{"x": 1, "$each": [2]}]}),
    # $pop
    (M + "pop/", {"$pop": {"scores": -1}}, {"scores": [8, 9, 10]}, {"scores": [9, 10]}),
    (M + "pop/", {"$pop": {"scores": 1}}, {"scores": [9, 10]}, {"scores": [9]}),
    (M + "pop/", {"$pop": {"scores": 1}}, {"scores": []}, {"scores": []}),
    (M + "pop/", {"$pop": {"x": 1}}, {"scores": [1]}, {"scores": [1]}),
    (M + "pop/", {"$pop": {"a.5": 1}}, {"a": [1]}, {"a": [1]}),
    # $pull: values, value conditions, document conditions.
    (
        M + "pull/",
        {"$pull": {"fruits": {"$in": ["apples", "oranges"]}, "vegetables": "carrots"}},
        {"fruits": ["apples", "pears", "oranges", "grapes", "bananas"], "vegetables": ["carrots", "celery", "squash"]},
        {"fruits": ["pears", "grapes", "bananas"], "vegetables": ["celery", "squash"]},
    ),
    (M + "pull/", {"$pull": {"votes": {"$gte": 6}}}, {"votes": [3, 5, 6, 7, 7, 8]}, {"votes": [3, 5]}),
    (
        M + "pull/",
        {"$pull": {"results": {"score": 8, "item": "B"}}},
        {"results": [{"item": "A", "score": 5}, {"item": "B", "score": 8}]},
        {"results": [{"item": "A", "score": 5}]},
    ),
    (
        M + "pull/",
        {"$pull": {"results": {"answers": {"$elemMatch": {"q": 2, "a": {"$gte": 8}}}}}},
        {"results": RESULTS},
        {"results": RESULTS[:1]},
    ),
    (M + "pull/", {"$pull": {"a": {}}}, {"a": [1, {"b": 1}, [2]]}, {"a": [1, [2]]}),
    (M + "pull/", {"$pull": {"a": {"b": 1}}}, {"a": [{"b": 1}, {"b": 2}, 1]}, {"a": [{"b": 2}, 1]}),
    (M + "pull/", {"$pull": {"a": [1, 2]}}, {"a": [[1, 2], [2, 1], 1]}, {"a": [[2, 1], 1]}),
    (M + "pull/", {"$pull": {"a": 1}}, {"a": [1.0, 2, bson.Int64(1)]}, {"a": [2]}),
    (M + "pull/", {"$pull": {"a": bson.Regex("^x")}}, {"a": ["xa", "ya"]}, {"a": ["ya"]}),
    (M + "pull/", {"$pull": {"a": {"$gt": 5}}}, {"a": [[1, 7], [1, 2]]}, {"a": [[1, 2]]}),
    (M + "pull/", {"$pull": {"a.b": 1}}, {"x": 1}, {"x": 1}),
    (M + "pullAll/", {"$pullAll": {"scores": [0, 5]}}, {"scores": [0, 2, 5, 5, 1, 0]}, {"scores": [2, 1]}),
    # $[] and $[<identifier>]
    (M + "positional-all/", {"$inc": {"grades.$[]": 10}}, {"grades": [85, 82, 80]}, {"grades": [95, 92, 90]}),
    (
        M + "positional-all/",
        {"$inc": {"grades.$[].std": -2}},
        {"grades": [{"grade": 80, "std": 8}, {"grade": 85, "std": 5}]},
        {"grades": [{"grade": 80, "std": 6}, {"grade": 85, "std": 3}]},
    ),
    (M + "positional-all/", {"$set": {"a.$[].b": 1}}, {"a": [{"c": 1}, {}]}, {"a": [{"c": 1, "b": 1}, {"b": 1}]}),
    (M + "positional-all/", {"$set": {"a.$[]": 1}}, {"a": []}, {"a": []}),
]


@pytest.mark.parametrize(("url", "spec", "doc", "want"), CASES)
def test_array_operators(url, spec, doc, want):
    got = run(spec, {"_id": 1, **doc})
    want = {"_id": 1, **want}
    assert bson.encode(got) == bson.encode(want), (got, want)


FILTERED = M + "positional-filtered/"
GRADES = [{"grade": 80, "mean": 75, "std": 6}, {"grade": 85, "mean": 90, "std": 4}, {"grade": 85, "mean": 85, "std": 6}]

FILTER_CASES = [
    (
        FILTERED,
        {"$set": {"grades.$[element]": 100}},
        [{"element": {"$gte": 100}}],
        {"grades": [95, 102, 90, 150]},
        {"grades": [95, 100, 90, 100]},
    ),
    (
        FILTERED,
        {"$set": {"grades.$[elem].mean": 100}},
        [{"elem.grade": {"$gte": 85}}],
        {"grades": GRADES},
        {"grades": [GRADES[0], {"grade": 85, "mean": 100, "std": 4}, {"grade": 85, "mean": 100, "std": 6}]},
    ),
    (
        FILTERED,
        {"$inc": {"grades.$[elem].std": -1}},
        [{"elem.grade": {"$gte": 80}, "elem.std": {"$gt": 5}}],
        {"grades": GRADES},
        {"grades": [{"grade": 80, "mean": 75, "std": 5}, GRADES[1], {"grade": 85, "mean": 85, "std": 5}]},
    ),
    (
        FILTERED,
        {"$inc": {"grades.$[].questions.$[score]": 2}},
        [{"score": {"$gte": 8}}],
        {"grades": [{"questions": [10, 8, 5]}, {"questions": [8, 9, 6]}, {"questions": [5, 4, 3]}]},
        {"grades": [{"questions": [12, 10, 5]}, {"questions": [10, 11, 6]}, {"questions": [5, 4, 3]}]},
    ),
    (FILTERED, {"$set": {"a.$[x]": 0}}, [{"$or": [{"x": 1}, {"x": 3}]}], {"a": [1, 2, 3]}, {"a": [0, 2, 0]}),
    (FILTERED, {"$set": {"a.$[x]": 0}}, [{"x": {"$gt": 5}}], {"a": [[1, 7], [1]]}, {"a": [0, [1]]}),
    # Different identifiers on different elements do not conflict.
    (FILTERED, {"$set": {"a.$[i]": "i", "a.$[j]": "j"}}, [{"i": 1}, {"j": 2}], {"a": [1, 2, 3]}, {"a": ["i", "j", 3]}),
    # The CRUD spec's updateOne-arrayFilters.json, nested identifiers.
    (
        "https://github.com/mongodb/specifications/tree/master/source/crud/tests/unified",
        {"$set": {"y.$[i].c.$[j].d": 0}},
        [{"i.b": 5}, {"j.d": 1}],
        {"y": [{"b": 5, "c": [{"d": 2}, {"d": 1}]}]},
        {"y": [{"b": 5, "c": [{"d": 2}, {"d": 0}]}]},
    ),
    (
        "https://github.com/mongodb/specifications/tree/master/source/crud/tests/unified",
        {"$set": {"y.$[i].b": 2}},
        [{"i.b": 4}],
        {"y": [{"b": 3}, {"b": 1}]},
        {"y": [{"b": 3}, {"b": 1}]},
    ),
]


@pytest.mark.parametrize(("url", "spec", "filters", "doc", "want"), FILTER_CASES)
def test_filtered_positional(url, spec, filters, doc, want):
    got = run(spec, {"_id": 1, **doc}, array_filters=filters)
    want = {"_id": 1, **want}
    assert bson.encode(got) == bson.encode(want), (got, want)


def test_positional_uses_the_matched_index():
    """https://www.mongodb.com/docs/manual/reference/operator/update/positional/"""
    doc = {"_id": 1, "grades": [85, 80, 80]}
    got = run({"$set": {"grades.$": 82}}, doc, array_index=matched_index({"grades": 80}, doc))
    assert got == {"_id": 1, "grades": [85, 82, 80]}
    doc = {
        "_id": 4,
        "grades": [
            {"grade": 80, "mean": 75, "std": 8},
            {"grade": 85, "mean": 90, "std": 5},
            {"grade": 85, "mean": 85, "std": 8},
        ],
    }
    got = run({"$set": {"grades.$.std": 6}}, doc, array_index=matched_index({"grades.grade": 85}, doc))
    assert got["grades"] == [doc["grades"][0], {"grade": 85, "mean": 90, "std": 6}, doc["grades"][2]]


def test_positional_merges_with_a_sibling_on_another_index():
    """https://www.mongodb.com/docs/manual/reference/operator/update/positional/"""
    got = run({"$set": {"a.$.x": 1, "a.1.y": 2}}, {"_id": 1, "a": [{}, {}]}, array_index=0)
    assert got == {"_id": 1, "a": [{"x": 1}, {"y": 2}]}
    got = run({"$set": {"a.$.x": 1, "a.0.y": 2}}, {"_id": 1, "a": [{}, {}]}, array_index=0)
    assert got == {"_id": 1, "a": [{"x": 1, "y": 2}, {}]}


ERRORS = [
    (
        M + "push/",
        {"$push": {"c": 1}},
        {"c": 5},
        None,
        2,
        "The field 'c' must be an array but is of type int in document {_id: 1}",
    ),
    (
        M + "push/",
        {"$push": {"c.d": 1}},
        {"c": {"d": "x"}},
        None,
        2,
        "The field 'c.d' must be an array but is of type string in document {_id: 1}",
    ),
    (
        M + "each/",
        {"$push": {"c": {"$each": 1}}},
        {},
        None,
        2,
        "The argument to $each in $push must be an array but it was of type: int",
    ),
    (M + "push/", {"$push": {"c": {"$each": [], "$foo": 1}}}, {}, None, 2, "Unrecognized clause in $push: $foo"),
    (
        M + "slice/",
        {"$push": {"c": {"$each": [], "$slice": 1.5}}},
        {},
        None,
        2,
        "The value for $slice must be an integer value but was given type: double",
    ),
    (
        M + "slice/",
        {"$push": {"c": {"$each": [], "$slice": "x"}}},
        {},
        None,
        2,
        "The value for $slice must be an integer value but was given type: string",
    ),
    (
        M + "sort/",
        {"$push": {"c": {"$each": [], "$sort": 2}}},
        {},
        None,
        2,
        "The $sort element value must be either 1 or -1",
    ),
    (
        M + "sort/",
        {"$push": {"c": {"$each": [], "$sort": "x"}}},
        {},
        None,
        2,
        "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields",
    ),
    (
        M + "sort/",
        {"$push": {"c": {"$each": [], "$sort": {}}}},
        {},
        None,
        2,
        "The sort pattern is empty when it should be a set of fields.",
    ),
    (
        M + "sort/",
        {"$push": {"c": {"$each": [], "$sort": {"a": 0}}}},
        {},
        None,
        2,
        "The sort element value must be either 1 or -1",
    ),
    (
        M + "sort/",
        {"$push": {"c": {"$each": [], "$sort": {"a..b": 1}}}},
        {},
        None,
        2,
        "The sort field is a dotted field but has an empty part: a..b",
    ),
    (
        M + "position/",
        {"$push": {"c": {"$each": [], "$position": "x"}}},
        {},
        None,
        2,
        "The value for $position must be an integer value, not of type: string",
    ),
    (
        M + "addToSet/",
        {"$addToSet": {"colors": "c"}},
        {"colors": "blue"},
        None,
        2,
        "Cannot apply $addToSet to non-array field. Field named 'colors' has non-array type string",
    ),
    (
        M + "addToSet/",
        {"$addToSet": {"a": {"$each": 1}}},
        {},
        None,
        14,
        "The argument to $each in $addToSet must be an array but it was of type int",
    ),
    (
        M + "addToSet/",
        {"$addToSet": {"a": {"$each": [1], "x": 1}}},
        {},
        None,
        2,
        "Found unexpected fields after $each in $addToSet: { $each: [ 1 ], x: 1 }",
    ),
    (M + "pop/", {"$pop": {"a": 2}}, {}, None, 9, "$pop expects 1 or -1, found: 2"),
    (M + "pop/", {"$pop": {"a": "x"}}, {}, None, 9, 'Expected a number in: a: "x"'),
    (M + "pop/", {"$pop": {"a": 1.5}}, {}, None, 9, "Expected an integer: a: 1.5"),
    (M + "pop/", {"$pop": {"a": 1}}, {"a": 5}, None, 14, "Path 'a' contains an element of non-array type 'int'"),
    (
        M + "pop/",
        {"$pop": {"a.b": 1}},
        {"a": 5},
        None,
        28,
        "Cannot use the part (b) of (a.b) to traverse the element ({a: 5})",
    ),
    (M + "pull/", {"$pull": {"a": 1}}, {"a": 1}, None, 2, "Cannot apply $pull to a non-array value"),
    (
        M + "pull/",
        {"$pull": {"a.b": 1}},
        {"a": [1]},
        None,
        28,
        "Cannot use the part (b) of (a.b) to traverse the element ({a: [ 1 ]})",
    ),
    (M + "pull/", {"$pull": {"a": {"$expr": True}}}, {"a": []}, None, 224, "$expr is not allowed in this context"),
    (M + "pullAll/", {"$pullAll": {"a": 1}}, {}, None, 2, "$pullAll requires an array argument but was given a int"),
    (M + "pullAll/", {"$pullAll": {"a": [1]}}, {"a": 1}, None, 2, "Cannot apply $pull to a non-array value"),
    # Positional operators.
    (
        M + "positional/",
        {"$set": {"a.$": 1}},
        {"a": [1]},
        None,
        2,
        "The positional operator did not find the match needed from the query.",
    ),
    (
        M + "positional/",
        {"$set": {"a.$.b.$": 1}},
        {},
        None,
        2,
        "Too many positional (i.e. '$') elements found in path 'a.$.b.$'",
    ),
    (
        M + "positional/",
        {"$set": {"$.a": 1}},
        {},
        None,
        2,
        "Cannot have positional (i.e. '$') element in the first position in path '$.a'",
    ),
    (
        M + "positional-all/",
        {"$set": {"$[].a": 1}},
        {},
        None,
        2,
        "Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '$[].a'",
    ),
    (
        M + "positional-all/",
        {"$set": {"a.$[]": 1}},
        {"b": 1},
        None,
        2,
        "The path 'a' must exist in the document in order to apply array updates.",
    ),
    (
        M + "positional-all/",
        {"$set": {"a.$[].b": 1}},
        {"a": 5},
        None,
        2,
        "Cannot apply array updates to non-array element a: 5",
    ),
    (
        M + "positional-all/",
        {"$set": {"a.$[].b": 1}},
        {"a": [1]},
        None,
        28,
        "Cannot create field 'b' in element {0: 1}",
    ),
    (
        FILTERED,
        {"$set": {"a.$[x]": 1}},
        {"a": [1]},
        None,
        2,
        "No array filter found for identifier 'x' in path 'a.$[x]'",
    ),
    (
        FILTERED,
        {"$set": {"a.$[x]": 1}},
        {"a": [1]},
        [{"x": 1}, {"y": 1}],
        9,
        "The array filter for identifier 'y' was not used in the update { $set: { a.$[x]: 1 } }",
    ),
    (
        FILTERED,
        {"$set": {"a.$[X]": 1}},
        {"a": [1]},
        [{"X": 1}],
        2,
        "Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string beginning "
        "with a lowercase letter, found 'X'",
    ),
    (
        FILTERED,
        {"$set": {"a.$[i]": 1}},
        {"a": [1]},
        [{"i": 0, "j": 0}],
        9,
        "Error parsing array filter :: caused by :: Expected a single top-level field name, found 'i' and 'j'",
    ),
    (
        FILTERED,
        {"$set": {"a.$[i]": 1}},
        {"a": [1]},
        [{"i": 0}, {"i": 1}],
        9,
        "Found multiple array filters with the same top-level field name i",
    ),
    (
        FILTERED,
        {"$set": {"a": 1}},
        {"a": [1]},
        [{}],
        9,
        "Cannot use an expression without a top-level field name in arrayFilters",
    ),
    (
        FILTERED,
        {"$set": {"a.$[i]": 1}},
        {"a": [1]},
        [{"i": {"$foo": 1}}],
        2,
        "Error parsing array filter :: caused by :: unknown operator: $foo",
    ),
    (FILTERED, {"$set": {"a.$[i]": 1}}, {"a": [1]}, ["i"], 14, "Each array filter must be an object, not string"),
    (
        FILTERED,
        {"$set": {"a.$[i]": 1}},
        {"a": [1]},
        [{"i": 1, "$expr": True}],
        224,
        "Error parsing array filter :: caused by :: $expr is not allowed in this context",
    ),
    (
        FILTERED,
        {"$set": {"a.$[i]": 2, "a.$[j]": 3}},
        {"a": [0]},
        [{"i": 0}, {"j": 0}],
        40,
        "Update created a conflict at 'a.0'",
    ),
    (
        FILTERED,
        {"$set": {"a.$[i].b": 1, "a.$[j]": 3}},
        {"a": [{"c": 0}]},
        [{"i.c": 0}, {"j.c": 0}],
        40,
        "Update created a conflict at 'a.0'",
    ),
    (
        FILTERED,
        {"$set": {"a.$[i].b.$[k].c": 1, "a.$[j].b.$[k].c": 2}},
        {"a": [{"x": 0, "b": [{"y": 0, "c": 0}]}]},
        [{"i.x": 0}, {"j.x": 0}, {"k.y": 0}],
        40,
        "Update created a conflict at 'a.0.b.$[k].c'",
    ),
    (
        FILTERED,
        {"$set": {"a.$[i]": 1, "a.$[i].b": 1}},
        {"a": [1]},
        [{"i": 1}],
        40,
        "Updating the path 'a.$[i].b' would create a conflict at 'a.$[i]'",
    ),
    (
        FILTERED,
        {"$set": {"a.$[i]": 1}, "$inc": {"a.b": 1}},
        {"a": [1]},
        [{"i": 1}],
        40,
        "Updating the path 'a.b' would create a conflict at 'a'",
    ),
]


@pytest.mark.parametrize(("url", "spec", "doc", "filters", "code", "message"), ERRORS)
def test_array_errors(url, spec, doc, filters, code, message):
    with pytest.raises(CommandError) as info:
        run(spec, {"_id": 1, **doc}, array_filters=filters)
    assert (info.value.code, info.value.errmsg) == (code, message)


def test_positional_all_in_an_upsert_needs_the_array_in_the_filter():
    """https://www.mongodb.com/docs/manual/reference/operator/update/positional-all/#upsert"""
    spec = {"$set": {"myArray.$[]": 10}}
    assert run(spec, {"myArray": [5, 8]}, inserting=True) == {"myArray": [10, 10]}
    with pytest.raises(CommandError) as info:
        run(spec, {}, inserting=True)
    assert info.value.code == 2
    assert info.value.errmsg == "The path 'myArray' must exist in the document in order to apply array updates."


def test_array_filters_are_rejected_for_pipelines():
    """https://www.mongodb.com/docs/manual/reference/method/db.collection.updateOne/ (arrayFilters)"""
    with pytest.raises(CommandError) as info:
        compile_update([{"$set": {"a": 1}}], Context(), [{"i": 1}])
    assert (info.value.code, info.value.errmsg) == (9, "arrayFilters may not be specified for pipeline-style updates")


def test_every_update_operator_is_built():
    """https://www.mongodb.com/docs/manual/reference/operator/update/ (the operator tables)"""
    assert UPDATE_OPS.names() == sorted(
        [
            "$currentDate",
            "$inc",
            "$min",
            "$max",
            "$mul",
            "$rename",
            "$set",
            "$setOnInsert",
            "$unset",
            "$addToSet",
            "$pop",
            "$pull",
            "$push",
            "$pullAll",
            "$bit",
        ]
    )
    assert not UPDATE_OPS.unbuilt
