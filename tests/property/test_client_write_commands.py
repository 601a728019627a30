"""The embedded client's insert_one, update_one and delete_one send the command MongoDB's
manual describes, whichever options are given.

The client builds these commands without pymongo's helpers when an option is absent (the
point paths' cost); random subsets of the options must still give the command with exactly
the fields given: the statement's ``q``, ``u``, ``multi``, ``upsert``/``limit`` and its
``collation``, ``hint``, ``sort``, ``arrayFilters``; the command's ``ordered``, ``let``,
``comment`` and ``bypassDocumentValidation``
(https://www.mongodb.com/docs/manual/reference/command/update/,
https://www.mongodb.com/docs/manual/reference/command/delete/,
https://www.mongodb.com/docs/manual/reference/command/insert/). Seen by a command listener,
expected documents written out by hand.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pymongo.errors import PyMongoError

import foliodb
from tests.sent_commands import SentCommands

_COMMENTS = st.sampled_from([None, "why", 7])
_COLLATIONS = st.sampled_from([None, {"locale": "fr"}])
# A hint as a name, or as a key pattern (sent as a document).
_HINTS = st.sampled_from([None, ("_id_", "_id_"), ([("_id", 1)], {"_id": 1})])
_LETS = st.sampled_from([None, {"v": 1}])


def _sent(op: Any) -> dict[str, Any]:
    """The command ``op`` sent (its $db left out), whether it succeeded or not."""
    listener = SentCommands()
    client = foliodb.MongoClient(":memory:", event_listeners=[listener])
    try:
        client.d.c.insert_one({"_id": 1, "a": [1]})
        listener.sent.clear()
        with contextlib.suppress(PyMongoError):  # a refused option still went out as it was given
            op(client.d.c)
    finally:
        client.close()
    (command,) = listener.sent
    command.pop("$db", None)
    return command


@settings(max_examples=40, deadline=None)
@given(
    upsert=st.booleans(),
    collation=_COLLATIONS,
    hint=_HINTS,
    sort=st.sampled_from([None, {"a": 1}]),
    array_filters=st.sampled_from([None, [{"x": 1}]]),
    let=_LETS,
    comment=_COMMENTS,
    bypass=st.sampled_from([None, True]),
)
def test_update_one_sends_the_options_given(
    upsert: bool,
    collation: Any,
    hint: Any,
    sort: Any,
    array_filters: Any,
    let: Any,
    comment: Any,
    bypass: Any,
) -> None:
    sent = _sent(
        lambda coll: coll.update_one(
            {"_id": 1},
            {"$set": {"b": 2}},
            upsert=upsert,
            collation=collation,
            hint=None if hint is None else hint[0],
            sort=sort,
            array_filters=array_filters,
            let=let,
            comment=comment,
            bypass_document_validation=bypass,
        )
    )
    statement: dict[str, Any] = {"q": {"_id": 1}, "u": {"$set": {"b": 2}}, "multi": False, "upsert": upsert}
    for name, value in (
        ("collation", collation),
        ("hint", None if hint is None else hint[1]),
        ("sort", sort),
        ("arrayFilters", array_filters),
    ):
        if value is not None:
            statement[name] = value
    expected: dict[str, Any] = {"update": "c", "ordered": True, "updates": [statement]}
    for name, value in (("let", let), ("comment", comment), ("bypassDocumentValidation", bypass)):
        if value is not None:
            expected[name] = value
    assert sent == expected


@settings(max_examples=30, deadline=None)
@given(collation=_COLLATIONS, hint=_HINTS, let=_LETS, comment=_COMMENTS)
def test_delete_one_sends_the_options_given(collation: Any, hint: Any, let: Any, comment: Any) -> None:
    sent = _sent(
        lambda coll: coll.delete_one(
            {"_id": 1}, collation=collation, hint=None if hint is None else hint[0], let=let, comment=comment
        )
    )
    statement: dict[str, Any] = {"q": {"_id": 1}, "limit": 1}
    if collation is not None:
        statement["collation"] = collation
    if hint is not None:
        statement["hint"] = hint[1]
    expected: dict[str, Any] = {"delete": "c", "ordered": True, "deletes": [statement]}
    for name, value in (("let", let), ("comment", comment)):
        if value is not None:
            expected[name] = value
    assert sent == expected


@settings(max_examples=20, deadline=None)
@given(comment=_COMMENTS, bypass=st.sampled_from([None, True, False]))
def test_insert_one_sends_the_options_given(comment: Any, bypass: Any) -> None:
    sent = _sent(lambda coll: coll.insert_one({"_id": 2}, bypass_document_validation=bypass, comment=comment))
    expected: dict[str, Any] = {"insert": "c", "ordered": True, "documents": [{"_id": 2}]}
    for name, value in (("bypassDocumentValidation", bypass), ("comment", comment)):
        if value is not None:
            expected[name] = value
    assert sent == expected
