"""Running a ``$vectorSearch``: one snapshot, the index caught up to it.

:func:`vector_search` answers from the reader's own view - its snapshot, and
in a multi-document transaction that transaction's writes laid over it - so a
search agrees with a find run at the same moment:

1. The index's state (:mod:`foliodb.engine.search.state`) is caught up to
   the snapshot's newest change-log entry, reading the changed documents in
   that snapshot. Documents the state describes differently from this view -
   changed after an older snapshot, or written by the running transaction -
   are *dirty*: left out of the state's answer and scored from the view's own
   documents.
2. Candidates: with ``exact``, every indexed vector; else the HNSW graph's
   ``numCandidates`` nearest (more while the filter rejects them) plus every
   row the graph has not absorbed yet. When the vectors that pass the filter,
   or all of them, are few (at most ``numCandidates``, or
   :data:`EXACT_BELOW` with a filter), they are all scored exactly instead: as
   fast, and exact. Every candidate is rescored exactly from its float32 row.
3. The ``limit`` best by score, ties by ``_id`` (BSON order), each fetched
   from the view and given ``{$meta: "vectorSearchScore"}``.

An index still building answers by an exact scan of the view.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import bson

from foliodb.engine.catalog import CODEC
from foliodb.engine.records import CollectionStore
from foliodb.engine.search.catalog import SearchIndexInfo
from foliodb.engine.search.columns import VectorColumn
from foliodb.engine.search.definition import VectorDefinition, VectorField
from foliodb.engine.search.manager import SearchIndexes, newest_seq, read_changes
from foliodb.engine.search.numeric import np, require
from foliodb.engine.search.state import VectorState
from foliodb.engine.search.vector_filter import compile_vector_filter
from foliodb.engine.search.vectors import as_vector, at_path, prepared, query_row, scores
from foliodb.errors import CommandError, ErrorCode
from foliodb.interrupt import check
from foliodb.query import compare as cmp
from foliodb.query import metadata
from foliodb.query.vector_query import VectorQuery

# With a filter, when at most this many indexed documents pass it, they are scored exactly.
EXACT_BELOW = 4096


@dataclass(slots=True)
class Explained:
    """What a search did, for explain."""

    index: str
    status: str = ""
    method: str = ""  # "ann", "exact", "exact (few candidates)", "exact scan (index building)"
    candidates: int = 0
    dirty: int = 0
    pending: int = 0
    returned: int = 0


def _index_of(info_indexes: dict[str, SearchIndexInfo], name: str) -> SearchIndexInfo | None:
    index = info_indexes.get(name)
    return index if index is not None and index.type == "vectorSearch" else None


def _vector_field(definition: VectorDefinition, path: str) -> VectorField:
    field = definition.vector(path)
    if field is None:
        raise CommandError(
            ErrorCode.UnknownError,
            f"PlanExecutor error during aggregation :: caused by :: Path '{path}' needs to be indexed as vector",
        )
    return field


def vector_search(
    search: SearchIndexes, store: CollectionStore | None, query: VectorQuery, explained: Explained | None = None
) -> list[dict[str, Any]]:
    """The documents a ``$vectorSearch`` returns, each with its score in its metadata.

    A collection or index that does not exist gives no documents, as in MongoDB."""
    explained = explained if explained is not None else Explained(query.index)
    if store is None:
        return []
    index = _index_of(store.info.search_indexes, query.index)
    if index is None:
        return []
    require()
    search.used(index)
    definition = index.parsed
    assert isinstance(definition, VectorDefinition)
    field = _vector_field(definition, query.path)
    row = query_row(query.query_vector, field.dimensions, field.similarity, query.path)
    matcher = compile_vector_filter(query.filter, definition.filters) if query.filter is not None else None
    explained.status = search.status(index)
    state = search.ready_state(index)
    if not isinstance(state, VectorState):
        explained.method = "exact scan (index building)"
        found = _scan(store, field, row, matcher)
    else:
        found = _from_state(store, state, field, row, matcher, query, explained)
    return _results(store, found, query.limit, explained)


def _scan(store: CollectionStore, field: VectorField, row: Any, matcher: Callable[..., bool] | None) -> list[Any]:
    parts = tuple(field.path.split("."))
    rids, rows = [], []
    for n, (rid, data) in enumerate(store.scan()):
        if not n % 256:
            check()
        doc = bson.decode(data, CODEC)
        vector = prepared(as_vector(at_path(doc, parts)), field.dimensions, field.similarity)
        if vector is not None and (matcher is None or matcher(doc)):
            rids.append(rid)
            rows.append(vector)
    return list(zip(rids, scores(np.asarray(rows), row, field.similarity).tolist(), strict=True))


def _from_state(
    store: CollectionStore,
    state: VectorState,
    field: VectorField,
    row: Any,
    matcher: Callable[..., bool] | None,
    query: VectorQuery,
    explained: Explained,
) -> list[Any]:
    info = store.info
    view = store.storage.view()
    with state.lock:
        newest = newest_seq(view.conn, info.id)
        if newest > state.watermark:
            entries, changed = read_changes(view.conn, info, state.watermark)
            state.catch_up(entries, state.prepare(changed), newest)
        dirty = state.changed_since(newest)
        if dirty is None:  # a snapshot older than the state remembers
            explained.method = "exact scan (snapshot older than the index's history)"
            return _scan(store, field, row, matcher)
        txn = view.overlay
        overlay = txn.overlay_of(info.id) if txn is not None else None
        if overlay is not None:
            dirty |= set(overlay.rows)
        column = state.columns[field.path]
        allowed = _allowed(state, matcher, query.filter) if matcher is not None else None
        explained.pending = len(column.pending)
        found = _candidates(column, row, allowed, dirty, query, explained)
    explained.dirty = len(dirty)
    found.extend(_dirty(store, dirty, field, row, matcher))
    return found


def _allowed(state: VectorState, matcher: Callable[..., bool], spec: Any) -> frozenset[int]:
    """The indexed documents passing the filter (cached until the state changes)."""
    key = bson.encode({"f": spec}, codec_options=CODEC)
    cached = state.allowed_cache.get(key)
    if cached is not None and cached[0] == state.watermark:
        return cached[1]
    passing = frozenset(rid for rid, doc in state.filter_docs.items() if matcher(doc))
    if len(state.allowed_cache) > 64:
        state.allowed_cache.clear()
    state.allowed_cache[key] = (state.watermark, passing)
    return passing


def _candidates(
    column: VectorColumn,
    row: Any,
    allowed: frozenset[int] | None,
    dirty: set[int],
    query: VectorQuery,
    explained: Explained,
) -> list[Any]:
    """(rid, score) of the state's candidates, dirty documents left out."""
    wanted = query.num_candidates or 0
    if query.exact or len(column) <= wanted or (allowed is not None and len(allowed) <= max(wanted, EXACT_BELOW)):
        explained.method = "exact" if query.exact else "exact (few candidates)"
        rids, values = column.best(row, query.limit, allowed, dirty)
        out = list(zip(rids, values.tolist(), strict=True))
        explained.candidates = len(out)
        return out
    explained.method = "ann"
    if allowed is None and not dirty:  # nothing to leave out (the usual search)
        chosen = column.candidates(row, wanted)
        chosen.extend(column.pending)
    else:
        keep: Callable[[int], bool] = (
            (lambda rid: rid not in dirty) if allowed is None else (lambda rid: rid in allowed and rid not in dirty)
        )
        count, graph_size = wanted, len(column.graph)
        while True:
            chosen = [rid for rid in column.candidates(row, count) if keep(rid)]
            if len(chosen) >= wanted or count >= graph_size:
                break
            count *= 4  # the filter or dirty documents took some: look further
        chosen.extend(rid for rid in column.pending if keep(rid))
    explained.candidates = len(chosen)
    rids, values = column.exact(row, chosen, query.limit)
    return list(zip(rids, values.tolist(), strict=True))


def _dirty(
    store: CollectionStore, rids: Iterable[int], field: VectorField, row: Any, matcher: Callable[..., bool] | None
) -> list[Any]:
    """(rid, score) of the dirty documents as this view holds them."""
    parts = tuple(field.path.split("."))
    out = []
    for rid in rids:
        data = store.get_raw(rid)
        if data is None:
            continue
        doc = bson.decode(data, CODEC)
        vector = prepared(as_vector(at_path(doc, parts)), field.dimensions, field.similarity)
        if vector is not None and (matcher is None or matcher(doc)):
            out.append((rid, float(scores(vector[None, :], row, field.similarity)[0])))
    return out


def _best_first(a: tuple[float, dict[str, Any]], b: tuple[float, dict[str, Any]]) -> int:
    """Higher scores first; equal scores by ``_id`` in BSON order."""
    if a[0] != b[0]:
        return -1 if a[0] > b[0] else 1
    return cmp.compare(a[1].get("_id"), b[1].get("_id"))


def _results(store: CollectionStore, found: list[Any], limit: int, explained: Explained) -> list[dict[str, Any]]:
    found.sort(key=lambda pair: -pair[1])
    if len(found) > limit:
        cut = found[limit - 1][1]
        found = [pair for pair in found if pair[1] >= cut]  # the limit, with every tie at its edge
    picked: list[tuple[float, dict[str, Any]]] = []
    for rid, score in found:
        data = store.get_raw(rid)
        if data is not None:
            picked.append((score, bson.decode(data, CODEC)))
    picked.sort(key=functools.cmp_to_key(_best_first))
    out = []
    for score, doc in picked[:limit]:
        doc[metadata.FIELD] = {"vectorSearchScore": score}
        out.append(doc)
    explained.returned = len(out)
    return out
