"""The runner's expectEvents check can fail: it compares real pymongo command
events from a FolioDB server with the expected list (order, names, command
fields, count), so a wrong expectation or an extra command is caught."""

from __future__ import annotations

from pathlib import Path

import pymongo
import pytest

from foliodb.server import Server
from tests.spec.events import CommandRecorder, check_events
from tests.spec.matching import Matcher


def test_events_match_and_mismatch(tmp_path: Path) -> None:
    server = Server(str(tmp_path / "data"), "127.0.0.1", 0)
    host, port = server.start()
    recorder = CommandRecorder(["commandStartedEvent"], [], sensitive=False)
    client: pymongo.MongoClient[dict[str, object]] = pymongo.MongoClient(host, port, event_listeners=[recorder])
    try:
        client.db.c.insert_one({"_id": 1})
        list(client.db.c.find({"_id": 1}))
        matcher = Matcher({})
        insert = {"commandStartedEvent": {"command": {"insert": "c"}, "commandName": "insert", "databaseName": "db"}}
        find = {"commandStartedEvent": {"command": {"find": "c", "filter": {"_id": 1}}, "commandName": "find"}}
        check_events(matcher, {"client": "c", "events": [insert, find]}, recorder)
        check_events(matcher, {"client": "c", "events": [insert], "ignoreExtraEvents": True}, recorder)
        with pytest.raises(AssertionError, match="expected 1 command events, got 2"):
            check_events(matcher, {"client": "c", "events": [insert]}, recorder)
        with pytest.raises(AssertionError, match="filter"):
            wrong = {"commandStartedEvent": {"command": {"find": "c", "filter": {"_id": 2}}}}
            check_events(matcher, {"client": "c", "events": [insert, wrong]}, recorder)
    finally:
        client.close()  # its endSessions comes after the checks, as in the runner
        server.shutdown()
