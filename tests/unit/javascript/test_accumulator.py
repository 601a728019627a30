"""$accumulator: custom accumulators in JavaScript, in $group, $bucket and $bucketAuto.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/accumulator/
Expected values are worked out by hand from the manual's documents.
"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo.errors import OperationFailure

ACCUMULATOR = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/accumulator/"

BOOKS = [
    {"_id": 8751, "title": "The Banquet", "author": "Dante", "copies": 2},
    {"_id": 8752, "title": "Divine Comedy", "author": "Dante", "copies": 1},
    {"_id": 8645, "title": "Eclogues", "author": "Dante", "copies": 2},
    {"_id": 7000, "title": "The Odyssey", "author": "Homer", "copies": 10},
    {"_id": 7020, "title": "Iliad", "author": "Homer", "copies": 10},
]
AVERAGE = {
    "$accumulator": {
        "init": "function() { return { count: 0, sum: 0 } }",
        "accumulate": "function(state, numCopies) { return { count: state.count + 1, sum: state.sum + numCopies } }",
        "accumulateArgs": ["$copies"],
        "merge": "function(state1, state2) { return { count: state1.count + state2.count, sum: state1.sum + state2.sum } }",
        "finalize": "function(state) { return (state.sum / state.count) }",
        "lang": "js",
    }
}


def test_use_accumulator_to_implement_the_avg_operator(db: Any) -> None:
    # ACCUMULATOR, "Use $accumulator to Implement the $avg Operator": Dante (2+1+2)/3, Homer (10+10)/2.
    db.books.insert_many(BOOKS)
    out = list(db.books.aggregate([{"$group": {"_id": "$author", "avgCopies": AVERAGE}}, {"$sort": {"_id": 1}}]))
    assert out == [{"_id": "Dante", "avgCopies": 5 / 3}, {"_id": "Homer", "avgCopies": 10.0}]


def test_use_init_args_to_vary_the_initial_state_by_group(db: Any) -> None:
    # ACCUMULATOR, "Use initArgs to Vary the Initial State by Group": the user's city (Bettles) gets
    # three restaurants, other cities one; initArgs reads the group key ({city: ...}).
    names = [("Food Fury", "Bettles"), ("Meal Macro", "Bettles"), ("Big Crisp", "Bettles"), ("The Wrap", "Onida"),
             ("Spice Attack", "Onida"), ("Soup City", "Onida"), ("Crave", "Pyote"), ("The Gala", "Pyote")]  # fmt: skip
    db.restaurants.insert_many([{"_id": i + 1, "name": n, "city": c} for i, (n, c) in enumerate(names)])
    spec = {
        "$accumulator": {
            "init": "function(city, userProfileCity) { return { max: city === userProfileCity ? 3 : 1, restaurants: [] } }",
            "initArgs": ["$city", "Bettles"],
            "accumulate": "function(state, restaurantName) { if (state.restaurants.length < state.max) "
            "{ state.restaurants.push(restaurantName); } return state; }",
            "accumulateArgs": ["$name"],
            "merge": "function(state1, state2) { return { max: state1.max, "
            "restaurants: state1.restaurants.concat(state2.restaurants).slice(0, state1.max) } }",
            "finalize": "function(state) { return state.restaurants }",
            "lang": "js",
        }
    }
    out = list(
        db.restaurants.aggregate(
            [{"$group": {"_id": {"city": "$city"}, "restaurants": spec}}, {"$sort": {"_id.city": 1}}]
        )
    )
    assert out == [
        {"_id": {"city": "Bettles"}, "restaurants": ["Food Fury", "Meal Macro", "Big Crisp"]},
        {"_id": {"city": "Onida"}, "restaurants": ["The Wrap"]},
        {"_id": {"city": "Pyote"}, "restaurants": ["Crave"]},
    ]


def test_many_documents_cross_in_batches_and_agree_with_sum(db: Any) -> None:
    # 1000 documents per group: several batches of accumulate calls; sum of 0..999 = 499500.
    db.c.insert_many([{"g": g, "v": v} for g in ("a", "b") for v in range(1000)])
    total = {
        "$accumulator": {
            "init": "function() { return 0 }",
            "accumulate": "function(s, v) { return s + v }",
            "accumulateArgs": ["$v"],
            "merge": "function(a, b) { return a + b }",
            "lang": "js",
        }
    }
    out = list(db.c.aggregate([{"$group": {"_id": "$g", "t": total}}, {"$sort": {"_id": 1}}]))
    assert out == [{"_id": "a", "t": 499500.0}, {"_id": "b", "t": 499500.0}]


def test_in_bucket_and_bucket_auto(db: Any) -> None:
    db.books.insert_many(BOOKS)
    bucket = list(
        db.books.aggregate([{"$bucket": {"groupBy": "$copies", "boundaries": [0, 5, 20], "output": {"avg": AVERAGE}}}])
    )
    assert bucket == [{"_id": 0, "avg": 5 / 3}, {"_id": 5, "avg": 10.0}]
    auto = list(db.books.aggregate([{"$bucketAuto": {"groupBy": "$copies", "buckets": 1, "output": {"avg": AVERAGE}}}]))
    assert auto == [{"_id": {"min": 1, "max": 10}, "avg": 25 / 5}]


def test_not_a_window_function(db: Any) -> None:
    # ACCUMULATOR: available in $bucket, $bucketAuto and $group only.
    db.books.insert_many(BOOKS)
    with pytest.raises(OperationFailure) as info:
        list(db.books.aggregate([{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {"a": AVERAGE}}}]))
    assert (info.value.code, info.value.details["errmsg"]) == (9, "Unrecognized window function, $accumulator")


BASE = {"init": "function() { return 0 }", "accumulate": "function(s) { return s }", "accumulateArgs": [],
        "merge": "function(a, b) { return a }", "lang": "js"}  # fmt: skip
ERRORS = [
    (1, 4544703, "$accumulator expects an object as an argument; found: int"),
    ({**BASE, "extra": 1}, 4544706, "$accumulator got an unexpected field: extra"),
    ({**BASE, "init": "$f"}, 4544701, "$accumulator 'init' must be a constant expression"),
    ({**BASE, "merge": 5}, 4544702, "$accumulator 'merge' must be a String or Code"),
    ({**BASE, "lang": 1}, 4544704, "$accumulator lang must be a string; found: int"),
    ({**BASE, "lang": "py"}, 4544705, "$accumulator only supports lang: 'js'"),
    ({k: v for k, v in BASE.items() if k != "init"}, 4544707, "$accumulator missing required argument 'init'"),
    ({k: v for k, v in BASE.items() if k != "accumulate"}, 4544708, "$accumulator missing required argument 'accumulate'"),
    ({k: v for k, v in BASE.items() if k != "merge"}, 4544709, "$accumulator missing required argument 'merge'"),
    ({k: v for k, v in BASE.items() if k != "accumulateArgs"}, 4544710, "$accumulator missing required argument 'accumulateArgs'"),
    ({**BASE, "initArgs": 5}, 4544711, "$accumulator initArgs must evaluate to an array: 5"),
    ({**BASE, "accumulateArgs": "$x"}, 4544712, "$accumulator accumulateArgs must evaluate to an array: 1"),
    ({**BASE, "accumulate": "function(s) { throw new Error('bad state') }"}, 139, "Error: bad state"),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "code", "message"), ERRORS, ids=repr)
def test_errors(db: Any, spec: Any, code: int, message: str) -> None:
    db.c.insert_one({"x": 1})
    with pytest.raises(OperationFailure) as info:
        list(db.c.aggregate([{"$group": {"_id": None, "a": {"$accumulator": spec}}}]))
    assert (info.value.code, info.value.details["errmsg"]) == (code, message)
