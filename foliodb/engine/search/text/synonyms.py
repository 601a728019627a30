"""Synonym mappings: an index's ``synonyms`` definitions, and the maps their source collections make.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/synonyms/

An index definition's ``synonyms`` is an array of ``{name, analyzer, source: {collection}}``
(names unique and non-empty, the analyzer one the index knows, the collection in the index's
database). A source collection holds documents ``{mappingType: "equivalent", synonyms:
[...]}`` (every entry stands for every other) or ``{mappingType: "explicit", input: [...],
synonyms: [...]}`` (each input stands for itself and the synonyms, not the reverse); other
fields are ignored. Entries are analyzed with the mapping's analyzer (so an entry may be
several terms: a phrase).

FolioDB reads the source collection in the search's own snapshot when a query names the
mapping, so a search always reflects the synonyms as they are (mongot follows the collection
with a change stream, a moment behind). A document that is not well formed makes the mapping
unusable, as Atlas marks it INVALID: queries naming it fail.

:func:`segments` splits analyzed query terms as Lucene's SynonymGraphFilter does: from left to
right, the longest run of terms that is an entry's input becomes one segment holding every
alternative it stands for; any other term is a segment of itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from foliodb.engine.search.text.analysis import Analyzer, AnalyzerError

Phrase = tuple[str, ...]
SynonymMap = dict[Phrase, list[Phrase]]  # an input's terms -> the alternatives, itself first


@dataclass(frozen=True, slots=True)
class SynonymSource:
    name: str
    analyzer: Analyzer
    collection: str


def parse_synonyms(spec: Any, analyzers: Mapping[str, Analyzer]) -> dict[str, SynonymSource]:
    """The checked ``synonyms`` of an index definition (AnalyzerError names the bad place)."""
    if not isinstance(spec, list):
        raise AnalyzerError("definition.synonyms", "must be an array")
    out: dict[str, SynonymSource] = {}
    for i, item in enumerate(spec):
        place = f"definition.synonyms[{i}]"
        if not isinstance(item, Mapping):
            raise AnalyzerError(place, "must be a document")
        for key in item:
            if key not in ("name", "analyzer", "source"):
                raise AnalyzerError(f"{place}.{key}", "is not a valid field")
        for key in ("name", "analyzer", "source"):
            if key not in item:
                raise AnalyzerError(f"{place}.{key}", "is required")
        name, analyzer, source = item["name"], item["analyzer"], item["source"]
        if not isinstance(name, str) or not name:
            raise AnalyzerError(f"{place}.name", "must be a non-empty string")
        if name in out:
            raise AnalyzerError(f"{place}.name", f"must be unique: {name!r} is defined twice")
        if not isinstance(analyzer, str) or analyzer not in analyzers:
            raise AnalyzerError(f"{place}.analyzer", f"names an unknown analyzer: {analyzer!r}")
        if not isinstance(source, Mapping) or set(source) != {"collection"}:
            raise AnalyzerError(f"{place}.source", "must be a document holding only collection")
        collection = source["collection"]
        if not isinstance(collection, str) or not collection:
            raise AnalyzerError(f"{place}.source.collection", "must be a non-empty string")
        out[name] = SynonymSource(name, analyzers[analyzer], collection)
    return out


class SynonymsError(ValueError):
    """A source document that is not well formed."""


def _entries(doc: Mapping[str, Any], key: str) -> list[str]:
    value = doc.get(key)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise SynonymsError(f"{key} must be a non-empty array of non-blank strings")
    return list(value)


def build_map(analyzer: Analyzer, docs: Iterable[Mapping[str, Any]]) -> SynonymMap:
    """The map of a source collection's documents (SynonymsError for a bad one)."""
    out: SynonymMap = {}

    def analyzed(texts: list[str]) -> list[Phrase]:
        phrases = []
        for text in texts:
            terms = tuple(term for term, _ in analyzer.terms(text))
            if not terms:
                raise SynonymsError(f"{text!r} analyzes to no terms")
            phrases.append(terms)
        return phrases

    def add(source: Phrase, targets: list[Phrase]) -> None:
        alternatives = out.setdefault(source, [source])
        alternatives += [t for t in targets if t not in alternatives]

    for doc in docs:
        kind = doc.get("mappingType")
        if kind == "equivalent":
            group = analyzed(_entries(doc, "synonyms"))
            for phrase in group:
                add(phrase, group)
        elif kind == "explicit":
            targets = analyzed(_entries(doc, "synonyms"))
            for phrase in analyzed(_entries(doc, "input")):
                add(phrase, targets)
        else:
            raise SynonymsError("mappingType must be one of [equivalent, explicit]")
    return out


def segments(synonyms: SynonymMap, terms: list[str]) -> list[list[Phrase]]:
    """The query's terms as segments of alternatives (see the module's docstring)."""
    longest = max((len(k) for k in synonyms), default=0)
    out: list[list[Phrase]] = []
    i = 0
    while i < len(terms):
        for k in range(min(longest, len(terms) - i), 0, -1):
            alternatives = synonyms.get(tuple(terms[i : i + k]))
            if alternatives is not None:
                out.append(alternatives)
                i += k
                break
        else:
            out.append([(terms[i],)])
            i += 1
    return out
