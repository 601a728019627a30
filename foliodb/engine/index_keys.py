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

from bson import DBRef

from foliodb.errors import CommandError, ErrorCode
from foliodb.query import keystring
from foliodb.query.compare import UNDEFINED
from foliodb.query.hashing import hash64
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
    if isinstance(value, DBRef):
        value = value.as_doc()  # a DBRef is stored as {$ref, $id, $db}
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
            if isinstance(element, DBRef):
                element = element.as_doc()
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


def hashed_document_keys(
    doc: Any, fields: Sequence[tuple[tuple[str, ...], bool]], hashed: Sequence[bool]
) -> dict[bytes, tuple[Any, ...]]:
    """Keys of an index with a hashed field: that field's value is replaced
    by its 64-bit hash (arrays cannot be hashed, as in MongoDB)."""
    per_field: list[list[tuple[bytes, Any]]] = []
    for (parts, descending), is_hashed in zip(fields, hashed, strict=True):
        values, array = field_values(doc, parts)
        if is_hashed:
            if array is not None:
                raise CommandError(16766, "Error: hashed indexes do not currently support array values")
            value = values[0]
            encoded = [(keystring.encode(hash64(None if value is MISSING else value)), value)]
        else:
            encoded = [(encode_key_value(v), v) for v in values]
        if descending:
            encoded = [(keystring.complement(k), v) for k, v in encoded]
        per_field.append(encoded)
    keys = {}
    for combo in itertools.product(*per_field):
        keys[b"".join(k for k, _ in combo)] = tuple(v for _, v in combo)
    return keys


def wildcard_keys(doc: Any, root: tuple[str, ...], projection: Any) -> dict[bytes, tuple[Any, ...]]:
    """Keys of a wildcard index: ``encode(path) + encode(value)`` for every
    scalar (or empty array/document) under ``root``, arrays expanded, as
    filtered by the index's ``wildcardProjection``."""
    keys: dict[bytes, tuple[Any, ...]] = {}
    start = doc
    for name in root:
        start = start.get(name, MISSING) if isinstance(start, dict) else MISSING
    if start is MISSING:
        return keys
    _wildcard_walk(start, ".".join(root), keys, projection)
    return keys


def _wildcard_walk(value: Any, path: str, keys: dict[bytes, tuple[Any, ...]], projection: Any) -> None:
    if isinstance(value, dict) and value:
        for name, item in value.items():
            child = f"{path}.{name}" if path else name
            if path == "" and name == "_id" and not wildcard_projected(child, projection, default=False):
                continue
            if wildcard_projected(child, projection):
                _wildcard_walk(item, child, keys, projection)
        return
    if isinstance(value, list) and value:
        for item in value:
            if isinstance(item, list):
                keys[keystring.encode(path) + keystring.encode(item)] = (path, item)
            else:
                _wildcard_walk(item, path, keys, projection)
        return
    if path:
        keys[keystring.encode(path) + encode_key_value(value)] = (path, value)


def wildcard_projected(path: str, projection: Any, default: bool = True) -> bool:
    """Is ``path`` (or a part of it) kept by a wildcardProjection?"""
    if not projection:
        return default
    inclusion = any(v for k, v in projection.items() if k != "_id")
    for spec_path, flag in projection.items():
        if path == spec_path or path.startswith(spec_path + ".") or spec_path.startswith(path + "."):
            return bool(flag)
    return not inclusion and default
