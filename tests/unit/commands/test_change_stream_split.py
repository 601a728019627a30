"""$changeStreamSplitLargeEvent: change events larger than BSON allows, sent in fragments.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/changeStreamSplitLargeEvent/
(fragments carry ``splitEvent: {fragment, of}`` and their own resume tokens; the stage must come last;
resuming from a fragment needs the stage). Where the manual is silent, mongod's
document_source_change_stream_split_large_event.cpp and change_stream_split_event_helpers.cpp: events
over 16 MB + 8 KB split; fields go in order of BSON size, then name, greedily.
"""

from __future__ import annotations

from typing import Any

import bson

from foliodb.commands import Executor

NINE_MB = "x" * (9 * 1024 * 1024)
SPLIT = {"$changeStreamSplitLargeEvent": {}}


def _ok(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply.get("ok") == 1.0, reply
    return reply


def _aggregate(executor: Executor, pipeline: list[Any]) -> dict[str, Any]:
    return executor.execute("db", {"aggregate": "c", "pipeline": pipeline, "cursor": {}})


def _watch(executor: Executor, pipeline: list[Any], **spec: Any) -> dict[str, Any]:
    spec = {"fullDocument": "required", "fullDocumentBeforeChange": "required", **spec}
    return _aggregate(executor, [{"$changeStream": spec}, *pipeline])


def _more(executor: Executor, cursor_id: int, batch_size: int | None = None) -> dict[str, Any]:
    cmd: dict[str, Any] = {"getMore": cursor_id, "collection": "c", "maxTimeMS": 50}
    if batch_size is not None:
        cmd["batchSize"] = batch_size
    return executor.execute("db", cmd)


def _large_update(executor: Executor) -> None:
    """An update whose event holds a 9 MB post-image and a 9 MB pre-image: 18 MB."""
    _ok(executor.execute("db", {"create": "c", "changeStreamPreAndPostImages": {"enabled": True}}))
    _ok(executor.execute("db", {"insert": "c", "documents": [{"_id": 1, "a": NINE_MB}]}))


def _element_size(name: str, value: Any) -> int:
    return len(bson.encode({name: value})) - 5


def test_a_large_event_comes_in_fragments(executor: Executor) -> None:
    _large_update(executor)
    cursor = int(_ok(_watch(executor, [{"$match": {"operationType": "update"}}, SPLIT]))["cursor"]["id"])
    _ok(executor.execute("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"b": 1}}}]}))
    first, second = _ok(_more(executor, cursor))["cursor"]["nextBatch"]
    assert first["splitEvent"] == {"fragment": 1, "of": 2} and second["splitEvent"] == {"fragment": 2, "of": 2}
    assert first["_id"] != second["_id"] and first["_id"]["_data"] < second["_id"]["_data"]
    # Fields by BSON size: the small ones and the smaller image fill the first fragment. The post-image
    # holds "b" (7 bytes more) but its name is 12 bytes shorter: it is the smaller element.
    post, pre = {"_id": 1, "a": NINE_MB, "b": 1}, {"_id": 1, "a": NINE_MB}
    assert _element_size("fullDocument", post) < _element_size("fullDocumentBeforeChange", pre)
    assert first["fullDocument"] == post
    assert list(second) == ["_id", "splitEvent", "fullDocumentBeforeChange"]
    assert second["fullDocumentBeforeChange"] == pre
    assert first["operationType"] == "update" and first["documentKey"] == {"_id": 1}
    small = [k for k in first if k not in ("_id", "splitEvent")]
    sizes = [(_element_size(k, first[k]), k) for k in small]
    assert sizes == sorted(sizes)  # in order of size, then name


def test_small_events_pass_whole(executor: Executor) -> None:
    cursor = int(_ok(_watch(executor, [SPLIT], fullDocument="default", fullDocumentBeforeChange="off"))["cursor"]["id"])
    _ok(executor.execute("db", {"insert": "c", "documents": [{"_id": 1}]}))
    (event,) = _ok(_more(executor, cursor))["cursor"]["nextBatch"]
    assert "splitEvent" not in event and event["fullDocument"] == {"_id": 1}


def test_resuming_from_a_fragment_continues_after_it(executor: Executor) -> None:
    _large_update(executor)
    opened = _ok(_watch(executor, [{"$match": {"operationType": "update"}}, SPLIT]))
    _ok(executor.execute("db", {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"b": 1}}}]}))
    reply = _ok(_more(executor, int(opened["cursor"]["id"]), batch_size=1))
    (first,) = reply["cursor"]["nextBatch"]
    assert reply["cursor"]["postBatchResumeToken"] == first["_id"]  # the batch ended inside the event
    resumed = _ok(_watch(executor, [{"$match": {"operationType": "update"}}, SPLIT], resumeAfter=first["_id"]))
    batch = resumed["cursor"]["firstBatch"] or _ok(_more(executor, int(resumed["cursor"]["id"])))["cursor"]["nextBatch"]
    assert [f["splitEvent"] for f in batch] == [{"fragment": 2, "of": 2}]
    # Resuming from a fragment needs the stage (ChangeStreamFatalError).
    reply = _watch(executor, [], resumeAfter=first["_id"])
    assert reply["code"] == 280


def test_the_stage_is_checked_as_mongod_checks_it(executor: Executor) -> None:
    assert _watch(executor, [{"$changeStreamSplitLargeEvent": {"a": 1}}])["code"] == 7182800
    assert _watch(executor, [SPLIT, {"$match": {}}])["code"] == 7182802
    # Outside a change stream (pipeline.cpp: requiresChangeStream): IllegalOperation.
    assert _aggregate(executor, [SPLIT])["code"] == 20
