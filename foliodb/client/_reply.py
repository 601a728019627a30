"""Turn command replies into pymongo's exceptions, as pymongo does for a
server's replies, so users' ``except`` clauses work unchanged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from pymongo.errors import (
    BulkWriteError,
    CursorNotFound,
    DocumentTooLarge,
    DuplicateKeyError,
    ExecutionTimeout,
    OperationFailure,
    WriteError,
)
from pymongo.helpers_shared import _get_wce_doc, _raise_write_concern_error

from foliodb.commands.diagnostics import MAX_WIRE_VERSION

DUPLICATE_KEY_CODES = (11000, 11001, 12582)
BSON_OBJECT_TOO_LARGE = 10334


def check(reply: Mapping[str, Any], write_concern: bool = True) -> Mapping[str, Any]:
    """Raise the pymongo exception for an error reply; return the reply. A ``writeConcernError``
    of a reply that is ok raises WriteConcernError, as pymongo's collection and database helpers
    do (``parse_write_concern_error``), unless ``write_concern`` is false (a bulk collects them)."""
    if reply.get("ok"):
        if write_concern and "writeConcernError" in reply:
            _raise_write_concern_error(_get_wce_doc(reply))
        return reply
    errmsg = reply.get("errmsg", "")
    code = reply.get("code")
    if code in DUPLICATE_KEY_CODES:
        raise DuplicateKeyError(errmsg, code, reply, MAX_WIRE_VERSION)
    if code == 50:
        raise ExecutionTimeout(errmsg, code, reply, MAX_WIRE_VERSION)
    if code == 43:
        raise CursorNotFound(errmsg, code, reply, MAX_WIRE_VERSION)
    raise OperationFailure(errmsg, code, reply, MAX_WIRE_VERSION)


def check_single_write(reply: Mapping[str, Any]) -> Mapping[str, Any]:
    """For insert_one/update_one/...: the first write error as WriteError."""
    check(reply)
    errors = reply.get("writeErrors")
    if errors:
        raise_write_error(errors[-1])
    if "writeConcernError" in reply:
        # pymongo's: the reply's labels on the error, and WTimeoutError for a write concern timeout.
        _raise_write_concern_error(_get_wce_doc(reply))
    return reply


def raise_write_error(error: Mapping[str, Any]) -> NoReturn:
    code = error.get("code")
    errmsg = error.get("errmsg", "")
    if code in DUPLICATE_KEY_CODES:
        raise DuplicateKeyError(errmsg, code, error, MAX_WIRE_VERSION)
    if code == BSON_OBJECT_TOO_LARGE:
        raise DocumentTooLarge(errmsg)
    raise WriteError(errmsg, code, error, MAX_WIRE_VERSION)


def raise_bulk_error(result: dict[str, Any]) -> NoReturn:
    raise BulkWriteError(result)
