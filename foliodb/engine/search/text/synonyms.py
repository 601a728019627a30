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
unusable, as Atlas marks it INVALID: queries naming it fail, and ``$listSearchIndexes`` shows
it ``FAILED`` with mongot's message naming the document's first problem.

:func:`segments` splits analyzed query terms as Lucene's SynonymGraphFilter does: from left to
right, the longest run of terms that is an entry's input becomes one segment holding every
alternative it stands for; any other term is a segment of itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bson import Binary, ObjectId

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
    """A source document that is not well formed, in mongot's words (the mapping's status message)."""


def _loggable_id(value: Any) -> str | None:
    """The ``_id`` mongot names in a message: an ObjectId's hex or a standard UUID, else none."""
    if isinstance(value, ObjectId):
        return str(value)
    if isinstance(value, Binary) and value.subtype == 4 and len(value) == 16:
        return str(uuid.UUID(bytes=bytes(value)))
    return None


def _document_error(doc: Mapping[str, Any], problem: str) -> SynonymsError:
    shown = _loggable_id(doc.get("_id"))
    where = f" with _id {shown}" if shown is not None else ""
    return SynonymsError(f"failed to analyze string in synonym document{where}: {problem}")


def _entries(doc: Mapping[str, Any], key: str) -> list[str]:
    """The array ``key`` of strings, checked as mongot's parser checks it."""
    value = doc.get(key)
    if value is None:
        raise _document_error(doc, f'"{key}" is required')
    if not isinstance(value, list):
        raise _document_error(doc, f'"{key}" must be a array')
    if not value:
        raise _document_error(doc, f'"{key}" cannot be empty')
    for i, entry in enumerate(value):
        if entry is None:
            raise _document_error(doc, f'"{key}[{i}]" is required')
        if not isinstance(entry, str):
            raise _document_error(doc, f'"{key}[{i}]" must be a string')
        if not entry.strip():
            raise _document_error(doc, f'"{key}[{i}]" cannot be blank')
    return list(value)


def _mapping_type(doc: Mapping[str, Any]) -> str:
    kind = doc.get("mappingType")
    if kind is None:
        raise _document_error(doc, '"mappingType" is required')
    if not isinstance(kind, str):
        raise _document_error(doc, '"mappingType" must be a string')
    if kind not in ("equivalent", "explicit"):
        raise _document_error(doc, '"mappingType" must be one of [equivalent, explicit]')
    return kind


def build_map(analyzer: Analyzer, docs: Iterable[Mapping[str, Any]]) -> SynonymMap:
    """The map of a source collection's documents (SynonymsError for the first bad one)."""
    out: SynonymMap = {}

    def analyzed(doc: Mapping[str, Any], texts: list[str]) -> list[Phrase]:
        phrases = []
        for text in texts:
            terms = tuple(term for term, _ in analyzer.terms(text))
            if not terms:  # Lucene's SynonymMap.Parser refuses it
                raise _document_error(doc, f"term: {text} analyzed to a zero-length token")
            phrases.append(terms)
        return phrases

    def add(source: Phrase, targets: list[Phrase]) -> None:
        alternatives = out.setdefault(source, [source])
        alternatives += [t for t in targets if t not in alternatives]

    for doc in docs:
        if _mapping_type(doc) == "equivalent":
            group = analyzed(doc, _entries(doc, "synonyms"))
            for phrase in group:
                add(phrase, group)
        else:
            targets = analyzed(doc, _entries(doc, "synonyms"))
            for phrase in analyzed(doc, _entries(doc, "input")):
                add(phrase, targets)
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
