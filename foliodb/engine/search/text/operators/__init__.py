"""``$search`` operators: each compiled once into a :class:`Query`, run against a Reader.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/operators-and-collectors/

One registry (:data:`OPERATORS`), one compiler per operator, as the other operator
families: ``compile_operator(spec, place, definition)`` checks the operator's fields
(mongot's errors name the place, ``"compound.should[0].text.query" is required``) and
returns a :class:`Query` whose :meth:`Query.hits` gives the matching entries of a
:class:`~foliodb.engine.search.text.reader.Reader` with their scores, the ``score``
option (``boost``, ``constant``, ``function``) applied. The operators are in
:mod:`.terms` (text, phrase, autocomplete, wildcard, regex, queryString), :mod:`.values`
(equals, in, range, exists, near), :mod:`.compound` (compound, embeddedDocument),
:mod:`.ancestry` (hasAncestor, hasRoot), :mod:`.knn` (knnBeta), :mod:`.like` (moreLikeThis),
:mod:`.geo` (geoWithin, geoShape) and :mod:`.span` (span).
Known MongoDB Search operators not built here answer NotImplemented (238).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.mapping import EMBEDDED, TextDefinition
from foliodb.engine.search.text.reader import Reader
from foliodb.engine.search.text.scoring import Hits
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.registry import Registry


def search_error(message: str) -> CommandError:
    """A query mongot rejects: mongod reports it as a failed aggregation (UnknownError, 8)."""
    return CommandError(ErrorCode.UnknownError, f"PlanExecutor error during aggregation :: caused by :: {message}")


def required(place: str) -> CommandError:
    return search_error(f'"{place}" is required')


def _unknown(name: str) -> CommandError:
    return search_error(f'Unrecognized field "{name}"')


@dataclass
class Run:
    """What one search's operators share while they run."""

    reader: Reader
    definition: TextDefinition
    highlight: dict[str, set[str]] = field(default_factory=dict)  # key -> terms matched
    scope: Any = None  # inside embeddedDocument or under returnScope: the ordinals of its embedded entries
    # A collection of the index's database by name (synonym sources), in the search's snapshot.
    collection: Callable[[str], Any] | None = None
    synonym_maps: dict[str, Any] = field(default_factory=dict)  # name -> built map, once per search
    # A document of the searched collection by record id, in the search's snapshot (knnBeta).
    fetch: Callable[[int], Mapping[str, Any] | None] | None = None

    def matched(self, key: str, found: Any) -> None:
        """The search matched these terms of ``key`` (highlights show them)."""
        self.highlight.setdefault(key, set()).update(found)


class Query:
    """A compiled operator. Subclasses implement :meth:`match`; ``score`` is the operator's
    ``score`` option, applied to what it matched."""

    score: Callable[[Run, Hits], Hits] | None = None
    name = ""

    def match(self, run: Run) -> Hits:
        raise NotImplementedError

    def hits(self, run: Run) -> Hits:
        found = self.match(run)
        return self.score(run, found) if self.score is not None and len(found[0]) else found


OperatorCompiler = Callable[[Mapping[str, Any], str, TextDefinition], Query]
OPERATORS: Registry[OperatorCompiler] = Registry(
    "search operator",
    _unknown,
    unbuilt=("vectorSearch",),
)


def compile_operator(name: str, body: Any, place: str, definition: TextDefinition) -> Query:
    """The operator ``name`` with its fields ``body``; ``place`` names it in errors
    (``"compound.should[0].text"``)."""
    if not isinstance(body, Mapping):
        raise search_error(f'"{place}" must be a document')
    query = OPERATORS.get(name)(body, place, definition)
    query.name = name
    if "score" in body:
        from foliodb.engine.search.text.operators.score import compile_score

        query.score = compile_score(body["score"], f"{place}.score", definition)
    return query


def clause(spec: Any, place: str, definition: TextDefinition) -> Query:
    """A document holding one operator (a compound clause, embeddedDocument's operator)."""
    if not isinstance(spec, Mapping) or len(spec) != 1:
        raise search_error(f'"{place}" must be a document holding exactly one operator')
    name, body = next(iter(spec.items()))
    return compile_operator(name, body, f"{place}.{name}", definition)


def embedded_operator(
    body: Mapping[str, Any], place: str, definition: TextDefinition, key: str, unindexed: str
) -> tuple[str, Query]:
    """The embeddedDocuments path ``body[key]`` and the ``operator`` of an operator that moves
    the embedded scope (embeddedDocument, hasAncestor), where mongot refuses moreLikeThis; the
    operator is compiled before the path is looked up in the index (``unindexed``, a format
    of ``path``, says it is not), as mongot parses the whole query first."""
    check_fields(body, place, (key, "operator"), (key, "operator"))
    path = body[key]
    if not isinstance(path, str):
        raise search_error(f'"{place}.{key}" must be a string')
    operator = embedded_clause(body, place, definition)
    if path not in definition.embedded_paths():
        raise search_error(unindexed.format(path=path))
    return path, operator


def embedded_clause(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    """An embedded scope's ``operator`` (embeddedDocument, hasAncestor, hasRoot): not moreLikeThis."""
    operator = clause(body["operator"], f"{place}.operator", definition)
    if operator.name == "moreLikeThis":
        raise search_error("Operator: moreLikeThis not allowed in embeddedDocument operator")
    return operator


def check_fields(body: Mapping[str, Any], place: str, allowed: tuple[str, ...], needed: tuple[str, ...] = ()) -> None:
    for key in body:
        if key not in allowed and key != "score":
            raise search_error(f'"{place}.{key}" is not a valid field')
    for key in needed:
        if key not in body:
            raise required(f"{place}.{key}")


def strings(value: Any, place: str) -> list[str]:
    """A string or an array of strings (``query``, ``path``)."""
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, str) for v in items):
        raise search_error(f'"{place}" must be a string or an array of strings')
    return list(items)


def number(value: Any, place: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        from bson import Decimal128, Int64

        if isinstance(value, Int64 | Decimal128):
            return float(str(value)) if isinstance(value, Decimal128) else float(value)
        raise search_error(f'"{place}" must be a number')
    return float(value)


def of_roots(run: Run, hits: Hits) -> Hits:
    """Hits restricted to the entries in scope: documents, or inside embeddedDocument its
    embedded entries."""
    ords, scores = hits
    if run.scope is None and not run.reader.nested:
        return hits  # every entry is a document's
    if run.scope is None:
        keep = run.reader.parent_at[ords] < 0
    else:
        keep = np.isin(ords, run.scope, assume_unique=True)
    return ords[keep], scores[keep]


def scope_entries(run: Run, path: str | None) -> Any:
    """The live entries of the embeddedDocuments ``path`` (None: the documents)."""
    reader = run.reader
    return reader.roots() if path is None else np.unique(reader.postings(EMBEDDED, path)[0])


@contextlib.contextmanager
def scoped(run: Run, path: str | None) -> Iterator[None]:
    """Operators inside run over the entries of the embeddedDocuments ``path`` (None: the
    documents); where they may, :mod:`.roots` has checked."""
    outer = run.scope
    run.scope = None if path is None else scope_entries(run, path)
    try:
        yield
    finally:
        run.scope = outer


def all_roots(run: Run) -> Hits:
    ords = run.reader.roots() if run.scope is None else run.scope
    return ords, np.ones(len(ords))


# Register the operators.
from foliodb.engine.search.text.operators import ancestry, compound, geo, knn, like, span, terms, values  # noqa: E402,F401
