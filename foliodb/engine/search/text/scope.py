"""``returnScope``: a search over the elements of an ``embeddedDocuments`` field, each returned
as a document of its own.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/query/return-scope/ (8.x: requirements,
behaviour, ``searchRootDocumentId``)

``returnScope: {path}`` names an ``embeddedDocuments`` field whose mapping has a non-empty
``storedSource``; ``returnStoredSource: true`` is required (not for ``$searchMeta``). The
operator runs over that field's elements as it runs over documents inside
``embeddedDocument`` (its paths below ``path``; ``hasAncestor`` and ``hasRoot`` reach the
element's ancestors), so each element is scored, counted, faceted and sorted as a document.
Each returned document is the element's stored fields (``storedSource``: true, every field;
``{include}`` / ``{exclude}``: those paths, relative to the element; no ``_id``), with
``{$meta: "searchRootDocumentId"}`` its document's ``_id``. Errors are mongot's (UnknownError,
8). ``highlight``, ``searchAfter`` and ``searchBefore`` under ``returnScope`` answer
NotImplemented (238).

An element is found again from its entry: a document's entries have consecutive ordinals in
the order :meth:`TextDefinition.analyze` makes them, so an entry's offset from its
document's entry indexes that list (:func:`offsets`), whose ``source`` is the element.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import bson

from foliodb.engine.catalog import CODEC
from foliodb.engine.records import CollectionStore
from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.mapping import TextDefinition
from foliodb.engine.search.text.operators import search_error
from foliodb.engine.search.text.reader import Reader
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.context import Context
from foliodb.query.projection import compile_projection
from foliodb.query.search_query import SearchQuery


def return_scope(query: SearchQuery, definition: TextDefinition) -> str | None:
    """The checked ``returnScope`` path (None without one)."""
    spec = query.return_scope
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise search_error('"returnScope" must be a document')
    for key in spec:
        if key != "path":
            raise search_error(f'"returnScope.{key}" is not a valid field')
    path = spec.get("path")
    if path is None:
        raise search_error('"returnScope.path" is required')
    if not isinstance(path, str):
        raise search_error('"returnScope.path" must be a string')
    stored = definition.embedded_stored(path) if path in definition.embedded_paths() else False
    if stored is False or (isinstance(stored, Mapping) and stored.get("include") == []):
        raise search_error(
            f"returnScope path '{path}' must be indexed as embeddedDocument with a non-empty storedSource definition"
        )
    if not query.meta_only and not query.stored_source:
        raise search_error("Set returnStoredSource to true if returnScope is non-empty")
    for name, given in (("searchAfter", query.after), ("searchBefore", query.before)):
        if given is not None:
            raise CommandError(ErrorCode.NotImplemented, f"{name} with returnScope is not implemented in FolioDB yet")
    return path


def offsets(reader: Reader, ords: Any) -> Any:
    """Each entry's offset from its document's entry (see the module's docstring)."""
    root = np.asarray(ords, dtype=np.int64).copy()
    parent = reader.parent_at[root]
    while (parent >= 0).any():
        up = parent >= 0
        root[up] = parent[up]
        parent = np.where(up, reader.parent_at[np.maximum(root, 0)], -1)
    return np.asarray(ords, dtype=np.int64) - root


def _projection(stored: Any) -> Any:
    if stored is True:
        spec: dict[str, Any] = {}
    elif "include" in stored:
        spec = {p: 1 for p in stored["include"]}
        spec.setdefault("_id", 0)  # an element has no _id of its own unless stored
    else:
        spec = {p: 0 for p in stored["exclude"]}
    return compile_projection(spec, Context(), find=True)


def element_documents(
    store: CollectionStore, definition: TextDefinition, path: str, hits: Iterator[tuple[int, float, int]], at: Any
) -> Iterator[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """(element's stored fields, its metadata, the element alone at its path in a document of
    its own: what highlights read) per hit, in order; ``at`` is each match's offset
    (:func:`offsets`). An element whose document changed since the search is skipped."""
    projection = _projection(definition.embedded_stored(path))
    for rid, score, position in hits:
        data = store.get_raw(rid)
        if data is None:
            continue
        doc = bson.decode(data, CODEC)
        entries = definition.analyze(doc)
        offset = int(at[position])
        source = entries[offset].source if offset < len(entries) and entries[offset].path == path else None
        if source is None:
            continue
        element = projection.apply(dict(source))
        alone: dict[str, Any] = dict(source)
        for part in reversed(path.split(".")):
            alone = {part: alone}
        yield element, {"searchScore": score, "score": score, "searchRootDocumentId": doc.get("_id")}, alone
