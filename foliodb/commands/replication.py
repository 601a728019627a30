"""The replica-set persona: FolioDB answers as the primary of a one-member replica set.

Drivers send transactions and retryable writes only to replica set members
(and ``mongodb://host`` with no ``replicaSet`` option discovers the set from
``hello``), so ``foliodb serve`` presents itself as the primary of a
one-member set by default (``--replSet NAME``, ``rs0``; ``--standalone``
keeps the standalone persona, which refuses transaction numbers as a
standalone mongod does). ``hello`` gains ``setName``, ``hosts``, ``me``,
``primary``, ``setVersion``, ``electionId`` and ``lastWrite``; this module
also answers ``replSetGetStatus``, ``replSetGetConfig`` (mongosh's
``rs.status()``/``rs.conf()``) and ``replSetInitiate``. Every write is
majority-committed as soon as it commits (one member), so ``w: "majority"``
and ``w: 1`` are satisfied at once and ``w`` greater than 1 cannot be.

Manual: https://www.mongodb.com/docs/manual/reference/command/hello/ ,
https://www.mongodb.com/docs/manual/reference/command/replSetGetStatus/
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bson import Int64, ObjectId, Timestamp

from foliodb.commands.registry import COMMANDS
from foliodb.errors import CommandError, ErrorCode

if TYPE_CHECKING:
    from foliodb.commands.executor import Request

TERM = 1
_STARTED = time.time()


@dataclass
class ReplicaSet:
    """What a one-member replica set says about itself."""

    name: str = "rs0"
    me: str = "localhost:27017"  # the address clients connect to (set by the server once it listens)
    election_id: ObjectId = field(default_factory=lambda: ObjectId("7fffffff0000000000000001"))
    set_version: int = 1

    def hello_fields(self, cluster_time: Timestamp) -> dict[str, Any]:
        written = _date(cluster_time)
        optime = {"ts": cluster_time, "t": Int64(TERM)}
        return {
            "hosts": [self.me],
            "setName": self.name,
            "setVersion": self.set_version,
            "secondary": False,
            "primary": self.me,
            "me": self.me,
            "electionId": self.election_id,
            "lastWrite": {
                "opTime": optime,
                "lastWriteDate": written,
                "majorityOpTime": optime,
                "majorityWriteDate": written,
            },
        }


def _date(ts: Timestamp) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(max(ts.time, 0), datetime.UTC).replace(tzinfo=None)


def _persona(request: Request) -> ReplicaSet:
    replica_set = request.executor.replica_set
    if replica_set is None:
        raise CommandError(ErrorCode.NoReplicationEnabled, "not running with --replSet")
    return replica_set


@COMMANDS.register("replSetGetStatus")
def cmd_replSetGetStatus(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    replica_set = _persona(request)
    ts = request.engine.storage.cluster_time
    optime = {"ts": ts, "t": Int64(TERM)}
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    started = datetime.datetime.fromtimestamp(_STARTED, datetime.UTC).replace(tzinfo=None)
    return {
        "set": replica_set.name,
        "date": now,
        "myState": 1,
        "term": Int64(TERM),
        "heartbeatIntervalMillis": Int64(2000),
        "majorityVoteCount": 1,
        "writeMajorityCount": 1,
        "votingMembersCount": 1,
        "writableVotingMembersCount": 1,
        "optimes": {
            "lastCommittedOpTime": optime,
            "lastCommittedWallTime": _date(ts),
            "readConcernMajorityOpTime": optime,
            "appliedOpTime": optime,
            "durableOpTime": optime,
        },
        "members": [
            {
                "_id": 0,
                "name": replica_set.me,
                "health": 1.0,
                "state": 1,
                "stateStr": "PRIMARY",
                "uptime": int(time.time() - _STARTED),
                "optime": optime,
                "optimeDate": _date(ts),
                "electionTime": Timestamp(int(_STARTED), 1),
                "electionDate": started,
                "configVersion": replica_set.set_version,
                "configTerm": TERM,
                "self": True,
            }
        ],
        "ok": 1.0,
    }


@COMMANDS.register("replSetGetConfig")
def cmd_replSetGetConfig(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    replica_set = _persona(request)
    return {
        "config": {
            "_id": replica_set.name,
            "version": replica_set.set_version,
            "term": TERM,
            "members": [
                {
                    "_id": 0,
                    "host": replica_set.me,
                    "arbiterOnly": False,
                    "buildIndexes": True,
                    "hidden": False,
                    "priority": 1.0,
                    "tags": {},
                    "secondaryDelaySecs": Int64(0),
                    "votes": 1,
                }
            ],
            "protocolVersion": Int64(1),
            "writeConcernMajorityJournalDefault": True,
            "settings": {
                "chainingAllowed": True,
                "heartbeatIntervalMillis": 2000,
                "heartbeatTimeoutSecs": 10,
                "electionTimeoutMillis": 10000,
                "catchUpTimeoutMillis": -1,
                "getLastErrorModes": {},
                "getLastErrorDefaults": {"w": 1, "wtimeout": 0},
                "replicaSetId": replica_set.election_id,
            },
        },
        "ok": 1.0,
    }


@COMMANDS.register("replSetInitiate")
def cmd_replSetInitiate(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    _persona(request)
    raise CommandError(ErrorCode.AlreadyInitialized, "already initialized")


# Commands that take a write concern (mongod's supportsWriteConcern); aggregate and mapReduce only
# when they write (see takes_write_concern).
WRITE_CONCERN_COMMANDS = frozenset(
    {
        "insert",
        "update",
        "delete",
        "findAndModify",
        "findandmodify",
        "bulkWrite",
        "create",
        "drop",
        "dropDatabase",
        "createIndexes",
        "dropIndexes",
        "deleteIndexes",
        "collMod",
        "renameCollection",
        "convertToCapped",
        "cloneCollectionAsCapped",
        "applyOps",
        "commitTransaction",
        "abortTransaction",
        "createUser",
        "updateUser",
        "dropUser",
        "dropAllUsersFromDatabase",
        "grantRolesToUser",
        "revokeRolesFromUser",
        "createRole",
        "updateRole",
        "dropRole",
        "dropAllRolesFromDatabase",
        "grantRolesToRole",
        "revokeRolesFromRole",
        "grantPrivilegesToRole",
        "revokePrivilegesFromRole",
    }
)


def takes_write_concern(name: str, cmd: Mapping[str, Any]) -> bool:
    """Does ``cmd`` take a write concern: a write command, an aggregate ending in ``$out`` or
    ``$merge``, a mapReduce writing to a collection (mongod's supportsWriteConcern)?"""
    if name in WRITE_CONCERN_COMMANDS:
        return True
    if name == "aggregate":
        stages = cmd.get("pipeline")
        last = stages[-1] if isinstance(stages, list) and stages else None
        return isinstance(last, Mapping) and ("$out" in last or "$merge" in last)
    if name in ("mapReduce", "mapreduce"):
        out = cmd.get("out")
        return not (isinstance(out, Mapping) and "inline" in out)
    return False


def with_write_concern_error(name: str, cmd: Mapping[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    """``reply`` with the ``writeConcernError`` a one-member replica set reports after running a
    command whose write concern it cannot satisfy (``w`` above one member: 100; an unknown
    mode: 79). As mongod's waitForWriteConcern, the command ran first, whether it succeeded or
    not. A copy: a retryable write's reply is also the one a retry gets."""
    concern = cmd.get("writeConcern")
    if concern is None or "writeConcernError" in reply or not takes_write_concern(name, cmd):
        return reply
    problem = write_concern_error(concern)
    if problem is None:
        return reply
    return {
        **reply,
        "writeConcernError": {"code": problem.code, "codeName": problem.code_name, "errmsg": problem.errmsg},
    }


def write_concern_error(concern: Any) -> CommandError | None:
    """Why a one-member replica set cannot satisfy ``concern`` (None: it can)."""
    if concern is None or not isinstance(concern, Mapping):  # None first: the ABC check is slow
        return None
    w = concern.get("w")
    if isinstance(w, int) and not isinstance(w, bool) and w > 1:
        return CommandError(ErrorCode.UnsatisfiableWriteConcern, "Not enough data-bearing nodes")
    if isinstance(w, str) and w != "majority":
        return CommandError(
            ErrorCode.UnknownReplWriteConcern, f"No write concern mode named '{w}' found in replica set configuration"
        )
    return None


@COMMANDS.register("replSetResizeOplog")
def cmd_replSetResizeOplog(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    """The oplog's bound: ``size`` in megabytes (990 at least, as mongod) and ``minRetentionHours``."""
    _persona(request)
    if request.db != "admin":
        raise CommandError(ErrorCode.Unauthorized, "replSetResizeOplog may only be run against the admin database.")
    oplog = request.engine.storage.oplog
    size = cmd.get("size")
    hours = cmd.get("minRetentionHours")
    if size is None and hours is None:
        raise CommandError(ErrorCode.InvalidOptions, "replSetResizeOplog needs 'size' or 'minRetentionHours'")
    if size is not None:
        if isinstance(size, bool) or not isinstance(size, int | float) or not 990 <= size <= 1024 * 1024:
            raise CommandError(ErrorCode.InvalidOptions, "oplog size in MB must be between 990 and 1PB")
        oplog.size_bytes = int(size * 1024 * 1024)
    if hours is not None:
        if isinstance(hours, bool) or not isinstance(hours, int | float) or hours < 0:
            raise CommandError(ErrorCode.InvalidOptions, "minRetentionHours must be a non-negative number")
        oplog.min_retention_hours = float(hours)
    return {"ok": 1.0}
