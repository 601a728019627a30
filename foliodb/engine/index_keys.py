"""The index keys of a document, for one index definition.

An index entry's key is the concatenation of the keystring encodings of the
indexed fields' values (complemented for descending fields). A document
yields one key per combination of values (a *multikey* index when a field is
an array); a field it lacks yields ``null``, an empty array ``undefined``.

Entries of a unique index are keyed by the values alone, so SQLite's primary
key enforces uniqueness; other indexes append the record id (8 bytes,
big-endian), which keeps keys distinct and orders equal values by record id.

Two indexed fields may not both reach arrays through different arrays
("cannot index parallel arrays", 171).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from foliodb.errors import CommandError, ErrorCode
from foliodb.query import keystring
from foliodb.query.compare import UNDEFINED
from foliodb.query.paths import MISSING, is_index

UNDEFINED_KEY = bytes([UNDEFINED + 16])
NULL_KEY = keystring.T_NULL


class _EmptyArray:
    """The key value of an empty array (MongoDB indexes it as undefined)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "undefined"


EMPTY_ARRAY = _EmptyArray()


def encode_key_value(value: Any) -> bytes:
    if value is EMPTY_ARRAY:
        return UNDEFINED_KEY
    if value is MISSING:
        return NULL_KEY
    return keystring.encode(value)


def field_values(doc: Any, parts: tuple[str, ...]) -> tuple[list[Any], str | None]:
    """The values a path yields as index keys (MISSING for null keys,
    EMPTY_ARRAY for an empty array) and the path prefix of the array that made
    it multikey (None when no array was crossed)."""
    out: list[Any] = []
    arrays: list[str] = []
    _walk(doc, parts, 0, out, arrays)
    if not out:
        out.append(MISSING)
    return out, (arrays[0] if arrays else None)


def _walk(value: Any, parts: tuple[str, ...], i: int, out: list[Any], arrays: list[str]) -> None:
    if i == len(parts):
        if isinstance(value, list):
            arrays.append(".".join(parts[:i]))
            if not value:
                out.append(EMPTY_ARRAY)
            out.extend(value)
        else:
            out.append(value)
        return
    key = parts[i]
    if isinstance(value, dict):
        _walk(value.get(key, MISSING), parts, i + 1, out, arrays)
    elif isinstance(value, list):
        if is_index(key) and int(key) < len(value):
            _walk(value[int(key)], parts, i + 1, out, arrays)
            return
        arrays.append(".".join(parts[:i]))
        if not value:
            out.append(MISSING)
        for element in value:
            if isinstance(element, dict):
                _walk(element.get(key, MISSING), parts, i + 1, out, arrays)
            else:
                out.append(MISSING)
    else:
        out.append(MISSING)


def document_keys(
    doc: Any, fields: Sequence[tuple[tuple[str, ...], bool]]
) -> tuple[dict[bytes, tuple[Any, ...]], bool]:
    """The value-keys of a document for an index whose fields are
    ``(path parts, descending)``, each with the values that made it, and
    whether the document makes the index multikey."""
    per_field: list[list[tuple[bytes, Any]]] = []
    array_paths: dict[str, str] = {}
    for parts, descending in fields:
        values, array = field_values(doc, parts)
        if array is not None:
            for other_field, other_array in array_paths.items():
                if other_array != array and not (
                    array.startswith(other_array + ".") or other_array.startswith(array + ".")
                ):
                    raise CommandError(
                        ErrorCode.CannotIndexParallelArrays,
                        f"cannot index parallel arrays [{'.'.join(parts)}] [{other_field}]",
                    )
            array_paths[".".join(parts)] = array
        encoded = [(encode_key_value(v), v) for v in values]
        if descending:
            encoded = [(keystring.complement(k), v) for k, v in encoded]
        per_field.append(encoded)
    if len(per_field) == 1:
        return {k: (v,) for k, v in per_field[0]}, bool(array_paths)
    keys = {}
    for combo in itertools.product(*per_field):
        keys[b"".join(k for k, _ in combo)] = tuple(v for _, v in combo)
    return keys, bool(array_paths)


def with_rid(key: bytes, rid: int) -> bytes:
    return key + rid.to_bytes(8, "big")
