"""Run a find: access stage -> filter -> sort -> skip -> limit -> projection.

The stages mirror MongoDB's plan stages (COLLSCAN/IXSCAN+FETCH, SORT, SKIP,
LIMIT, PROJECTION_*) and count what they do for ``explain``
(:mod:`foliodb.engine.find_explain` renders it). Results stream:
only a SORT without an index holds documents (and spills past its memory
limit, see :mod:`foliodb.engine.sorter`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import bson
from bson.raw_bson import RawBSONDocument

from foliodb import interrupt
from foliodb.engine.cache import Row
from foliodb.engine.catalog import CODEC, RAW
from foliodb.engine.index_keys import EMPTY_ARRAY
from foliodb.engine.index_writer import IndexWriter
from foliodb.engine.near_and_text import geo_near_key, may_hold_text, nested_text, without_near
from foliodb.engine.planner import Plan, choose_plan, exact_by_index, id_hack_keys, key_filter, near_plan
from foliodb.engine.planner.counting import exact_scan, single_interval
from foliodb.engine.planner.covering import KeyLayout, filter_paths, inclusion_paths, key_layout
from foliodb.engine.planner.geo import GeoNearScan, split_near
from foliodb.engine.planner.plans import AccessStage, ClusteredScan, CollScan, IdLookup, IndexScan, TextScan
from foliodb.engine.planner.text import text_or_plan
from foliodb.engine.records import CollectionStore
from foliodb.engine.sorter import sort_documents
from foliodb.engine.text import TextIndex, TextQuery, parse_text, prefix_values, split_text
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import metadata
from foliodb.query.collation import Collator
from foliodb.query.context import Context
from foliodb.query.filter import MatchDetails, Matcher, compile_filter
from foliodb.query.filter_ops.geo import check_near_placement, parse_near
from foliodb.query.paths import MISSING
from foliodb.query.prefilter import Prefilter, compile_prefilter, needle_groups, needles_test
from foliodb.query.projection import compile_projection
from foliodb.query.sort import compile_sort

SORT_MEMORY_LIMIT = 100 * 1024 * 1024
FIRST_FETCH = 16  # an index scan's first batch for a find without a limit
FIRST_FETCH_MAX = 512  # ... and with one (the largest batch a scan reads)
_CONTAINERS = (dict, list)


@dataclass
class FindSpec:
    filter: Mapping[str, Any] | None = None
    projection: Mapping[str, Any] | None = None
    sort: Mapping[str, Any] | None = None
    skip: int = 0
    limit: int | None = None
    # The find's batchSize: what its first reply returns (None: the default). An idle cursor
    # holds the rows its scan fetched beyond that, so the first fetch is sized by it too.
    first_batch: int | None = None
    hint: Any = None
    # cursor.min()/max(): the hinted index's key range [min_key, max_key).
    min_key: Mapping[str, Any] | None = None
    max_key: Mapping[str, Any] | None = None
    allow_disk_use: bool = True
    show_record_id: bool = False
    return_key: bool = False
    # Leave metadata ($text scores) on the documents, for a pipeline's stages.
    keep_metadata: bool = False
    # Only how many documents match matters (a count): none of their fields
    # is returned, so index keys can answer with no projection.
    count_only: bool = False
    # The operation's own collation document (None: the collection's
    # default); the Context carries the collator that results from it.
    collation: Mapping[str, Any] | None = None
    # A $geoNear stage's request (foliodb.aggregation.stages.geo_near.GeoNearRequest):
    # a near query on its key, the filter its own query.
    geo_near: Any = None
    # The caller reads the documents and keeps nothing of them (distinct copies what it keeps):
    # those the document cache holds may be handed over as they are, not decoded afresh.
    reads_only: bool = False
    # The documents go into a reply over the wire: those that go out as stored (no projection,
    # sort in memory, metadata, returnKey or showRecordId) are yielded as their stored BSON in a
    # RawBSONDocument, never decoded unless a filter must read them (see FindExecution.stored).
    raw: bool = False


@dataclass
class ExecStats:
    n_matched: int = 0  # documents past the filter
    n_returned: int = 0
    started: float = 0.0
    finished: float = 0.0

    @property
    def millis(self) -> int:
        return int(((self.finished or time.perf_counter()) - self.started) * 1000)


class FindExecution:
    """One find's plan and its lazy execution; iterate for the documents."""

    def __init__(self, store: CollectionStore | None, spec: FindSpec, ctx: Context) -> None:
        self.store = store
        self.spec = spec
        self.ctx = ctx
        self.stats = ExecStats()
        self.limit_reached = False  # the last document the limit allows has been returned
        self._key_writer: IndexWriter | None = None  # returnKey's index, found on first use
        # Compile everything first, so errors surface before any result.
        self.sort = compile_sort(spec.sort, collator=ctx.collator) if spec.sort else None
        self.projection = compile_projection(spec.projection, ctx, find=True) if spec.projection else None
        filter_spec = spec.filter
        text_arg, rest = split_text(filter_spec) if filter_spec and may_hold_text(filter_spec) else (None, filter_spec)
        near = None
        if filter_spec and any(key[:1] == "$" for key in filter_spec):  # a near query inside a logical operator?
            check_near_placement(filter_spec)
        found_near = split_near(rest) if text_arg is None else None
        if spec.geo_near is not None:
            rest = spec.geo_near.filter
            key = spec.geo_near.key or (geo_near_key(store) if store is not None else "")
            near = (key, spec.geo_near.query)
        elif found_near is not None:
            # The scan orders by distance and applies the distance bounds; the rest is a filter.
            path, near_op, arg, cond = found_near
            near = (path, parse_near(near_op, arg, cond))
            rest = without_near(rest, path)
        self.text: tuple[TextIndex, TextQuery] | None = None
        # $text sits in an $or branch: the filter (with its $text) decides, a score goes to the
        # documents the text search matches.
        self.text_in_or = text_arg is not None and rest is not None and nested_text(rest)
        self.near: GeoNearScan | None = None
        self.plan: Plan | None = None
        self.matcher = None
        self.prefilter: Prefilter | None = None
        wants_score = "textScore" in (self.sort.meta_fields if self.sort else []) or (
            self.projection is not None and "textScore" in self.projection.meta_fields
        )
        if wants_score and text_arg is None:
            raise CommandError(40218, "query requires text score metadata, but it is not available")
        key_range = bool(spec.min_key or spec.max_key)
        plain = spec.hint is None and text_arg is None and not key_range
        id_keys = id_hack_keys(store, filter_spec, ctx.collator) if plain else None
        if id_keys is not None and (self.sort is None or self.sort.natural is None):
            # IDHACK: an exact _id point lookup needs no filter at all.
            if store is not None:
                self.plan = Plan(IdLookup(store, id_keys))
        else:
            compiled: list[Matcher] = []

            def matcher(doc: Any, details: Any = None) -> bool:
                # Compiled on first use: a plan whose index answers the filter
                # exactly never needs it.
                if not compiled:
                    compiled.append(compile_filter(rest, ctx))
                return compiled[0](doc, details)

            if text_arg is not None:
                self.plan = self._text_plan(store, text_arg, rest)
                if self.text_in_or and self.text is not None:
                    # The whole filter decides, its $text clause judged by the text matcher.
                    text_index, text_query = self.text
                    ctx = self.ctx = ctx.with_text(lambda doc: text_query.matches(text_index, doc))
            elif near is not None:
                if store is not None:
                    self.plan = near_plan(store, rest or {}, near[0], near[1])
            elif store is not None:
                self.plan = choose_plan(
                    store,
                    filter_spec,
                    matcher,
                    self.sort.fields if self.sort is not None else None,
                    self.sort.natural if self.sort is not None else None,
                    spec.hint,
                    spec.min_key,
                    spec.max_key,
                    ctx.collator,
                    spec.projection,
                )
            access = self.plan.access if self.plan is not None else None
            exact = (
                isinstance(access, IndexScan)
                and not key_range
                and exact_by_index(filter_spec, access.index, ctx.collator)
                and not (self.projection is not None and self.projection.uses_positional)
            )
            if rest and not exact:
                # Compiled now, so a bad filter fails before any result.
                self.matcher = compiled[0] if compiled else compile_filter(rest, ctx)
                if isinstance(access, IndexScan) and ctx.collator is None:
                    regexes = key_filter.regex_key_test(access.index, rest)
                    if regexes is not None:
                        access.key_check = key_filter.both(access.key_check, regexes)
            doc_test = self.plan.doc_test if self.plan is not None else None
            if doc_test is not None:
                self.matcher = _both(self.matcher, doc_test)
        if self.plan is not None and isinstance(self.plan.access, GeoNearScan):
            self.near = self.plan.access
        if self.plan is not None and not isinstance(self.plan.access, IdLookup):
            if self.matcher is not None or isinstance(self.plan.access, CollScan):
                # (Without a matcher an index's records are exactly the matches: nothing to narrow.)
                self.prefilter = raw_narrowing(self.plan.access, rest, ctx.collator)
            op = interrupt.current()
            if op is not None and op.plan_summary is None:
                op.plan_summary = self.plan.access.summary()  # currentOp's planSummary
        self.covered = self._key_layout()
        if self.plan is not None and isinstance(self.plan.access, IndexScan):
            # One statement for what the find returns: its limit, or "a few" (the usual equality's
            # matches, read in two statements from SCAN_FIRST's two rows).
            # Never more than the first reply and one row to tell whether more follow: the rest
            # would sit in an idle cursor (5,000 cursors of batchSize 1 stay under 50 MB).
            wanted = spec.skip + spec.limit if spec.limit is not None and spec.limit > 0 else FIRST_FETCH
            if spec.first_batch is not None:
                wanted = min(wanted, spec.skip + spec.first_batch + 1)
            self.plan.access.first_fetch = max(1, min(wanted, FIRST_FETCH_MAX))
        # Only how many documents match matters, and the keys are exactly the matches: mongod's
        # COUNT_SCAN when they are one interval of the index (explain's indexBounds: start/end keys).
        self.count_bounds: dict[str, Any] | None = None
        access = self.plan.access if self.plan is not None else None
        if (
            spec.count_only
            and isinstance(access, IndexScan)
            and not isinstance(access, ClusteredScan)
            and exact_scan(filter_spec, access)
        ):
            self.count_bounds = single_interval(access)
        if self.sort is not None and (
            (not self.sort.fields and not self.sort.meta_fields) or (self.plan is not None and self.plan.provides_sort)
        ):
            self.sort = None  # the access path already yields this order
        # A plain inclusion of top-level fields, nothing sorted: a cached document's kept fields
        # are copied from it (the projection then keeps them all) rather than all of it decoded.
        kept = inclusion_paths(spec.projection) if spec.projection and self.sort is None else None
        self.kept_fields = frozenset(kept) if kept and not any("." in path for path in kept) else None
        # Only how many match matters, and nothing on the way reads a field (no sort, text score,
        # distance or record id): each match is an empty document, decoded only for the filter.
        self.counts_only = (
            spec.count_only
            and self.sort is None
            and self.text is None
            and self.near is None
            and not spec.show_record_id
            and not spec.return_key
            and self.projection is None
        )
        # Every document goes out as it is stored: the reply can carry its BSON undecoded.
        self.stored = (
            spec.raw
            and self.plan is not None
            and self.sort is None
            and self.projection is None
            and self.text is None
            and self.near is None
            and self.covered is None
            and self.count_bounds is None
            and not (spec.return_key or spec.show_record_id or spec.keep_metadata)
        )

    def _key_layout(self) -> KeyLayout | None:
        """How the index keys answer this query without its documents
        (MongoDB's covered query; see :mod:`foliodb.engine.planner.covering`),
        or None: a plain inclusion projection, and a filter and a sort that
        read only indexed paths of a key-readable index."""
        spec = self.spec
        access = self.plan.access if self.plan is not None else None
        if not isinstance(access, IndexScan) or not (spec.projection or spec.count_only) or self.text is not None:
            return None
        if spec.return_key or spec.show_record_id:
            return None
        projected = inclusion_paths(spec.projection) if spec.projection else []
        read = filter_paths(spec.filter)
        if projected is None or read is None:
            return None
        sorted_by: list[str] = []
        if self.sort is not None:
            if self.sort.meta_fields:
                return None
            sorted_by = [name for name, _ in self.sort.fields]
        layout = key_layout(access.index, [*projected, *read, *sorted_by])
        if layout is not None:
            access.covered = True
        return layout

    def _text_plan(self, store: CollectionStore | None, text_arg: Any, rest: Mapping[str, Any] | None) -> Plan:
        """The text search (mongod's TEXT_MATCH over the text index's scans), unioned with the other
        branches' index scans when ``$text`` sits in an ``$or`` (each must have one, as mongod's)."""
        indexes = [i for i in store.info.indexes.values() if i.kind == "text"] if store is not None else []
        if not indexes:
            raise CommandError(ErrorCode.IndexNotFound, "text index required for $text query")
        assert store is not None
        index = indexes[0]
        text_index = TextIndex.from_spec(index.spec)
        query = parse_text(text_arg, text_index)
        self.text = (text_index, query)
        if not self.text_in_or:
            return Plan(TextScan(store, index, text_index, query, prefix_values(text_index, rest)))
        return text_or_plan(store, rest or {}, index, text_index, query, self.ctx.collator)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._run()

    def _run(self) -> Iterator[dict[str, Any]]:
        self.stats.started = time.perf_counter()
        if self.plan is None:
            return
        docs = self._matching()
        spec = self.spec
        if self.sort is not None:
            sort = self.sort
            key: Callable[[dict[str, Any]], bytes] = sort.key  # no $meta part: no metadata to look up
            numeric = sort.plain_field()
            if sort.meta_fields:

                def key(doc: dict[str, Any]) -> bytes:
                    return sort.key(doc, metadata.of(doc))

            top = None if spec.limit is None else spec.skip + spec.limit
            docs = sort_documents(
                docs,
                key,
                limit=top,
                max_memory_bytes=SORT_MEMORY_LIMIT,
                allow_disk_use=spec.allow_disk_use,
                numeric=numeric,
            )
        skip, limit = spec.skip, spec.limit
        projection = self.projection
        # The positional projection needs the match's array position; it is
        # recomputed for returned documents only, after sorting.
        positional = projection is not None and projection.uses_positional and self.matcher is not None
        returned = 0
        if limit is not None and limit <= 0:
            return
        for doc in docs:
            if skip:
                skip -= 1
                continue
            meta = metadata.of(doc) if self.text is not None or self.near is not None else None
            if meta is not None and not spec.keep_metadata:
                doc.pop(metadata.FIELD)
            if spec.return_key:
                doc = self._index_key(doc)
            elif projection is not None:
                details = None
                if positional:
                    details = MatchDetails()
                    assert self.matcher is not None
                    self.matcher(doc, details)
                doc = projection.apply(doc, details, meta)
            returned += 1
            self.stats.n_returned = returned
            if returned == limit:
                self.limit_reached = True  # known before the consumer asks for more
                yield doc
                break  # before asking the source for one document too many
            yield doc
        self.stats.finished = time.perf_counter()

    def _matching(self) -> Iterator[dict[str, Any]]:
        assert self.plan is not None
        matcher = self.matcher
        show_record_id = self.spec.show_record_id
        text = self.text
        decode = bson.decode
        count = 0
        if self.count_bounds is not None:
            yield from self._counted()
            return
        if self.covered is not None:
            yield from self._covered_docs()
            return
        access = self.plan.access
        if isinstance(access, CollScan) and text is None and self.near is None:
            # Built only for a scan that reads every record (no limit, or a sort: a find_one() or
            # a limit stops early); with needles, which SQLite tests without decoding, only after
            # enough such scans with no write between (DocumentCache.needle_scan_due).
            reads_all = self.spec.limit is None or self.sort is not None
            cached = access.cached_rows(build=reads_all)
            if cached is not None:
                yield from self._cached_matching(access, cached)
                return
        if self.stored:
            yield from self._stored_matching()
            return
        prefilter = self.prefilter
        undecoded = self.counts_only and matcher is None  # nothing reads the document: no decoding
        for rid, data in self.plan.access.rows():
            count += 1
            if not count & 63:
                interrupt.check()  # every find stops at its operation's deadline or kill
            if prefilter is not None and not prefilter(data):
                continue
            if undecoded:
                self.stats.n_matched += 1
                yield {}
                continue
            doc = decode(data, CODEC)
            if matcher is not None and not matcher(doc):
                continue
            if text is not None:
                index, query = text
                if self.text_in_or:
                    if query.matches(index, doc):  # documents of the other branches have no score
                        doc[metadata.FIELD] = {"textScore": index.score(doc, query.terms)}
                elif not query.matches(index, doc):
                    continue
                else:
                    doc[metadata.FIELD] = {"textScore": index.score(doc, query.terms)}
            elif self.near is not None:
                distance, where = self.near.distances.pop(rid)
                doc[metadata.FIELD] = {"geoNearDistance": distance, "geoNearPoint": where}
            self.stats.n_matched += 1
            if show_record_id:
                doc["$recordId"] = rid
            yield doc

    def _stored_matching(self) -> Iterator[Any]:
        """:meth:`_matching` for documents that go out as stored (``self.stored``): each
        one's BSON as it is, in a RawBSONDocument, decoded only for a filter the index
        does not answer (the decoded copy is dropped). Decoding and encoding again was
        most of a wire reply's BSON work, and the stored bytes are what mongod sends."""
        assert self.plan is not None
        matcher, prefilter = self.matcher, self.prefilter
        decode = bson.decode
        stats = self.stats
        count = 0
        for _rid, data in self.plan.access.rows():
            count += 1
            if not count & 63:
                interrupt.check()
            if prefilter is not None and not prefilter(data):
                continue
            if matcher is not None and not matcher(decode(data, CODEC)):
                continue
            stats.n_matched += 1
            yield RawBSONDocument(data, RAW)

    def _counted(self) -> Iterator[dict[str, Any]]:
        """An empty document per match, from the keys alone (COUNT_SCAN: the keys are exactly the
        matches, and nothing after reads a field); a multikey index's record once."""
        access = self.plan.access if self.plan is not None else None
        assert isinstance(access, IndexScan)
        seen: set[int] | None = set() if access.index.multikey else None
        for n, (rid, _values) in enumerate(access.key_values()):
            if not n & 255:
                interrupt.check()
            if seen is not None:
                if rid in seen:
                    continue
                seen.add(rid)
            self.stats.n_matched += 1
            yield {}

    def _cached_matching(self, access: CollScan, rows: list[Row]) -> Iterator[Any]:
        """:meth:`_matching` over the document cache's rows: the filter reads the cached
        documents; what goes on is decoded afresh from its BSON, but for a sort, which only
        reads keys and keeps its own encoding of what it holds (engine/sorter.py), and for
        documents that go out as stored (``self.stored``: their BSON as it is)."""
        matcher = self.matcher
        show_record_id = self.spec.show_record_id
        shared = (self.sort is not None or self.spec.reads_only) and not show_record_id
        stored = self.stored
        kept = self.kept_fields
        empty = self.counts_only
        # The needles a collection scan's SQL would test, tested here on the BSON bytes: the
        # rows holding one of the first group's found by one search of the entry's bytes
        # (each row then tested on its own), or each row's bytes tested in turn.
        prefilter = needles_test(access.needles)
        haystack = access.cached_haystack(rows) if access.needles else None
        visits: Iterable[tuple[int, Row]] = enumerate(rows, 1)
        if haystack is not None:
            interrupt.check()
            visits = ((i + 1, rows[i]) for i in haystack.rows_holding(access.needles[0]))
        decode = bson.decode
        count = 0
        rid = None
        try:
            for seen, (count, (rid, data, doc)) in enumerate(visits, 1):
                if not seen & 63:
                    interrupt.check()
                if prefilter is not None and not prefilter(data):
                    continue
                if matcher is not None and not matcher(doc):
                    continue
                self.stats.n_matched += 1
                access.cached_progress(count, rid, False)
                if empty:
                    yield {}
                    continue
                if shared:
                    yield doc
                    continue
                if stored:  # as _stored_matching: the reply carries the BSON as it is
                    yield RawBSONDocument(data, RAW)
                    continue
                if kept is not None and not show_record_id:
                    # Values only: a document or array kept would be the cache's own object.
                    mine = {name: value for name, value in doc.items() if name in kept}
                    if not any(value.__class__ in _CONTAINERS for value in mine.values()):
                        yield mine
                        continue
                mine = decode(data, CODEC)
                if show_record_id:
                    mine["$recordId"] = rid
                yield mine
            if rows:  # passed over every row, as a scan of each in turn would have
                count, rid = len(rows), rows[-1][0]
        finally:
            access.cached_progress(count, rid, count == len(rows))

    def _covered_docs(self) -> Iterator[dict[str, Any]]:
        """Documents rebuilt from index keys (only the indexed fields); the
        stored document where a key cannot tell null from missing."""
        access = self.plan.access if self.plan is not None else None
        layout = self.covered
        assert isinstance(access, IndexScan) and layout is not None
        matcher = self.matcher
        store = access.store
        for n, (rid, values) in enumerate(access.key_values()):
            if not n & 255:
                interrupt.check()
            doc = layout.document(values)
            if doc is None:
                data = store.get_raw(rid)
                if data is None:
                    continue
                access.docs_examined += 1
                doc = bson.decode(data, CODEC)
            if matcher is not None and not matcher(doc):
                continue
            self.stats.n_matched += 1
            yield doc

    def _index_key(self, doc: dict[str, Any]) -> dict[str, Any]:
        """returnKey: the key of the index entry that produced ``doc``, named by
        the key pattern's fields; ``{}`` when no index was used."""
        access = self.plan.access if self.plan is not None else None
        if isinstance(access, IdLookup):
            return {"_id": doc["_id"]}
        if not isinstance(access, IndexScan):
            return {}
        if self._key_writer is None:
            self._key_writer = next(w for w in access.store.writers if w.info.name == access.index.name)
        keys = self._key_writer.keys(doc)
        if not keys:
            return {}
        # A multikey document has several entries; the scan met the first in its direction.
        first = min(keys) if access.direction > 0 else max(keys)
        values = [None if v is MISSING or v is EMPTY_ARRAY else v for v in keys[first]]
        return dict(zip(access.index.key, values, strict=False))


def raw_narrowing(
    access: AccessStage, filter_spec: Mapping[str, Any] | None, collator: Collator | None = None
) -> Prefilter | None:
    """Skip records that cannot match before decoding them (see
    :mod:`foliodb.query.prefilter`): a collection scan's SQL does it itself;
    for other access paths, the Python test this returns does. Not under a
    collation: a string may match without its bytes being in the record."""
    if collator is not None:
        return None
    if isinstance(access, CollScan):
        access.needles = needle_groups(filter_spec)
        return None
    return compile_prefilter(filter_spec)


def _both(matcher: Matcher | None, test: Callable[[dict[str, Any]], bool]) -> Matcher:
    """``matcher`` (when there is one) and then ``test``."""

    def both(doc: Any, details: Any = None) -> bool:
        return (matcher is None or matcher(doc, details)) and test(doc)

    return both
