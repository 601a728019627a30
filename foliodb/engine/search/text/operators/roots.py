"""mongot's embedded-root checks over a query's operators (OperatorEmbeddedRootValidator).

An operator runs at an embedded root: the documents, or under ``returnScope`` its path's
elements; ``embeddedDocument`` moves it down to its ``path``, ``hasAncestor`` up to its
``ancestorPath``, ``hasRoot`` back to the documents. :func:`check_roots` walks a compiled
query's operators (their specification as given; a query that compiled is well formed) and
refuses, with mongot's messages (UnknownError, 8):

* a field path not below the root (``"text operator path 'x' must be a descendant of
  returnScope.path 'items'"``; the root's source is ``returnScope.path``,
  ``embeddedDocument.path`` or ``hasAncestor.ancestorPath``), for ``embeddedDocument``'s own
  path as for any operator's (``path``, queryString's ``defaultPath``, span terms');
* ``hasAncestor`` / ``hasRoot`` at the documents' root, and an ``ancestorPath`` not above
  the root;
* more than 4 ``embeddedDocument`` + ``hasAncestor`` + ``hasRoot`` in one chain.

``{wildcard}`` paths and score path expressions are not checked.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from foliodb.engine.search.text.operators import search_error

MAX_JOINS = 5
_SCOPED = "requires embeddedDocument.path, hasAncestor.ancestorPath, or returnScope.path to be set."


def _below(path: str, root: str) -> bool:
    return path.startswith(root + ".")


def _field_paths(value: Any) -> Iterator[str]:
    """The field names of a ``path`` value (a name, ``{value, multi}``, or an array of them)."""
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping) and isinstance(item.get("value"), str):
            yield item["value"]


def _span_paths(node: Any) -> Iterator[str]:
    if not isinstance(node, Mapping):
        return
    for kind, body in node.items():
        if not isinstance(body, Mapping):
            continue
        if kind == "term":
            yield from _field_paths(body.get("path"))
        for key in ("clauses", "operator", "include", "exclude", "little", "big"):
            inner = body.get(key)
            for one in inner if isinstance(inner, list) else [inner]:
                yield from _span_paths(one)


def _leaf_paths(name: str, body: Mapping[str, Any]) -> Iterator[str]:
    if name == "span":
        yield from _span_paths(body)
    elif name == "queryString":
        yield from _field_paths(body.get("defaultPath"))
    elif name != "moreLikeThis":
        yield from _field_paths(body.get("path"))


def _walk(name: str, body: Any, root: str | None, source: str, joins: int) -> None:
    if joins >= MAX_JOINS:
        raise search_error(
            f"Query must contain less than {MAX_JOINS - 1} occurrences of hasAncestor + hasRoot + embeddedDocuments."
        )
    if not isinstance(body, Mapping):
        return

    def inner(root_: str | None, source_: str, joins_: int) -> None:
        operator = body.get("operator")
        if isinstance(operator, Mapping) and len(operator) == 1:
            ((inner_name, inner_body),) = operator.items()
            _walk(inner_name, inner_body, root_, source_, joins_)

    if name == "compound":
        for occur in ("must", "mustNot", "should", "filter"):
            clauses = body.get(occur, [])
            for clause in clauses if isinstance(clauses, list) else [clauses]:
                if isinstance(clause, Mapping) and len(clause) == 1:
                    ((clause_name, clause_body),) = clause.items()
                    _walk(clause_name, clause_body, root, source, joins)
    elif name == "embeddedDocument":
        path = body.get("path")
        if root is not None and isinstance(path, str) and not _below(path, root):
            raise search_error(f"embeddedDocument operator path '{path}' must be a descendant of {source} '{root}'")
        inner(path if isinstance(path, str) else root, "embeddedDocument.path", joins + 1)
    elif name == "hasAncestor":
        if root is None:
            raise search_error(f"hasAncestor operator {_SCOPED}")
        ancestor = body.get("ancestorPath")
        if isinstance(ancestor, str) and not _below(root, ancestor):
            raise search_error(f"hasAncestor.ancestorPath '{ancestor}' must be a parent of {source} '{root}'")
        inner(ancestor if isinstance(ancestor, str) else root, "hasAncestor.ancestorPath", joins + 1)
    elif name == "hasRoot":
        if root is None:
            raise search_error(f"hasRoot operator {_SCOPED}")
        inner(None, "", joins + 1)
    elif root is not None:
        for path in _leaf_paths(name, body):
            if not _below(path, root):
                raise search_error(f"{name} operator path '{path}' must be a descendant of {source} '{root}'")


def check_roots(operator: tuple[str, Any] | None, scope: str | None) -> None:
    """Refuse the query's operator (``(name, body)``) as mongot's validator does, ``scope``
    being the ``returnScope`` path (None: the documents)."""
    if operator is not None:
        _walk(operator[0], operator[1], scope, "returnScope.path", 0)
