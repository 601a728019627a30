"""Declarative checks of command fields, producing MongoDB's parse errors.

``field(cmd, "filter", "object", command="find")`` returns the value (or the
default) after checking its BSON type, raising TypeMismatch (14) with
MongoDB's message "BSON field 'find.filter' is the wrong type 'int', expected
type 'object'" otherwise.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Mapping
from typing import Any

from bson import Decimal128

from foliodb.errors import CommandError, ErrorCode
from foliodb.query import bsontypes

_KINDS: dict[str, tuple[str, ...]] = {
    "object": ("object",),
    "array": ("array",),
    "string": ("string",),
    "bool": ("bool", "int", "long", "double", "decimal"),
    "number": ("int", "long", "double", "decimal"),
    "integer": ("int", "long", "double", "decimal"),
    "objectOrArray": ("object", "array"),
}


def field(cmd: Mapping[str, Any], name: str, kind: str, command: str, default: Any = None) -> Any:
    if name not in cmd:
        return default
    value = cmd[name]
    if value is None:
        return default
    actual = bsontypes.type_name(value)
    if actual not in _KINDS[kind]:
        expected = {
            "bool": "bool",
            "integer": "[long, int, decimal, double]",
            "number": "[long, int, decimal, double]",
            "objectOrArray": "[object, array]",
        }.get(kind, kind)
        raise CommandError(
            ErrorCode.TypeMismatch,
            f"BSON field '{command}.{name}' is the wrong type '{actual}', expected type '{expected}'",
        )
    if kind == "bool":
        return bool(value)
    if kind == "integer":
        return as_int(value, f"{command}.{name}")
    return value


def admin_only(db: str, command: str) -> None:
    """mongod's adminOnly(): the command runs on the ``admin`` database only."""
    if db != "admin":
        raise CommandError(ErrorCode.Unauthorized, f"{command} may only be run against the admin database.")


def required(cmd: Mapping[str, Any], name: str, kind: str, command: str) -> Any:
    """:func:`field` for a field the command cannot do without."""
    value = field(cmd, name, kind, command)
    if value is None:
        raise CommandError(ErrorCode.FailedToParse, f"BSON field '{command}.{name}' is missing but a required field")
    return value


def as_int(value: Any, what: str) -> int:
    if isinstance(value, Decimal128):
        value = value.to_decimal()
    if isinstance(value, decimal.Decimal):
        finite = value.is_finite()
    else:
        finite = not isinstance(value, float) or math.isfinite(value)
    if not finite:
        raise CommandError(ErrorCode.BadValue, f"{what} must be a finite number")
    number = int(value)
    if isinstance(value, float | decimal.Decimal) and number != value:
        raise CommandError(ErrorCode.BadValue, f"{what} must be a whole number, not {value}")
    # safeNumberLong: a double or decimal past the long range saturates (a Decimal128 of 6,145
    # digits would otherwise reach error messages whole: past Python's int-to-str limit).
    return min(max(number, -(2**63)), 2**63 - 1)


MAX_TIME_MS = 2**31 - 1  # the largest maxTimeMS mongod takes (INT_MAX)


def _safe_long(number: float) -> int:
    """BSONElement::safeNumberLong of a double: NaN is 0, the long range clamps, the rest truncates."""
    if math.isnan(number):
        return 0
    if number >= 2.0**63:
        return 2**63 - 1
    if number < -(2.0**63):
        return -(2**63)
    return int(number)


def max_time_ms(value: Any) -> int:
    """A command's ``maxTimeMS``, as mongod's parseMaxTimeMS (max_time_ms_parser.cpp): a number
    within [0, 2^31-1] (a double as its safeNumberLong), and a double must be integral."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal128):
        raise CommandError(ErrorCode.BadValue, "maxTimeMS must be a number")
    number = float(value.to_decimal()) if isinstance(value, Decimal128) else value
    whole = _safe_long(number) if isinstance(number, float) else int(number)
    if whole < 0 or whole > MAX_TIME_MS:
        raise CommandError(ErrorCode.BadValue, f"{whole} value for maxTimeMS is out of range [0, {MAX_TIME_MS}]")
    if isinstance(value, float) and not value.is_integer():  # NaN too, as mongod's floor(x) != x
        raise CommandError(ErrorCode.BadValue, "maxTimeMS has non-integral value")
    return whole


def non_negative(value: int, what: str) -> int:
    if value < 0:
        raise CommandError(ErrorCode.BadValue, f"{what} value must be non-negative, but received: {value}")
    return value


# Fields any command may carry (sessions, transactions, API versioning, read preference, and
# the internal ones of a cluster): never "unknown". mongod's generic_argument.idl.
GENERIC_FIELDS = frozenset(
    {
        "$db",
        "lsid",
        "$readPreference",
        "$clusterTime",
        "txnNumber",
        "autocommit",
        "startTransaction",
        "stmtId",
        "clientOperationKey",
        "apiVersion",
        "apiStrict",
        "apiDeprecationErrors",
        "comment",
        "maxTimeMS",
        "readConcern",
        "writeConcern",
        "$audit",
        "$client",
        "$configServerState",
        "allowImplicitCollectionCreation",
        "$oplogQueryData",
        "$queryOptions",
        "$replData",
        "databaseVersion",
        "shardVersion",
        "tracking_info",
        "coordinator",
        "maxTimeMSOpOnly",
        "txnRetryCounter",
        "mayBypassWriteBlocking",
        "$configTime",
        "$topologyTime",
        "$tenant",
        "expectPrefix",
    }
)
ANY = "any"


def parse(cmd: Mapping[str, Any], command: str, schema: Mapping[str, str]) -> dict[str, Any]:
    """The command's fields by the ``schema`` (name -> kind, or ``ANY``),
    type-checked, in one pass; an unknown field is MongoDB's error 40415."""
    out: dict[str, Any] = {}
    first = True
    for name, value in cmd.items():
        if first:
            first = False
            continue
        kind = schema.get(name)
        if kind is None:
            if name in GENERIC_FIELDS:
                continue
            raise CommandError(40415, f"BSON field '{command}.{name}' is an unknown field.")
        if value is None:
            continue
        out[name] = value if kind == ANY else field(cmd, name, kind, command)
    return out


MAX_WRITE_BATCH_SIZE = 100_000  # mongod's maxWriteBatchSize (hello reports it)


def write_batch(items: list[Any]) -> list[Any]:
    """A write command's statements: between 1 and 100,000 of them, as mongod's
    write command parser requires (InvalidLength, 16)."""
    if not 1 <= len(items) <= MAX_WRITE_BATCH_SIZE:
        raise CommandError(
            ErrorCode.InvalidLength,
            f"Write batch sizes must be between 1 and {MAX_WRITE_BATCH_SIZE}. Got {len(items)} operations.",
        )
    return items


_READ_CONCERN_FIELDS = frozenset({"level", "afterOpTime", "afterClusterTime", "atClusterTime", "provenance"})
_READ_CONCERN_LEVELS = frozenset({"local", "majority", "linearizable", "available", "snapshot"})


def read_concern(cmd: Mapping[str, Any], replica_set: bool = True) -> None:
    """Check a read command's ``readConcern``. FolioDB is one node: ``local``,
    ``available``, ``majority`` and ``linearizable`` read the same newest
    data; ``snapshot`` reads a snapshot (the executor binds it, see
    :mod:`foliodb.commands.sessions`); cluster times are accepted by a
    replica set member, while a standalone refuses ``snapshot``,
    ``linearizable`` and cluster times as a standalone mongod does.

    Manual: https://www.mongodb.com/docs/manual/reference/read-concern/"""
    value = cmd.get("readConcern")
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise CommandError(
            ErrorCode.TypeMismatch,
            f"BSON field 'readConcern' is the wrong type '{bsontypes.type_name(value)}', expected type 'object'",
        )
    for name in value:
        if name not in _READ_CONCERN_FIELDS:
            raise CommandError(ErrorCode.InvalidOptions, f"Unrecognized option in readConcern: {name}")
    level = value.get("level")
    if level is not None and level not in _READ_CONCERN_LEVELS:
        raise CommandError(
            ErrorCode.FailedToParse,
            "readConcern.level must be either 'local', 'majority', 'linearizable', 'available', or 'snapshot'",
        )
    if "afterOpTime" in value:
        raise CommandError(ErrorCode.InvalidOptions, "afterOpTime is an internal field of readConcern")
    if "atClusterTime" in value and level != "snapshot":
        raise CommandError(ErrorCode.InvalidOptions, "readConcern.atClusterTime is only valid with level 'snapshot'")
    if replica_set:
        return
    if level == "snapshot":
        raise CommandError(
            ErrorCode.NotAReplicaSet, "node needs to be a replica set member to use readConcern: snapshot"
        )
    if level == "linearizable":
        raise CommandError(ErrorCode.NotAReplicaSet, "node needs to be a replica set member to use read concern")
    for name in ("afterClusterTime", "atClusterTime"):
        if name in value:
            raise CommandError(
                ErrorCode.IllegalOperation, f"Cannot specify {name} readConcern without replication enabled"
            )
