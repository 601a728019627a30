"""Stages that read or write other collections, end to end through
``foliodb.MongoClient``: $lookup $graphLookup $unionWith $out $merge
$collStats $indexStats.

Expected results follow the manual examples cited (data and answers worked
out by hand).
"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo.errors import DuplicateKeyError, OperationFailure

AGG = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/"
LOOKUP = AGG + "lookup/"
GRAPH = AGG + "graphLookup/"
UNION = AGG + "unionWith/"
OUT = AGG + "out/"
MERGE = AGG + "merge/"
COLLSTATS = AGG + "collStats/"
INDEXSTATS = AGG + "indexStats/"


def failure(db: Any, coll: str, pipeline: list[Any]) -> OperationFailure:
    with pytest.raises(OperationFailure) as info:
        list(db[coll].aggregate(pipeline))
    return info.value


@pytest.fixture
def shop(db: Any) -> Any:
    """LOOKUP (#perform-a-single-equality-join-with-lookup)."""
    db.orders.insert_many(
        [
            {"_id": 1, "item": "almonds", "price": 12, "quantity": 2},
            {"_id": 2, "item": "pecans", "price": 20, "quantity": 1},
            {"_id": 3},
        ]
    )
    db.inventory.insert_many(
        [
            {"_id": 1, "sku": "almonds", "description": "product 1", "instock": 120},
            {"_id": 2, "sku": "bread", "description": "product 2", "instock": 80},
            {"_id": 3, "sku": "cashews", "description": "product 3", "instock": 60},
            {"_id": 4, "sku": "pecans", "description": "product 4", "instock": 70},
            {"_id": 5, "sku": None, "description": "Incomplete"},
            {"_id": 6},
        ]
    )
    return db


def joined_ids(out: list[dict[str, Any]], field: str) -> dict[Any, list[Any]]:
    return {d["_id"]: sorted(x["_id"] for x in d[field]) for d in out}


def test_lookup_equality(shop: Any) -> None:
    """LOOKUP: a missing localField matches foreign null and missing."""
    out = list(
        shop.orders.aggregate(
            [{"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku", "as": "inventory_docs"}}]
        )
    )
    assert joined_ids(out, "inventory_docs") == {1: [1], 2: [4], 3: [5, 6]}


def test_lookup_uses_an_index_and_gives_the_same_answer(shop: Any) -> None:
    shop.inventory.create_index("sku")
    out = list(
        shop.orders.aggregate(
            [{"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku", "as": "inv"}}]
        )
    )
    assert joined_ids(out, "inv") == {1: [1], 2: [4], 3: [5, 6]}


def test_lookup_array_local_field(db: Any) -> None:
    """LOOKUP (#use-lookup-with-an-array): each element of the array joins."""
    db.classes.insert_many(
        [
            {"_id": 1, "title": "Reading is ...", "enrollmentlist": ["giraffe2", "pandabear", "artie"]},
            {"_id": 2, "title": "But Writing ...", "enrollmentlist": ["giraffe1", "artie"]},
        ]
    )
    db.members.insert_many(
        [
            {"_id": 1, "name": "artie"},
            {"_id": 2, "name": "giraffe"},
            {"_id": 3, "name": "giraffe1"},
            {"_id": 4, "name": "pandabear"},
            {"_id": 5, "name": "giraffe2"},
        ]
    )
    out = list(
        db.classes.aggregate(
            [{"$lookup": {"from": "members", "localField": "enrollmentlist", "foreignField": "name", "as": "info"}}]
        )
    )
    assert joined_ids(out, "info") == {1: [1, 4, 5], 2: [1, 3]}


def test_lookup_foreign_array(db: Any) -> None:
    """LOOKUP: a foreign array field matches when any element equals."""
    db.a.insert_many([{"_id": 1, "tag": "x"}, {"_id": 2, "tag": "z"}])
    db.b.insert_many([{"_id": 10, "tags": ["x", "y"]}, {"_id": 11, "tags": ["y"]}])
    out = list(db.a.aggregate([{"$lookup": {"from": "b", "localField": "tag", "foreignField": "tags", "as": "m"}}]))
    assert joined_ids(out, "m") == {1: [10], 2: []}


def test_lookup_let_and_pipeline(db: Any) -> None:
    """LOOKUP (#perform-multiple-joins-and-a-correlated-subquery-with-lookup)."""
    db.orders.insert_many(
        [
            {"_id": 1, "item": "almonds", "price": 12, "ordered": 2},
            {"_id": 2, "item": "pecans", "price": 20, "ordered": 1},
            {"_id": 3, "item": "cookies", "price": 10, "ordered": 60},
        ]
    )
    db.warehouses.insert_many(
        [
            {"_id": 1, "stock_item": "almonds", "warehouse": "A", "instock": 120},
            {"_id": 2, "stock_item": "pecans", "warehouse": "A", "instock": 80},
            {"_id": 3, "stock_item": "almonds", "warehouse": "B", "instock": 60},
            {"_id": 4, "stock_item": "cookies", "warehouse": "B", "instock": 40},
            {"_id": 5, "stock_item": "cookies", "warehouse": "A", "instock": 80},
        ]
    )
    out = list(
        db.orders.aggregate(
            [
                {
                    "$lookup": {
                        "from": "warehouses",
                        "let": {"order_item": "$item", "order_qty": "$ordered"},
                        "pipeline": [
                            {
                                "$match": {
                                    "$expr": {
                                        "$and": [
                                            {"$eq": ["$stock_item", "$$order_item"]},
                                            {"$gte": ["$instock", "$$order_qty"]},
                                        ]
                                    }
                                }
                            },
                            {"$project": {"stock_item": 0, "_id": 0}},
                            {"$sort": {"warehouse": 1}},
                        ],
                        "as": "stockdata",
                    }
                },
                {"$sort": {"_id": 1}},
            ]
        )
    )
    assert [d["stockdata"] for d in out] == [
        [{"warehouse": "A", "instock": 120}, {"warehouse": "B", "instock": 60}],
        [{"warehouse": "A", "instock": 80}],
        [{"warehouse": "A", "instock": 80}],
    ]


def test_lookup_concise_correlated(shop: Any) -> None:
    """LOOKUP (#perform-a-concise-correlated-subquery-with-lookup): equality and pipeline combined."""
    out = list(
        shop.orders.aggregate(
            [
                {
                    "$lookup": {
                        "from": "inventory",
                        "localField": "item",
                        "foreignField": "sku",
                        "let": {"q": "$quantity"},
                        "pipeline": [{"$match": {"$expr": {"$gt": ["$instock", {"$multiply": ["$$q", 50]}]}}}],
                        "as": "enough",
                    }
                },
                {"$sort": {"_id": 1}},
            ]
        )
    )
    # almonds: 120 > 2*50; pecans: 70 > 1*50; order 3 joins the two sku-less items, which have no instock.
    assert joined_ids(out, "enough") == {1: [1], 2: [4], 3: []}


def test_lookup_uncorrelated_and_collectionless(db: Any) -> None:
    db.a.insert_many([{"_id": 1}, {"_id": 2}])
    db.b.insert_many([{"_id": 10, "k": 1}, {"_id": 11, "k": 2}])
    out = list(
        db.a.aggregate(
            [
                {"$lookup": {"from": "b", "pipeline": [{"$match": {"k": 2}}], "as": "x.y"}},
                {"$lookup": {"pipeline": [{"$documents": [{"d": 1}]}], "as": "docs"}},
                {"$sort": {"_id": 1}},
            ]
        )
    )
    assert out == [
        {"_id": 1, "x": {"y": [{"_id": 11, "k": 2}]}, "docs": [{"d": 1}]},
        {"_id": 2, "x": {"y": [{"_id": 11, "k": 2}]}, "docs": [{"d": 1}]},
    ]


# (stage, code, manual page)
LOOKUP_ERRORS = [
    ({"$lookup": {"from": "b", "localField": "a", "foreignField": "b"}}, 9, LOOKUP),
    ({"$lookup": {"from": "b", "localField": "a", "as": "x"}}, 9, LOOKUP),
    ({"$lookup": {"from": "b", "localField": "a", "foreignField": "b", "as": "x", "let": {"v": 1}}}, 9, LOOKUP),
    ({"$lookup": {"from": "b", "as": "x", "pipeline": [], "localField": "a"}}, 9, LOOKUP),
    ({"$lookup": {"from": "b", "as": "x", "nope": "y"}}, 9, LOOKUP),
    ({"$lookup": {"from": "b", "as": 1, "pipeline": []}}, 9, LOOKUP),
    ({"$lookup": {"as": "x", "pipeline": [{"$match": {}}]}}, 9, LOOKUP),
    ({"$lookup": {"from": "b", "as": "x", "pipeline": {}}}, 9, LOOKUP),
    ({"$lookup": {"from": "b", "as": "x", "pipeline": [{"$out": "c"}]}}, 51047, LOOKUP),
    ({"$lookup": {"from": "b", "as": "x", "pipeline": [{"$nope": 1}]}}, 40324, LOOKUP),
    ({"$lookup": {"from": "b", "as": "x", "let": {"Bad": 1}, "pipeline": []}}, 16867, LOOKUP),
    ({"$lookup": {"from": "b", "as": "x", "pipeline": [{"$match": {"$expr": "$$undefinedVar"}}]}}, 17276, LOOKUP),
]


@pytest.mark.parametrize(("stage", "code", "page"), LOOKUP_ERRORS)
def test_lookup_errors(db: Any, stage: dict[str, Any], code: int, page: str) -> None:
    assert failure(db, "a", [stage]).code == code


@pytest.fixture
def employees(db: Any) -> Any:
    """GRAPH (#within-a-single-collection)."""
    db.employees.insert_many(
        [
            {"_id": 1, "name": "Dev"},
            {"_id": 2, "name": "Eliot", "reportsTo": "Dev"},
            {"_id": 3, "name": "Ron", "reportsTo": "Eliot"},
            {"_id": 4, "name": "Andrew", "reportsTo": "Eliot"},
            {"_id": 5, "name": "Asya", "reportsTo": "Ron"},
            {"_id": 6, "name": "Dan", "reportsTo": "Andrew"},
        ]
    )
    return db


def hierarchy(db: Any, **options: Any) -> dict[str, list[Any]]:
    spec = {
        "from": "employees",
        "startWith": "$reportsTo",
        "connectFromField": "reportsTo",
        "connectToField": "name",
        "as": "h",
        **options,
    }
    out = db.employees.aggregate([{"$graphLookup": spec}])
    key = options.get("depthField")
    return {d["name"]: sorted((x["name"], x[key]) if key else x["name"] for x in d["h"]) for d in out}


def test_graph_lookup(employees: Any) -> None:
    assert hierarchy(employees) == {
        "Dev": [],
        "Eliot": ["Dev"],
        "Ron": ["Dev", "Eliot"],
        "Andrew": ["Dev", "Eliot"],
        "Asya": ["Dev", "Eliot", "Ron"],
        "Dan": ["Andrew", "Dev", "Eliot"],
    }


def test_graph_lookup_max_depth_and_depth_field(employees: Any) -> None:
    """GRAPH (#maxdepth, depthField): depth 0 is the first match."""
    assert hierarchy(employees, maxDepth=1, depthField="d")["Dan"] == [("Andrew", 0), ("Eliot", 1)]


def test_graph_lookup_restrict_search(employees: Any) -> None:
    """GRAPH (#use-a-restrictsearchwithmatch-filter)."""
    assert hierarchy(employees, restrictSearchWithMatch={"name": {"$ne": "Eliot"}})["Dan"] == ["Andrew"]


def test_graph_lookup_cycles_terminate(db: Any) -> None:
    db.g.insert_many([{"_id": "a", "next": "b"}, {"_id": "b", "next": "a"}])
    out = list(
        db.g.aggregate(
            [
                {
                    "$graphLookup": {
                        "from": "g",
                        "startWith": "$next",
                        "connectFromField": "next",
                        "connectToField": "_id",
                        "as": "path",
                    }
                }
            ]
        )
    )
    assert {d["_id"]: sorted(x["_id"] for x in d["path"]) for d in out} == {"a": ["a", "b"], "b": ["a", "b"]}


GRAPH_BASE = {"from": "e", "startWith": "$x", "connectFromField": "x", "connectToField": "y", "as": "z"}

# (stage, code, manual page)
GRAPH_ERRORS = [
    ({"$graphLookup": {k: v for k, v in GRAPH_BASE.items() if k != "as"}}, 40105, GRAPH),
    ({"$graphLookup": {**GRAPH_BASE, "nope": 1}}, 40104, GRAPH),
    ({"$graphLookup": {**GRAPH_BASE, "as": 1}}, 40103, GRAPH),
    ({"$graphLookup": {**GRAPH_BASE, "maxDepth": "1"}}, 40100, GRAPH),
    ({"$graphLookup": {**GRAPH_BASE, "maxDepth": -1}}, 40101, GRAPH),
    ({"$graphLookup": {**GRAPH_BASE, "maxDepth": 1.5}}, 40102, GRAPH),
    ({"$graphLookup": {**GRAPH_BASE, "restrictSearchWithMatch": 1}}, 40185, GRAPH),
]


@pytest.mark.parametrize(("stage", "code", "page"), GRAPH_ERRORS)
def test_graph_lookup_errors(db: Any, stage: dict[str, Any], code: int, page: str) -> None:
    assert failure(db, "a", [stage]).code == code


def test_union_with(db: Any) -> None:
    """UNION (#report-1--all-sales-by-year-and-stores-and-items)."""
    db.sales_2017.insert_many(
        [
            {"store": "General Store", "item": "Chocolates", "quantity": 150},
            {"store": "ShopMart", "item": "Cookies", "quantity": 100},
        ]
    )
    db.sales_2018.insert_many(
        [
            {"store": "General Store", "item": "Cookies", "quantity": 10},
            {"store": "UltraShop", "item": "Cookies", "quantity": 50},
        ]
    )
    out = list(
        db.sales_2017.aggregate(
            [
                {"$set": {"_id": "2017"}},
                {"$unionWith": {"coll": "sales_2018", "pipeline": [{"$set": {"_id": "2018"}}]}},
                {"$unionWith": "sales_2018"},
                {"$group": {"_id": "$item", "total": {"$sum": "$quantity"}}},
                {"$sort": {"total": -1}},
            ]
        )
    )
    assert out == [{"_id": "Cookies", "total": 220}, {"_id": "Chocolates", "total": 150}]


def test_union_with_documents(db: Any) -> None:
    db.a.insert_one({"_id": 1})
    out = list(db.a.aggregate([{"$unionWith": {"pipeline": [{"$documents": [{"_id": 2}, {"_id": 3}]}]}}]))
    assert out == [{"_id": 1}, {"_id": 2}, {"_id": 3}]


# (stage, code, manual page)
UNION_ERRORS = [
    ({"$unionWith": 1}, 9, UNION),
    ({"$unionWith": {"coll": "b", "x": 1}}, 40415, UNION),
    ({"$unionWith": {"coll": 1}}, 14, UNION),
    ({"$unionWith": {"coll": "b", "pipeline": [{"$out": "c"}]}}, 31441, UNION),
    ({"$unionWith": {"pipeline": [{"$match": {}}]}}, 9, UNION),
]


@pytest.mark.parametrize(("stage", "code", "page"), UNION_ERRORS)
def test_union_with_errors(db: Any, stage: dict[str, Any], code: int, page: str) -> None:
    assert failure(db, "a", [stage]).code == code


def test_out_replaces_the_collection(db: Any) -> None:
    """OUT: the target's documents are replaced; the stage outputs nothing."""
    db.books.insert_many(
        [
            {"_id": 8751, "title": "The Banquet", "author": "Dante", "copies": 2},
            {"_id": 8752, "title": "Divine Comedy", "author": "Dante", "copies": 1},
            {"_id": 8645, "title": "Eclogues", "author": "Dante", "copies": 2},
            {"_id": 7000, "title": "The Odyssey", "author": "Homer", "copies": 10},
        ]
    )
    db.authors.insert_one({"_id": "stale"})
    result = list(
        db.books.aggregate(
            [
                {"$group": {"_id": "$author", "books": {"$push": "$title"}}},
                {"$out": "authors"},
            ]
        )
    )
    assert result == []
    assert sorted(db.authors.find(), key=lambda d: d["_id"]) == [
        {"_id": "Dante", "books": ["The Banquet", "Divine Comedy", "Eclogues"]},
        {"_id": "Homer", "books": ["The Odyssey"]},
    ]


def test_out_adds_ids_and_other_database(client: Any) -> None:
    client.test.src.insert_many([{"a": 1}, {"a": 2}])
    client.test.src.aggregate([{"$project": {"_id": 0, "a": 1}}, {"$out": {"db": "other", "coll": "dst"}}])
    copied = list(client.other.dst.find())
    assert sorted(d["a"] for d in copied) == [1, 2]
    assert all("_id" in d for d in copied)


# (stage, code, manual page)
OUT_ERRORS = [
    ({"$out": 1}, 16990, OUT),
    ({"$out": {"coll": "x"}}, 40414, OUT),
    ({"$out": {"db": "t", "coll": "x", "y": 1}}, 40415, OUT),
    ({"$out": ""}, 73, OUT),
]


@pytest.mark.parametrize(("stage", "code", "page"), OUT_ERRORS)
def test_out_errors(db: Any, stage: dict[str, Any], code: int, page: str) -> None:
    assert failure(db, "a", [stage]).code == code


@pytest.fixture
def salaries(db: Any) -> Any:
    db.target.insert_many([{"_id": 1, "a": 1, "keep": True}, {"_id": 2, "a": 2, "keep": True}])
    db.source.insert_many([{"_id": 2, "a": 20, "b": 1}, {"_id": 3, "a": 30}])
    return db


def target(db: Any) -> list[dict[str, Any]]:
    return sorted(db.target.find(), key=lambda d: d["_id"])


# (whenMatched, whenNotMatched, target afterwards, manual page)
MERGE_MODES = [
    (
        "merge",
        "insert",
        [{"_id": 1, "a": 1, "keep": True}, {"_id": 2, "a": 20, "keep": True, "b": 1}, {"_id": 3, "a": 30}],
        MERGE + "#std-label-merge-whenMatched",
    ),
    ("replace", "insert", [{"_id": 1, "a": 1, "keep": True}, {"_id": 2, "a": 20, "b": 1}, {"_id": 3, "a": 30}], MERGE),
    (
        "keepExisting",
        "insert",
        [{"_id": 1, "a": 1, "keep": True}, {"_id": 2, "a": 2, "keep": True}, {"_id": 3, "a": 30}],
        MERGE,
    ),
    ("merge", "discard", [{"_id": 1, "a": 1, "keep": True}, {"_id": 2, "a": 20, "keep": True, "b": 1}], MERGE),
    (
        [{"$set": {"a": {"$add": ["$a", "$$new.a"]}}}],
        "insert",
        [{"_id": 1, "a": 1, "keep": True}, {"_id": 2, "a": 22, "keep": True}, {"_id": 3, "a": 30}],
        MERGE + "#use-the-pipeline-to-customize-the-merge",
    ),
]


@pytest.mark.parametrize(("matched", "not_matched", "expected", "page"), MERGE_MODES)
def test_merge_modes(salaries: Any, matched: Any, not_matched: str, expected: list[Any], page: str) -> None:
    assert (
        list(
            salaries.source.aggregate(
                [{"$merge": {"into": "target", "whenMatched": matched, "whenNotMatched": not_matched}}]
            )
        )
        == []
    )
    assert target(salaries) == expected


def test_merge_let_variables(salaries: Any) -> None:
    """MERGE (#use-variables-to-customize-the-merge)."""
    salaries.source.aggregate(
        [
            {
                "$merge": {
                    "into": "target",
                    "let": {"extra": "$b"},
                    "whenMatched": [{"$set": {"extra": "$$extra"}}],
                    "whenNotMatched": "discard",
                }
            }
        ]
    )
    assert target(salaries) == [{"_id": 1, "a": 1, "keep": True}, {"_id": 2, "a": 2, "keep": True, "extra": 1}]


def test_merge_fail_modes(salaries: Any) -> None:
    # mongod writes a batch as one unordered write: _id 2 fails, _id 3 is still inserted and stays.
    with pytest.raises(DuplicateKeyError):
        salaries.source.aggregate([{"$merge": {"into": "target", "whenMatched": "fail"}}])
    assert [d["_id"] for d in target(salaries)] == [1, 2, 3]
    salaries.source.insert_one({"_id": 4, "a": 40})
    salaries.source.update_one({"_id": 3}, {"$set": {"c": 3}})
    error = failure(salaries, "source", [{"$merge": {"into": "target", "whenNotMatched": "fail"}}])
    assert error.code == 13113
    # The batch's matched documents were merged before the error: _id 3 has c, no _id 4 was inserted.
    assert target(salaries)[2] == {"_id": 3, "a": 30, "c": 3}
    assert [d["_id"] for d in target(salaries)] == [1, 2, 3]


def test_merge_on_unique_field(db: Any) -> None:
    """MERGE (#on-field): a non-_id ``on`` needs a unique index."""
    db.target.create_index("k", unique=True)
    db.target.insert_one({"_id": 1, "k": "x", "n": 1})
    db.source.insert_many([{"_id": 9, "k": "x", "n": 2}, {"_id": 8, "k": "y", "n": 3}])
    db.source.aggregate([{"$project": {"_id": 0}}, {"$merge": {"into": "target", "on": "k"}}])
    docs = sorted(db.target.find(), key=lambda d: d["k"])
    assert [(d["k"], d["n"]) for d in docs] == [("x", 2), ("y", 3)]
    assert docs[0]["_id"] == 1
    assert failure(db, "source", [{"$merge": {"into": "target", "on": "n"}}]).code == 51183


# (stage, code, manual page)
MERGE_ERRORS = [
    ({"$merge": 1}, 51182, MERGE),
    ({"$merge": {"on": "_id"}}, 40414, MERGE),
    ({"$merge": {"into": "t", "x": 1}}, 40415, MERGE),
    ({"$merge": {"into": "t", "whenMatched": "nope"}}, 2, MERGE),
    ({"$merge": {"into": "t", "whenNotMatched": "nope"}}, 2, MERGE),
    ({"$merge": {"into": "t", "whenMatched": "fail", "whenNotMatched": "discard"}}, 51181, MERGE),
    ({"$merge": {"into": "t", "let": {"a": 1}}}, 51199, MERGE),
    ({"$merge": {"into": "t", "on": 1}}, 51186, MERGE),
    ({"$merge": {"into": "t", "whenMatched": [{"$group": {"_id": 1}}]}}, 72, MERGE),
]


@pytest.mark.parametrize(("stage", "code", "page"), MERGE_ERRORS)
def test_merge_errors(db: Any, stage: dict[str, Any], code: int, page: str) -> None:
    assert failure(db, "a", [stage]).code == code


def test_merge_on_field_must_be_present(db: Any) -> None:
    db.t.create_index("k", unique=True)
    db.s.insert_one({"_id": 1})
    assert failure(db, "s", [{"$merge": {"into": "t", "on": "k"}}]).code == 51132


def test_coll_stats_and_index_stats(db: Any) -> None:
    """COLLSTATS, INDEXSTATS: one stats document; one document per index."""
    db.c.insert_many([{"a": i} for i in range(3)])
    db.c.create_index("a")
    (stats,) = db.c.aggregate([{"$collStats": {"count": {}}}])
    assert stats["count"] == 3 and stats["ns"] == "test.c"
    names = sorted(d["name"] for d in db.c.aggregate([{"$indexStats": {}}]))
    assert names == ["_id_", "a_1"]
    assert failure(db, "c", [{"$collStats": {"nope": {}}}]).code == 40415
    assert failure(db, "c", [{"$indexStats": {"a": 1}}]).code == 28803


@pytest.mark.parametrize(
    ("key", "on"),
    [
        ([("a", 1), ("geo", "2dsphere")], ["a", "geo"]),
        ([("geo", "2d")], ["geo"]),
        ([("a", 1), ("t", "text")], ["a", "t"]),
    ],
)
def test_merge_on_fields_of_a_unique_index_with_special_keys(db: Any, key: Any, on: list[str]) -> None:
    # mongod's keyPatternNamesExactPaths (process_interface_standalone.cpp): every key of the index
    # must be numeric (ascending or descending) for it to hold each 'on' value once; else 51183.
    db.target.create_index(key, unique=True)
    db.source.insert_one({"_id": 1, "a": 1, "geo": [0, 0], "t": "x"})
    assert failure(db, "source", [{"$merge": {"into": "target", "on": on}}]).code == 51183


def test_graph_lookup_memory_is_bounded(db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # mongod 8's DocumentSourceGraphLookUp::checkMemoryUsage: the visited documents and the frontier
    # past internalDocumentSourceGraphLookupMaxMemoryBytes fail with 40099 (no spilling before 8.1).
    from foliodb.aggregation.pipeline import LIMITS

    db.local.insert_one({"_id": 0})
    db.foreign.insert_many([{"_id": i, "next": i + 1, "pad": "x" * 1000} for i in range(50)])
    graph = {
        "$graphLookup": {
            "from": "foreign",
            "startWith": 0,
            "connectFromField": "next",
            "connectToField": "_id",
            "as": "chain",
        }
    }
    assert len(next(db.local.aggregate([graph]))["chain"]) == 50
    monkeypatch.setattr(LIMITS, "graph_lookup_bytes", 20 * 1000)  # about 20 of the 1 kB documents
    assert failure(db, "local", [graph]).code == 40099
