"""$listLocalSessions under access control (``foliodb serve --auth``), through pymongo.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/listLocalSessions/ - ``{}``
returns the authenticated user's sessions; other users' (``users``) or everyone's (``allUsers``) need the
``listSessions`` action on the cluster (which clusterMonitor grants:
https://www.mongodb.com/docs/manual/reference/built-in-roles/#mongodb-authrole-clusterMonitor). A
session's ``uid`` is the SHA-256 of ``user@db`` and its record names the user (mongod's
logical_session_id_helpers).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
from pymongo.errors import OperationFailure

from foliodb.server import Server

pytestmark = pytest.mark.clients


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, int]]:
    server = Server(str(tmp_path / "data"), "127.0.0.1", 0, auth=True)
    host, port = server.start()
    pymongo.MongoClient(host, port).admin.command("createUser", "root", pwd="pw", roles=["root"])
    root: Any = pymongo.MongoClient(host, port, username="root", password="pw")
    root.shop.command("createUser", "app", pwd="pw", roles=["readWrite"])
    root.admin.command("createUser", "watcher", pwd="pw", roles=["clusterMonitor"])
    root.close()
    yield host, port
    server.shutdown()


def _login(server: tuple[str, int], user: str, db: str) -> Any:
    return pymongo.MongoClient(*server, username=user, password="pw", authSource=db)


def _session_of(client: Any) -> bytes:
    with client.start_session() as session:
        client.admin.command("listDatabases", nameOnly=True, session=session)  # readWrite and clusterMonitor may
        return bytes(session.session_id["id"])


def _listed(client: Any, spec: dict[str, Any]) -> list[dict[str, Any]]:
    return list(client.admin.aggregate([{"$listLocalSessions": spec}]))


def test_a_user_lists_its_own_sessions_and_needs_list_sessions_for_others(server: tuple[str, int]) -> None:
    app, watcher = _login(server, "app", "shop"), _login(server, "watcher", "admin")
    app_session, watcher_session = _session_of(app), _session_of(watcher)

    own = _listed(app, {})
    assert app_session in {bytes(doc["_id"]["id"]) for doc in own}
    assert watcher_session not in {bytes(doc["_id"]["id"]) for doc in own}
    assert {doc["user"]["name"] for doc in own} == {"app@shop"}
    assert {bytes(doc["_id"]["uid"]) for doc in own} == {hashlib.sha256(b"app@shop").digest()}
    assert _listed(app, {"users": [{"user": "app", "db": "shop"}]}) != []  # oneself by name: no privilege
    for spec in ({"allUsers": True}, {"users": [{"user": "watcher", "db": "admin"}]}):
        with pytest.raises(OperationFailure) as info:
            _listed(app, spec)
        assert info.value.code == 13, spec  # Unauthorized

    # (The first createUser ran as no one, under the localhost exception: its session has no user.)
    everyone = {bytes(d["_id"]["id"]): d.get("user", {}).get("name") for d in _listed(watcher, {"allUsers": True})}
    assert everyone[app_session] == "app@shop" and everyone[watcher_session] == "watcher@admin"
    named = _listed(watcher, {"users": [{"user": "app", "db": "shop"}]})
    assert {doc["user"]["name"] for doc in named} == {"app@shop"}
    app.close()
    watcher.close()
