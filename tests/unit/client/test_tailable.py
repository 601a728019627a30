"""Tailable cursors on capped collections: they stay open at their last
document, return what is inserted after it, and fail when the capped
collection has evicted their position.

Manual: https://www.mongodb.com/docs/manual/core/tailable-cursors/
"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo import CursorType
from pymongo.errors import OperationFailure


@pytest.fixture
def log(client: Any) -> Any:
    client.test.create_collection("log", capped=True, size=4096, max=5)
    client.test.log.insert_many([{"i": i} for i in range(3)])
    return client.test.log


@pytest.mark.parametrize("kind", [CursorType.TAILABLE, CursorType.TAILABLE_AWAIT])
def test_tailable_cursor_returns_later_inserts(log: Any, kind: int) -> None:
    cursor = log.find({"i": {"$ne": 1}}, cursor_type=kind)
    assert [d["i"] for d in cursor] == [0, 2]
    assert cursor.alive  # out of documents, not dead
    assert [d["i"] for d in cursor] == []
    log.insert_many([{"i": 3}, {"i": 1}, {"i": 4}])
    assert [d["i"] for d in cursor] == [3, 4]  # the filter still applies
    assert cursor.alive


def test_a_limit_ends_a_tailable_cursor(log: Any) -> None:
    cursor = log.find(cursor_type=CursorType.TAILABLE, limit=2)
    assert [d["i"] for d in cursor] == [0, 1]
    assert not cursor.alive


def test_evicted_position_is_capped_position_lost(log: Any) -> None:
    cursor = log.find(cursor_type=CursorType.TAILABLE)
    assert len(list(cursor)) == 3
    log.insert_many([{"i": n} for n in range(10, 20)])  # max 5: the cursor's last document is gone
    with pytest.raises(OperationFailure) as info:
        list(cursor)
    assert (info.value.code, info.value.details["codeName"]) == (136, "CappedPositionLost")  # type: ignore[index]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda db: list(db.plain.find(cursor_type=CursorType.TAILABLE)), "tailable cursor requested on non capped"),
        (lambda db: list(db.log.find(cursor_type=CursorType.TAILABLE, sort=[("i", 1)])), "sort other than"),
        (lambda db: db.command("find", "log", awaitData=True), "awaitData"),
    ],
)
def test_refusals(log: Any, call: Any, message: str) -> None:
    log.database.plain.insert_one({})
    with pytest.raises(OperationFailure) as info:
        call(log.database)
    assert message in str(info.value)
