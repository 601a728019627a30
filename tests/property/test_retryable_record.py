"""A retryable write's record, put together as bytes, is what ``bson.encode`` makes of it.

The record an oplog entry carries (``{lsid: Binary(key), n: txnNumber, reply}``,
foliodb/engine/sessions.py) is assembled from its parts on every retryable write; it
must be byte for byte ``bson.encode`` of the document, ``n`` an int32 where it fits
and an int64 beyond, so that a retry after a restart reads back the same reply.
Over the wire, pymongo's retryable inserts and updates store it and a retry of the
same txnNumber gets the first reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bson
import pymongo
import pytest
from bson.binary import Binary
from hypothesis import given, settings
from hypothesis import strategies as st

from foliodb.engine.catalog import CODEC
from foliodb.engine.sessions import retryable_record
from foliodb.server import Server
from tests.bson_values import documents

pytestmark = pytest.mark.clients

# txnNumbers around the int32/int64 boundary, and anywhere in the int64 range.
NUMBERS = st.one_of(
    st.sampled_from([0, 1, 2**31 - 2, 2**31 - 1, 2**31, 2**31 + 1, 2**63 - 1]),
    st.integers(0, 2**63 - 1),
)
REPLIES = st.one_of(
    st.fixed_dictionaries({"n": st.integers(0, 1), "ok": st.just(1.0)}),
    st.fixed_dictionaries(
        {"n": st.integers(0, 1), "nModified": st.integers(0, 1), "upserted": st.lists(documents(4), max_size=2)}
    ),
    documents(),
)


@settings(max_examples=300, deadline=None)
@given(key=st.binary(min_size=0, max_size=40), number=NUMBERS, reply=REPLIES)
def test_record_equals_bson_encode(key: bytes, number: int, reply: dict[str, Any]) -> None:
    expected = bson.encode({"lsid": Binary(key), "n": number, "reply": reply}, codec_options=CODEC)
    assert retryable_record(key, number, reply) == expected


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pymongo.MongoClient[dict[str, Any]]]:
    server = Server(str(Path(tmp_path_factory.mktemp("records")) / "data"), "127.0.0.1", 0)
    host, port = server.start()
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(host, port, serverSelectionTimeoutMS=5000)
    yield client
    client.close()
    server.shutdown()


def test_wire_retry_gets_the_first_reply(wire: pymongo.MongoClient[dict[str, Any]]) -> None:
    """pymongo's insert_one and update_one (retryable: lsid and txnNumber), then the same
    commands again with their txnNumbers: the first replies, nothing applied twice."""
    db = wire.records
    db.c.drop()
    with wire.start_session() as session:
        lsid = session.session_id
        first = db.command(
            {"insert": "c", "documents": [{"_id": 1, "n": 0}], "lsid": lsid, "txnNumber": bson.Int64(2**31)}
        )
        update = {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}], "lsid": lsid}
        second = db.command({**update, "txnNumber": bson.Int64(2**31 + 1)})
        assert (first["n"], second["n"], second["nModified"]) == (1, 1, 1)
        again = db.command({**update, "txnNumber": bson.Int64(2**31 + 1)})
        assert (again["n"], again["nModified"]) == (1, 1)
        retried = db.command(
            {"insert": "c", "documents": [{"_id": 1, "n": 0}], "lsid": lsid, "txnNumber": bson.Int64(2**31)},
            check=False,
        )
        assert retried.get("ok") == 0.0 and retried["code"] == 225  # TransactionTooOld: a newer one ran
    assert list(db.c.find()) == [{"_id": 1, "n": 1}]
