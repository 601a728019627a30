"""The mapReduce command, as pymongo sends it (``db.command("mapReduce", ...)``).

Manual: https://www.mongodb.com/docs/manual/reference/command/mapReduce/ and
https://www.mongodb.com/docs/manual/tutorial/map-reduce-examples/ (the orders
collection and its two examples); totals are worked out by hand.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from bson import Code
from pymongo.errors import OperationFailure

COMMAND = "https://www.mongodb.com/docs/manual/reference/command/mapReduce/"
EXAMPLES = "https://www.mongodb.com/docs/manual/tutorial/map-reduce-examples/"


def _order(_id: int, cust: str, day: int, price: int, items: list[tuple[str, int, float]]) -> dict[str, Any]:
    return {
        "_id": _id,
        "cust_id": cust,
        "ord_date": datetime.datetime(2020, 3, day),
        "price": price,
        "items": [{"sku": s, "qty": q, "price": p} for s, q, p in items],
        "status": "A",
    }


ORDERS = [
    _order(1, "Ant O. Knee", 1, 25, [("oranges", 5, 2.5), ("apples", 5, 2.5)]),
    _order(2, "Ant O. Knee", 8, 70, [("oranges", 8, 2.5), ("chocolates", 5, 10)]),
    _order(3, "Busby Bee", 8, 50, [("oranges", 10, 2.5), ("pears", 10, 2.5)]),
    _order(4, "Busby Bee", 18, 25, [("oranges", 10, 2.5)]),
    _order(5, "Busby Bee", 19, 50, [("chocolates", 5, 10)]),
    _order(6, "Cam Elot", 19, 35, [("carrots", 10, 1.0), ("apples", 10, 2.5)]),
    _order(7, "Cam Elot", 20, 25, [("oranges", 10, 2.5)]),
    _order(8, "Don Quis", 20, 75, [("chocolates", 5, 10), ("apples", 10, 2.5)]),
    _order(9, "Don Quis", 20, 55, [("carrots", 5, 1.0), ("apples", 10, 2.5), ("oranges", 10, 2.5)]),
    _order(10, "Don Quis", 23, 25, [("oranges", 10, 2.5)]),
]
MAP_1 = "function() { emit(this.cust_id, this.price); }"
REDUCE_1 = "function(keyCustId, valuesPrices) { return Array.sum(valuesPrices); }"
# By hand: 25+70, 50+25+50, 35+25, 75+55+25.
TOTALS = {"Ant O. Knee": 95, "Busby Bee": 125, "Cam Elot": 60, "Don Quis": 155}


@pytest.fixture
def orders(db: Any) -> Any:
    db.orders.insert_many(ORDERS)
    return db


def test_total_price_per_customer_equals_the_group_alternative(orders: Any) -> None:
    # EXAMPLES, "Return the Total Price Per Customer", and its aggregation alternative.
    reply = orders.command("mapReduce", "orders", map=MAP_1, reduce=REDUCE_1, out="map_reduce_example")
    assert reply == {"result": "map_reduce_example", "ok": 1.0}
    mapped = {d["_id"]: d["value"] for d in orders.map_reduce_example.find()}
    pipeline = [{"$group": {"_id": "$cust_id", "value": {"$sum": "$price"}}}, {"$out": "agg_alternative_1"}]
    list(orders.orders.aggregate(pipeline))
    grouped = {d["_id"]: d["value"] for d in orders.agg_alternative_1.find()}
    assert mapped == grouped == TOTALS
    # JavaScript numbers come back doubles (as from mongod); $sum of int32 stays int32.
    assert all(type(v) is float for v in mapped.values()) and all(type(v) is int for v in grouped.values())


MAP_2 = """function() {
    for (var idx = 0; idx < this.items.length; idx++) {
       var key = this.items[idx].sku;
       var value = { count: 1, qty: this.items[idx].qty };
       emit(key, value);
    }
}"""
REDUCE_2 = """function(keySKU, countObjVals) {
   reducedVal = { count: 0, qty: 0 };
   for (var idx = 0; idx < countObjVals.length; idx++) {
       reducedVal.count += countObjVals[idx].count;
       reducedVal.qty += countObjVals[idx].qty;
   }
   return reducedVal;
}"""
FINALIZE_2 = "function (key, reducedVal) { reducedVal.avg = reducedVal.qty/reducedVal.count; return reducedVal; }"


def test_order_and_total_quantity_with_average_per_item(orders: Any) -> None:
    # EXAMPLES, "Calculate Order and Total Quantity with Average Quantity Per Item" (merge output).
    reply = orders.command(
        "mapReduce",
        "orders",
        map=MAP_2,
        reduce=REDUCE_2,
        out={"merge": "map_reduce_example2"},
        query={"ord_date": {"$gte": datetime.datetime(2020, 3, 1)}},
        finalize=FINALIZE_2,
    )
    assert reply == {"result": "map_reduce_example2", "ok": 1.0}
    # By hand: apples 5+10+10+10 in 4 orders; carrots 10+5; chocolates 5+5+5; oranges 5+8+10+10+10+10+10; pears 10.
    assert list(orders.map_reduce_example2.find().sort("_id")) == [
        {"_id": "apples", "value": {"count": 4.0, "qty": 35.0, "avg": 8.75}},
        {"_id": "carrots", "value": {"count": 2.0, "qty": 15.0, "avg": 7.5}},
        {"_id": "chocolates", "value": {"count": 3.0, "qty": 15.0, "avg": 5.0}},
        {"_id": "oranges", "value": {"count": 7.0, "qty": 63.0, "avg": 9.0}},
        {"_id": "pears", "value": {"count": 1.0, "qty": 10.0, "avg": 10.0}},
    ]


def test_inline_with_query_sort_limit_and_verbose(orders: Any) -> None:
    # COMMAND: query, sort and limit choose the input; the first three orders by price descending
    # are 75 (Don Quis), 70 (Ant O. Knee), 55 (Don Quis).
    reply = orders.command(
        "mapReduce", "orders", map=MAP_1, reduce=REDUCE_1, out={"inline": 1},
        query={"status": "A"}, sort={"price": -1}, limit=3, verbose=True,
    )  # fmt: skip
    assert reply["results"] == [{"_id": "Ant O. Knee", "value": 70.0}, {"_id": "Don Quis", "value": 130.0}]
    assert reply["counts"] == {"input": 3, "emit": 3, "reduce": 1, "output": 2}
    assert isinstance(reply["timeMillis"], int) and reply["ok"] == 1.0


def test_scope_reduce_once_per_multi_value_key_and_code_values(orders: Any) -> None:
    # COMMAND, scope: globals of map, reduce and finalize. The manual: reduce is not called for a
    # key with a single value, so Busby Bee's single-order value keeps the map's shape.
    reply = orders.command(
        "mapReduce", "orders",
        map=Code("function() { if (this.price >= minimum) emit(this.cust_id, {n: 1}); }"),
        reduce="function(k, vs) { return {n: vs.length, reduced: true}; }",
        finalize="function(k, v) { v.tag = label; return v; }",
        out={"inline": 1}, scope={"minimum": 50, "label": "big"},
    )  # fmt: skip
    # Orders of 50 or more: Ant 70; Busby 50, 50; Don 75, 55.
    assert reply["results"] == [
        {"_id": "Ant O. Knee", "value": {"n": 1.0, "tag": "big"}},
        {"_id": "Busby Bee", "value": {"n": 2.0, "reduced": True, "tag": "big"}},
        {"_id": "Don Quis", "value": {"n": 2.0, "reduced": True, "tag": "big"}},
    ]


def test_out_replace_merge_reduce_and_another_database(orders: Any, client: Any) -> None:
    # COMMAND, "out": replace drops what was there; merge overwrites keys it has; reduce reduces
    # a key already there with the new value.
    orders.target.insert_many([{"_id": "Ant O. Knee", "value": 1.0}, {"_id": "Zed", "value": 2.0}])
    orders.command("mapReduce", "orders", map=MAP_1, reduce=REDUCE_1, out={"replace": "target"})
    assert {d["_id"]: d["value"] for d in orders.target.find()} == TOTALS
    orders.target.insert_one({"_id": "Zed", "value": 2.0})
    orders.command(
        "mapReduce", "orders", map=MAP_1, reduce=REDUCE_1, out={"merge": "target"}, query={"_id": {"$lte": 2}}
    )
    assert {d["_id"]: d["value"] for d in orders.target.find()} == {**TOTALS, "Zed": 2.0}
    orders.command(
        "mapReduce", "orders", map=MAP_1, reduce=REDUCE_1, out={"reduce": "target"}, query={"_id": {"$lte": 3}}
    )
    # Ant O. Knee: 95 + (25 + 70); Busby Bee: 125 + 50; the others unchanged.
    assert {d["_id"]: d["value"] for d in orders.target.find()} == {
        **TOTALS,
        "Ant O. Knee": 190,
        "Busby Bee": 175,
        "Zed": 2.0,
    }
    reply = orders.command(
        "mapReduce", "orders", map=MAP_1, reduce=REDUCE_1, out={"replace": "elsewhere", "db": "other"}
    )
    assert reply == {"result": {"db": "other", "collection": "elsewhere"}, "ok": 1.0}
    assert {d["_id"]: d["value"] for d in client.other.elsewhere.find()} == TOTALS


def test_a_missing_collection_maps_nothing(db: Any) -> None:
    assert db.command("mapReduce", "absent", map=MAP_1, reduce=REDUCE_1, out={"inline": 1})["results"] == []


ERRORS = [
    ({"reduce": REDUCE_1, "out": {"inline": 1}}, 9, "BSON field 'mapReduce.map' is missing but a required field"),
    ({"map": MAP_1, "out": {"inline": 1}}, 9, "BSON field 'mapReduce.reduce' is missing but a required field"),
    ({"map": MAP_1, "reduce": REDUCE_1}, 9, "BSON field 'mapReduce.out' is missing but a required field"),
    ({"map": 5, "reduce": REDUCE_1, "out": {"inline": 1}}, 14,
     "BSON field 'mapReduce.map' is the wrong type 'int', expected types '[string, javascript]'"),
    ({"map": MAP_1, "reduce": REDUCE_1, "out": 5}, 2, "'out' has to be a string or an object"),
    ({"map": MAP_1, "reduce": REDUCE_1, "out": {"into": "x"}}, 2,
     "'out' mode must be one of [replace|merge|reduce|inline], found into"),
    ({"map": MAP_1, "reduce": REDUCE_1, "out": {"inline": 1}, "query": 5}, 14,
     "BSON field 'mapReduce.query' is the wrong type 'int', expected type 'object'"),
    ({"map": MAP_1, "reduce": REDUCE_1, "out": "system.x"}, 73, "Invalid collection name: system.x"),
    ({"map": MAP_1, "reduce": REDUCE_1, "out": {"merge": "a$b"}}, 73, "Invalid collection name: a$b"),
    ({"map": MAP_1, "reduce": REDUCE_1, "out": {"inline": 1}, "bogus": 1}, 40415, "BSON field 'mapReduce.bogus' is an unknown field."),
    ({"map": "function() { emit(this.x.y, 1) }", "reduce": REDUCE_1, "out": {"inline": 1}}, 139,
     "TypeError: cannot read property 'y' of undefined"),
]  # fmt: skip


@pytest.mark.parametrize(("fields", "code", "message"), ERRORS, ids=repr)
def test_errors(orders: Any, fields: dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(OperationFailure) as info:
        orders.command("mapReduce", "orders", **fields)
    assert (info.value.code, info.value.details["errmsg"]) == (code, message)


def test_a_view_is_refused(orders: Any) -> None:
    orders.create_collection("v", viewOn="orders", pipeline=[])
    with pytest.raises(OperationFailure) as info:
        orders.command("mapReduce", "v", map=MAP_1, reduce=REDUCE_1, out={"inline": 1})
    assert info.value.code == 166
