"""One vector field of one index, in memory: its rows and its HNSW graph.

A :class:`VectorColumn` holds, for every document whose value at the field's
path is an indexable vector (see :mod:`foliodb.engine.search.vectors`), one
float32 row of ``matrix`` (``row_of[rid]``), and a graph (usearch's HNSW)
over the rows that were *absorbed* into it. A row added or changed since is
*pending*: searches score the pending rows exactly, so a search never misses
a document the graph has not caught up with; a background thread absorbs
pending rows in small batches (:meth:`absorb`). Invariants, under the owner's
lock::

    row_of.keys() == graph keys | pending      graph keys & pending == {}

The graph only proposes candidates, which are always rescored exactly from
``matrix`` (float32), so it stores its rows quantized (:func:`graph_dtype`):
cosine rows, unit vectors whose coordinates lie in [-1, 1], as int8 (usearch
scales them by 127), whatever the definition's ``quantization``: searching and
building an int8 graph cost a quarter of a float32 one's CPU and memory, and
after the float32 rescoring its recall@10 was the same (50,000 x 384, ef 100
to 400, within 0.01); ``dotProduct`` and ``euclidean`` rows, of any scale, as
float32 (``none``) or float16 (``scalar``); ``binary``: sign bits compared by
Hamming distance.

The graph's beam is :data:`EXPLORE` times the ``numCandidates`` asked for, and
every row it finds is rescored: MongoDB's ``numCandidates`` is the number of
nearest neighbours to consider, and exploring more than that costs little
next to the recall it buys on a quantized graph: at 100,000 x 384 (the benchmark's
hard set), a beam of 2x gave recall@10 0.931 at numCandidates 100, 3x 0.971, 4x 0.986,
for 1.51, 1.60 and 1.92 ms of CPU a search (see docs/design.md).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from foliodb.engine.search.definition import VectorField
from foliodb.engine.search.numeric import np, usearch_index
from foliodb.engine.search.vectors import scores

_METRICS = {"cosine": "ip", "dotProduct": "ip", "euclidean": "l2sq"}  # cosine rows are unit vectors
# Rows absorbed into the graph per call: the lock is held for about this many HNSW insertions.
ABSORB_BATCH = 64
# The graph's search beam per candidate asked for (numCandidates), and its ceiling.
EXPLORE = 3
MAX_BEAM = 20_000


def graph_dtype(field: VectorField) -> str:
    """The element type of the field's graph (see the module's docstring)."""
    if field.quantization == "binary":
        return "b1"
    if field.similarity == "cosine":
        return "i8"
    return "f32" if field.quantization == "none" else "f16"


class VectorColumn:
    def __init__(self, field: VectorField) -> None:
        self.field = field
        self.parts = tuple(field.path.split("."))
        self.names = tuple(part.encode() for part in self.parts)  # as BSON spells them
        self.matrix = np.zeros((16, field.dimensions), dtype=np.float32)
        self.rid_at = np.full(16, -1, dtype=np.int64)  # row -> rid (-1: free)
        self.norms = np.zeros(16, dtype=np.float32)  # each row's length, for exact scans
        self.row_of: dict[int, int] = {}
        self.free: list[int] = []
        self.pending: set[int] = set()
        self.graph = self._new_graph()

    def _new_graph(self) -> Any:
        field = self.field
        if field.quantization == "binary":
            return usearch_index.Index(
                ndim=field.dimensions,
                metric="hamming",
                dtype="b1",
                connectivity=field.max_edges,
                expansion_add=field.edge_candidates,
            )
        return usearch_index.Index(
            ndim=field.dimensions,
            metric=_METRICS[field.similarity],
            dtype=graph_dtype(field),
            connectivity=field.max_edges,
            expansion_add=field.edge_candidates,
        )

    def _graph_rows(self, rows: Any) -> Any:
        if self.field.quantization == "binary":
            return np.packbits(rows > 0, axis=-1)
        if self.field.similarity == "cosine":  # the graph compares unit vectors by inner product
            norms = np.linalg.norm(rows, axis=-1, keepdims=True)
            return (rows / np.where(norms == 0, 1, norms)).astype(np.float32)
        return rows

    def __len__(self) -> int:
        return len(self.row_of)

    # -- changes -------------------------------------------------------------------

    def put(self, rid: int, row: Any) -> None:
        """The document ``rid`` now has this vector row (None: no indexable vector)."""
        old = self.row_of.get(rid)
        if row is None:
            if old is not None:
                self._forget(rid, old)
            return
        if old is not None and np.array_equal(self.matrix[old], row):
            return  # the write changed other fields
        if old is not None:
            self._forget(rid, old)
        slot = self.free.pop() if self.free else self._grow()
        self.matrix[slot] = row
        self.norms[slot] = np.sqrt(np.dot(row, row))
        self.rid_at[slot] = rid
        self.row_of[rid] = slot
        self.pending.add(rid)

    def _used(self) -> int:
        """Rows ever used (live or free): rows past it were never written."""
        return len(self.row_of) + len(self.free)

    def _grow(self) -> int:
        used = self._used()
        if used == len(self.rid_at):
            size = max(16, used * 2)
            matrix = np.zeros((size, self.field.dimensions), dtype=np.float32)
            matrix[:used] = self.matrix[:used]
            rid_at = np.full(size, -1, dtype=np.int64)
            rid_at[:used] = self.rid_at[:used]
            norms = np.zeros(size, dtype=np.float32)
            norms[:used] = self.norms[:used]
            self.matrix, self.rid_at, self.norms = matrix, rid_at, norms
        return used

    def _forget(self, rid: int, slot: int) -> None:
        del self.row_of[rid]
        self.rid_at[slot] = -1
        self.free.append(slot)
        if rid in self.pending:
            self.pending.discard(rid)
        else:
            self.graph.remove(rid)

    def absorb(self, limit: int = ABSORB_BATCH) -> int:
        """Insert up to ``limit`` pending rows into the graph; how many."""
        if not self.pending:
            return 0
        rids = [self.pending.pop() for _ in range(min(limit, len(self.pending)))]
        if not self.pending:
            self.pending = set()  # a set keeps its table when emptied: iterating it would scan it
        rows = self.matrix[[self.row_of[rid] for rid in rids]]
        self.graph.add(np.asarray(rids, dtype=np.uint64), self._graph_rows(rows), threads=1)
        return len(rids)

    # -- searches ---------------------------------------------------------------------

    def _rough(self, slots: Any, query: Any) -> Any:
        """float32 values ranking the rows at ``slots`` as their exact scores do (bigger is
        nearer), and a bound on their rounding error."""
        q = np.asarray(query, dtype=np.float32)
        if self.field.similarity == "cosine":
            q = q / np.float32(np.linalg.norm(q))
        used = self._used()
        # Many rows: one product with the whole matrix (no copy of the rows); few: gather them.
        products = (self.matrix[:used] @ q)[slots] if len(slots) * 4 > used else self.matrix[slots] @ q
        norms = self.norms[slots]
        top = float(norms.max()) if len(norms) else 0.0
        if self.field.similarity == "cosine":
            return products / np.where(norms == 0, 1, norms), 1e-4
        rough = products
        error = 1e-4 * (1.0 + top * float(np.linalg.norm(q)))
        if self.field.similarity == "euclidean":
            return 2 * rough - norms * norms, error + 1e-4 * top * top
        return rough, error

    def _top(self, slots: Any, query: Any, limit: int | None) -> tuple[list[int], Any]:
        """(rids, exact scores) of the rows at ``slots``: with a ``limit``, only those within
        the rounding error of the ``limit``-th best by float32 ranking (so every row tied with
        it, or that exact scoring could put before it, is kept)."""
        if limit is not None and len(slots) > limit:
            rough, error = self._rough(slots, query)
            cut = len(rough) - limit
            kth = float(rough[np.argpartition(rough, cut)[cut]])
            slots = slots[rough >= kth - error]
        return self.rid_at[slots].tolist(), scores(self.matrix[slots], query, self.field.similarity)

    def exact(self, query: Any, rids: Collection[int], limit: int | None = None) -> tuple[list[int], Any]:
        """(rids, exact scores) of the given indexed documents: all of them, or the ``limit`` best
        with every one tied with the last (see :meth:`_top`)."""
        slots = np.fromiter(map(self.row_of.__getitem__, rids), dtype=np.int64)
        return self._top(slots, query, limit)

    def best(
        self, query: Any, limit: int, allowed: Iterable[int] | None, exclude: Iterable[int]
    ) -> tuple[list[int], Any]:
        """(rids, exact scores) of the ``limit`` best indexed documents among ``allowed`` (None:
        all) but not ``exclude``, every document tied with the last kept: one float32 product
        of the matrix with the query ranks them, then :meth:`_top`."""
        rid_at = self.rid_at[: self._used()]
        keep = rid_at >= 0
        if allowed is not None:
            keep &= np.isin(rid_at, np.fromiter(allowed, dtype=np.int64))
        excluded = np.fromiter(exclude, dtype=np.int64)
        if len(excluded):
            keep &= ~np.isin(rid_at, excluded)
        return self._top(np.flatnonzero(keep), query, limit)

    def candidates(self, query: Any, count: int) -> list[int]:
        """The rids the graph finds nearest with a beam of ``EXPLORE * count`` (all it finds, at
        least ``count`` when it holds that many), pending rows aside."""
        size = len(self.graph)
        if not size or count <= 0:
            return []
        beam = min(max(count * EXPLORE, 16), MAX_BEAM)
        self.graph.expansion_search = beam
        found = self.graph.search(self._graph_rows(query), min(max(beam, count), size), threads=1)
        keys: list[int] = found.keys.tolist()
        return keys
