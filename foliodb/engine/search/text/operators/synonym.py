"""``text`` and ``phrase`` with ``synonyms``: queries expanded by a synonym mapping, as mongot builds them.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/synonyms/, .../text/, .../phrase/

The query is analyzed with the mapping's analyzer (the field's must be the same, else the
query fails as mongot's does) and split into segments of alternatives
(:func:`foliodb.engine.search.text.synonyms.segments`). Then:

* ``text`` with ``matchCriteria`` (``any``: a document matches some segment, ``all``: every
  segment): a segment of one term is a term query; of several one-term alternatives, one
  blended term (Lucene's SynonymQuery: the alternatives' frequencies summed, the largest
  document frequency); with a phrase among its alternatives, the best alternative plus 0.1 of
  the others (a DisjunctionMaxQuery over term and phrase queries). Unless the query is a
  single term with no synonym, the plain query (no synonyms) is added, boosted 2, so exact
  matches rank first (mongot's boostExactMatchSynonymQuery).
* ``text`` without ``matchCriteria`` (mongot's older behaviour, still its default): the
  document holds the whole query as a phrase, each segment as any of its alternatives;
  scored as one phrase whose frequency counts every such match and whose idf sums those of
  all the alternatives' terms (Lucene's TermAutomatonQuery). An empty mapping runs the plain
  query (``matchCriteria: "any"``).
* ``phrase``: likewise, with ``slop``.

Synonym phrases combine at most :data:`MAX_PATHS` ways (Lucene's clause limit), past which
the query fails.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import bson

from foliodb.engine.catalog import CODEC
from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.analysis import Analyzer
from foliodb.engine.search.text.mapping import TextDefinition
from foliodb.engine.search.text.operators import Query, Run, of_roots, search_error
from foliodb.engine.search.text.operators.paths import Paths
from foliodb.engine.search.text.operators.terms import phrase_freqs, phrase_hits
from foliodb.engine.search.text.scoring import Hits, bm25, empty, idf, intersect, term_hits, union
from foliodb.engine.search.text.synonyms import Phrase, SynonymMap, SynonymsError, build_map, segments

MAX_PATHS = 1024
TIE_BREAKER = 0.1  # mongot's SYNONYMS_DISMAX_TIEBREAKER_VALUE
EXACT_BOOST = 2.0  # mongot's SYNONYMS_EXACT_MATCH_BOOST_VALUE


def checked_mapping(definition: TextDefinition, name: Any, place: str) -> str:
    if not isinstance(name, str) or not name:
        raise search_error(f'"{place}" must be a non-empty string')
    if name not in definition.synonyms:
        raise search_error(f'unknown synonym mapping name "{name}"')
    return name


def _source_documents(collection: Callable[[str], Any] | None, name: str) -> Iterator[dict[str, Any]]:
    store = collection(name) if collection is not None else None
    if store is not None:
        yield from (bson.decode(data, CODEC) for _, data in store.scan())


def synonym_map(run: Run, name: str) -> SynonymMap:
    """The mapping built from its source collection as this search's snapshot has it."""
    if name not in run.synonym_maps:
        source = run.definition.synonyms[name]
        try:
            run.synonym_maps[name] = build_map(source.analyzer, _source_documents(run.collection, source.collection))
        except SynonymsError:
            raise search_error(
                f'synonym mapping "{name}" is in state INVALID and is not ready to service queries'
            ) from None
    found: SynonymMap = run.synonym_maps[name]
    return found


def mapping_problems(definition: TextDefinition, collection: Callable[[str], Any]) -> dict[str, str | None]:
    """Each synonym mapping's problem, by name in order: None when its source collection (as
    ``collection`` gives it) builds a map, else why not (``$listSearchIndexes``' status)."""
    out: dict[str, str | None] = {}
    for name in sorted(definition.synonyms):
        source = definition.synonyms[name]
        try:
            build_map(source.analyzer, _source_documents(collection, source.collection))
            out[name] = None
        except SynonymsError as exc:
            out[name] = str(exc)
    return out


def _check_analyzer(run: Run, name: str, path: str, analyzer: Analyzer) -> None:
    wanted = run.definition.synonyms[name].analyzer.name
    if analyzer.name != wanted:
        raise search_error(
            f'synonym mapping "{name}" is only allowed with {wanted} analyzer, '
            f"field {path} is analyzed with {analyzer.name} analyzer"
        )


def _pairs(phrase: Phrase) -> list[tuple[str, int]]:
    return [(term, i) for i, term in enumerate(phrase)]


def _blended(run: Run, key: str, terms: list[str]) -> Hits:
    """Lucene's SynonymQuery: the terms scored as one (frequencies summed, the largest docFreq)."""
    postings = [run.reader.postings(key, t) for t in terms]
    held = [p for p in postings if len(p[0])]
    if not held:
        return empty()
    run.matched(key, [t for t, p in zip(terms, postings, strict=True) if len(p[0])])
    found, inverse = np.unique(np.concatenate([p[0] for p in held]), return_inverse=True)
    tf = np.bincount(inverse, weights=np.concatenate([p[1] for p in held]).astype(np.float64))
    doc_count, _ = run.reader.stats(key)
    return found, bm25(run.reader, key, found, tf, idf(doc_count, max(len(p[0]) for p in held)))


def _dismax(parts: list[Hits]) -> Hits:
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return empty()
    ords = np.concatenate([p[0] for p in parts])
    scores = np.concatenate([p[1] for p in parts])
    found, inverse = np.unique(ords, return_inverse=True)
    best = np.full(len(found), -np.inf)
    np.maximum.at(best, inverse, scores)
    total = np.bincount(inverse, weights=scores, minlength=len(found))
    return found, best + TIE_BREAKER * (total - best)


def _segment_hits(run: Run, key: str, alternatives: list[Phrase]) -> Hits:
    if all(len(a) == 1 for a in alternatives):
        if len(alternatives) == 1:
            hits = term_hits(run.reader, key, alternatives[0][0])
            if len(hits[0]):
                run.matched(key, [alternatives[0][0]])
            return hits
        return _blended(run, key, [a[0] for a in alternatives])
    return _dismax([phrase_hits(run, key, _pairs(a), 0) for a in alternatives])


def _paths(segs: list[list[Phrase]]) -> list[Phrase]:
    count = 1
    for alternatives in segs:
        count *= len(alternatives)
    if count > MAX_PATHS:
        raise search_error(f"too many synonym combinations: the query expands to {count}, more than {MAX_PATHS}")
    return [tuple(term for part in path for term in part) for path in itertools.product(*segs)]


def _automaton(run: Run, key: str, segs: list[list[Phrase]], slop: int) -> Hits:
    """Any path through the segments as a phrase, scored as one phrase (see the docstring)."""
    reader = run.reader
    parts = [phrase_freqs(run, key, _pairs(path), slop) for path in _paths(segs)]
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return empty()
    found, inverse = np.unique(np.concatenate([p[0] for p in parts]), return_inverse=True)
    freqs = np.bincount(inverse, weights=np.concatenate([p[1] for p in parts]).astype(np.float64))
    terms = {term for alternatives in segs for phrase in alternatives for term in phrase}
    doc_count, _ = reader.stats(key)
    dfs = [len(reader.postings(key, t)[0]) for t in sorted(terms)]
    run.matched(key, terms)
    weight = sum(idf(doc_count, df) for df in dfs if df)
    return found, bm25(reader, key, found, freqs, weight)


class SynonymQuery(Query):
    def __init__(self, queries: list[str], paths: Paths, mapping: str, criteria: str | None, slop: int | None) -> None:
        self.queries, self.paths, self.mapping = queries, paths, mapping
        self.criteria, self.slop = criteria, slop  # slop: a phrase; criteria None: text's phrase default

    def _one(self, run: Run, key: str, synonyms: SynonymMap, query: str) -> Hits:
        analyzer = run.definition.synonyms[self.mapping].analyzer
        terms = [t for t, _ in analyzer.terms(query)]
        if not terms:
            if self.criteria is None and self.slop is None:
                raise search_error("query analyzed to zero tokens; query must contain non stop words")
            return empty()
        if self.slop is not None or (self.criteria is None and synonyms):
            return _automaton(run, key, segments(synonyms, terms), self.slop or 0)
        plain = [term_hits(run.reader, key, t) for t in terms]
        exact = intersect(plain, run.reader.size) if self.criteria == "all" else union(plain, run.reader.size)[0]
        if self.criteria is None:
            return exact  # an empty mapping: the plain query
        segs = segments(synonyms, terms)
        if len(segs) == 1 and segs[0] == [(terms[0],)]:
            return exact  # a lone term query: no synonym, no boost
        parts = [_segment_hits(run, key, alternatives) for alternatives in segs]
        combined = intersect(parts, run.reader.size) if self.criteria == "all" else union(parts, run.reader.size)[0]
        return union([combined, (exact[0], EXACT_BOOST * exact[1])], run.reader.size)[0]

    def match(self, run: Run) -> Hits:
        synonyms = synonym_map(run, self.mapping)
        parts = []
        for key, path, analyzer in self.paths.keys(run):
            _check_analyzer(run, self.mapping, path, analyzer)
            for query in self.queries:
                parts.append(self._one(run, key, synonyms, query))
        return of_roots(run, union(parts, run.reader.size)[0])


def synonym_query(
    body: Mapping[str, Any], place: str, definition: TextDefinition, queries: list[str], paths: Paths, slop: int | None
) -> SynonymQuery:
    """The ``text`` (slop None) or ``phrase`` query ``body`` with its ``synonyms``."""
    name = checked_mapping(definition, body["synonyms"], f"{place}.synonyms")
    criteria = body.get("matchCriteria")
    if criteria is not None and criteria not in ("any", "all"):
        raise search_error(f'"{place}.matchCriteria" must be one of [all, any]')
    return SynonymQuery(queries, paths, name, criteria, slop)
