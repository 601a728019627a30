"""Covered queries: when an index's keys stand in for its documents.

A key of a btree index that is neither multikey nor lossy decodes to the
exact values of its document's indexed fields: no array ever reached such an
index, and every value decodes back as itself, type and all. With one
exception: a ``null`` key stands for a null *or a missing* field. So the
document rebuilt from a key - ``{field: value}`` for each indexed path -
answers a filter, a projection or a sort that reads only paths at or under
indexed fields exactly as the stored document would, as long as none of the
fields it reads is null in the key. When one is, the stored document is read
instead (:meth:`KeyLayout.document` returns None), so a key never decides
what it cannot tell.

Never key-readable: hashed, text and wildcard indexes, multikey or lossy
indexes, and indexes on positional (``a.0``) or ``$`` paths or on a path and
its prefix (``a`` and ``a.b``), whose rebuilt documents would not have the
stored documents' shape.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from foliodb.engine.catalog import IndexInfo
from foliodb.query.paths import is_index, split

# Top-level operators whose branches are filters on paths.
_LOGICAL = ("$and", "$or", "$nor")


def key_readable(index: IndexInfo) -> bool:
    # A collated index holds sort keys, not strings: mongod fetches too.
    if index.kind != "btree" or index.multikey or index.lossy or index.collator is not None:
        return False
    names = list(index.key)
    for name in names:
        if any(is_index(part) or part.startswith("$") for part in split(name)):
            return False
        if any(other.startswith(name + ".") for other in names):
            return False
    return True


def field_of(fields: list[str], path: str) -> int | None:
    """The position of the indexed field whose key holds ``path``'s value
    (the field itself or a field it lies under), or None."""
    for i, name in enumerate(fields):
        if path == name or path.startswith(name + "."):
            return i
    return None


def filter_paths(filter_spec: Mapping[str, Any] | None) -> list[str] | None:
    """Every path a filter reads, or None when it reads more than paths
    (``$expr``, ``$where``, ``$text``, ``$jsonSchema``...)."""
    out: list[str] = []
    pending = [filter_spec or {}]
    while pending:
        spec = pending.pop()
        for key, value in spec.items():
            if key in _LOGICAL:
                if not isinstance(value, list) or not all(isinstance(b, Mapping) for b in value):
                    return None
                pending.extend(value)
            elif key == "$comment":
                continue
            elif key.startswith("$"):
                return None
            else:
                out.append(key)
    return out


def inclusion_paths(projection: Mapping[str, Any]) -> list[str] | None:
    """The paths a plain inclusion projection keeps (``_id`` unless
    excluded), or None for any other projection."""
    fields: list[str] = []
    keep_id = True
    for name, value in projection.items():
        if not isinstance(value, (bool, int, float)):
            return None  # $slice, $elemMatch, $meta, expressions
        if name == "_id":
            keep_id = bool(value)
        elif not value or name.endswith(".$") or name.startswith("$"):
            return None
        else:
            fields.append(name)
    if not fields and not (keep_id and "_id" in projection):
        return None  # {} or {_id: 0}: no inclusion ({_id: 1} alone is one)
    return ["_id", *fields] if keep_id else fields


@dataclass(frozen=True)
class KeyLayout:
    """How an index's keys rebuild documents for one query."""

    fields: list[str]
    paths: list[tuple[str, ...]]
    # Positions of the fields the query reads: a null key there sends the
    # query to the stored document.
    needed: tuple[int, ...]

    def document(self, values: list[Any]) -> dict[str, Any] | None:
        """The document a key stands for, or None when a field the query
        reads is null in the key (null or missing: only the document knows)."""
        for i in self.needed:
            if values[i] is None:
                return None
        doc: dict[str, Any] = {}
        for parts, value in zip(self.paths, values, strict=True):
            target = doc
            for part in parts[:-1]:
                target = target.setdefault(part, {})
            target[parts[-1]] = value
        return doc


def key_layout(index: IndexInfo, read_paths: Iterable[str]) -> KeyLayout | None:
    """The layout that answers a query reading ``read_paths`` from the keys
    of ``index``, or None when the keys cannot."""
    if not key_readable(index):
        return None
    fields = list(index.key)
    needed: set[int] = set()
    for path in read_paths:
        i = field_of(fields, path)
        if i is None:
            return None
        needed.add(i)
    return KeyLayout(fields, [split(name) for name in fields], tuple(sorted(needed)))
