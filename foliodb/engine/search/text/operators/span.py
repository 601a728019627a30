"""The ``span`` operator (deprecated in MongoDB Search for ``phrase``): Lucene's span queries.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/span/

A span is a run of positions ``[start, end)`` in one string field; each form gives a
document's spans:

* ``term: {path, query, prefix? | fuzzy? | regex? | wildcard?}``: the positions of the
  query as one term, normalized as mongot's (the field's analyzer's lower-casing and folding;
  not tokenized, stemmed or stopped: span is a term-level operator), or of every index term
  the query stands for (Lucene's SpanMultiTermQueryWrapper over the query mongot builds):
  ``prefix: true`` every term starting with it; ``regex: true`` / ``wildcard: true`` every
  term the query matches whole, as the ``regex`` / ``wildcard`` operators; ``fuzzy: {maxEdits
  0-2 = 2, prefixLength = 0, maxExpansions = 256}`` the terms within that Damerau-Levenshtein
  distance sharing the prefix, the ``maxExpansions`` most similar (``1 - edits / min(length)``,
  ties by term: Lucene's top-terms rewrite), or the term alone when ``maxEdits`` is 0 or the
  prefix is the whole term. At most one of the four options may be set;
* ``or: {clauses}``: every clause's spans;
* ``first: {operator, endPositionLte = 3}``: the operator's spans ending at or before it;
* ``near: {clauses, slop = 0, inOrder = false}``: one span of each clause, their gaps (in
  order: between consecutive spans; any order: the window less the spans' lengths) at most
  ``slop``; in order, the spans may not overlap;
* ``subtract: {include, exclude}``: the include spans no exclude span overlaps;
* ``contains: {little, big, spanToReturn: "outer" | "inner"}``: the big spans holding a
  little one (outer), or the little spans inside a big one (inner).

A document matches when it has a span; its score is BM25 with frequency the sum of
``1 / (1 + width)`` over its spans (width: a near's gaps, 0 for a term) and idf the sum of
the idf of its terms found in the index (Lucene's SpanWeight: an expanded term counts each
index term it stands for; a term no document holds adds nothing). All clauses must use one
path.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping
from typing import Any

from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.analysis import Analyzer, Token, ascii_folding, lowercase
from foliodb.engine.search.text.mapping import TextDefinition
from foliodb.engine.search.text.operators import OPERATORS, Query, Run, check_fields, number, of_roots, search_error
from foliodb.engine.search.text.operators.terms import compile_pattern, edit_distance
from foliodb.engine.search.text.scoring import Hits, bm25, empty, idf

TERM_OPTIONS = ("fuzzy", "prefix", "regex", "wildcard")
Span = tuple[int, int, int]  # start, end, width
Spans = dict[int, list[Span]]  # ordinal -> its spans, sorted


class SpanNode:
    path = ""

    def spans(self, run: Run) -> Spans:
        raise NotImplementedError

    def terms(self, run: Run) -> set[str]:
        raise NotImplementedError


class TermSpan(SpanNode):
    def __init__(self, path: str, term: str, prefix: bool) -> None:
        self.path, self.term, self.prefix = path, term, prefix

    def terms(self, run: Run) -> set[str]:
        if not self.prefix:
            return {self.term}
        return set(run.reader.terms_between(self.path, self.term, self.term + "\U0010ffff"))

    def spans(self, run: Run) -> Spans:
        return _term_spans(run, self.path, self.terms(run))


class PatternSpan(TermSpan):
    """``regex`` or ``wildcard``: every index term the pattern matches whole."""

    def __init__(self, path: str, compiled: Any, prefix: str) -> None:
        self.path, self.compiled, self.literal = path, compiled, prefix

    def terms(self, run: Run) -> set[str]:
        reader, start = run.reader, self.literal
        candidates = reader.terms_between(self.path, start, start + "\U0010ffff") if start else reader.terms(self.path)
        return {t for t in candidates if self.compiled.search(t) is not None}


class FuzzySpan(TermSpan):
    """``fuzzy``: Lucene's FuzzyQuery terms, the ``expansions`` most similar."""

    def __init__(self, path: str, term: str, max_edits: int, prefix_length: int, expansions: int) -> None:
        self.path, self.term = path, term
        self.max_edits, self.prefix_length, self.expansions = max_edits, prefix_length, expansions

    def terms(self, run: Run) -> set[str]:
        term, reader = self.term, run.reader
        if self.max_edits == 0 or self.prefix_length >= len(term):
            return {term}  # Lucene enumerates the term alone
        start = term[: self.prefix_length]
        candidates = reader.terms_between(self.path, start, start + "\U0010ffff") if start else reader.terms(self.path)
        ranked = []
        for candidate in candidates:
            edits = edit_distance(term, candidate, self.max_edits)
            if edits <= self.max_edits:
                similarity = 1.0 if edits == 0 else 1.0 - edits / min(len(candidate), len(term))
                ranked.append((-similarity, candidate))
        ranked.sort()
        return {candidate for _, candidate in ranked[: self.expansions]}


def _term_spans(run: Run, path: str, terms: set[str]) -> Spans:
    out: Spans = {}
    for term in sorted(terms):
        for ord_, positions in run.reader.positions(path, term).items():
            out.setdefault(ord_, []).extend((p, p + 1, 0) for p in positions)
        run.matched(path, [term])
    return {o: sorted(set(s)) for o, s in out.items()}


class OrSpan(SpanNode):
    def __init__(self, clauses: list[SpanNode]) -> None:
        self.clauses, self.path = clauses, clauses[0].path

    def terms(self, run: Run) -> set[str]:
        return set().union(*(c.terms(run) for c in self.clauses))

    def spans(self, run: Run) -> Spans:
        out: Spans = {}
        for clause in self.clauses:
            for ord_, spans in clause.spans(run).items():
                out.setdefault(ord_, []).extend(spans)
        return {o: sorted(set(s)) for o, s in out.items()}


class FirstSpan(SpanNode):
    def __init__(self, operator: SpanNode, end: int) -> None:
        self.operator, self.end, self.path = operator, end, operator.path

    def terms(self, run: Run) -> set[str]:
        return self.operator.terms(run)

    def spans(self, run: Run) -> Spans:
        kept = {o: [s for s in spans if s[1] <= self.end] for o, spans in self.operator.spans(run).items()}
        return {o: s for o, s in kept.items() if s}


def _soonest_from(spans: list[Span]) -> list[Span]:
    """For each index of spans sorted by start, the span from there on that ends first."""
    out = list(spans)
    for i in range(len(out) - 2, -1, -1):
        if out[i + 1][1] < out[i][1]:
            out[i] = out[i + 1]
    return out


class NearSpan(SpanNode):
    def __init__(self, clauses: list[SpanNode], slop: int, in_order: bool) -> None:
        self.clauses, self.slop, self.in_order, self.path = clauses, slop, in_order, clauses[0].path

    def terms(self, run: Run) -> set[str]:
        return set().union(*(c.terms(run) for c in self.clauses))

    def _ordered(self, first: Span, rest: list[list[Span]]) -> Span | None:
        """From ``first``, each next clause's earliest span starting at or after the previous end."""
        chain = [first]
        for spans in rest:
            at = bisect.bisect_left(spans, (chain[-1][1], -1, -1))
            if at == len(spans):
                return None
            chain.append(spans[at])
        width = sum(b[0] - a[1] for a, b in itertools.pairwise(chain))
        return (first[0], chain[-1][1], width) if width <= self.slop else None

    def _unordered(self, first: Span, others: list[tuple[list[Span], list[Span]]]) -> Span | None:
        """With ``first`` leftmost, each other clause's span starting at or after it that ends
        first (``others``: each clause's spans and, from each index on, the one ending first)."""
        chain = [first]
        for spans, soonest in others:
            at = bisect.bisect_left(spans, (first[0], -1, -1))
            if at == len(spans):
                return None
            chain.append(soonest[at])
        end = max(sp[1] for sp in chain)
        width = end - first[0] - sum(sp[1] - sp[0] for sp in chain)
        return (first[0], end, max(width, 0)) if width <= self.slop else None

    def spans(self, run: Run) -> Spans:
        per_clause = [c.spans(run) for c in self.clauses]
        common = set(per_clause[0]).intersection(*per_clause[1:])
        out: Spans = {}
        for ord_ in common:
            lists = [p[ord_] for p in per_clause]
            found: set[Span] = set()
            if self.in_order:
                found = {m for first in lists[0] if (m := self._ordered(first, lists[1:]))}
            else:
                soonest = [_soonest_from(spans) for spans in lists]
                for i, spans in enumerate(lists):
                    others = [(lists[j], soonest[j]) for j in range(len(lists)) if j != i]
                    found |= {m for first in spans if (m := self._unordered(first, others))}
            if found:
                # One match per start, the tightest (Lucene moves on from a start once it matched).
                best: dict[int, Span] = {}
                for span in sorted(found, key=lambda sp: (sp[0], sp[2], sp[1])):
                    best.setdefault(span[0], span)
                out[ord_] = sorted(best.values())
        return out


class SubtractSpan(SpanNode):
    def __init__(self, include: SpanNode, exclude: SpanNode) -> None:
        self.include, self.exclude, self.path = include, exclude, include.path

    def terms(self, run: Run) -> set[str]:
        return self.include.terms(run)

    def spans(self, run: Run) -> Spans:
        excluded = self.exclude.spans(run)
        out: Spans = {}
        for ord_, spans in self.include.spans(run).items():
            others = excluded.get(ord_, [])
            kept = [s for s in spans if not any(e[0] < s[1] and e[1] > s[0] for e in others)]
            if kept:
                out[ord_] = kept
        return out


class ContainsSpan(SpanNode):
    def __init__(self, little: SpanNode, big: SpanNode, outer: bool) -> None:
        self.little, self.big, self.outer, self.path = little, big, outer, big.path

    def terms(self, run: Run) -> set[str]:
        return self.big.terms(run) | self.little.terms(run)

    def spans(self, run: Run) -> Spans:
        bigs, littles = self.big.spans(run), self.little.spans(run)
        out: Spans = {}
        for ord_ in set(bigs) & set(littles):
            pairs = [(b, s) for b in bigs[ord_] for s in littles[ord_] if b[0] <= s[0] and s[1] <= b[1]]
            kept = sorted({b if self.outer else s for b, s in pairs})
            if kept:
                out[ord_] = kept
        return out


class SpanQuery(Query):
    def __init__(self, node: SpanNode) -> None:
        self.node = node

    def match(self, run: Run) -> Hits:
        spans = self.node.spans(run)
        if not spans:
            return empty()
        reader, key = run.reader, self.node.path
        found = np.asarray(sorted(spans), dtype=np.int64)
        freqs = np.asarray([sum(1.0 / (1.0 + s[2]) for s in spans[o]) for o in found.tolist()])
        doc_count, _ = reader.stats(key)
        dfs = [len(reader.postings(key, t)[0]) for t in sorted(self.node.terms(run))]
        weight = sum(idf(doc_count, df) for df in dfs if df)
        return of_roots(run, (found, bm25(reader, key, found, freqs, weight)))


def _one_path(nodes: list[SpanNode], place: str) -> None:
    if len({n.path for n in nodes}) > 1:
        raise search_error(f'"{place}" clauses must all search the same path')


def _clauses(body: Mapping[str, Any], place: str, definition: TextDefinition) -> list[SpanNode]:
    clauses = body["clauses"]
    if not isinstance(clauses, list) or not clauses:
        raise search_error(f'"{place}.clauses" must be a non-empty array')
    nodes = [_node(c, f"{place}.clauses[{i}]", definition) for i, c in enumerate(clauses)]
    _one_path(nodes, place)
    return nodes


def _count(body: Mapping[str, Any], key: str, place: str, default: int, low: int) -> int:
    value = number(body.get(key, default), f"{place}.{key}")
    if value != int(value) or value < low:
        raise search_error(f'"{place}.{key}" must be an integer of at least {low}')
    return int(value)


def _node(spec: Any, place: str, definition: TextDefinition) -> SpanNode:
    if not isinstance(spec, Mapping) or len(spec) != 1:
        raise search_error(f'"{place}" must hold exactly one of [contains, first, near, or, subtract, term]')
    kind, body = next(iter(spec.items()))
    where = f"{place}.{kind}"
    if not isinstance(body, Mapping):
        raise search_error(f'"{where}" must be a document')
    if kind == "term":
        return _term_node(body, where, definition)
    if kind == "or":
        check_fields(body, where, ("clauses",), ("clauses",))
        return OrSpan(_clauses(body, where, definition))
    if kind == "near":
        check_fields(body, where, ("clauses", "slop", "inOrder"), ("clauses",))
        in_order = body.get("inOrder", False)
        if not isinstance(in_order, bool):
            raise search_error(f'"{where}.inOrder" must be a boolean')
        return NearSpan(_clauses(body, where, definition), _count(body, "slop", where, 0, 0), in_order)
    if kind == "first":
        check_fields(body, where, ("operator", "endPositionLte"), ("operator",))
        return FirstSpan(
            _node(body["operator"], f"{where}.operator", definition), _count(body, "endPositionLte", where, 3, 1)
        )
    if kind == "subtract":
        check_fields(body, where, ("include", "exclude"), ("include", "exclude"))
        nodes = [_node(body[k], f"{where}.{k}", definition) for k in ("include", "exclude")]
        _one_path(nodes, where)
        return SubtractSpan(nodes[0], nodes[1])
    if kind == "contains":
        check_fields(body, where, ("little", "big", "spanToReturn"), ("little", "big", "spanToReturn"))
        if body["spanToReturn"] not in ("inner", "outer"):
            raise search_error(f'"{where}.spanToReturn" must be one of [inner, outer]')
        little, big = (_node(body[k], f"{where}.{k}", definition) for k in ("little", "big"))
        _one_path([little, big], where)
        return ContainsSpan(little, big, body["spanToReturn"] == "outer")
    raise search_error(f'"{place}" must hold exactly one of [contains, first, near, or, subtract, term]')


def _normalized(analyzer: Analyzer, text: str) -> str:
    """The text as the analyzer normalizes a multi-term query (Lucene's Analyzer.normalize):
    its lower-casing and folding filters, no tokenizing, stop words or stemming."""
    tokens = [Token(text, 0, 0, len(text))]
    for token_filter in analyzer.filters:
        if token_filter in (lowercase, ascii_folding):
            tokens = token_filter(tokens)
    return tokens[0].text


def _term_node(body: Mapping[str, Any], where: str, definition: TextDefinition) -> SpanNode:
    check_fields(body, where, ("path", "query", *TERM_OPTIONS), ("path", "query"))
    path, query = body["path"], body["query"]
    if not isinstance(path, str) or not isinstance(query, str):
        raise search_error(f'"{where}" path and query must be strings')
    for key in ("prefix", "regex", "wildcard"):
        if not isinstance(body.get(key, False), bool):
            raise search_error(f'"{where}.{key}" must be a boolean')
    chosen = [key for key in TERM_OPTIONS if (key == "fuzzy" and key in body) or body.get(key) is True]
    if len(chosen) > 1:
        raise search_error(f'"{where}" only one of [{", ".join(TERM_OPTIONS)}] may be present')
    specs, _ = definition.specs_at(path)
    strings = [s for s in specs if s.type == "string" and s.search_analyzer is not None]
    analyzer = strings[0].search_analyzer if strings else definition.search_analyzer
    assert analyzer is not None
    if chosen == ["fuzzy"]:
        fuzzy = body["fuzzy"]
        place = f"{where}.fuzzy"
        if not isinstance(fuzzy, Mapping):
            raise search_error(f'"{place}" must be a document')
        check_fields(fuzzy, place, ("maxEdits", "prefixLength", "maxExpansions"))
        if "score" in fuzzy:
            raise search_error(f'"{place}.score" is not a valid field')
        max_edits = _bounded(fuzzy, "maxEdits", place, 2, 0, 2)
        prefix_length = _bounded(fuzzy, "prefixLength", place, 0, 0, 1 << 31)
        expansions = _bounded(fuzzy, "maxExpansions", place, 256, 1, 1 << 31)
        return FuzzySpan(path, _normalized(analyzer, query), max_edits, prefix_length, expansions)
    if chosen in (["regex"], ["wildcard"]):
        compiled, literal = compile_pattern(_normalized(analyzer, query), chosen[0], f"{where}.query")
        return PatternSpan(path, compiled, literal)
    return TermSpan(path, _normalized(analyzer, query), chosen == ["prefix"])


def _bounded(spec: Mapping[str, Any], key: str, place: str, default: int, low: int, high: int) -> int:
    value = number(spec.get(key, default), f"{place}.{key}")
    if value != int(value) or not low <= value <= high:
        raise search_error(f'"{place}.{key}" must be an integer between {low} and {high}')
    return int(value)


@OPERATORS.register("span")
def op_span(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    spec = {k: v for k, v in body.items() if k != "score"}
    return SpanQuery(_node(spec, place, definition))
