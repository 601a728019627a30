"""$listLocalSessions and $listSessions without access control (the embedded client).

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/listLocalSessions/ ("If running
without access control, returns all sessions"), .../aggregation/listSessions/; the session record's
shape and the errors follow mongod's document_source_list_local_sessions.cpp: ``uid`` is the SHA-256 of
``user@db``, of the empty string without access control.
"""

from __future__ import annotations

import datetime
import hashlib
from typing import Any

import pytest
from pymongo.errors import OperationFailure

NO_USER = hashlib.sha256(b"").digest()


def _ids(docs: list[dict[str, Any]]) -> set[bytes]:
    return {bytes(doc["_id"]["id"]) for doc in docs}


def _used(client: Any) -> Any:
    session = client.start_session()
    client.shop.c.find_one({}, session=session)  # the server learns of a session when a command carries it
    return session


def test_every_session_is_listed_as_mongods_session_records(client: Any) -> None:
    first, second = _used(client), _used(client)
    before = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(seconds=5)
    listed = list(client.admin.aggregate([{"$listLocalSessions": {}}]))
    wanted = {bytes(first.session_id["id"]), bytes(second.session_id["id"])}
    assert wanted <= _ids(listed)
    for doc in listed:
        assert set(doc) == {"_id", "lastUse"}  # no "user" without access control
        assert set(doc["_id"]) == {"id", "uid"} and bytes(doc["_id"]["uid"]) == NO_USER
        assert before <= doc["lastUse"] <= datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    assert wanted <= _ids(list(client.admin.aggregate([{"$listLocalSessions": {"allUsers": True}}])))
    assert wanted <= _ids(list(client.shop.aggregate([{"$listLocalSessions": {"users": []}}])))  # any database
    # Sessions of no user are not those of a named user.
    named = [{"$listLocalSessions": {"users": [{"user": "app", "db": "shop"}]}}]
    assert list(client.admin.aggregate(named)) == []
    first.end_session()
    second.end_session()
    # A session started by the command (not from the client's pool, which reuses ids) until it ends.
    started = client.admin.command("startSession")["id"]
    assert bytes(started["id"]) in _ids(list(client.admin.aggregate([{"$listLocalSessions": {}}])))
    client.admin.command("endSessions", [started])
    assert bytes(started["id"]) not in _ids(list(client.admin.aggregate([{"$listLocalSessions": {}}])))


def test_the_stages_after_it_shape_the_records(client: Any) -> None:
    session = _used(client)
    pipeline = [
        {"$listLocalSessions": {}},
        {"$match": {"_id.id": session.session_id["id"]}},
        {"$project": {"_id": 0, "id": "$_id.id"}},
    ]
    assert list(client.admin.aggregate(pipeline)) == [{"id": session.session_id["id"]}]
    session.end_session()


def test_list_sessions_reads_config_system_sessions(client: Any) -> None:
    session = _used(client)
    listed = list(client.config.system.sessions.aggregate([{"$listSessions": {"allUsers": True}}]))
    assert bytes(session.session_id["id"]) in _ids(listed)
    with pytest.raises(OperationFailure) as info:
        list(client.admin.aggregate([{"$listSessions": {}}]))
    assert info.value.code == 73  # InvalidNamespace
    assert "config.system.sessions" in str(info.value)
    session.end_session()


@pytest.mark.parametrize(
    ("pipeline", "code"),
    [
        ([{"$listLocalSessions": 1}], 14),  # TypeMismatch: options must be an object
        ([{"$listLocalSessions": {"everyone": True}}], 40415),  # IDL: unknown field
        ([{"$listLocalSessions": {"allUsers": 1}}], 14),  # allUsers is a bool
        ([{"$listLocalSessions": {"users": {"user": "a", "db": "b"}}}], 14),  # users is an array
        ([{"$listLocalSessions": {"users": [{"user": "a"}]}}], 40414),  # db is required
        ([{"$listLocalSessions": {"users": [{"user": 1, "db": "b"}]}}], 14),
        ([{"$listLocalSessions": {"allUsers": True, "users": [{"user": "a", "db": "b"}]}}], 12),  # UnsupportedFormat
        ([{"$match": {}}, {"$listLocalSessions": {}}], 40602),  # only first
        ([{"$facet": {"s": [{"$listLocalSessions": {}}]}}], 40600),  # not in $facet
    ],
)
def test_bad_specifications_fail_as_mongod(client: Any, pipeline: list[Any], code: int) -> None:
    with pytest.raises(OperationFailure) as info:
        list(client.admin.aggregate(pipeline))
    assert info.value.code == code


def test_not_on_a_collection_nor_in_a_transaction(client: Any) -> None:
    with pytest.raises(OperationFailure) as info:
        list(client.admin.c.aggregate([{"$listLocalSessions": {}}]))
    assert info.value.code == 73  # InvalidNamespace: must be {aggregate: 1}
    client.shop.c.insert_one({})
    with client.start_session() as session:
        session.start_transaction()
        with pytest.raises(OperationFailure) as info:
            list(client.shop.aggregate([{"$listLocalSessions": {}}], session=session))
        assert info.value.code == 263  # OperationNotSupportedInTransaction
        session.abort_transaction()  # the error aborted it already, as mongod's does
