"""The floor server: the least a MongoDB wire-protocol server over SQLite can do
for a pymongo client, ``python -m benchmarks.floor_server --dbpath DIR [--port 0]``.

It frames OP_MSG (and the OP_QUERY ``hello`` pymongo opens a connection with),
decodes the body with pymongo's C ``bson``, runs the request on the raw floor
(:class:`benchmarks.floor.IndexedFloor`: bare ``sqlite3``, one file per
collection) and encodes the reply: no validation, no sessions, no retryable-write
records, no oplog, no accounting. A thread per connection reads a message, answers
it and sends the reply. What FolioDB's server spends above it, per request, is what
its layers cost (``benchmarks/server.py`` measures both in one run).

So that pymongo does the same work against both servers, it answers ``hello`` as
the primary of a one-member replica set (pymongo then sends ``lsid``,
``txnNumber`` and ``$clusterTime`` as it does to FolioDB) and puts a
``$clusterTime`` and ``operationTime`` in every reply; it ignores them in
requests. It answers what the server benchmark sends, in the shapes it sends
them:

* ``find`` by ``_id`` (an ObjectId) or by equality on one field (indexed when
  ``createIndexes`` made an index on it; a scan otherwise), one batch;
* ``insert`` of one or many documents (``_id`` an ObjectId);
* ``update`` of one document by ``_id`` with ``$inc`` and ``$set`` of
  top-level fields;
* ``delete`` of one document by ``_id``;
* ``createIndexes`` of one ascending single-field index on an ObjectId field;
* ``ping``, ``endSessions``, ``hello``/``isMaster``; anything else fails
  (CommandNotFound).

It prints ``waiting for connections on 127.0.0.1:PORT`` once it listens, as
``foliodb serve`` does; SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import datetime
import os
import signal
import socket
import struct
import sys
import threading
import time
from typing import Any

import bson
from bson import Int64, ObjectId, Timestamp

from benchmarks.floor import IndexedFloor

_HEADER = struct.Struct("<iiii")
_OP_REPLY, _OP_QUERY, _OP_MSG = 1, 2004, 2013
_CLUSTER_TIME = Timestamp(int(time.time()), 1)
_GOSSIP = {"clusterTime": _CLUSTER_TIME, "signature": {"hash": b"\x00" * 20, "keyId": Int64(0)}}


class Collection(IndexedFloor):
    """One collection: the floor's tables in a directory of its own."""

    def __init__(self, workdir: str, name: str) -> None:
        directory = os.path.join(workdir, name)
        os.makedirs(directory, exist_ok=True)
        self.open(directory)

    def update_fields(self, _id: ObjectId, inc: dict[str, Any], fields: dict[str, Any]) -> int:
        """``{$inc: inc, $set: fields}`` of top-level fields on the document with ``_id``."""

        def change(doc: dict[str, Any]) -> None:
            for name, amount in inc.items():
                doc[name] = doc.get(name, 0) + amount
            doc.update(fields)

        return self.update_by_id(_id, change)


class FloorServer:
    def __init__(self, workdir: str, port: int) -> None:
        self.workdir = workdir
        self.collections: dict[str, Collection] = {}
        self.listener = socket.create_server(("127.0.0.1", port))
        self.connection_ids = 0
        # pymongo runs its commands on one pooled connection; its monitors only say hello
        self.lock = threading.Lock()

    @property
    def port(self) -> int:
        port: int = self.listener.getsockname()[1]
        return port

    def collection(self, db: str, name: str) -> Collection:
        key = f"{db}.{name}"
        found = self.collections.get(key)
        if found is None:
            found = self.collections[key] = Collection(self.workdir, key)
        return found

    def serve(self) -> None:
        """Accept connections until the listener closes; a thread each."""
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        """Read a message, answer it, until the peer closes."""
        header = bytearray(16)
        with sock:
            while True:
                if not _read_exactly(sock, memoryview(header)):
                    return
                length, request_id, _, op_code = _HEADER.unpack(header)
                payload = bytearray(length - 16)
                if not _read_exactly(sock, memoryview(payload)):
                    return
                with self.lock:
                    reply = self._answer(request_id, op_code, bytes(payload))
                sock.sendall(reply)

    def _answer(self, request_id: int, op_code: int, payload: bytes) -> bytes:
        if op_code == _OP_QUERY:  # the handshake's hello on admin.$cmd
            name_end = payload.index(b"\x00", 4)
            start = name_end + 9  # the name's NUL, numberToSkip, numberToReturn
            size = struct.unpack_from("<i", payload, start)[0]
            query = bson.decode(payload[start : start + size])
            body = bson.encode(self._hello(query.get("$query", query)))
            reply = struct.pack("<iqii", 0, 0, 0, 1) + body
            return _HEADER.pack(16 + len(reply), 0, request_id, _OP_REPLY) + reply
        cmd: dict[str, Any] = {}
        pos = 4
        while pos < len(payload):
            kind = payload[pos]
            size = struct.unpack_from("<i", payload, pos + 1)[0]
            if kind == 0:
                cmd.update(bson.decode(payload[pos + 1 : pos + 1 + size]))
            else:
                name_end = payload.index(b"\x00", pos + 5)
                cmd[payload[pos + 5 : name_end].decode()] = bson.decode_all(payload[name_end + 1 : pos + 1 + size])
            pos += 1 + size
        body = b"\x00\x00\x00\x00\x00" + bson.encode(self._run(cmd))
        return _HEADER.pack(16 + len(body), 0, request_id, _OP_MSG) + body

    def _hello(self, cmd: dict[str, Any]) -> dict[str, Any]:
        self.connection_ids += 1
        me = f"127.0.0.1:{self.port}"
        return {
            "helloOk": True,
            "isWritablePrimary" if "hello" in cmd else "ismaster": True,
            "setName": "floor",
            "setVersion": 1,
            "hosts": [me],
            "primary": me,
            "me": me,
            "maxBsonObjectSize": 16 * 1024 * 1024,
            "maxMessageSizeBytes": 48_000_000,
            "maxWriteBatchSize": 100_000,
            "localTime": datetime.datetime.now(datetime.UTC),
            "logicalSessionTimeoutMinutes": 30,
            "connectionId": self.connection_ids,
            "minWireVersion": 0,
            "maxWireVersion": 25,
            "readOnly": False,
            "ok": 1.0,
            "$clusterTime": _GOSSIP,
            "operationTime": _CLUSTER_TIME,
        }

    def _run(self, cmd: dict[str, Any]) -> dict[str, Any]:
        name = next(iter(cmd))
        db = cmd["$db"]
        if name in ("hello", "isMaster", "ismaster"):
            return self._hello(cmd)
        reply: dict[str, Any]
        if name == "find":
            coll = self.collection(db, cmd["find"])
            ((path, value),) = cmd["filter"].items()
            if path == "_id":
                found = coll.find_one_by_id(value)
                batch = [] if found is None else [found]
            else:
                batch = coll.find_equal(path, value)
            reply = {"cursor": {"firstBatch": batch, "id": Int64(0), "ns": f"{db}.{cmd['find']}"}, "ok": 1.0}
        elif name == "insert":
            coll = self.collection(db, cmd["insert"])
            docs = cmd["documents"]
            if len(docs) == 1:
                coll.insert_one(docs[0])
            else:
                coll.insert_many(docs)
            reply = {"n": len(docs), "ok": 1.0}
        elif name == "update":
            statement = cmd["updates"][0]
            spec = statement["u"]
            n = self.collection(db, cmd["update"]).update_fields(
                statement["q"]["_id"], spec.get("$inc", {}), spec.get("$set", {})
            )
            reply = {"n": n, "nModified": n, "ok": 1.0}
        elif name == "delete":
            n = self.collection(db, cmd["delete"]).delete_one_by_id(cmd["deletes"][0]["q"]["_id"])
            reply = {"n": n, "ok": 1.0}
        elif name == "createIndexes":
            coll = self.collection(db, cmd["createIndexes"])
            ((field, _),) = cmd["indexes"][0]["key"].items()
            if field not in coll.indexed:
                coll.create_index(field)
            reply = {"ok": 1.0}
        elif name in ("ping", "endSessions"):
            reply = {"ok": 1.0}
        else:
            reply = {"ok": 0.0, "errmsg": f"no such command: '{name}'", "code": 59, "codeName": "CommandNotFound"}
        reply["$clusterTime"] = _GOSSIP
        reply["operationTime"] = _CLUSTER_TIME
        return reply


def _read_exactly(sock: socket.socket, view: memoryview) -> bool:
    """Fill ``view`` from ``sock``; False when the peer closed first."""
    while view:
        count = sock.recv_into(view)
        if not count:
            return False
        view = view[count:]
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dbpath", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = FloorServer(args.dbpath, args.port)

    def stop(_signum: int, _frame: object) -> None:
        server.listener.close()

    signal.signal(signal.SIGTERM, stop)
    print(f"waiting for connections on 127.0.0.1:{server.port}", flush=True)
    server.serve()
    with server.lock:
        for coll in server.collections.values():
            coll.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
