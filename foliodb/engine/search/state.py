"""A vector search index in memory, derived from its collection, with a watermark.

:class:`VectorState` is what one version of one ``vectorSearch`` index
definition knows: a :class:`~foliodb.engine.search.columns.VectorColumn` per
vector field and, per indexed document, the values of its ``filter`` fields
(``filter_docs``, the document projected on those paths). It describes the
collection as of ``watermark``: the newest change-log ``seq`` it has applied
(see :mod:`foliodb.engine.search.catalog`).

* **Catching up** (:meth:`catch_up`): a reader whose snapshot's newest ``seq``
  is past the watermark applies the log entries in between, reading the
  changed documents in its own snapshot, before it searches. So a search sees
  every write that committed before its snapshot, exactly as a find does.
* **Older readers**: ``history`` remembers which record ids each applied
  ``seq`` changed (the last :data:`HISTORY` entries); a reader whose snapshot
  is older than the watermark searches the state without those records and
  scores its own versions of them (:meth:`changed_since`). A reader older
  than the history falls back to an exact scan of its snapshot.
* **Saved** (:meth:`save`, :func:`load`): the rows, the graph and the filter
  documents, in files under ``<dbpath>/foliodb.search/`` named by the
  watermark (``<id>-v<version>-w<watermark>-...``), then the meta file
  ``<id>-v<version>.meta`` (written whole, renamed over the old) naming that
  watermark; a restart loads the files the meta file names and replays the
  log from that watermark instead of rebuilding.

Every method runs under ``lock`` (the caller takes it), but for the writing of
saved files (:meth:`Saved.write`), which works on a copy taken under it.
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import bson

from foliodb.engine.catalog import CODEC
from foliodb.engine.search.columns import VectorColumn
from foliodb.engine.search.definition import VectorDefinition
from foliodb.engine.search.numeric import np, usearch_index
from foliodb.engine.search.vectors import as_vector, at_path, prepared

# (seq, rid) pairs kept for readers older than the watermark.
HISTORY = 100_000
FORMAT = 4  # of the saved files (4: cosine graphs of int8 rows)


def _path_tree(paths: Iterable[str]) -> dict[str, Any]:
    """Filter paths as a tree of their parts (None: keep the whole value)."""
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        parts = path.split(".")
        for part in parts[:-1]:
            child = node.get(part, {})
            if child is None:
                break
            node = node.setdefault(part, child)
        else:
            node[parts[-1]] = None
    return tree


def project(value: Any, tree: Mapping[str, Any]) -> Any:
    """The parts of ``value`` the paths of ``tree`` reach (arrays kept as arrays), so a filter on
    those paths matches the projection exactly when it matches the document."""
    if isinstance(value, dict):
        out = {}
        for key, sub in tree.items():
            if key in value:
                out[key] = value[key] if sub is None else project(value[key], sub)
        return out
    if isinstance(value, list):
        if any(key.isdigit() for key in tree):
            return value  # a positional path: the array as it is
        return [project(item, tree) for item in value if isinstance(item, dict | list)]
    return value


class VectorState:
    def __init__(self, index_id: int, version: int, definition: VectorDefinition) -> None:
        self.index_id = index_id
        self.version = version
        self.definition = definition
        self.columns = {field.path: VectorColumn(field) for field in definition.vectors}
        self.filter_tree = _path_tree(definition.filters)
        self.filter_docs: dict[int, Any] = {}
        self.watermark = 0
        self.history: collections.deque[tuple[int, int]] = collections.deque(maxlen=HISTORY)
        self.history_floor = 0  # the history holds every change after this seq
        self.changes = 0  # applied since the last save
        self.saved = 0  # the watermark of the saved files (0: none)
        self.save_after = 0.0  # time.monotonic() before which the next save waits
        self.ready = False  # the initial build is done
        self.loaded = False  # restored from saved files (not built by a scan)
        self.lock = threading.RLock()
        self.allowed_cache: dict[Any, tuple[int, frozenset[int]]] = {}

    # -- changes -------------------------------------------------------------------------

    def apply(self, rid: int, data: bytes | None) -> None:
        """The document ``rid`` is now ``data`` (None: deleted)."""
        doc = bson.decode(data, CODEC) if data is not None else None
        indexed = False
        for column in self.columns.values():
            row = None
            if doc is not None:
                field = column.field
                row = prepared(as_vector(at_path(doc, column.parts)), field.dimensions, field.similarity)
            column.put(rid, row)
            indexed = indexed or row is not None
        if indexed and doc is not None:
            self.filter_docs[rid] = project(doc, self.filter_tree)
        else:
            self.filter_docs.pop(rid, None)
        self.changes += 1

    def catch_up(self, entries: list[tuple[int, int]], rows: Mapping[int, bytes], newest: int) -> None:
        """Apply log ``entries`` ((seq, rid), in order, all past the watermark), ``rows`` being the
        changed documents as the snapshot holding ``newest`` has them."""
        for rid in dict.fromkeys(rid for _, rid in entries):
            self.apply(rid, rows.get(rid))
        self.history.extend(entries)
        if len(self.history) == HISTORY:
            self.history_floor = max(self.history_floor, self.history[0][0])
        if entries or newest > self.watermark:
            self.allowed_cache.clear()
        self.watermark = max(self.watermark, newest)

    def changed_since(self, seq: int) -> set[int] | None:
        """The record ids changed after ``seq`` (up to the watermark); None when the history no
        longer reaches back that far."""
        if seq >= self.watermark:
            return set()
        if seq < self.history_floor:
            return None
        return {rid for s, rid in self.history if s > seq}

    def __len__(self) -> int:
        """The documents the index holds."""
        return len(self.filter_docs)

    def pending(self) -> int:
        return sum(len(column.pending) for column in self.columns.values())

    def absorb(self) -> int:
        return sum(column.absorb() for column in self.columns.values())

    # -- saving ------------------------------------------------------------------------------

    def _meta(self, directory: str) -> str:
        return os.path.join(directory, f"{self.index_id}-v{self.version}.meta")

    def _base(self, directory: str, watermark: int) -> str:
        return os.path.join(directory, f"{self.index_id}-v{self.version}-w{watermark}")

    def copy(self) -> Saved:
        """Under the lock: what :meth:`Saved.write` needs, copied (a graph's serialized bytes, the
        live rows), so the files are written without holding the lock searches need."""
        columns = []
        for column in self.columns.values():
            live = column.rid_at >= 0
            columns.append((column.rid_at[live], column.matrix[live], column.graph.save()))
        pending = sorted({rid for column in self.columns.values() for rid in column.pending})
        return Saved(self, self.watermark, self.changes, columns, dict(self.filter_docs), pending)


class Saved:
    """A state's contents at one watermark, being written to its files."""

    def __init__(
        self,
        state: VectorState,
        watermark: int,
        changes: int,
        columns: list[tuple[Any, Any, Any]],
        filter_docs: dict[int, Any],
        pending: list[int],
    ) -> None:
        self.state, self.watermark, self.changes = state, watermark, changes
        self.columns, self.filter_docs, self.pending = columns, filter_docs, pending

    def write(self, directory: str) -> None:
        """Write the files, named by the watermark (a new generation beside the last one); then
        the meta file, renamed over the old, names that generation; then the old generation
        goes. A crash at any point leaves the meta file naming complete files."""
        state = self.state
        os.makedirs(directory, mode=0o700, exist_ok=True)
        base = state._base(directory, self.watermark)
        for n, (rids, rows, graph) in enumerate(self.columns):
            _atomic(f"{base}-{n}.npz", lambda f, r=rids, m=rows: np.savez(f, rids=r, rows=m))
            _atomic(f"{base}-{n}.usearch", lambda f, g=graph: f.write(g))
        docs = [[rid, doc] for rid, doc in self.filter_docs.items()]
        filters = bson.encode({"docs": docs}, codec_options=CODEC)
        _atomic(f"{base}.filters", lambda f: f.write(filters))
        meta = bson.encode({"format": FORMAT, "watermark": self.watermark, "pending": self.pending})
        _atomic(state._meta(directory), lambda f: f.write(meta))
        current = os.path.basename(base)
        prefix = f"{state.index_id}-v{state.version}-w"
        for name in os.listdir(directory):
            if name.startswith(prefix) and not name.startswith(current + "-") and not name.startswith(current + "."):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(directory, name))
        with state.lock:
            state.saved = self.watermark
            state.changes -= self.changes


def _atomic(path: str, write: Any) -> None:
    with open(path + ".tmp", "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(path + ".tmp", path)


def load(directory: str, index_id: int, version: int, definition: VectorDefinition) -> VectorState | None:
    """The state saved for this index version, or None (no files, or unreadable ones)."""
    state = VectorState(index_id, version, definition)
    try:
        with open(state._meta(directory), "rb") as f:
            meta = bson.decode(f.read())
        if meta.get("format") != FORMAT:
            return None
        base = state._base(directory, int(meta["watermark"]))
        pending = set(meta["pending"])
        for n, column in enumerate(state.columns.values()):
            with np.load(f"{base}-{n}.npz") as saved:
                rids, rows = saved["rids"], saved["rows"]
            column.graph = usearch_index.Index.restore(f"{base}-{n}.usearch")
            column.graph.expansion_add = column.field.edge_candidates  # not saved with the graph
            for rid, row in zip(rids.tolist(), rows, strict=True):
                column.put(int(rid), row)
            in_graph = set(int(key) for key in column.graph.keys)
            column.pending = {rid for rid in column.row_of if rid not in in_graph or rid in pending}
            stale = [rid for rid in in_graph if rid not in column.row_of or rid in column.pending]
            if stale:
                column.graph.remove(np.asarray(stale, dtype=np.uint64))
        with open(f"{base}.filters", "rb") as f:
            state.filter_docs = {int(rid): doc for rid, doc in bson.decode(f.read(), CODEC)["docs"]}
    except (OSError, ValueError, KeyError, TypeError, bson.errors.BSONError, RuntimeError):
        return None
    state.watermark = state.saved = state.history_floor = int(meta["watermark"])
    state.changes = 0
    state.ready = state.loaded = True
    return state


def remove_files(directory: str, index_id: int) -> None:
    """Delete every saved file of an index (all its versions)."""
    remove_other_files(directory, lambda saved: saved == index_id)


def remove_other_files(directory: str, stale: Any) -> None:
    """Delete the saved files whose index id ``stale(id)`` says is gone."""
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            head = name.split("-", 1)[0]
            if head.isdigit() and stale(int(head)):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(directory, name))
