"""After random updates, every index holds exactly the entries its documents yield.

An update leaves alone the keys of an index whose fields it did not touch
(``IndexWriter.unchanged``): the updated document shares what it left alone with
the old one. Here random updates (operators, replacements and pipelines, by
``_id`` and by filter, alone and in transactions) touch some of a collection's
indexes - single field, compound on a dotted path, unique sparse, partial,
text, wildcard under a root, hashed - and then ``validate``, which derives
every document's entries from scratch, must find the indexes exact; the
single-field index must also hold one entry per distinct value of each
document (computed here in plain Python: an array's elements, ``null`` for a
missing field, ``undefined`` for an empty array:
https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/),
and a hinted equality find through it must return what a plain-Python filter
of the documents does.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.errors import OperationFailure

import foliodb

_FIELDS = ("a", "b", "d", "u", "e", "f", "t", "w", "h", "z")
_SCALARS = st.one_of(st.integers(-2, 2), st.sampled_from(["x", "y", "apple pie", "red fox"]), st.none())
_VALUES = st.one_of(_SCALARS, st.lists(st.integers(-2, 2), max_size=3), st.fixed_dictionaries({"c": _SCALARS}))
_PATHS = st.sampled_from([*_FIELDS, "b.c", "w.x", "w.y", "z.q"])

_UPDATES = st.one_of(
    st.builds(lambda path, value: {"$set": {path: value}}, _PATHS, _VALUES),
    st.builds(lambda path: {"$unset": {path: ""}}, _PATHS),
    st.builds(lambda path: {"$inc": {path: 1}}, st.sampled_from(["z", "f", "a", "u", "h"])),
    st.builds(lambda path, n: {"$push": {path: n}}, st.sampled_from(["a", "z", "w.x"]), st.integers(0, 2)),
    st.builds(lambda path: {"$rename": {path: "r"}}, st.sampled_from(["a", "z", "u", "t"])),
    st.builds(lambda z: {"$set": {"z": z}, "$currentDate": {"when": True}}, _VALUES),
    st.builds(lambda fields: dict(fields), st.dictionaries(st.sampled_from(_FIELDS), _VALUES, max_size=4)),
    st.builds(lambda value: [{"$set": {"z": value}}], _SCALARS),
)

_OPS = st.tuples(
    st.sampled_from(["one", "many", "transaction"]),
    st.integers(0, 5),  # the _id updated (by "one" and "transaction")
    st.sampled_from([{}, {"z": 1}, {"a": 1}]),  # the filter of "many"
    _UPDATES,
)

_DOCS = st.lists(st.fixed_dictionaries({}, optional={name: _VALUES for name in _FIELDS}), min_size=6, max_size=6)


def _index_values(doc: dict[str, Any], field: str) -> set[Any]:
    """The distinct key values of a top-level field (plain Python; values kept apart by type)."""
    if field not in doc:
        return {("null", None)}
    value = doc[field]
    if isinstance(value, list):
        return {_tagged(v) for v in value} if value else {("undefined", None)}
    return {_tagged(value)}


def _tagged(value: Any) -> Any:
    if value is None:
        return ("null", None)
    if isinstance(value, dict):
        return ("object", tuple(value.items()))
    return ("number" if isinstance(value, int) else "string", value)


def _matches(doc: dict[str, Any], field: str, value: Any) -> bool:
    """``{field: value}`` on a top-level field, for the scalars written here."""
    found = doc.get(field)
    if value is None:
        return found is None or (isinstance(found, list) and None in found)
    if isinstance(found, list):
        return value in found or found == value
    return found == value and type(found) is type(value)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=_DOCS, ops=st.lists(_OPS, min_size=1, max_size=12))
def test_updates_leave_every_index_exact(docs: list[dict[str, Any]], ops: list[tuple[Any, ...]]) -> None:
    with foliodb.MongoClient(":memory:", replicaset="rs0") as client:
        coll = client.test.c
        coll.create_index("a")
        coll.create_index([("b.c", 1), ("d", -1)])
        coll.create_index("u", unique=True, sparse=True)
        coll.create_index("e", partialFilterExpression={"f": {"$gt": 0}})
        coll.create_index([("t", "text")])
        coll.create_index("w.$**")
        coll.create_index([("h", "hashed")])
        for i, doc in enumerate(docs):
            with contextlib.suppress(OperationFailure):  # a duplicate "u", parallel arrays...: not inserted
                coll.insert_one({"_id": i, **doc})
        for kind, doc_id, filter_spec, spec in ops:
            try:
                if kind == "one":
                    coll.update_one({"_id": doc_id}, spec)
                elif kind == "many":
                    coll.update_many(filter_spec, spec)
                else:
                    with client.start_session() as session, session.start_transaction():
                        coll.update_one({"_id": doc_id}, spec, session=session)
            except (OperationFailure, ValueError):
                pass  # an update this document refuses (or a replacement refused for update_many)
        result = client.test.command("validate", "c", full=True)
        assert result["valid"], result["errors"]
        now = list(coll.find())
        assert result["keysPerIndex"]["a_1"] == sum(len(_index_values(doc, "a")) for doc in now)
        for value in (-2, 0, 2, "x", None):
            found = sorted(d["_id"] for d in coll.find({"a": value}).hint("a_1"))
            assert found == sorted(d["_id"] for d in now if _matches(d, "a", value)), value
