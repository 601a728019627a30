"""A vector search index in memory, derived from its collection, with a watermark.

:class:`VectorState` is what one version of one ``vectorSearch`` index
definition knows: a :class:`~foliodb.engine.search.columns.VectorColumn` per
vector field and, per indexed document, the values of its ``filter`` fields
(``filter_docs``, the document projected on those paths). It follows the change
log as every search index does (:class:`~foliodb.engine.search.follow.Follower`:
catching up before a search, older readers, the history), and is

* **Saved** (:meth:`save`, :func:`load`): the rows, the graph and the filter
  documents, in files under ``<dbpath>/foliodb.search/`` named by the
  watermark (``<id>-v<version>-w<watermark>-...``), then the meta file
  ``<id>-v<version>.meta`` (written whole, renamed over the old) naming that
  watermark; a restart loads the files the meta file names and replays the
  log from that watermark instead of rebuilding.

Every method runs under ``lock`` (the caller takes it; :meth:`VectorState.absorb` takes it
itself), but for the writing of saved files (:meth:`Saved.write`), which works on a copy
taken under it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from typing import Any

import bson

from foliodb.engine.catalog import CODEC
from foliodb.engine.search.columns import VectorColumn
from foliodb.engine.search.definition import VectorDefinition
from foliodb.engine.search.follow import Follower, write_atomically
from foliodb.engine.search.numeric import np, usearch_index
from foliodb.engine.search.vector_bson import GENERAL, raw_doubles
from foliodb.engine.search.vectors import as_vector, at_path, prepared

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


class VectorState(Follower):
    def __init__(self, index_id: int, version: int, definition: VectorDefinition) -> None:
        super().__init__(index_id, version)
        self.definition = definition
        self.columns = {field.path: VectorColumn(field) for field in definition.vectors}
        self.filter_tree = _path_tree(definition.filters)
        self.filter_docs: dict[int, Any] = {}
        self.allowed_cache: dict[Any, tuple[int, frozenset[int]]] = {}

    # -- changes -------------------------------------------------------------------------

    def apply(self, rid: int, data: bytes | None) -> None:
        """The document ``rid`` is now ``data`` (None: deleted). The document is decoded only
        when its vectors are not plain arrays of doubles, or the index has filter fields."""
        doc: Any = None
        indexed = False
        for column in self.columns.values():
            row = None
            if data is not None:
                field = column.field
                values = raw_doubles(data, column.names, field.dimensions)
                if values is GENERAL:
                    doc = bson.decode(data, CODEC) if doc is None else doc
                    values = as_vector(at_path(doc, column.parts))
                row = prepared(values, field.dimensions, field.similarity)
            column.put(rid, row)
            indexed = indexed or row is not None
        if indexed and data is not None:
            if self.filter_tree:
                doc = bson.decode(data, CODEC) if doc is None else doc
            self.filter_docs[rid] = project(doc, self.filter_tree) if self.filter_tree else {}
        else:
            self.filter_docs.pop(rid, None)
        self.changes += 1

    def changed(self) -> None:
        self.allowed_cache.clear()

    def __len__(self) -> int:
        """The documents the index holds."""
        return len(self.filter_docs)

    def pending(self) -> int:
        return sum(len(column.pending) for column in self.columns.values())

    def absorb(self) -> int:
        with self.lock:
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
            write_atomically(f"{base}-{n}.npz", lambda f, r=rids, m=rows: np.savez(f, rids=r, rows=m))
            write_atomically(f"{base}-{n}.usearch", lambda f, g=graph: f.write(g))
        docs = [[rid, doc] for rid, doc in self.filter_docs.items()]
        filters = bson.encode({"docs": docs}, codec_options=CODEC)
        write_atomically(f"{base}.filters", lambda f: f.write(filters))
        meta = bson.encode({"format": FORMAT, "watermark": self.watermark, "pending": self.pending})
        write_atomically(state._meta(directory), lambda f: f.write(meta))
        current = os.path.basename(base)
        prefix = f"{state.index_id}-v{state.version}-w"
        for name in os.listdir(directory):
            if name.startswith(prefix) and not name.startswith(current + "-") and not name.startswith(current + "."):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(directory, name))
        state.mark_saved(self.watermark, self.changes)


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
