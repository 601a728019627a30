"""The server answers as the embedded engine does.

For random documents, filters, sorts, projections and updates, each step runs
through the embedded client and through pymongo against ``foliodb serve``;
the documents returned, the write results, the errors' codes and the final
contents must be identical. Anything that differs is a bug in the wire layer
(framing, BSON round trip, cursor batching, error mapping).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bson
import pymongo
import pytest
from bson import Timestamp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pymongo.errors import PyMongoError

import foliodb
from foliodb.server import Server
from tests.bson_values import documents
from tests.property.test_indexed_equals_scan import PROJECTIONS, SMALL_VALUES, SORTS, _filters

pytestmark = pytest.mark.clients

UPDATES = st.one_of(
    st.builds(lambda v: {"$set": {"a": v}}, SMALL_VALUES),
    st.builds(lambda n: {"$inc": {"n": n}}, st.integers(-3, 3)),
    st.builds(lambda v: {"$push": {"list": v}}, SMALL_VALUES),
    st.sampled_from([{"$unset": {"b": ""}}, {"$rename": {"a": "z"}}, {"$set": {"a.b": 1}}, {"$pop": {"a": 1}}]),
    st.just([{"$set": {"sum": {"$add": ["$n", 1]}}}]),  # a pipeline update
)


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pymongo.MongoClient[dict[str, Any]]]:
    server = Server(str(Path(tmp_path_factory.mktemp("wire")) / "data"), "127.0.0.1", 0)
    host, port = server.start()
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(host, port, serverSelectionTimeoutMS=5000)
    yield client
    client.close()
    server.shutdown()


def outcome(call: Any) -> Any:
    """The result as BSON bytes (NaN equals itself, types stay distinct), or the error's code."""
    try:
        return ("ok", bson.encode({"result": call()}))
    except PyMongoError as exc:
        return ("error", getattr(exc, "code", type(exc).__name__))


def steps(coll: Any, filter_spec: Any, sort: Any, projection: Any, update: Any) -> list[Any]:
    def find() -> list[Any]:
        cursor = coll.find(filter_spec, projection, batch_size=3)  # several getMores over the wire
        return list(cursor.sort(sort) if sort else cursor.sort("_id", 1))

    def update_many() -> tuple[int, int]:
        result = coll.update_many(filter_spec, update)
        return result.matched_count, result.modified_count

    def aggregate() -> list[Any]:
        pipeline = [
            {"$match": filter_spec},
            {"$group": {"_id": {"$type": "$a"}, "n": {"$sum": 1}}},
            {"$sort": {"_id": 1}},
        ]
        return list(coll.aggregate(pipeline))

    return [
        outcome(find),
        outcome(lambda: coll.count_documents(filter_spec)),
        outcome(aggregate),
        outcome(update_many),
        outcome(lambda: coll.delete_many({"$and": [filter_spec, {"n": {"$gte": 0}}]}).deleted_count),
        outcome(lambda: list(coll.find({}, sort=[("_id", 1)]))),
    ]


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.lists(documents(max_leaves=6), max_size=12), _filters(), SORTS, PROJECTIONS, UPDATES)
@example(docs=[{"a": Timestamp(0, 0)}], filter_spec={}, sort=None, projection=None, update={"$inc": {"n": 1}})
def test_server_answers_as_embedded(
    wire: pymongo.MongoClient[dict[str, Any]],
    docs: list[dict[str, Any]],
    filter_spec: dict[str, Any],
    sort: Any,
    projection: Any,
    update: Any,
) -> None:
    for n, doc in enumerate(docs):
        doc["_id"] = n
        doc.setdefault("n", n % 3)
        for name, value in doc.items():
            # An empty timestamp in a top-level field becomes the server's current time at each insert
            # (https://www.mongodb.com/docs/manual/reference/bson-types/#timestamps): two inserts
            # rightly store two values, so the two targets get a timestamp that is not empty.
            if isinstance(value, Timestamp) and value == Timestamp(0, 0):
                doc[name] = Timestamp(0, 1)
    served = wire.prop.c
    served.drop()
    with foliodb.MongoClient(":memory:") as embedded:
        local = embedded.prop.c
        loaded = []
        for coll in (local, served):
            coll.create_index("a")
            if docs:
                loaded.append(
                    outcome(lambda c=coll: c.insert_many([dict(d) for d in docs], ordered=False).inserted_ids)
                )
        assert loaded[:1] == loaded[1:]
        assert steps(local, filter_spec, sort, projection, update) == steps(
            served, filter_spec, sort, projection, update
        )


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.lists(documents(max_leaves=8), min_size=1, max_size=8))
def test_find_one_by_id_answers_as_embedded(
    wire: pymongo.MongoClient[dict[str, Any]], docs: list[dict[str, Any]]
) -> None:
    """``find_one({_id})`` takes the point path, which sends the stored BSON as it is over the
    wire: the document is the embedded client's and the general path's (``limit(2)`` is no point
    read), and so is a missing one; in a transaction, the transaction's own write is read."""
    for n, doc in enumerate(docs):
        doc["_id"] = n
        for name, value in doc.items():
            if isinstance(value, Timestamp) and value == Timestamp(0, 0):  # see test_server_answers_as_embedded
                doc[name] = Timestamp(0, 1)
    served = wire.prop.point
    served.drop()
    with foliodb.MongoClient(":memory:") as embedded:
        local = embedded.prop.point
        for coll in (local, served):
            coll.insert_many([dict(d) for d in docs])
        for n in range(len(docs) + 1):  # the last: no such document
            point = outcome(lambda n=n: served.find_one({"_id": n}))
            assert point == outcome(lambda n=n: local.find_one({"_id": n}))
            assert point == outcome(lambda n=n: next(iter(served.find({"_id": n}).limit(2)), None))
    with wire.start_session() as session, session.start_transaction():
        served.update_one({"_id": 0}, {"$set": {"changed": True}}, session=session)
        mine = served.find_one({"_id": 0}, session=session)
        assert mine is not None and mine["changed"] is True
        session.abort_transaction()
