"""One index's entries for a document: the keys each kind of index (btree, ``_id``,
text, wildcard, hashed, geo) derives, compiled from the index's definition once,
and the duplicate-key error a unique one reports (mongod's message and fields).

A key here is the value part (the record id not yet appended; a non-unique
index's entry is ``with_rid(key, rid)``), mapped to the values that made it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from foliodb.engine.catalog import IndexInfo
from foliodb.engine.geo_keys import GEO_KINDS, FlatGrid, flat_document_keys, sphere_document_keys
from foliodb.engine.index_keys import EMPTY_ARRAY, document_keys, hashed_document_keys, wildcard_keys
from foliodb.engine.text import TextIndex
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import collation, keystring
from foliodb.query.context import Context
from foliodb.query.filter import compile_filter
from foliodb.query.keystring import is_canonical
from foliodb.query.paths import MISSING, reach
from foliodb.query.render import render_document


class IndexWriter:
    """Maintains one index's entries; compiled from its definition once."""

    def __init__(self, info: IndexInfo, building: bool = False) -> None:
        self.info = info
        # An index being built: a unique-key clash is recorded for the build to
        # fail on, instead of failing the write (see engine.py).
        self.building = building
        self.table = info.table
        self.fields = info.fields
        self.unique = info.unique
        self.sparse = bool(info.spec.get("sparse"))
        partial = info.spec.get("partialFilterExpression")
        # A collated index reads its partial filter, and keys strings, by its collation.
        self.collator = info.collator if info.kind != "text" else None
        self.partial: Callable[..., bool] | None = (
            compile_filter(partial, Context(collator=self.collator)) if partial is not None else None
        )
        self.is_id = info.name == "_id_"
        self.kind = info.kind
        if self.kind == "text":
            self.text = TextIndex.from_spec(info.spec)
        elif self.kind == "wildcard":
            root = next(iter(info.key))
            self.wildcard_root = tuple(root.split(".")[:-1])
            self.wildcard_projection = info.spec.get("wildcardProjection")
        elif self.kind == "hashed":
            self.hashed = [direction == "hashed" for direction in info.key.values()]
        elif self.kind in GEO_KINDS:
            self.geo_kinds = [str(direction) for direction in info.key.values()]
            spec = info.spec
            self.grid = FlatGrid(
                int(spec.get("bits", 26)), float(spec.get("min", -180.0)), float(spec.get("max", 180.0))
            )
        # Set when a document first makes the index multikey; the store
        # records it in the catalog within the same transaction.
        self.mark_multikey = False
        # Set when a key value first does not decode back as itself (2.0,
        # Int64(5)...): the index can no longer cover queries.
        self.mark_lossy = False
        self.insert_sql = f"INSERT INTO {self.table} (key, rid) VALUES (?, ?)"
        self.delete_sql = f"DELETE FROM {self.table} WHERE key = ?"
        # The top-level fields the keys are a function of (None: any field may matter).
        self.top_fields = _top_fields(info, partial)

    def unchanged(self, old: dict[str, Any], new: dict[str, Any]) -> bool:
        """Does ``new`` (an update's result from ``old``) certainly have ``old``'s keys? Yes when each
        field the keys read is the very object it was: an update shares what it leaves alone with
        the old document (copy-on-write) and never mutates it, so the same objects give the same keys."""
        fields = self.top_fields
        if fields is None:
            return False
        for name in fields:
            if old.get(name, MISSING) is not new.get(name, MISSING):
                return False
        return True

    def keys(self, doc: dict[str, Any]) -> dict[bytes, tuple[Any, ...]]:
        """The value keys of a document (the record id not yet appended),
        each with the values that made it; {} when the index skips it."""
        if self.is_id:
            value = doc["_id"]
            if not self.info.lossy and not is_canonical(value):
                self.mark_lossy = True
            if self.collator is not None:
                value = self.collator.transform(value)
            return {keystring.encode(value): (value,)}
        if self.partial is not None and not self.partial(doc):
            return {}
        if self.collator is not None:
            doc = self.collator.transform(doc)
        if self.kind != "btree":
            return self._special_keys(doc)
        if self.sparse and all(_absent(doc, parts) for parts, _ in self.fields):
            return {}
        keys, multikey = document_keys(doc, self.fields)
        if multikey and not self.info.multikey:
            self.mark_multikey = True
        if not self.info.lossy and not all(
            is_canonical(v) for values in keys.values() for v in values if v is not MISSING and v is not EMPTY_ARRAY
        ):
            self.mark_lossy = True
        return keys

    def _special_keys(self, doc: dict[str, Any]) -> dict[bytes, tuple[Any, ...]]:
        if self.kind == "text":
            # Text and wildcard indexes are sparse by nature: no terms, no entries. An entry is the
            # prefix values, the term, its score in the document and the suffix values (mongod's
            # FTSIndexFormat: a unique text index refuses two documents equal in all four).
            found = self.text.term_scores(doc)
            if not found:
                return {}
            before, after = self.text.extra_keys(doc) if self.text.before or self.text.after else (b"", b"")
            encode = keystring.encode
            return {before + encode(term) + encode(score) + after: (term,) for term, score in found.items()}
        if self.kind == "wildcard":
            keys = wildcard_keys(doc, self.wildcard_root, self.wildcard_projection)
            if keys and not self.info.multikey:
                self.mark_multikey = True  # several paths per document
            return keys
        if self.kind in GEO_KINDS:
            # Geo indexes are sparse by nature: no geometry, no entries.
            if self.kind == "2dsphere":
                keys = sphere_document_keys(doc, self.fields, self.geo_kinds)
            else:
                keys = flat_document_keys(doc, self.fields, self.geo_kinds, self.grid)
            if len(keys) > 1 and not self.info.multikey:
                self.mark_multikey = True
            return keys
        if self.sparse and all(_absent(doc, parts) for parts, _ in self.fields):
            return {}
        return hashed_document_keys(doc, self.fields, self.hashed)

    def duplicate_error(self, ns: str, values: tuple[Any, ...]) -> CommandError:
        key_pattern = dict(self.info.key)
        key_value = {
            name: (None if v is MISSING or v is EMPTY_ARRAY else v)
            for name, v in zip(key_pattern, values, strict=False)
        }
        if self.collator is None:
            shown = render_document(key_value)
            return CommandError(
                ErrorCode.DuplicateKey,
                f"E11000 duplicate key error collection: {ns} index: {self.info.name} dup key: {shown}",
                keyPattern=key_pattern,
                keyValue=key_value,
            )
        # A collated index knows its strings only as sort keys: mongod shows them in hex.
        key_value = {name: _collation_key(v) for name, v in key_value.items()}
        collation = render_document(self.collator.spec)
        return CommandError(
            ErrorCode.DuplicateKey,
            f"E11000 duplicate key error collection: {ns} index: {self.info.name} collation: {collation} "
            f"dup key: {render_document(key_value)}",
            keyPattern=key_pattern,
            keyValue=key_value,
            collation=dict(self.collator.spec),
        )


def _top_fields(info: IndexInfo, partial: Any) -> frozenset[str] | None:
    """The top-level fields an index's keys depend on: its key paths' first parts, those of its
    partial filter and, for a text index, its weighted paths' prefixes and language override; None when
    that is the whole document (a wildcard over the root, a ``$**`` text index, a partial filter
    this does not read)."""
    names: set[str] = set()
    for name in info.key:
        if name == "$**" or (info.kind == "text" and name in ("_fts", "_ftsx")):
            continue
        names.add(name.split(".", 1)[0])
    if info.kind == "wildcard":
        if "$**" in info.key or info.spec.get("wildcardProjection"):
            return None
    elif info.kind == "text":
        weights = info.spec.get("weights", {})
        if "$**" in weights:
            return None
        for weighted in map(str, weights):
            # Every prefix: the text walk also matches a top-level field whose name holds dots.
            parts = weighted.split(".")
            names.update(".".join(parts[:n]) for n in range(1, len(parts) + 1))
        names.add(str(info.spec.get("language_override", "language")))
    if partial is not None:
        found = _filter_fields(partial)
        if found is None:
            return None
        names.update(found)
    return frozenset(names)


_LOGICAL = frozenset({"$and", "$or", "$nor"})


def _filter_fields(spec: Any) -> set[str] | None:
    """The top-level fields a partial filter reads (its field names' first parts, through
    ``$and``/``$or``/``$nor``); None for any other top-level operator."""
    if not isinstance(spec, dict):
        return None
    names: set[str] = set()
    for name, value in spec.items():
        if not name.startswith("$"):
            names.add(name.split(".", 1)[0])
            continue
        if name not in _LOGICAL or not isinstance(value, list):
            return None
        for clause in value:
            found = _filter_fields(clause)
            if found is None:
                return None
            names.update(found)
    return names


def _collation_key(value: Any) -> Any:
    """A transformed string (its sort key as latin-1) as mongod prints a collation key."""
    return collation.shown_key(value) if isinstance(value, str) else value


def _absent(doc: dict[str, Any], parts: tuple[str, ...]) -> bool:
    """Does the path reach nothing (what a sparse index leaves out)?"""
    return all(value is MISSING for value, _ in reach(doc, parts, expand=False))
