"""pymongo's argument forms as command fields.

pymongo accepts a sort or an index as a key, a list of (key, direction)
pairs or a mapping, and a projection as a mapping or a list of names; the
commands take documents. An option the caller did not give (None) is left
out of the command, as pymongo leaves it out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ASCENDING = 1


def sort_spec(key_or_list: Any, direction: Any = None) -> dict[str, Any]:
    """A sort document from pymongo's accepted forms: a key and a
    direction, a list of (key, direction) pairs, or a mapping."""
    if isinstance(key_or_list, str):
        return {key_or_list: ASCENDING if direction is None else _direction(direction)}
    if isinstance(key_or_list, Mapping):
        return {key: _direction(value) for key, value in key_or_list.items()}
    if isinstance(key_or_list, (list, tuple)):
        out: dict[str, Any] = {}
        for item in key_or_list:
            if isinstance(item, str):
                out[item] = ASCENDING
            else:
                key, value = item
                out[key] = _direction(value)
        return out
    raise TypeError("first item in each key pair must be an instance of str")


def _direction(value: Any) -> Any:
    """A direction as BSON carries it: a subclass of int (an ODM's ``SortDirection(int, Enum)``)
    is an int on the wire, and so it is here."""
    if isinstance(value, int) and value.__class__ is not int and value.__class__ is not bool:
        return int(value)
    return value


def index_spec(hint: Any) -> Any:
    """A hint: an index name as it is, an index key pattern as a document."""
    if hint is None or isinstance(hint, str):
        return hint
    return sort_spec(hint)


def projection_doc(projection: Any) -> dict[str, Any] | None:
    if projection is None:
        return None
    if isinstance(projection, Mapping):
        return dict(projection)
    if isinstance(projection, (list, tuple, set, frozenset)):
        if not all(isinstance(p, str) for p in projection):
            raise TypeError("projection must be a list of key names")
        return dict.fromkeys(projection, 1) or {"_id": 1}
    raise TypeError("projection must be an instance of dict, a list, or None")


def command_doc(cmd: dict[str, Any], extra: Mapping[str, Any] | None = None, **optional: Any) -> dict[str, Any]:
    """``cmd`` with the ``optional`` fields that are not None, then the
    caller's ``extra`` keyword arguments, passed through as pymongo passes
    them."""
    cmd.update((key, value) for key, value in optional.items() if value is not None)
    if extra:
        cmd.update(extra)
    return cmd


def statement(
    fields: dict[str, Any],
    upsert: bool | None = None,
    collation: Any = None,
    hint: Any = None,
    sort: Any = None,
    array_filters: Any = None,
) -> dict[str, Any]:
    """An update or delete statement: ``fields`` (the filter, modifications
    and multi/limit, whose names differ between the update/delete commands
    and bulkWrite) and the options given, which both spell alike."""
    return command_doc(
        fields,
        upsert=upsert,
        collation=collation,
        hint=index_spec(hint),
        sort=None if sort is None else sort_spec(sort),
        arrayFilters=array_filters,
    )


def validate_boolean(option: str, value: Any) -> None:
    """pymongo's check of a boolean option (its TypeError message)."""
    if not isinstance(value, bool):
        raise TypeError(f"{option} must be True or False, was: {option}={value!r}")
