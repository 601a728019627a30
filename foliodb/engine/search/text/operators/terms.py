"""Operators on analyzed strings: text, phrase, autocomplete, wildcard, regex.

* ``text``: the query analyzed with each path's search analyzer; a document matches any
  term (``matchCriteria: "all"``: every term) in any path; its score sums each matching
  term's BM25 score, as Lucene's boolean SHOULD query of term queries. ``fuzzy``
  (``maxEdits`` 1-2, ``prefixLength``, ``maxExpansions``) expands each term to the index's
  terms within that Damerau-Levenshtein distance sharing the prefix, the closest
  ``maxExpansions``, each scored with the largest document frequency among them and
  boosted by ``1 - distance / min(length)`` (Lucene's blended fuzzy rewrite).
* ``phrase``: the terms at their analyzed relative positions; ``slop`` lets the match
  stretch by that many position moves. Scored as BM25 with the phrase's frequency and the
  sum of its terms' idf, as Lucene's PhraseQuery.
* ``autocomplete``: the query's words against an ``autocomplete`` field's grams: any word
  (``tokenOrder: "any"``) or the words in sequence (``"sequential"``), each truncated to
  ``maxGrams``; ``fuzzy`` as in ``text``.
* ``wildcard`` (``*``, ``?``, ``\\`` escapes) and ``regex`` (Lucene's syntax: ``. ? + * {n,m}
  | ( ) [ ]``, ``"literal"``, ``@`` any string, ``#`` nothing) match whole index terms,
  unanalyzed; constant score 1. A regex runs with FolioDB's bounded matcher
  (:mod:`foliodb.query.pcre`).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from typing import Any

from foliodb.engine.search.numeric import np
from foliodb.engine.search.text import analysis
from foliodb.engine.search.text.mapping import TextDefinition
from foliodb.engine.search.text.operators import (
    OPERATORS,
    Query,
    Run,
    check_fields,
    of_roots,
    search_error,
    strings,
)
from foliodb.engine.search.text.operators.paths import Paths
from foliodb.engine.search.text.scoring import Hits, bm25, constant, empty, idf, intersect, term_hits, union
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.pcre import compile_regex

# -- fuzzy expansion ---------------------------------------------------------------------------


def edit_distance(a: str, b: str, limit: int) -> int:
    """Damerau-Levenshtein distance (adjacent transpositions cost 1), or limit + 1 when more."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            best = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                best = min(best, previous2[j - 2] + 1)
            current[j] = best
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[-1]


class Fuzzy:
    def __init__(self, spec: Any, place: str) -> None:
        if not isinstance(spec, Mapping):
            raise search_error(f'"{place}" must be a document')
        check_fields(spec, place, ("maxEdits", "prefixLength", "maxExpansions"))
        self.max_edits = _int(spec.get("maxEdits", 2), f"{place}.maxEdits", 1, 2)
        self.prefix = _int(spec.get("prefixLength", 0), f"{place}.prefixLength", 0, 1 << 30)
        self.expansions = _int(spec.get("maxExpansions", 50), f"{place}.maxExpansions", 1, 1 << 30)

    def expand(self, run: Run, key: str, term: str) -> list[tuple[str, float]]:
        """(index term, boost) of the closest terms."""
        prefix = term[: self.prefix]
        candidates = run.reader.terms_between(key, prefix, prefix + "\U0010ffff") if prefix else run.reader.terms(key)
        found = []
        for candidate in candidates:
            distance = edit_distance(term, candidate, self.max_edits)
            if distance <= self.max_edits:
                found.append((distance, candidate))
        found.sort()
        out = []
        for distance, candidate in found[: self.expansions]:
            shortest = min(len(term), len(candidate))
            out.append((candidate, max(0.0, 1.0 - distance / shortest) if shortest else 0.0))
        return out


def _int(value: Any, place: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise search_error(f'"{place}" must be an integer')
    if not low <= value <= high:
        raise search_error(f'"{place}" must be between {low} and {high}')
    return int(value)


def fuzzy_hits(run: Run, key: str, term: str, fuzzy: Fuzzy) -> Hits:
    expanded = fuzzy.expand(run, key, term)
    if not expanded:
        return empty()
    postings = {t: run.reader.postings(key, t) for t, _ in expanded}
    doc_freq = max(len(p[0]) for p in postings.values())
    run.matched(key, [t for t, _ in expanded if len(postings[t][0])])
    parts = [term_hits(run.reader, key, t, boost, doc_freq) for t, boost in expanded]
    return union(parts, run.reader.size)[0]


# -- text ----------------------------------------------------------------------------------


class TextQuery(Query):
    def __init__(self, queries: list[str], paths: Paths, fuzzy: Fuzzy | None, match_all: bool) -> None:
        self.queries, self.paths, self.fuzzy, self.match_all = queries, paths, fuzzy, match_all

    def match(self, run: Run) -> Hits:
        per_term: dict[str, list[Hits]] = {}
        parts: list[Hits] = []
        for key, _, analyzer in self.paths.keys(run):
            for query in self.queries:
                for term, _ in analyzer.terms(query):
                    if self.fuzzy is not None:
                        hits = fuzzy_hits(run, key, term, self.fuzzy)
                    else:
                        hits = term_hits(run.reader, key, term)
                        if len(hits[0]):
                            run.matched(key, [term])
                    parts.append(hits)
                    per_term.setdefault(term, []).append(hits)
        size = run.reader.size
        found = union(parts, size)[0]
        if self.match_all and per_term:
            every = intersect([union(hits, size)[0] for hits in per_term.values()], size)
            keep = np.isin(found[0], every[0], assume_unique=True)
            found = found[0][keep], found[1][keep]
        return of_roots(run, found)


@OPERATORS.register("text")
def op_text(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    check_fields(body, place, ("query", "path", "fuzzy", "synonyms", "matchCriteria"), ("query", "path"))
    queries = strings(body["query"], f"{place}.query")
    paths = Paths(body["path"], f"{place}.path", definition)
    if "synonyms" in body:
        from foliodb.engine.search.text.operators.synonym import synonym_query  # it builds on this module

        if "fuzzy" in body:
            raise search_error(f'"{place}.fuzzy" cannot be used with "{place}.synonyms"')
        return synonym_query(body, place, definition, queries, paths, None)
    if body.get("matchCriteria", "any") not in ("any", "all"):
        raise search_error(f'"{place}.matchCriteria" must be one of [all, any]')
    fuzzy = Fuzzy(body["fuzzy"], f"{place}.fuzzy") if "fuzzy" in body else None
    return TextQuery(queries, paths, fuzzy, body.get("matchCriteria") == "all")


# -- phrase --------------------------------------------------------------------------------


# A sloppy phrase repeating a term tries at most this many position choices (each occurrence of
# a repeated term must be a different token, as in Lucene); past it, the tightest window is taken.
REPEATS_TRIED = 20_000


def _repeated_stretch(lists: list[tuple[int, ...]], offsets: list[int]) -> int | None:
    """The tightest stretch choosing a different position for each occurrence of a repeated term."""
    best = None
    for choice in itertools.product(*lists):
        if len(set(choice)) == len(choice):
            shifted = [p - off for p, off in zip(choice, offsets, strict=True)]
            width = max(shifted) - min(shifted)
            best = width if best is None else min(best, width)
    return best


def _phrase_freq(lists: list[tuple[int, ...]], offsets: list[int], slop: int, repeats: bool = False) -> float:
    """How often the terms occur at their offsets (exact), or 1 / (1 + stretch) of the tightest
    match within ``slop`` (sloppy); 0 when none. ``repeats``: a term occurs twice in the phrase."""
    if slop and repeats and math.prod(len(p) for p in lists) <= REPEATS_TRIED:
        stretch = _repeated_stretch(lists, offsets)
        return 0.0 if stretch is None or stretch > slop else 1.0 / (1.0 + stretch)
    if slop == 0:
        starts = set(p - offsets[0] for p in lists[0])
        for positions, offset in zip(lists[1:], offsets[1:], strict=True):
            starts &= {p - offset for p in positions}
        return float(len(starts))
    # The smallest window over one (position - offset) per term: a k-list smallest range.
    events = sorted((p - off, i) for i, (ps, off) in enumerate(zip(lists, offsets, strict=True)) for p in ps)
    counts = [0] * len(lists)
    covered, left, best = 0, 0, None
    for value, i in events:
        counts[i] += 1
        covered += counts[i] == 1
        while covered == len(lists):
            width = value - events[left][0]
            best = width if best is None else min(best, width)
            j = events[left][1]
            counts[j] -= 1
            covered -= counts[j] == 0
            left += 1
    if best is None or best > slop:
        return 0.0
    return 1.0 / (1.0 + best)


def phrase_freqs(run: Run, key: str, pairs: list[tuple[str, int]], slop: int) -> tuple[Any, Any]:
    """(ordinals, phrase frequencies) of the documents holding the terms at their relative
    positions (within ``slop`` moves); one term: its postings."""
    reader = run.reader
    if len(pairs) == 1:
        return reader.postings(key, pairs[0][0])
    postings = [reader.postings(key, term) for term, _ in pairs]
    if any(not len(p[0]) for p in postings):
        return empty()
    candidates = postings[0][0]
    for ords, _ in postings[1:]:
        candidates = np.intersect1d(candidates, ords, assume_unique=True)
    if not len(candidates):
        return empty()
    positions = [reader.positions(key, term) for term, _ in pairs]
    offsets = [p for _, p in pairs]
    repeats = len({t for t, _ in pairs}) < len(pairs)
    ords, freqs = [], []
    for ord_ in candidates.tolist():
        freq = _phrase_freq([pos[ord_] for pos in positions], offsets, slop, repeats)
        if freq > 0:
            ords.append(ord_)
            freqs.append(freq)
    return np.asarray(ords, dtype=np.int64), np.asarray(freqs, dtype=np.float64)


def phrase_hits(run: Run, key: str, pairs: list[tuple[str, int]], slop: int) -> Hits:
    """A phrase's BM25 hits: its frequency, the sum of its terms' idf (Lucene's PhraseQuery)."""
    reader = run.reader
    if len(pairs) == 1:
        return term_hits(reader, key, pairs[0][0])
    found, freqs = phrase_freqs(run, key, pairs, slop)
    if not len(found):
        return empty()
    run.matched(key, [t for t, _ in pairs])
    doc_count, _ = reader.stats(key)
    weight = sum(idf(doc_count, len(reader.postings(key, t)[0])) for t, _ in pairs)
    return found, bm25(reader, key, found, freqs, weight)


class PhraseQuery(Query):
    def __init__(self, queries: list[str], paths: Paths, slop: int) -> None:
        self.queries, self.paths, self.slop = queries, paths, slop

    def match(self, run: Run) -> Hits:
        parts = []
        for key, _, analyzer in self.paths.keys(run):
            for query in self.queries:
                pairs = analyzer.terms(query)
                if pairs:
                    parts.append(phrase_hits(run, key, pairs, self.slop))
        return of_roots(run, union(parts, run.reader.size)[0])


@OPERATORS.register("phrase")
def op_phrase(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    check_fields(body, place, ("query", "path", "slop", "synonyms"), ("query", "path"))
    slop = _int(body.get("slop", 0), f"{place}.slop", 0, 1 << 30)
    queries = strings(body["query"], f"{place}.query")
    paths = Paths(body["path"], f"{place}.path", definition)
    if "synonyms" in body:
        from foliodb.engine.search.text.operators.synonym import synonym_query  # it builds on this module

        return synonym_query(body, place, definition, queries, paths, slop)
    return PhraseQuery(queries, paths, slop)


# -- autocomplete --------------------------------------------------------------------------


class AutocompleteQuery(Query):
    def __init__(
        self, queries: list[str], path: str, definition: TextDefinition, sequential: bool, fuzzy: Fuzzy | None
    ) -> None:
        specs, _ = definition.specs_at(path)
        self.specs = [s for s in specs if s.type == "autocomplete"]
        self.queries, self.key, self.sequential, self.fuzzy = queries, path + "\x00ac", sequential, fuzzy

    def match(self, run: Run) -> Hits:
        if not self.specs:
            return empty()
        spec = self.specs[0]
        assert spec.analyzer is not None
        parts = []
        for query in self.queries:
            words = [t.text for t in spec.analyzer.tokens(query)]
            if spec.fold:
                words = [analysis.fold_diacritics(w) for w in words]
            words = [w.lower() for w in words]
            grams = [" ".join(words)] if self.sequential else words
            for gram in grams:
                if len(gram) < spec.min_grams:
                    continue
                gram = gram[: spec.max_grams]
                if self.fuzzy is not None:
                    parts.append(fuzzy_hits(run, self.key, gram, self.fuzzy))
                else:
                    parts.append(term_hits(run.reader, self.key, gram))
        found = of_roots(run, union(parts, run.reader.size)[0])
        if len(found[0]):
            run.matched(self.key, [])
        return found


@OPERATORS.register("autocomplete")
def op_autocomplete(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    check_fields(body, place, ("query", "path", "tokenOrder", "fuzzy"), ("query", "path"))
    if not isinstance(body["path"], str):
        raise search_error(f'"{place}.path" must be a string')
    order = body.get("tokenOrder", "any")
    if order not in ("any", "sequential"):
        raise search_error(f'"{place}.tokenOrder" must be one of [any, sequential]')
    fuzzy = Fuzzy(body["fuzzy"], f"{place}.fuzzy") if "fuzzy" in body else None
    return AutocompleteQuery(
        strings(body["query"], f"{place}.query"), body["path"], definition, order == "sequential", fuzzy
    )


# -- wildcard and regex ------------------------------------------------------------------------


class PatternQuery(Query):
    """Index terms matching one of the patterns (compiled, bounded), constant score 1."""

    def __init__(self, patterns: list[tuple[Any, str]], paths: Paths) -> None:
        self.patterns, self.paths = patterns, paths  # (compiled, literal prefix)

    def match(self, run: Run) -> Hits:
        reader = run.reader
        ords = []
        for key, _, _ in self.paths.keys(run):
            for compiled, prefix in self.patterns:
                terms = reader.terms_between(key, prefix, prefix + "\U0010ffff") if prefix else reader.terms(key)
                matched = [t for t in terms if compiled.search(t) is not None]
                run.matched(key, matched)
                ords += [reader.postings(key, t)[0] for t in matched]
        if not ords:
            return empty()
        return of_roots(run, constant(np.concatenate(ords)))


def _wildcard(query: str) -> tuple[str, str]:
    """(regular expression, literal prefix) of a wildcard query."""
    out, prefix, literal_so_far, i = [], [], True, 0
    while i < len(query):
        ch = query[i]
        if ch == "\\" and i + 1 < len(query):
            i += 1
            out.append(re.escape(query[i]))
            if literal_so_far:
                prefix.append(query[i])
        elif ch == "*":
            out.append(".*")
            literal_so_far = False
        elif ch == "?":
            out.append(".")
            literal_so_far = False
        else:
            out.append(re.escape(ch))
            if literal_so_far:
                prefix.append(ch)
        i += 1
    return "".join(out), "".join(prefix)


_LUCENE_SPECIAL = set('.?+*|{}[]()"\\@#~&<>')


def lucene_regex(query: str, place: str) -> str:
    """Lucene's RegExp syntax as a Python one (anchored by the caller)."""
    out, i = [], 0
    while i < len(query):
        ch = query[i]
        if ch == "\\" and i + 1 < len(query):
            out.append(re.escape(query[i + 1]))
            i += 2
            continue
        if ch == '"':
            end = query.find('"', i + 1)
            if end < 0:
                raise search_error(f'"{place}" has an unterminated quoted literal')
            out.append(re.escape(query[i + 1 : end]))
            i = end + 1
            continue
        if ch == "[":
            end = query.find("]", i + 2)
            if end < 0:
                raise search_error(f'"{place}" has an unterminated character class')
            body = query[i + 1 : end]
            negate = body.startswith("^")
            body = body[1:] if negate else body
            escaped = "".join("\\" + c if c in "\\]^[" else c for c in body)
            out.append(f"[{'^' if negate else ''}{escaped}]")
            i = end + 1
            continue
        if ch == "@":
            out.append(".*")
        elif ch == "#":
            out.append("(?!)")
        elif ch in "~&<>":
            raise CommandError(ErrorCode.NotImplemented, f"regex operator '{ch}' is not implemented in FolioDB yet")
        elif ch in ".?+*|(){}":
            out.append(ch)
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def compile_pattern(query: str, kind: str, place: str) -> tuple[Any, str]:
    """A ``wildcard`` or ``regex`` query (``place`` names it in errors) as (a bounded matcher of
    whole terms, the literal prefix every match starts with)."""
    if kind == "wildcard":
        source, prefix = _wildcard(query)
    else:
        source, prefix = lucene_regex(query, place), ""
    try:
        return compile_regex(f"^(?:{source})\\z", "s"), prefix
    except CommandError as exc:
        raise search_error(f'"{place}" is not a valid {kind}: {exc.errmsg}') from None


def _pattern_query(body: Mapping[str, Any], place: str, definition: TextDefinition, kind: str) -> Query:
    check_fields(body, place, ("query", "path", "allowAnalyzedField"), ("query", "path"))
    patterns = [compile_pattern(query, kind, f"{place}.query") for query in strings(body["query"], f"{place}.query")]
    return PatternQuery(patterns, Paths(body["path"], f"{place}.path", definition))


@OPERATORS.register("wildcard")
def op_wildcard(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    return _pattern_query(body, place, definition, "wildcard")


@OPERATORS.register("regex")
def op_regex(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    return _pattern_query(body, place, definition, "regex")
