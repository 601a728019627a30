"""Running a ``$search`` / ``$searchMeta``: one snapshot, the index caught up to it.

As :mod:`foliodb.engine.search.vector_search` does, :func:`text_search` answers from the
reader's own view - its snapshot and, in a transaction, that transaction's writes:

1. the index's state is caught up to the snapshot's newest change-log entry (reading the
   changed documents in that snapshot); documents it describes differently from this view
   (changed after an older snapshot, or written by the running transaction) are left out of
   it and analyzed again from the view's own versions (a :class:`Reader`'s overlay), so
   matches *and* BM25 statistics are the view's;
2. the operator runs (under the state's lock: the mutable segment may change after it);
   the count, the facets and the order (score, or ``sort``) are taken from its hits;
3. documents are fetched from the view lazily, best first, each with ``searchScore`` (a
   float32, as Lucene's), and ``searchHighlights`` / ``searchScoreDetails`` when asked
   (under ``returnScope``, the matching elements instead: :mod:`.scope`).

An index still ``BUILDING``, or a snapshot older than the index's history, is answered by
an index built on the spot from the view's documents (slow, never wrong).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import bson

from foliodb.engine.catalog import CODEC
from foliodb.engine.records import CollectionStore
from foliodb.engine.search.catalog import SearchIndexInfo
from foliodb.engine.search.manager import SearchIndexes, newest_seq, read_changes
from foliodb.engine.search.numeric import np, require
from foliodb.engine.search.text.collect import count_document, facet_document
from foliodb.engine.search.text.highlight import highlights
from foliodb.engine.search.text.index import TextState
from foliodb.engine.search.text.mapping import TextDefinition
from foliodb.engine.search.text.operators import Run, all_roots, compile_operator, knn, scoped
from foliodb.engine.search.text.operators.roots import check_roots
from foliodb.engine.search.text.paginate import Pager
from foliodb.engine.search.text.reader import Reader
from foliodb.engine.search.text.scope import element_documents, offsets, return_scope
from foliodb.interrupt import check
from foliodb.query import metadata
from foliodb.query.context import Context
from foliodb.query.projection import compile_projection
from foliodb.query.search_query import SearchQuery

FIRST_SORT = 256  # the best hits ordered first; the rest only if the cursor reads that far


@dataclass(slots=True)
class Explained:
    """What a search did, for explain."""

    index: str
    status: str = ""
    method: str = ""
    segments: int = 0
    changed: int = 0
    matched: int = 0
    highlight: dict[str, set[str]] = field(default_factory=dict)


@dataclass(slots=True)
class Found:
    """A search's answer: its hits in order ((record id, score, position) triples, ordered as
    they are read; the position is the hit's among the matches, for its sequence token) and
    its meta document."""

    hits: Iterator[Hit]
    meta: dict[str, Any]
    run: Run | None = None
    details: str = ""
    pager: Pager | None = None  # the order's sequence tokens
    offsets: Any = None  # under returnScope: each match's entry offset in its document (scope.offsets)


Hit = tuple[int, float, int]  # (record id, score, position among the matches)


def _in_order(rids: Any, scores: Any, order: Any) -> Iterator[Hit]:
    yield from zip(rids[order].tolist(), scores[order].tolist(), order.tolist(), strict=True)


def _best_first(rids: Any, scores: Any) -> Iterator[Hit]:
    """Higher scores first, ties in record order: the best :data:`FIRST_SORT` ordered at once,
    the others only if the cursor reads past them (a ``$limit`` usually stops it before)."""
    if len(rids) <= FIRST_SORT:
        yield from _in_order(rids, scores, np.lexsort((rids, -scores)))
        return
    # The best FIRST_SORT: every score above the FIRST_SORT-th, then its ties in record order
    # (argpartition alone would take an arbitrary part of the ties, out of record order).
    kth = np.partition(-scores, FIRST_SORT - 1)[FIRST_SORT - 1]
    better = np.flatnonzero(-scores < kth)
    tied = np.flatnonzero(-scores == kth)
    best = np.concatenate([better, tied[np.argsort(rids[tied], kind="stable")][: FIRST_SORT - len(better)]])
    first = best[np.lexsort((rids[best], -scores[best]))]
    yield from _in_order(rids, scores, first)
    left = np.ones(len(rids), dtype=bool)
    left[first] = False
    rest = np.flatnonzero(left)
    yield from _in_order(rids, scores, rest[np.lexsort((rids[rest], -scores[rest]))])


def _index_of(store: CollectionStore, name: str) -> SearchIndexInfo | None:
    index = store.info.search_indexes.get(name)
    return index if index is not None and index.type == "search" else None


def _scanned(store: CollectionStore, index: SearchIndexInfo, explained: Explained, why: str) -> tuple[Reader, Any]:
    explained.method = f"scan ({why})"
    definition = index.parsed
    assert isinstance(definition, TextDefinition)
    state = TextState(index.id, index.version, definition)
    for n, (rid, data) in enumerate(store.scan()):
        if not n % 256:
            check()
        state.apply(rid, data)
    state.lock.acquire()
    return Reader(state), state.lock


def _reader(
    search: SearchIndexes, store: CollectionStore, index: SearchIndexInfo, explained: Explained
) -> tuple[Reader, Any]:
    """The reader for this view, and the lock (held) to release once it has been used."""
    explained.status = search.status(index)
    state = search.ready_state(index)
    if not isinstance(state, TextState):
        return _scanned(store, index, explained, "index building")
    info = store.info
    view = store.storage.view()
    state.lock.acquire()
    try:
        newest = newest_seq(view.conn, info.id)
        if newest > state.watermark:
            entries, changed = read_changes(view.conn, info, state.watermark)
            state.catch_up(entries, changed, newest)
        dirty = state.changed_since(newest)
        if dirty is None:
            state.lock.release()
            return _scanned(store, index, explained, "snapshot older than the index's history")
        txn = view.overlay
        overlay = txn.overlay_of(info.id) if txn is not None else None
        if overlay is not None:
            dirty |= set(overlay.rows)
        docs = {}
        for rid in sorted(dirty):
            data = store.get_raw(rid)
            if data is not None:
                docs[rid] = bson.decode(data, CODEC)
        explained.method = "index"
        explained.changed = len(dirty)
        explained.segments = len(state.segments) + 1
        return Reader(state, dirty, docs), state.lock
    except BaseException:
        state.lock.release()
        raise


def text_search(
    search: SearchIndexes,
    store: CollectionStore | None,
    query: SearchQuery,
    explained: Explained | None = None,
    collection: Callable[[str], CollectionStore | None] | None = None,
) -> Found:
    """The hits and meta document of a ``$search`` (a missing collection or index: none).
    ``collection`` gives the other collections of the database (synonym sources)."""
    explained = explained if explained is not None else Explained(query.index)
    empty_meta = {"count": count_document(query.count, 0)}
    if store is None:
        return Found(iter(()), empty_meta)
    index = _index_of(store, query.index)
    if index is None:
        return Found(iter(()), empty_meta)
    require()
    search.used(index)
    definition = index.parsed
    assert isinstance(definition, TextDefinition)
    compiled = None
    if query.operator is not None:
        name, body = query.operator
        compiled = compile_operator(name, body, name, definition)
    scope = return_scope(query, definition)
    check_roots(query.operator, scope)
    knn.check_query(query)
    reader, lock = _reader(search, store, index, explained)
    try:
        run = Run(reader, definition, collection=collection, fetch=lambda rid: _fetched(store, rid))
        with scoped(run, scope):
            ords, scores = compiled.hits(run) if compiled is not None else all_roots(run)
        explained.matched = len(ords)
        meta: dict[str, Any] = {"count": count_document(query.count, len(ords))}
        if query.facets is not None:
            meta["facet"] = facet_document(reader, query.facets, ords)
        if query.meta_only:
            return Found(iter(()), meta)
        scores = scores.astype(np.float32).astype(np.float64)
        rids = reader.rid_at[ords]
        pager = Pager(reader, query.sort, ords, scores, rids)
        if query.after is not None or query.before is not None:
            hits = _in_order(rids, scores, pager.page(query.after, query.before))
        elif query.sort is not None:
            hits = _in_order(rids, scores, pager.order())
        else:
            hits = _best_first(rids, scores)
        explained.highlight = run.highlight
        at = offsets(reader, ords) if scope is not None else None
        return Found(hits, meta, run, compiled.name if compiled else "", pager, at)
    finally:
        lock.release()


def documents(store: CollectionStore, query: SearchQuery, found: Found) -> Iterator[dict[str, Any]]:
    """The documents of the hits, in order, with their metadata; a document deleted since
    the search ran (a later snapshot of a long cursor) is skipped."""
    definition = None
    if query.highlight is not None or query.stored_source:
        index = _index_of(store, query.index)
        definition = index.parsed if index is not None else None
    if found.offsets is not None:
        assert isinstance(definition, TextDefinition)
        path = query.return_scope["path"]
        for element, about, alone in element_documents(store, definition, path, found.hits, found.offsets):
            if query.highlight is not None and found.run is not None:
                about["searchHighlights"] = highlights(definition, query.highlight, alone, found.run.highlight)
            if query.score_details:
                about["searchScoreDetails"] = _details(found, about["searchScore"])
            element[metadata.FIELD] = about
            yield element
        return
    stored = _stored_source(definition) if query.stored_source else None
    for rid, score, at in found.hits:
        data = store.get_raw(rid)
        if data is None:
            continue
        doc = bson.decode(data, CODEC)
        meta: dict[str, Any] = {"searchScore": score, "score": score}  # "score": MongoDB 8.2's name for any search
        if found.pager is not None:
            meta["searchSequenceToken"] = found.pager.token(at)
        if query.highlight is not None and isinstance(definition, TextDefinition) and found.run is not None:
            meta["searchHighlights"] = highlights(definition, query.highlight, doc, found.run.highlight)
        if query.score_details:
            meta["searchScoreDetails"] = _details(found, score)
        if stored is not None:
            doc = stored.apply(doc)
        doc[metadata.FIELD] = meta
        yield doc


def _fetched(store: CollectionStore, rid: int) -> dict[str, Any] | None:
    data = store.get_raw(rid)
    return None if data is None else bson.decode(data, CODEC)


def _details(found: Found, score: float) -> dict[str, Any]:
    return {
        "value": score,
        "description": f"{found.details} score: BM25 (k1=1.2, b=0.75) as Lucene's, with its modifiers",
        "details": [],
    }


def _stored_source(definition: Any) -> Any:
    """The projection ``returnStoredSource`` applies: the definition's ``storedSource``
    (true: every field; false or absent: ``_id``; ``{include}`` or ``{exclude}``)."""
    spec = definition.stored_source if isinstance(definition, TextDefinition) else False
    if spec is True:
        projection: dict[str, Any] = {}
    elif isinstance(spec, Mapping) and isinstance(spec.get("include"), list):
        projection = {**{p: 1 for p in spec["include"]}, "_id": 1}
    elif isinstance(spec, Mapping) and isinstance(spec.get("exclude"), list):
        projection = {p: 0 for p in spec["exclude"]}
    else:
        projection = {"_id": 1}
    return compile_projection(projection, Context(), find=True)
