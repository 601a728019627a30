"""The documents an update, delete or findAndModify targets: each at most once, by the
filter's access path (an exact ``_id`` lookup, an index, a scan or the text index)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import bson

from foliodb import interrupt
from foliodb.engine.cache import Row
from foliodb.engine.catalog import CODEC
from foliodb.engine.planner import id_hack_keys, plan_access
from foliodb.engine.planner.plans import AccessStage, CollScan, IdLookup
from foliodb.engine.query import FindExecution, FindSpec, raw_narrowing
from foliodb.engine.records import CollectionStore
from foliodb.engine.text import split_text
from foliodb.query.context import Context
from foliodb.query.filter import MatchDetails, Matcher, compile_filter
from foliodb.query.prefilter import needles_test
from foliodb.query.sort import Sort, compile_sort


def matching(
    store: CollectionStore | None,
    filter_spec: Mapping[str, Any] | None,
    ctx: Context,
    *,
    hint: Any = None,
    sort: Mapping[str, Any] | None = None,
    one: bool = False,
    plans: list[AccessStage] | None = None,
) -> Iterator[tuple[int, bytes, dict[str, Any], MatchDetails]]:
    """(rid, BSON, document, match details) of the documents a write
    targets, each at most once; with ``one``, only the first (by ``sort``).
    The access path it chooses is appended to ``plans`` (for index accesses
    and the profiler)."""
    if filter_spec and any(k in filter_spec for k in _TEXT_KEYS) and split_text(filter_spec)[0] is not None:
        yield from _text_matching(store, filter_spec, ctx, hint=hint, sort=sort, one=one, plans=plans)
        return
    sort_key = compile_sort(sort, collator=ctx.collator) if sort else None
    id_keys = id_hack_keys(store, filter_spec, ctx.collator) if hint is None and sort_key is None else None
    if id_keys is not None:
        # IDHACK: an exact _id point lookup; no filter to compile or check
        # (and no array on the filter's path, so no positional details).
        if store is not None:
            lookup = IdLookup(store, id_keys)
            if plans is not None:
                plans.append(lookup)
            for rid, data in lookup.rows():
                yield rid, data, bson.decode(data, CODEC), MatchDetails()
        return
    matcher = compile_filter(filter_spec, ctx)
    if store is None:
        return
    access = plan_access(store, filter_spec, matcher, hint, ctx.collator)
    if plans is not None:
        plans.append(access)
    exact = isinstance(access, IdLookup)
    prefilter = raw_narrowing(access, filter_spec, ctx.collator)  # a scan's needles, for its SQL
    if isinstance(access, CollScan):
        cached = access.cached_rows(build=True)
        if cached is not None:
            yield from _cached_matching(access, cached, matcher, sort_key if one else None, one)
            return
    if sort_key is not None and one:
        best: tuple[bytes, int, bytes, dict[str, Any], MatchDetails] | None = None
        for n, (rid, data) in enumerate(access.rows()):
            if not n & 63:
                interrupt.check()
            doc = bson.decode(data, CODEC)
            details = MatchDetails()
            if matcher(doc, details):
                key = sort_key.key(doc)
                if best is None or key < best[0]:
                    best = (key, rid, data, doc, details)
        if best is not None:
            yield best[1], best[2], best[3], best[4]
        return
    seen: set[int] = set()
    for n, (rid, data) in enumerate(access.rows()):
        if not n & 63:
            interrupt.check()
        if rid in seen or (prefilter is not None and not prefilter(data)):
            continue
        doc = bson.decode(data, CODEC)
        details = MatchDetails()
        if exact:
            # The _id key matched exactly; only positional details are missing.
            matcher(doc, details)
        elif not matcher(doc, details):
            continue
        yield rid, data, doc, details
        if one:
            return
        seen.add(rid)


def _cached_matching(
    access: CollScan, rows: list[Row], matcher: Matcher, best_by: Sort | None, one: bool
) -> Iterator[tuple[int, bytes, dict[str, Any], MatchDetails]]:
    """:func:`matching`'s scan over the document cache's rows (engine/cache.py): the filter,
    and ``best_by``'s key (the first by a sort, when only one is wanted), read the cached
    documents; each target goes on decoded afresh, as its caller changes it."""
    prefilter = needles_test(access.needles)
    best: tuple[bytes, int, bytes, MatchDetails] | None = None
    rid = None
    for n, (rid, data, doc) in enumerate(rows, 1):
        if not n & 63:
            interrupt.check()
        if prefilter is not None and not prefilter(data):
            continue
        if not matcher(doc):
            continue
        details = MatchDetails()  # only for a match: what positional updates read
        matcher(doc, details)
        if best_by is not None:
            key = best_by.key(doc)
            if best is None or key < best[0]:
                best = (key, rid, data, details)
            continue
        access.cached_progress(n, rid, False)
        yield rid, data, bson.decode(data, CODEC), details
        if one:
            return
    access.cached_progress(len(rows), rid, True)
    if best is not None:
        yield best[1], best[2], bson.decode(best[2], CODEC), best[3]


_TEXT_KEYS = ("$text", "$and", "$or")  # where a $text may sit


def _text_matching(
    store: CollectionStore | None,
    filter_spec: Mapping[str, Any],
    ctx: Context,
    *,
    hint: Any,
    sort: Mapping[str, Any] | None,
    one: bool,
    plans: list[AccessStage] | None,
) -> Iterator[tuple[int, bytes, dict[str, Any], MatchDetails]]:
    """The targets of a write whose filter holds ``$text``: found as a find
    would (through the text index), then read back by record id."""
    spec = FindSpec(filter=filter_spec, sort=sort, limit=1 if one else None, hint=hint, show_record_id=True)
    run = FindExecution(store, spec, ctx)
    if plans is not None and run.plan is not None:
        plans.append(run.plan.access)
    rest = split_text(filter_spec)[1]
    matcher = compile_filter(rest, run.ctx) if rest else None  # run.ctx judges a $text inside $or
    for found in list(run):
        assert store is not None
        rid = found["$recordId"]
        data = store.get_raw(rid)
        if data is None:
            continue
        doc = bson.decode(data, CODEC)
        details = MatchDetails()
        if matcher is not None:
            matcher(doc, details)
        yield rid, data, doc, details
