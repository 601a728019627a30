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

The graph stores its rows quantized as the definition asks (``none``: float32,
``scalar``: float16, ``binary``: sign bits compared by Hamming distance); it
only proposes candidates, which are always rescored exactly from ``matrix``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from foliodb.engine.search.definition import VectorField
from foliodb.engine.search.numeric import np, usearch_index
from foliodb.engine.search.vectors import scores

_METRICS = {"cosine": "ip", "dotProduct": "ip", "euclidean": "l2sq"}  # cosine rows are unit vectors
_DTYPES = {"none": "f32", "scalar": "f16"}
# Rows absorbed into the graph per call: the lock is held for about this many HNSW insertions.
ABSORB_BATCH = 64


class VectorColumn:
    def __init__(self, field: VectorField) -> None:
        self.field = field
        self.parts = tuple(field.path.split("."))
        self.matrix = np.zeros((16, field.dimensions), dtype=np.float32)
        self.rid_at = np.full(16, -1, dtype=np.int64)  # row -> rid (-1: free)
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
            dtype=_DTYPES[field.quantization],
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
        self.rid_at[slot] = rid
        self.row_of[rid] = slot
        self.pending.add(rid)

    def _grow(self) -> int:
        used = len(self.row_of) + len(self.free)
        if used == len(self.rid_at):
            size = max(16, used * 2)
            matrix = np.zeros((size, self.field.dimensions), dtype=np.float32)
            matrix[:used] = self.matrix[:used]
            rid_at = np.full(size, -1, dtype=np.int64)
            rid_at[:used] = self.rid_at[:used]
            self.matrix, self.rid_at = matrix, rid_at
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
        rows = self.matrix[[self.row_of[rid] for rid in rids]]
        self.graph.add(np.asarray(rids, dtype=np.uint64), self._graph_rows(rows), threads=1)
        return len(rids)

    # -- searches ---------------------------------------------------------------------

    def live_rids(self) -> Any:
        return self.rid_at[self.rid_at >= 0]

    def exact(self, query: Any, rids: Iterable[int]) -> tuple[list[int], Any]:
        """(rids, scores) of the given indexed documents (unknown rids are skipped)."""
        known = [rid for rid in rids if rid in self.row_of]
        rows = self.matrix[[self.row_of[rid] for rid in known]] if known else np.zeros((0, self.field.dimensions))
        return known, scores(rows, query, self.field.similarity)

    def best(
        self, query: Any, limit: int, allowed: Iterable[int] | None, exclude: Iterable[int]
    ) -> tuple[list[int], Any]:
        """(rids, exact scores) of the ``limit`` best indexed documents among ``allowed`` (None:
        all) but not ``exclude``, every document tied with the last kept. One float32 pass over
        the matrix ranks them roughly; those within a margin of the ``limit``-th are rescored
        exactly (float32 rounding is far below the margin, so none that belongs is lost)."""
        keep = self.rid_at >= 0
        if allowed is not None:
            keep &= np.isin(self.rid_at, np.fromiter(allowed, dtype=np.int64))
        excluded = np.fromiter(exclude, dtype=np.int64)
        if len(excluded):
            keep &= ~np.isin(self.rid_at, excluded)
        q = np.asarray(query, dtype=np.float32)
        rough = self.matrix @ q  # bigger is nearer: dotProduct; cosine and euclidean below
        if self.field.similarity == "euclidean":
            rough = 2 * rough - np.einsum("ij,ij->i", self.matrix, self.matrix)
        elif self.field.similarity == "cosine":
            norms = np.sqrt(np.einsum("ij,ij->i", self.matrix, self.matrix))
            rough = rough / np.where(norms == 0, 1, norms)
        rough = np.where(keep, rough, -np.inf)
        count = int(keep.sum())
        if count > limit:
            kth = float(np.partition(rough, len(rough) - limit)[len(rough) - limit])
            keep &= rough >= kth - 1e-4 * max(1.0, abs(kth))
        rows = np.flatnonzero(keep)
        return self.rid_at[rows].tolist(), scores(self.matrix[rows], query, self.field.similarity)

    def candidates(self, query: Any, count: int) -> list[int]:
        """Up to ``count`` rids the graph finds nearest (beam width ``count``), pending rows aside."""
        size = len(self.graph)
        if not size or count <= 0:
            return []
        self.graph.expansion_search = max(count, 16)
        found = self.graph.search(self._graph_rows(query), min(count, size), threads=1)
        return [int(key) for key in found.keys]
