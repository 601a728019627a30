"""Operators that reach above an embedded scope: hasAncestor and hasRoot.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/operators-collectors/hasancestor/,
.../hasroot/, .../query/return-scope/

Both run inside an embedded scope (``returnScope``, ``embeddedDocument`` or an outer
``hasAncestor``: :mod:`.roots` checks where they may be), and match the scope's entries whose
ancestor matches their ``operator``:

* ``hasAncestor: {ancestorPath, operator}``: the ancestor is the element of the
  embeddedDocuments field ``ancestorPath``, which must lie above the scope's path; its
  ``operator`` runs over that field's elements (its paths below ``ancestorPath``);
* ``hasRoot: {operator}``: the ancestor is the document; its ``operator`` runs over the
  documents.

As mongot builds them (a ToChildBlockJoinQuery beside a constant-score filter on the scope's
path, both required), an entry's score is its ancestor's plus 1. ``moreLikeThis`` is refused
inside either, as inside ``embeddedDocument``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.mapping import TextDefinition
from foliodb.engine.search.text.operators import (
    OPERATORS,
    Query,
    Run,
    check_fields,
    embedded_clause,
    embedded_operator,
    scoped,
)
from foliodb.engine.search.text.scoring import Hits, empty

FILTER_SCORE = 1.0  # the constant-score filter on the scope's path, a required clause


def _lift(run: Run, found: Hits) -> Hits:
    """The scope's entries having an ancestor among ``found``'s, each with that ancestor's
    score plus :data:`FILTER_SCORE`."""
    ancestors, scores = found
    entries = run.scope
    if not len(ancestors) or entries is None or not len(entries):
        return empty()
    parent_at = run.reader.parent_at
    matched = np.full(len(entries), -1, dtype=np.int64)
    at = parent_at[entries]
    while True:
        open_ = (matched < 0) & (at >= 0)
        if not open_.any():
            break
        hit = open_ & np.isin(at, ancestors)
        matched[hit] = at[hit]
        at = np.where(open_ & ~hit, parent_at[np.maximum(at, 0)], -1)
    keep = matched >= 0
    return entries[keep], scores[np.searchsorted(ancestors, matched[keep])] + FILTER_SCORE


class HasAncestorQuery(Query):
    def __init__(self, path: str, operator: Query) -> None:
        self.path, self.operator = path, operator

    def match(self, run: Run) -> Hits:
        with scoped(run, self.path):
            found = self.operator.hits(run)
        return _lift(run, _sorted(found))


class HasRootQuery(Query):
    def __init__(self, operator: Query) -> None:
        self.operator = operator

    def match(self, run: Run) -> Hits:
        with scoped(run, None):
            found = self.operator.hits(run)
        return _lift(run, _sorted(found))


def _sorted(hits: Hits) -> Hits:
    ords, scores = hits
    order = np.argsort(ords, kind="stable")
    return ords[order], scores[order]


@OPERATORS.register("hasAncestor")
def op_hasAncestor(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    unindexed = "hasAncestor requires path '{path}' to be indexed as 'embeddedDocuments'"
    return HasAncestorQuery(*embedded_operator(body, place, definition, "ancestorPath", unindexed))


@OPERATORS.register("hasRoot")
def op_hasRoot(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    check_fields(body, place, ("operator",), ("operator",))
    return HasRootQuery(embedded_clause(body, place, definition))
