"""Change events and change stream errors as MongoDB 8 gives them, through
the executor as drivers' commands arrive.

Manual: https://www.mongodb.com/docs/manual/reference/change-events/update/ (disambiguatedPaths,
only with showExpandedEvents), https://www.mongodb.com/docs/manual/reference/change-events/rename/
(operationDescription.dropTarget); the error labels follow mongod's ErrorLabelBuilder
(src/mongo/db/error_labels.cpp) and the change streams spec's resumable errors:
https://github.com/mongodb/specifications/blob/master/source/change-streams/change-streams.md#resumable-error
"""

from __future__ import annotations

from typing import Any

import pytest

from foliodb.commands import Executor


def _ok(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply.get("ok") == 1.0, reply
    return reply


def _watch(executor: Executor, coll: str = "c", pipeline: list[Any] | None = None, **spec: Any) -> int:
    reply = executor.execute(
        "db", {"aggregate": coll, "pipeline": [{"$changeStream": spec}, *(pipeline or [])], "cursor": {}}
    )
    return int(_ok(reply)["cursor"]["id"])


def _more(executor: Executor, cursor_id: int, coll: str = "c") -> dict[str, Any]:
    return executor.execute("db", {"getMore": cursor_id, "collection": coll, "maxTimeMS": 50})


def _update_description(executor: Executor, expanded: bool, update: dict[str, Any]) -> dict[str, Any]:
    _ok(executor.execute("db", {"insert": "c", "documents": [{"_id": 1, "a": {"1": 1}, "b": 1}]}))
    cursor = _watch(executor, showExpandedEvents=expanded) if expanded else _watch(executor)
    _ok(executor.execute("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": update}]}))
    (event,) = _ok(_more(executor, cursor))["cursor"]["nextBatch"]
    description: dict[str, Any] = event["updateDescription"]
    return description


def test_disambiguated_paths_only_with_show_expanded_events(executor: Executor) -> None:
    plain = _update_description(executor, False, {"$set": {"a.1": 2}})
    assert plain == {"updatedFields": {"a.1": 2}, "removedFields": [], "truncatedArrays": []}
    expanded = _update_description(executor, True, {"$set": {"a.1": 3}})
    assert expanded["disambiguatedPaths"] == {"a.1": ["a", "1"]}


def test_disambiguated_paths_is_empty_when_no_path_is_ambiguous(executor: Executor) -> None:
    assert _update_description(executor, True, {"$set": {"b": 2}})["disambiguatedPaths"] == {}


def test_rename_over_a_collection_names_the_one_it_dropped(executor: Executor) -> None:
    _ok(executor.execute("db", {"create": "c"}))
    _ok(executor.execute("db", {"create": "target"}))
    (target,) = _ok(executor.execute("db", {"listCollections": 1, "filter": {"name": "target"}}))["cursor"][
        "firstBatch"
    ]
    cursor = _watch(executor, showExpandedEvents=True)
    _ok(executor.execute("admin", {"renameCollection": "db.c", "to": "db.target", "dropTarget": True}))
    rename = _ok(_more(executor, cursor))["cursor"]["nextBatch"][0]
    assert rename["operationType"] == "rename"
    assert rename["operationDescription"] == {
        "to": {"db": "db", "coll": "target"},
        "dropTarget": target["info"]["uuid"],
    }


def test_an_unknown_stage_after_change_stream_is_40324(executor: Executor) -> None:
    reply = executor.execute("db", {"aggregate": "c", "pipeline": [{"$changeStream": {}}, {"$nope": 1}], "cursor": {}})
    assert reply["code"] == 40324


def test_a_modified_resume_token_is_a_non_resumable_error(executor: Executor) -> None:
    cursor = _watch(executor, pipeline=[{"$project": {"_id": 0}}])
    _ok(executor.execute("db", {"insert": "c", "documents": [{"_id": 1}]}))
    reply = _more(executor, cursor)
    assert (reply["code"], reply["errorLabels"]) == (280, ["NonResumableChangeStreamError"])


def test_lost_history_is_a_non_resumable_error(executor: Executor) -> None:
    cursor = _watch(executor)
    _ok(executor.execute("db", {"insert": "c", "documents": [{"_id": i, "pad": "x" * 200} for i in range(20)]}))
    first = _ok(_more(executor, cursor))["cursor"]["nextBatch"][0]["_id"]
    executor.engine.storage.oplog.size_bytes = 1_000  # keep only the newest few entries
    executor.engine.housekeeping()
    spec = {"resumeAfter": first}
    reply = executor.execute("db", {"aggregate": "c", "pipeline": [{"$changeStream": spec}], "cursor": {}})
    assert (reply["code"], reply["errorLabels"]) == (286, ["NonResumableChangeStreamError"])


def _fail_after_checkout(executor: Executor, **data: Any) -> None:
    point = {"configureFailPoint": "failGetMoreAfterCursorCheckout", "mode": {"times": 1}, "data": data}
    _ok(executor.execute("admin", point))


@pytest.mark.parametrize(
    ("code", "labels"),
    [
        (6, ["ResumableChangeStreamError"]),  # HostUnreachable: RetriableError and NetworkError
        (150, ["ResumableChangeStreamError"]),  # StaleEpoch: NeedRetargettingError
        (234, ["ResumableChangeStreamError"]),  # RetryChangeStream
        (133, ["ResumableChangeStreamError"]),  # FailedToSatisfyReadPreference
        (216, None),  # ElectionInProgress: not resumable
        (43, None),  # CursorNotFound: drivers resume on it, the server adds no label
    ],
)
def test_a_change_stream_get_more_failed_after_checkout(executor: Executor, code: int, labels: Any) -> None:
    cursor = _watch(executor)
    _fail_after_checkout(executor, errorCode=code)
    reply = _more(executor, cursor)
    assert (reply["code"], reply.get("errorLabels")) == (code, labels)
    assert reply["errmsg"] == "Hit the 'failGetMoreAfterCursorCheckout' failpoint"
    assert _more(executor, cursor)["code"] == 43  # the failed getMore killed its cursor


def test_fail_get_more_after_checkout_on_other_cursors(executor: Executor) -> None:
    _ok(executor.execute("db", {"insert": "c", "documents": [{"_id": i} for i in range(3)]}))
    find = _ok(executor.execute("db", {"find": "c", "batchSize": 1}))["cursor"]["id"]
    _fail_after_checkout(executor, errorCode=6, namespace="db.other")
    assert _ok(executor.execute("db", {"getMore": find, "collection": "c", "batchSize": 1}))["cursor"]["nextBatch"]
    _fail_after_checkout(executor)
    reply = executor.execute("db", {"getMore": find, "collection": "c"})
    assert (reply["code"], reply.get("errorLabels")) == (1, None)  # InternalError by default; no change stream label


def _expanded_events(executor: Executor, *commands: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    cursor = int(
        _ok(
            executor.execute(
                "db", {"aggregate": 1, "pipeline": [{"$changeStream": {"showExpandedEvents": True}}], "cursor": {}}
            )
        )["cursor"]["id"]
    )
    for db, command in commands:
        _ok(executor.execute(db, command))
    events: list[dict[str, Any]] = _ok(_more(executor, cursor, "$cmd.aggregate"))["cursor"]["nextBatch"]
    return events


def test_drop_indexes_lists_the_dropped_index(executor: Executor) -> None:
    # https://www.mongodb.com/docs/manual/reference/change-events/dropIndexes/
    _ok(executor.execute("db", {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]}))
    (event,) = _expanded_events(executor, ("db", {"dropIndexes": "c", "index": "a_1"}))
    assert event["operationType"] == "dropIndexes"
    assert event["operationDescription"] == {"indexes": [{"v": 2, "key": {"a": 1}, "name": "a_1"}]}


def test_modify_has_the_state_before_the_change(executor: Executor) -> None:
    # https://www.mongodb.com/docs/manual/reference/change-events/modify/
    validator = {"a": {"$exists": True}}
    _ok(executor.execute("db", {"create": "c", "validator": validator}))
    _ok(executor.execute("db", {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]}))
    (entry,) = _ok(executor.execute("db", {"listCollections": 1, "filter": {"name": "c"}}))["cursor"]["firstBatch"]
    uuid = entry["info"]["uuid"]
    collection, index = _expanded_events(
        executor,
        ("db", {"collMod": "c", "validationLevel": "moderate"}),
        ("db", {"collMod": "c", "index": {"name": "a_1", "hidden": True}}),
    )
    assert collection["operationType"] == index["operationType"] == "modify"
    assert collection["operationDescription"] == {"validationLevel": "moderate"}
    assert collection["stateBeforeChange"] == {"collectionOptions": {"uuid": uuid, "validator": validator}}
    assert index["operationDescription"] == {"index": {"name": "a_1", "hidden": True}}
    assert index["stateBeforeChange"] == {
        "collectionOptions": {"uuid": uuid, "validator": validator, "validationLevel": "moderate"},
        "indexOptions": {"hidden": False},
    }


def test_a_view_has_no_collection_uuid(executor: Executor) -> None:
    # https://www.mongodb.com/docs/manual/reference/change-events/create/: collectionUUID is absent for a view.
    _ok(executor.execute("db", {"create": "c"}))
    created, dropped = _expanded_events(
        executor, ("db", {"create": "v", "viewOn": "c", "pipeline": []}), ("db", {"drop": "v"})
    )
    assert (created["operationType"], created["operationDescription"]) == ("create", {"viewOn": "c", "pipeline": []})
    assert (dropped["operationType"], dropped["ns"]) == ("drop", {"db": "db", "coll": "v"})
    assert "collectionUUID" not in created and "collectionUUID" not in dropped


NINE_MB = "x" * (9 * 1024 * 1024)


def test_an_event_too_big_for_bson_is_bson_object_too_large(executor: Executor) -> None:
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/changeStreamSplitLargeEvent/:
    # without that stage, an event over 16 MB fails the change stream with BSONObjectTooLarge.
    _ok(executor.execute("db", {"create": "c", "changeStreamPreAndPostImages": {"enabled": True}}))
    images = _watch(executor, fullDocument="required", fullDocumentBeforeChange="required")
    plain = _watch(executor)
    _ok(executor.execute("db", {"insert": "c", "documents": [{"_id": 1, "a": NINE_MB}]}))
    _ok(executor.execute("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"b": 1}}}]}))
    inserted, updated = _ok(_more(executor, plain))["cursor"]["nextBatch"]  # 9 MB events are fine
    assert (inserted["operationType"], updated["operationType"]) == ("insert", "update")
    reply = _more(executor, images)  # the update with its post- and pre-image: 18 MB
    assert reply["code"] == 10334 and reply["codeName"] == "BSONObjectTooLarge"
    assert "errorLabels" not in reply  # not resumable: the same event would fail again


def test_a_stage_can_make_an_event_too_big(executor: Executor) -> None:
    _ok(executor.execute("db", {"insert": "c", "documents": [{"_id": 1, "a": NINE_MB}]}))
    twice = _watch(executor, pipeline=[{"$addFields": {"copy": "$fullDocument"}}], fullDocument="updateLookup")
    _ok(executor.execute("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"b": 1}}}]}))
    assert _more(executor, twice)["code"] == 10334


def test_images_are_those_of_writes_made_while_they_were_on(executor: Executor) -> None:
    # https://www.mongodb.com/docs/manual/changeStreams/#change-streams-with-document-pre--and-post-images:
    # pre- and post-images are recorded when a write happens with changeStreamPreAndPostImages enabled.
    _ok(executor.execute("db", {"insert": "c", "documents": [{"_id": 1, "n": 0}]}))
    cursor = _watch(executor, fullDocument="whenAvailable", fullDocumentBeforeChange="whenAvailable")

    def bump() -> None:
        _ok(executor.execute("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]}))

    bump()  # off: no images
    _ok(executor.execute("db", {"collMod": "c", "changeStreamPreAndPostImages": {"enabled": True}}))
    bump()  # on
    _ok(executor.execute("db", {"collMod": "c", "changeStreamPreAndPostImages": {"enabled": False}}))
    bump()  # off again
    events = [e for e in _ok(_more(executor, cursor))["cursor"]["nextBatch"] if e["operationType"] == "update"]
    assert [(e["fullDocumentBeforeChange"], e["fullDocument"]) for e in events] == [
        (None, None),
        ({"_id": 1, "n": 1}, {"_id": 1, "n": 2}),
        (None, None),
    ]


def test_a_delete_has_its_pre_image_only_while_images_are_on(executor: Executor) -> None:
    # The same manual section: a delete's fullDocumentBeforeChange is the document it removed,
    # recorded only while changeStreamPreAndPostImages is enabled (null otherwise, with whenAvailable).
    _ok(executor.execute("db", {"insert": "c", "documents": [{"_id": 1, "n": 1}, {"_id": 2, "n": 2}]}))
    cursor = _watch(executor, fullDocumentBeforeChange="whenAvailable")
    _ok(executor.execute("db", {"delete": "c", "deletes": [{"q": {"_id": 1}, "limit": 1}]}))
    _ok(executor.execute("db", {"collMod": "c", "changeStreamPreAndPostImages": {"enabled": True}}))
    _ok(executor.execute("db", {"delete": "c", "deletes": [{"q": {"_id": 2}, "limit": 1}]}))
    events = [e for e in _ok(_more(executor, cursor))["cursor"]["nextBatch"] if e["operationType"] == "delete"]
    assert [(e["documentKey"], e["fullDocumentBeforeChange"]) for e in events] == [
        ({"_id": 1}, None),
        ({"_id": 2}, {"_id": 2, "n": 2}),
    ]


def test_invalidate_has_the_time_of_the_drop(executor: Executor) -> None:
    # https://www.mongodb.com/docs/manual/reference/change-events/invalidate/: clusterTime and wallTime.
    _ok(executor.execute("db", {"create": "c"}))
    cursor = _watch(executor)
    _ok(executor.execute("db", {"drop": "c"}))
    drop, invalidate = _ok(_more(executor, cursor))["cursor"]["nextBatch"]
    assert (drop["operationType"], invalidate["operationType"]) == ("drop", "invalidate")
    assert set(invalidate) == {"_id", "operationType", "clusterTime", "wallTime"}
    assert (invalidate["clusterTime"], invalidate["wallTime"]) == (drop["clusterTime"], drop["wallTime"])


def test_a_batch_that_ends_before_the_invalidate_keeps_the_cursor_for_it(executor: Executor) -> None:
    # The cursor closes after delivering the invalidate event, not when it is read ahead.
    _ok(executor.execute("db", {"create": "c"}))
    cursor = _watch(executor)
    _ok(executor.execute("db", {"drop": "c"}))
    more = {"getMore": cursor, "collection": "c", "batchSize": 1}
    first = _ok(executor.execute("db", more))["cursor"]
    assert [e["operationType"] for e in first["nextBatch"]] == ["drop"] and first["id"] == cursor
    assert first["postBatchResumeToken"] == first["nextBatch"][0]["_id"]
    last = _ok(executor.execute("db", more))["cursor"]
    assert [e["operationType"] for e in last["nextBatch"]] == ["invalidate"] and last["id"] == 0
