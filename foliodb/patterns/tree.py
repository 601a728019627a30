"""Tree with ancestors: each node keeps its parent and the list of its
ancestors, root first, as ``{_id, name, slug}`` (the breadcrumb a page shows).

Breadcrumbs are one read of one node; a subtree is one indexed query on
``ancestors._id``. Moving a subtree rewrites the ancestors of every node in it
(one pipeline ``update_many``): each node is updated atomically, the subtree as a
whole only in a transaction (``session``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.patterns._types import Coll, Session

ANCESTOR_FIELDS = ("_id", "name", "slug")


class TreeError(ValueError):
    """A move that would make a node its own ancestor, or a missing node."""


def ensure_indexes(nodes: Coll) -> None:
    nodes.create_index("ancestors._id")
    nodes.create_index("parent_id")


def _crumb(node: Mapping[str, Any]) -> dict[str, Any]:
    return {name: node[name] for name in ANCESTOR_FIELDS if name in node}


def _lineage(nodes: Coll, parent_id: Any, session: Session) -> list[dict[str, Any]]:
    """The ancestors a child of ``parent_id`` gets: the parent's own, then the parent."""
    if parent_id is None:
        return []
    parent = nodes.find_one({"_id": parent_id}, session=session)
    if parent is None:
        raise TreeError(f"no node with _id {parent_id!r}")
    return [*parent.get("ancestors", []), _crumb(parent)]


def insert(nodes: Coll, node: Mapping[str, Any], parent_id: Any = None, *, session: Session = None) -> Any:
    """Insert ``node`` under ``parent_id`` (a root when None); returns its ``_id``."""
    document = {**node, "parent_id": parent_id, "ancestors": _lineage(nodes, parent_id, session)}
    return nodes.insert_one(document, session=session).inserted_id


def breadcrumbs(nodes: Coll, node_id: Any, *, session: Session = None) -> list[dict[str, Any]]:
    """The node's ancestors, root first, then the node itself: one query."""
    node = nodes.find_one({"_id": node_id}, {name: 1 for name in (*ANCESTOR_FIELDS, "ancestors")}, session=session)
    if node is None:
        raise TreeError(f"no node with _id {node_id!r}")
    return [*node.get("ancestors", []), _crumb(node)]


def descendants(nodes: Coll, node_id: Any, *, session: Session = None) -> list[dict[str, Any]]:
    """Every node below ``node_id``, at any depth."""
    return list(nodes.find({"ancestors._id": node_id}, session=session))


def move(nodes: Coll, node_id: Any, new_parent_id: Any, *, session: Session = None) -> int:
    """Put the subtree rooted at ``node_id`` under ``new_parent_id`` (None: make it
    a root). Returns the number of nodes rewritten (the node and its descendants)."""
    if new_parent_id == node_id:
        raise TreeError("a node cannot be its own parent")
    if new_parent_id is not None and nodes.count_documents(
        {"_id": new_parent_id, "ancestors._id": node_id}, session=session
    ):
        raise TreeError("cannot move a node under one of its descendants")
    lineage = _lineage(nodes, new_parent_id, session)
    moved = nodes.update_one(
        {"_id": node_id}, {"$set": {"parent_id": new_parent_id, "ancestors": lineage}}, session=session
    )
    if moved.matched_count == 0:
        raise TreeError(f"no node with _id {node_id!r}")
    node = nodes.find_one({"_id": node_id}, session=session)
    assert node is not None  # updated just above, in this session
    # Each descendant keeps the part of its ancestors below the moved node and
    # takes the moved node's new lineage (and the node itself) above it.
    prefix = [*lineage, _crumb(node)]
    keep_from = {"$add": [{"$indexOfArray": ["$ancestors._id", node_id]}, 1]}
    below = {"$slice": ["$ancestors", keep_from, {"$max": [{"$size": "$ancestors"}, 1]}]}
    rewritten = nodes.update_many(
        {"ancestors._id": node_id},
        [{"$set": {"ancestors": {"$concatArrays": [{"$literal": prefix}, below]}}}],
        session=session,
    )
    return 1 + rewritten.modified_count
