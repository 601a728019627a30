"""Operators made of operators: compound, embeddedDocument, queryString.

* ``compound``: ``must`` (all match, scores add), ``filter`` (all match, no score),
  ``should`` (scores add; with neither must nor filter at least ``minimumShouldMatch``,
  default 1, must match; with them, ``minimumShouldMatch``, default 0), ``mustNot`` (none may
  match). Only ``mustNot`` clauses: every document not matching them, score 1... as Lucene
  scores a MatchAllDocs clause.
* ``embeddedDocument``: ``operator`` over the elements of an ``embeddedDocuments`` array,
  each element's score gathered into its document's by ``score.embedded.aggregate``
  (``sum``, default; ``maximum``, ``minimum``, ``mean``). Inside another embedded scope
  (``returnScope``, an outer ``embeddedDocument``, ``hasAncestor``) its path must lie below
  that scope's (:mod:`.roots`).
* ``queryString``: Lucene's classic syntax over ``defaultPath``: terms, ``"phrases"``,
  ``field:value``, ``AND``/``&&``, ``OR``/``||`` (and adjacency), ``NOT``/``!``/``-``, ``+``,
  parentheses, ``*``/``?`` wildcards and ``term~N`` fuzzy terms.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.mapping import TextDefinition
from foliodb.engine.search.text.operators import (
    OPERATORS,
    Query,
    Run,
    all_roots,
    check_fields,
    clause,
    compile_operator,
    embedded_operator,
    number,
    of_roots,
    scoped,
    search_error,
)
from foliodb.engine.search.text.scoring import Hits, empty, intersect, restrict, subtract, union

_OCCURS = ("must", "mustNot", "should", "filter")


class CompoundQuery(Query):
    def __init__(self, clauses: dict[str, list[Query]], minimum: int | None) -> None:
        self.clauses, self.minimum = clauses, minimum

    def match(self, run: Run) -> Hits:
        size = run.reader.size
        must = [q.hits(run) for q in self.clauses["must"]]
        must += [(q.hits(run)[0], np.zeros(0)) for q in self.clauses["filter"]]
        must = [(o, s if len(s) == len(o) else np.zeros(len(o))) for o, s in must]
        should_parts = [q.hits(run) for q in self.clauses["should"]]
        should, counts = union(should_parts, size)
        if must:
            found = intersect(must, size)
            if should_parts:
                minimum = self.minimum or 0
                wanted = should[0][counts >= minimum] if minimum else should[0]
                if minimum:
                    found = restrict(found, wanted)
                extra = restrict(should, found[0])
                at = np.searchsorted(found[0], extra[0])
                scores = found[1].copy()
                scores[at] += extra[1]
                found = found[0], scores
        elif should_parts:
            keep = counts >= max(1, self.minimum or 0)
            found = should[0][keep], should[1][keep]
        else:
            found = all_roots(run)
        for q in self.clauses["mustNot"]:
            found = subtract(found, q.hits(run)[0])
        return found


@OPERATORS.register("compound")
def op_compound(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    check_fields(body, place, (*_OCCURS, "minimumShouldMatch"))
    clauses: dict[str, list[Query]] = {occur: [] for occur in _OCCURS}
    for occur in _OCCURS:
        if occur not in body:
            continue
        value = body[occur]
        items = value if isinstance(value, list) else [value]
        for i, spec in enumerate(items):
            where = f"{place}.{occur}[{i}]" if isinstance(value, list) else f"{place}.{occur}"
            clauses[occur].append(clause(spec, where, definition))
    if not any(clauses.values()):
        raise search_error(f'"{place}" must have at least one of [filter, must, mustNot, should]')
    minimum = None
    if "minimumShouldMatch" in body:
        minimum = int(number(body["minimumShouldMatch"], f"{place}.minimumShouldMatch"))
        if minimum < 0:
            raise search_error(f'"{place}.minimumShouldMatch" must not be negative')
    return CompoundQuery(clauses, minimum)


class EmbeddedQuery(Query):
    def __init__(self, path: str, operator: Query, aggregate: str) -> None:
        self.path, self.operator, self.aggregate = path, operator, aggregate

    def match(self, run: Run) -> Hits:
        reader = run.reader
        with scoped(run, self.path):
            ords, scores = self.operator.hits(run)
        if not len(ords):
            return empty()
        parents = reader.parent_at[ords]
        found, inverse, counts = np.unique(parents, return_inverse=True, return_counts=True)
        if self.aggregate == "maximum":
            out = np.full(len(found), -np.inf)
            np.maximum.at(out, inverse, scores)
        elif self.aggregate == "minimum":
            out = np.full(len(found), np.inf)
            np.minimum.at(out, inverse, scores)
        else:
            out = np.bincount(inverse, weights=scores, minlength=len(found))
            if self.aggregate == "mean":
                out = out / counts
        return of_roots(run, (found, out))


@OPERATORS.register("embeddedDocument")
def op_embeddedDocument(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    path, operator = embedded_operator(
        body, place, definition, "path", "Path '{path}' needs to be indexed as embeddedDocuments"
    )
    aggregate = "sum"
    score = body.get("score")
    if isinstance(score, Mapping) and isinstance(score.get("embedded"), Mapping):
        aggregate = score["embedded"].get("aggregate", "sum")
        if aggregate not in ("sum", "maximum", "minimum", "mean"):
            raise search_error(f'"{place}.score.embedded.aggregate" must be one of [maximum, mean, minimum, sum]')
    return EmbeddedQuery(path, operator, aggregate)


# -- queryString -------------------------------------------------------------------------------

_TOKEN = re.compile(r'\s*(\(|\)|&&|\|\||!|"(?:[^"\\]|\\.)*"|[+-]?(?:[^\s()"\\:]|\\.)+:?)')


class _Parser:
    def __init__(self, text: str, default_path: str, definition: TextDefinition, place: str) -> None:
        self.tokens = [t for t in _TOKEN.findall(text) if t]
        self.i = 0
        self.default_path, self.definition, self.place = default_path, definition, place

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> str:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def query(self, path: str) -> Query:
        """OR of AND-groups; adjacency is OR (the default operator)."""
        groups: list[tuple[str, Query]] = []
        while (token := self.peek()) is not None and token != ")":
            if token in ("OR", "||"):
                self.take()
                continue
            occur, node = self.unary(path)
            while self.peek() in ("AND", "&&"):
                self.take()
                other_occur, other = self.unary(path)
                node = _and(node, occur, other, other_occur)
                occur = "should"
            groups.append((occur, node))
        clauses: dict[str, list[Query]] = {occur: [] for occur in _OCCURS}
        for occur, node in groups:
            clauses[occur].append(node)
        if not groups:
            raise search_error(f'"{self.place}.query" is empty')
        if len(groups) == 1 and groups[0][0] == "should":
            return groups[0][1]
        return CompoundQuery(clauses, None)

    def unary(self, path: str) -> tuple[str, Query]:
        token = self.take()
        if token in ("NOT", "!"):
            return "mustNot", self.unary(path)[1]
        if token.startswith("-") and len(token) > 1:
            self.tokens.insert(self.i, token[1:])
            return "mustNot", self.unary(path)[1]
        if token.startswith("+") and len(token) > 1:
            self.tokens.insert(self.i, token[1:])
            return "must", self.unary(path)[1]
        if token == "(":
            inner = self.query(path)
            if self.peek() == ")":
                self.take()
            return "should", inner
        if token.endswith(":") and not token.endswith("\\:"):
            field = token[:-1]
            return self.unary(field)
        return "should", self.leaf(token, path)

    def leaf(self, token: str, path: str) -> Query:
        where = f"{self.place}.query"
        if token.startswith('"'):
            text = token[1:-1].replace('\\"', '"')
            return compile_operator("phrase", {"query": text, "path": path}, where, self.definition)
        fuzzy = re.fullmatch(r"(.*?)~(\d*)", token)
        if fuzzy is not None:
            edits = int(fuzzy.group(2) or 2)
            body = {"query": fuzzy.group(1), "path": path, "fuzzy": {"maxEdits": min(max(edits, 1), 2)}}
            return compile_operator("text", body, where, self.definition)
        if re.search(r"(?<!\\)[*?]", token):
            return compile_operator("wildcard", {"query": token, "path": path}, where, self.definition)
        return compile_operator("text", {"query": re.sub(r"\\(.)", r"\1", token), "path": path}, where, self.definition)


def _and(left: Query, left_occur: str, right: Query, right_occur: str) -> Query:
    clauses: dict[str, list[Query]] = {occur: [] for occur in _OCCURS}
    clauses["mustNot" if left_occur == "mustNot" else "must"].append(left)
    clauses["mustNot" if right_occur == "mustNot" else "must"].append(right)
    return CompoundQuery(clauses, None)


@OPERATORS.register("queryString")
def op_queryString(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    check_fields(body, place, ("defaultPath", "query"), ("defaultPath", "query"))
    if not isinstance(body["defaultPath"], str) or not isinstance(body["query"], str):
        raise search_error(f'"{place}.defaultPath" and "{place}.query" must be strings')
    return _Parser(body["query"], body["defaultPath"], definition, place).query(body["defaultPath"])
