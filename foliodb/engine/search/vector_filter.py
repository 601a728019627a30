"""The ``filter`` of ``$vectorSearch``: the MQL subset MongoDB Vector Search allows.

Operators ``$eq $ne $gt $gte $lt $lte $in $nin $exists`` on fields, ``$not``
around one of them, and ``$and``/``$or`` of such filters; values booleans,
numbers, strings, dates, ObjectIds, UUIDs and null (arrays of them for
``$in``/``$nin``). Every field must be indexed with ``type: "filter"`` in the
index definition, else the query fails as MongoDB's does ("Path 'x' needs to
be indexed as filter"). The checked filter is then compiled by the ordinary
filter compiler (:func:`foliodb.query.filter.compile_filter`), so it matches
exactly as ``find`` would.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Collection, Mapping
from typing import Any

from bson import Decimal128, Int64, ObjectId
from bson.binary import Binary

from foliodb.errors import CommandError, ErrorCode
from foliodb.query.bsontypes import type_name
from foliodb.query.filter import compile_filter

_FIELD_OPS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$not"})
_SCALARS = (bool, int, float, str, datetime.datetime, ObjectId, uuid.UUID, Int64, Decimal128)


def _error(message: str) -> CommandError:
    # mongot's query errors reach the client as mongod forwards them: UnknownError (8), the
    # message prefixed as an aggregation's executor error.
    return CommandError(ErrorCode.UnknownError, f"PlanExecutor error during aggregation :: caused by :: {message}")


def _scalar(value: Any, op: str) -> None:
    if value is None or isinstance(value, _SCALARS):
        return
    if isinstance(value, Binary) and value.subtype in (3, 4):
        return
    raise _error(f"Operand type is not supported for {op}: {type_name(value)}")


def _field(path: str, spec: Any, filters: Collection[str]) -> None:
    if path not in filters:
        raise _error(f"Path '{path}' needs to be indexed as filter")
    if not (isinstance(spec, Mapping) and spec and all(str(k).startswith("$") for k in spec)):
        _scalar(spec, "$eq")
        return
    for op, value in spec.items():
        if op not in _FIELD_OPS:
            raise _error(f"Operator {op} is not supported in a $vectorSearch filter")
        if op == "$not":
            if not isinstance(value, Mapping) or not value:
                raise _error("$not requires a document of operators")
            _field(path, value, filters)
        elif op in ("$in", "$nin"):
            if not isinstance(value, list):
                raise _error(f"{op} requires an array")
            for item in value:
                _scalar(item, op)
        elif op == "$exists":
            if not isinstance(value, bool):
                raise _error("$exists requires a boolean")
        else:
            _scalar(value, op)


def _check(spec: Any, filters: Collection[str]) -> None:
    if not isinstance(spec, Mapping):
        raise CommandError(
            ErrorCode.TypeMismatch, f'"$vectorSearch.filter" must be a document, found {type_name(spec)}'
        )
    for key, value in spec.items():
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise _error(f"{key} requires a non-empty array")
            for clause in value:
                _check(clause, filters)
        elif str(key).startswith("$"):
            raise _error(f"Operator {key} is not supported in a $vectorSearch filter")
        else:
            _field(str(key), value, filters)


def compile_vector_filter(spec: Any, filters: Collection[str]) -> Callable[..., bool]:
    """Check a ``$vectorSearch`` filter against the index's filter paths; its matcher."""
    _check(spec, filters)
    return compile_filter(spec)
