"""createSearchIndexes, updateSearchIndex, dropSearchIndex and $listSearchIndexes, embedded and
over the wire, through pymongo's helpers as applications call them.

Manual: https://www.mongodb.com/docs/manual/reference/command/createSearchIndexes/,
https://www.mongodb.com/docs/manual/reference/command/updateSearchIndex/,
https://www.mongodb.com/docs/manual/reference/command/dropSearchIndex/,
https://www.mongodb.com/docs/manual/reference/operator/aggregation/listSearchIndexes/,
https://www.mongodb.com/docs/atlas/atlas-vector-search/vector-search-type/
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import ObjectId
from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from tests.unit.search.conftest import vector_index, wait_ready

TEXT = {"mappings": {"dynamic": True}}


def test_create_list_update_drop(db: Any) -> None:
    coll = db.docs
    coll.insert_one({"v": [1.0, 2.0, 3.0]})
    names = coll.create_search_indexes(
        [
            SearchIndexModel(definition=TEXT),  # no name: "default"; no type: "search"
            SearchIndexModel(definition=vector_index(), name="vec", type="vectorSearch"),
        ]
    )
    assert names == ["default", "vec"]
    listed = {index["name"]: index for index in coll.list_search_indexes()}
    assert set(listed) == {"default", "vec"}
    assert listed["default"]["type"] == "search"
    assert listed["vec"]["type"] == "vectorSearch"
    assert listed["vec"]["latestDefinition"] == vector_index()
    assert listed["vec"]["latestDefinitionVersion"]["version"] == 0
    assert ObjectId.is_valid(listed["vec"]["id"])
    ready = wait_ready(coll, "vec")
    assert ready["queryable"] is True
    new = vector_index(similarity="cosine", filters=("tag",))
    coll.update_search_index("vec", new)
    updated = next(iter(coll.list_search_indexes("vec")))
    assert updated["latestDefinition"] == new
    assert updated["latestDefinitionVersion"]["version"] == 1
    assert updated["id"] == listed["vec"]["id"]  # the same index, a new version
    coll.drop_search_index("default")
    assert [index["name"] for index in coll.list_search_indexes()] == ["vec"]


def test_by_id(db: Any) -> None:
    coll = db.docs
    coll.insert_one({})
    reply = db.command({"createSearchIndexes": "docs", "indexes": [{"name": "a", "definition": TEXT}]})
    assert reply["ok"] == 1
    (created,) = reply["indexesCreated"]
    assert created["name"] == "a"
    found = list(coll.aggregate([{"$listSearchIndexes": {"id": created["id"]}}]))
    assert [index["name"] for index in found] == ["a"]
    assert db.command({"dropSearchIndex": "docs", "id": created["id"]})["ok"] == 1
    assert list(coll.list_search_indexes()) == []


def test_listing_a_missing_collection_is_empty(db: Any) -> None:
    assert list(db.nothing.list_search_indexes()) == []


@pytest.mark.parametrize(
    ("command", "code"),
    [
        ({"createSearchIndexes": "missing", "indexes": [{"definition": TEXT}]}, 26),
        ({"updateSearchIndex": "missing", "name": "x", "definition": TEXT}, 26),
        ({"dropSearchIndex": "missing", "name": "x"}, 26),
    ],
)
def test_missing_collection(db: Any, command: dict[str, Any], code: int) -> None:
    with pytest.raises(OperationFailure) as info:
        db.command(command)
    assert info.value.code == code
    assert "Collection" in str(info.value) and "does not exist" in str(info.value)


def test_pymongo_helpers_ignore_a_missing_collection(db: Any) -> None:
    # pymongo passes allowable_errors=["ns not found", 26] for drop and update.
    db.missing.drop_search_index("x")
    db.missing.update_search_index("x", TEXT)


def test_duplicate_name(db: Any) -> None:
    coll = db.docs
    coll.insert_one({})
    coll.create_search_index(SearchIndexModel(definition=TEXT, name="a"))
    with pytest.raises(OperationFailure) as info:
        coll.create_search_index(SearchIndexModel(definition=TEXT, name="a"))
    assert (info.value.code, info.value.details["codeName"], info.value.details["errmsg"]) == (
        68,
        "IndexAlreadyExists",
        "Duplicate Index",
    )
    with pytest.raises(OperationFailure) as twice:
        db.command({"createSearchIndexes": "docs", "indexes": [{"name": "b", "definition": TEXT}] * 2})
    assert twice.value.code == 68
    assert [index["name"] for index in coll.list_search_indexes()] == ["a"]


def test_unknown_index(db: Any) -> None:
    db.docs.insert_one({})
    for command in (
        {"dropSearchIndex": "docs", "name": "nope"},
        {"updateSearchIndex": "docs", "name": "nope", "definition": TEXT},
    ):
        with pytest.raises(OperationFailure) as info:
            db.command(command)
        assert info.value.code == 27  # IndexNotFound


def test_name_and_id(db: Any) -> None:
    db.docs.insert_one({})
    with pytest.raises(OperationFailure) as both:
        db.command({"dropSearchIndex": "docs", "name": "a", "id": "b"})
    assert (both.value.code, both.value.details["errmsg"]) == (72, "Cannot set both 'name' and 'id'.")
    with pytest.raises(OperationFailure) as neither:
        db.command({"updateSearchIndex": "docs", "definition": TEXT})
    assert (neither.value.code, neither.value.details["errmsg"]) == (72, "Must set either 'name' or 'id'.")
    with pytest.raises(OperationFailure) as listed:
        list(db.docs.aggregate([{"$listSearchIndexes": {"name": "a", "id": "b"}}]))
    assert listed.value.code == 72


def test_command_shape_errors(db: Any) -> None:
    db.docs.insert_one({})
    cases = [
        ({"createSearchIndexes": "docs"}, 40414),  # indexes missing
        ({"createSearchIndexes": "docs", "indexes": {}}, 14),
        ({"createSearchIndexes": "docs", "indexes": [{"name": "a"}]}, 40414),  # definition missing
        ({"createSearchIndexes": "docs", "indexes": [{"definition": TEXT, "bogus": 1}]}, 40415),
        ({"createSearchIndexes": "docs", "indexes": [{"definition": TEXT, "type": "lucene"}]}, 2),
        ({"createSearchIndexes": "docs", "indexes": [{"definition": TEXT, "name": 5}]}, 14),
        ({"createSearchIndexes": "docs", "indexes": [], "bogus": 1}, 40415),
    ]
    for command, code in cases:
        with pytest.raises(OperationFailure) as info:
            db.command(command)
        assert info.value.code == code, command


@pytest.mark.parametrize(
    ("definition", "place"),
    [
        ({}, "definition.fields"),
        ({"fields": []}, "definition.fields"),
        ({"fields": [{"type": "vector", "path": "v", "similarity": "cosine"}]}, "numDimensions"),
        ({"fields": [{"type": "vector", "path": "v", "numDimensions": 0, "similarity": "cosine"}]}, "numDimensions"),
        ({"fields": [{"type": "vector", "path": "v", "numDimensions": 8193, "similarity": "cosine"}]}, "numDimensions"),
        ({"fields": [{"type": "vector", "path": "v", "numDimensions": 2.5, "similarity": "cosine"}]}, "numDimensions"),
        ({"fields": [{"type": "vector", "path": "v", "numDimensions": 3}]}, "similarity"),
        ({"fields": [{"type": "vector", "path": "v", "numDimensions": 3, "similarity": "manhattan"}]}, "similarity"),
        (
            {
                "fields": [
                    {"type": "vector", "path": "v", "numDimensions": 3, "similarity": "cosine", "quantization": "pq"}
                ]
            },
            "quantization",
        ),
        ({"fields": [{"type": "vector", "numDimensions": 3, "similarity": "cosine"}]}, "path"),
        ({"fields": [{"type": "knn", "path": "v"}]}, "type"),
        ({"fields": [{"type": "filter", "path": "t"}]}, "definition.fields"),  # no vector field
        (
            {
                "fields": [
                    {"type": "vector", "path": "v", "numDimensions": 3, "similarity": "cosine"},
                    {"type": "filter", "path": "v"},
                ]
            },
            "path",
        ),
        ({"fields": [{"type": "vector", "path": "v", "numDimensions": 3, "similarity": "cosine", "x": 1}]}, "x"),
    ],
)
def test_bad_vector_definitions(db: Any, definition: dict[str, Any], place: str) -> None:
    db.docs.insert_one({})
    with pytest.raises(OperationFailure) as info:
        db.docs.create_search_index(SearchIndexModel(definition=definition, name="v", type="vectorSearch"))
    assert info.value.code == 2
    assert place in info.value.details["errmsg"]
    assert list(db.docs.list_search_indexes()) == []


@pytest.mark.parametrize(
    "definition",
    [
        {},
        {"mappings": {"dynamic": False}},  # nothing indexed
        {"mappings": {"dynamic": "yes"}},
        {"mappings": {"fields": {"title": {"type": "text"}}}},
        {"mappings": {"fields": {"title": [{"type": "string"}, {"type": "nope"}]}}},
        {"mappings": {"fields": {"title": {"type": "autocomplete", "minGrams": 5, "maxGrams": 2}}}},
        {"mappings": {"dynamic": True}, "analyzer": 3},
        {"mappings": {"dynamic": True}, "unknown": 1},
    ],
)
def test_bad_search_definitions(db: Any, definition: dict[str, Any]) -> None:
    db.docs.insert_one({})
    with pytest.raises(OperationFailure) as info:
        db.docs.create_search_index(SearchIndexModel(definition=definition, name="s"))
    assert info.value.code == 2


def test_valid_search_mappings_are_stored(db: Any) -> None:
    db.docs.insert_one({})
    definition = {
        "mappings": {
            "dynamic": False,
            "fields": {
                "title": [{"type": "string"}, {"type": "autocomplete", "tokenization": "edgeGram", "maxGrams": 7}],
                "tags": {"type": "token"},
                "author": {"type": "document", "fields": {"name": {"type": "string"}}},
            },
        },
        "analyzer": "lucene.standard",
    }
    db.docs.create_search_index(SearchIndexModel(definition=definition, name="s"))
    (listed,) = db.docs.list_search_indexes()
    assert listed["latestDefinition"] == definition
    assert listed["status"] in ("BUILDING", "READY")  # built in the background, as a vector index
    assert wait_ready(db.docs, "s")["numDocs"] == 1


def test_dropping_the_collection_drops_its_search_indexes(db: Any) -> None:
    db.docs.insert_one({"v": [1.0, 2.0, 3.0]})
    db.docs.create_search_index(SearchIndexModel(definition=vector_index(), name="vec", type="vectorSearch"))
    db.docs.drop()
    db.docs.insert_one({"v": [1.0, 2.0, 3.0]})
    assert list(db.docs.list_search_indexes()) == []


def test_definitions_persist(tmp_path: Any) -> None:
    import foliodb

    path = str(tmp_path / "data")
    with foliodb.MongoClient(path) as first:
        first.test.docs.insert_one({"v": [1.0, 2.0, 3.0]})
        first.test.docs.create_search_index(
            SearchIndexModel(definition=vector_index(), name="vec", type="vectorSearch")
        )
        before = list(first.test.docs.list_search_indexes())
    with foliodb.MongoClient(path) as second:
        after = wait_ready(second.test.docs, "vec")
        assert (after["id"], after["latestDefinition"]) == (before[0]["id"], before[0]["latestDefinition"])
        # renamed, the collection keeps its search indexes
        second.test.docs.rename("renamed")
        assert [i["name"] for i in second.test.renamed.list_search_indexes()] == ["vec"]


def test_usage_and_document_count(db: Any) -> None:
    coll = db.docs
    coll.insert_many([{"_id": i, "v": [i, 0, 0]} for i in range(4)] + [{"_id": 9, "v": "none"}])
    coll.create_search_index(SearchIndexModel(definition=vector_index(), name="vec", type="vectorSearch"))
    ready = wait_ready(coll, "vec")
    assert ready["accesses"]["ops"] == 0
    stage = {"$vectorSearch": {"index": "vec", "path": "v", "queryVector": [1, 0, 0], "exact": True, "limit": 1}}
    for _ in range(3):
        list(coll.aggregate([stage]))
    (listed,) = coll.list_search_indexes()
    assert listed["accesses"]["ops"] == 3
    assert listed["numDocs"] == 4  # the document without a vector is not indexed
