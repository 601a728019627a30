"""createIndexes and collMod's index option, as mongod checks them: the _id
index spec, obsolete and kept options, the 64-index limit, TTL conversion.

Manual: https://www.mongodb.com/docs/manual/reference/command/createIndexes/,
https://www.mongodb.com/docs/manual/reference/limits/#mongodb-limit-Number-of-Indexes-per-Collection,
https://www.mongodb.com/docs/manual/core/index-ttl/ (convert a non-TTL single-field index),
https://www.mongodb.com/docs/manual/reference/command/collMod/
Messages as mongod's index_key_validate.cpp, index_catalog_impl.cpp and coll_mod.cpp.
"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo.errors import OperationFailure

CREATE = "https://www.mongodb.com/docs/manual/reference/command/createIndexes/"
TTL = "https://www.mongodb.com/docs/manual/core/index-ttl/"


def test_id_index_again_is_a_no_op(db: Any) -> None:
    db.c.insert_one({"_id": 1})
    reply = db.command("createIndexes", "c", indexes=[{"key": {"_id": 1}, "name": "_id_1"}])
    assert (reply["numIndexesBefore"], reply["numIndexesAfter"], reply["note"]) == (1, 1, "all indexes already exist")
    assert db.c.create_index([("_id", 1)]) == "_id_1"
    assert [i["name"] for i in db.c.list_indexes()] == ["_id_"]


ID_REFUSED = [
    # (index options, code, errmsg)
    (
        {"unique": True},
        197,
        "The field 'unique' is not valid for an _id index specification. "
        'Specification: { key: { _id: 1 }, name: "_id_1", unique: true, v: 2 }',
    ),
    (
        {"expireAfterSeconds": 10},
        197,
        "The field 'expireAfterSeconds' is not valid for an _id index specification. "
        'Specification: { key: { _id: 1 }, name: "_id_1", expireAfterSeconds: 10, v: 2 }',
    ),
    (
        {"sparse": True, "name": "_id_"},
        197,
        "The field 'sparse' is not valid for an _id index specification. "
        'Specification: { key: { _id: 1 }, name: "_id_", sparse: true, v: 2 }',
    ),
]


@pytest.mark.parametrize(("options", "code", "message"), ID_REFUSED)
def test_id_index_options_refused(db: Any, options: dict[str, Any], code: int, message: str) -> None:
    # The spec in the order the message shows it (mongod renders the spec as sent, "v" appended).
    spec = {"key": {"_id": 1}, "name": options.pop("name", "_id_1"), **options}
    with pytest.raises(OperationFailure) as err:
        db.command("createIndexes", "c", indexes=[spec])
    assert (err.value.code, err.value.details["codeName"], err.value.details["errmsg"]) == (
        code,
        "InvalidIndexSpecificationOption",
        message,
    )


NAME_REFUSED = [
    ({"key": {"_id": -1}, "name": "_id_-1"}, "The field 'key' for an _id index must be {_id: 1}, but got { _id: -1 }"),
    (
        {"key": {"a": 1}, "name": "_id_"},
        "The index name '_id_' is reserved for the _id index, which must have key pattern {_id: 1}, found key: "
        "{ a: 1 }",
    ),
    ({"key": {"a": 1}, "name": "*"}, "The index name '*' is not valid."),
]


@pytest.mark.parametrize(("spec", "message"), NAME_REFUSED)
def test_id_names_and_patterns_refused(db: Any, spec: dict[str, Any], message: str) -> None:
    with pytest.raises(OperationFailure) as err:
        db.command("createIndexes", "c", indexes=[spec])
    assert (err.value.code, err.value.details["errmsg"]) == (2, message)


def test_drop_dups_ignored_background_kept(db: Any) -> None:
    db.c.create_index("a", dropDups=True)
    db.c.create_index("b", background=True)
    specs = {i["name"]: dict(i) for i in db.c.list_indexes()}
    assert specs["a_1"] == {"v": 2, "key": {"a": 1}, "name": "a_1"}
    assert specs["b_1"] == {"v": 2, "key": {"b": 1}, "name": "b_1", "background": True}
    # background does not make another index: creating it without is the same index.
    assert db.command("createIndexes", "c", indexes=[{"key": {"b": 1}, "name": "b_1"}])["numIndexesAfter"] == 3


def test_at_most_64_indexes(db: Any) -> None:
    db.c.create_indexes([_model(f"f{n}") for n in range(62)])
    assert len(list(db.c.list_indexes())) == 63
    with pytest.raises(OperationFailure) as err:
        db.c.create_indexes([_model("f62"), _model("f63")])  # the 64th fits, the 65th does not
    assert (err.value.code, err.value.details["errmsg"]) == (
        67,
        "add index fails, too many indexes for test.c key:{ f63: 1 }",
    )
    assert len(list(db.c.list_indexes())) == 63  # a refused command builds none of its indexes
    db.c.create_index("f62")
    with pytest.raises(OperationFailure) as err:
        db.c.create_index("f63")
    assert err.value.code == 67


def _model(field: str) -> Any:
    from pymongo import IndexModel

    return IndexModel([(field, 1)])


COLLMOD = [
    # (index, change, code or reply)
    ({"key": {"a": 1}, "name": "a_1"}, {"name": "a_1", "expireAfterSeconds": 5}, {"expireAfterSeconds_new": 5}),
    (
        {"key": {"a": 1}, "name": "a_1", "expireAfterSeconds": 9},
        {"keyPattern": {"a": 1}, "expireAfterSeconds": 5},
        {"expireAfterSeconds_old": 9, "expireAfterSeconds_new": 5},
    ),
    ({"key": {"a": 1, "b": 1}, "name": "ab"}, {"name": "ab", "expireAfterSeconds": 5}, 72),
    (None, {"name": "_id_", "expireAfterSeconds": 5}, 72),
    ({"key": {"a": 1}, "name": "a_1"}, {"name": "a_1", "keyPattern": {"a": 1}, "hidden": True}, 72),
    ({"key": {"a": 1}, "name": "a_1"}, {"hidden": True}, 72),
]


@pytest.mark.parametrize(("index", "change", "expected"), COLLMOD)
def test_collmod_ttl(db: Any, index: dict[str, Any] | None, change: dict[str, Any], expected: Any) -> None:
    db.c.insert_one({"a": 1})
    if index is not None:
        db.command("createIndexes", "c", indexes=[index])
    if isinstance(expected, int):
        with pytest.raises(OperationFailure) as err:
            db.command("collMod", "c", index=change)
        assert err.value.code == expected
        return
    assert db.command("collMod", "c", index=change) == {**expected, "ok": 1.0}
    spec = next(i for i in db.c.list_indexes() if i["name"] == index["name"])
    assert spec["expireAfterSeconds"] == change["expireAfterSeconds"]
