"""Run a find: access stage -> filter -> sort -> skip -> limit -> projection.

The stages mirror MongoDB's plan stages (COLLSCAN/IXSCAN+FETCH, SORT, SKIP,
LIMIT, PROJECTION_*) and count what they do for ``explain``. Results stream:
only a SORT without an index holds documents (and spills past its memory
limit, see :mod:`foliodb.engine.sorter`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import bson

from foliodb.engine.catalog import CODEC
from foliodb.engine.planner import plan_access
from foliodb.engine.planner.plans import AccessStage, IdLookup
from foliodb.engine.records import CollectionStore
from foliodb.engine.sorter import sort_documents
from foliodb.query.context import Context
from foliodb.query.filter import MatchDetails, compile_filter
from foliodb.query.projection import compile_projection
from foliodb.query.sort import compile_sort

SORT_MEMORY_LIMIT = 100 * 1024 * 1024


@dataclass
class FindSpec:
    filter: Mapping[str, Any] | None = None
    projection: Mapping[str, Any] | None = None
    sort: Mapping[str, Any] | None = None
    skip: int = 0
    limit: int | None = None
    hint: Any = None
    allow_disk_use: bool = True
    show_record_id: bool = False


@dataclass
class ExecStats:
    n_returned: int = 0
    started: float = 0.0
    finished: float = 0.0

    @property
    def millis(self) -> int:
        return int(((self.finished or time.perf_counter()) - self.started) * 1000)


class FindExecution:
    """One find's plan and its lazy execution; iterate for the documents."""

    def __init__(
        self, store: CollectionStore | None, spec: FindSpec, ctx: Context, check_time: Callable[[], None] | None = None
    ) -> None:
        self.store = store
        self.spec = spec
        self.ctx = ctx
        self.check_time = check_time
        self.stats = ExecStats()
        # Compile everything first, so errors surface before any result.
        self.sort = compile_sort(spec.sort) if spec.sort else None
        self.projection = compile_projection(spec.projection, ctx, find=True) if spec.projection else None
        natural = self.sort.natural if self.sort is not None else None
        self.access: AccessStage | None = (
            plan_access(store, spec.filter, natural, spec.hint) if store is not None else None
        )
        # An exact _id point lookup needs no re-check; every other plan is
        # re-filtered, since an access path only narrows the candidates.
        exact = isinstance(self.access, IdLookup) and list(spec.filter or {}) == ["_id"]
        self.matcher = None if exact or not spec.filter else compile_filter(spec.filter, ctx)
        if self.sort is not None and not self.sort.fields and not self.sort.meta_fields:
            self.sort = None  # only $natural, which the access stage did

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._run()

    def _run(self) -> Iterator[dict[str, Any]]:
        self.stats.started = time.perf_counter()
        if self.access is None:
            return
        docs = self._matching()
        spec = self.spec
        if self.sort is not None:
            key = self.sort.key
            top = None if spec.limit is None else spec.skip + spec.limit
            docs = sort_documents(
                docs,
                key,
                limit=top,
                max_memory_bytes=SORT_MEMORY_LIMIT,
                allow_disk_use=spec.allow_disk_use,
            )
        skip, limit = spec.skip, spec.limit
        projection = self.projection
        # The positional projection needs the match's array position; it is
        # recomputed for returned documents only, after sorting.
        positional = projection is not None and projection.uses_positional and self.matcher is not None
        returned = 0
        for doc in docs:
            if skip:
                skip -= 1
                continue
            if limit is not None and returned >= limit:
                break
            if projection is not None:
                details = None
                if positional:
                    details = MatchDetails()
                    assert self.matcher is not None
                    self.matcher(doc, details)
                doc = projection.apply(doc, details)
            returned += 1
            self.stats.n_returned = returned
            yield doc
        self.stats.finished = time.perf_counter()

    def _matching(self) -> Iterator[dict[str, Any]]:
        assert self.access is not None
        matcher = self.matcher
        check_time = self.check_time
        show_record_id = self.spec.show_record_id
        decode = bson.decode
        count = 0
        for rid, data in self.access.rows():
            doc = decode(data, CODEC)
            count += 1
            if check_time is not None and not count & 63:
                check_time()
            if matcher is not None and not matcher(doc):
                continue
            if show_record_id:
                doc["$recordId"] = rid
            yield doc
