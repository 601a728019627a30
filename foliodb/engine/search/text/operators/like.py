"""The ``moreLikeThis`` operator: documents like the given ones, as Lucene's MoreLikeThis finds them.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/morelikethis/

``{moreLikeThis: {like: <document or non-empty array of documents>, score?}}``. As mongot
sets Lucene's ``MoreLikeThis`` up:

1. every string in the ``like`` documents (in arrays and embedded documents too, under its
   dotted path) whose path the index holds as a string (a ``string`` field, or under a
   dynamic mapping) is analyzed with that field's search analyzer, and with each of its
   ``multi`` analyzers; other values and paths are ignored;
2. each (field, term) gets ``tf x idf``: ``tf`` its count in the input (``minTermFreq`` 0:
   once is enough), ``idf = 1 + ln((docCount + 1) / (docFreq + 1))`` (Lucene's
   ClassicSimilarity, ``docCount`` the documents holding the field), float32 as Lucene's;
   a term held by fewer than 2 documents (``minDocFreq`` 2) is skipped;
3. the best ``maxQueryTerms`` (25) become a disjunction of term queries, scored by BM25 as
   ``text`` scores them (a document matches any of them).

Ties at the 25th term are broken by field then term order (Lucene's keeps whichever its hash
map meets first). ``moreLikeThis`` directly inside ``embeddedDocument`` is refused there
(:mod:`.compound`), as mongot refuses it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.analysis import Analyzer
from foliodb.engine.search.text.mapping import TextDefinition
from foliodb.engine.search.text.operators import OPERATORS, Query, Run, check_fields, of_roots, search_error
from foliodb.engine.search.text.scoring import Hits, term_hits, union

MIN_DOC_FREQ = 2
MAX_QUERY_TERMS = 25


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(dotted path, string) of every string in a ``like`` value."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, inner in value.items():
            yield from _strings(inner, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, path)


def _keys(definition: TextDefinition, path: str) -> list[tuple[str, Analyzer]]:
    """The index keys holding ``path`` as a string, with their search analyzers."""
    specs, dynamic = definition.specs_at(path)
    strings = [s for s in specs if s.type == "string"]
    if not strings:
        return [(path, definition.search_analyzer)] if dynamic and not specs else []
    out: list[tuple[str, Analyzer]] = []
    for spec in strings[:1]:
        assert spec.search_analyzer is not None
        out.append((path, spec.search_analyzer))
        for name, sub in spec.multi.items():
            assert sub.search_analyzer is not None
            out.append((f"{path}\x00m:{name}", sub.search_analyzer))
    return out


def _float32(x: float) -> float:
    return float(np.float32(x))


class MoreLikeThisQuery(Query):
    def __init__(self, texts: list[tuple[str, str]], definition: TextDefinition) -> None:
        self.frequencies: dict[str, dict[str, int]] = {}  # key -> term -> count in the input
        for path, text in texts:
            for key, analyzer in _keys(definition, path):
                counts = self.frequencies.setdefault(key, {})
                for term, _ in analyzer.terms(text):
                    counts[term] = counts.get(term, 0) + 1

    def terms(self, run: Run) -> list[tuple[str, str]]:
        """The (key, term) pairs the disjunction looks for."""
        scored = []
        for key, counts in self.frequencies.items():
            doc_count, _ = run.reader.stats(key)
            for term, tf in counts.items():
                doc_freq = len(run.reader.postings(key, term)[0])
                if doc_freq < MIN_DOC_FREQ:
                    continue
                idf = _float32(math.log((doc_count + 1) / (doc_freq + 1)) + 1.0)
                scored.append((-_float32(tf * idf), key, term))
        scored.sort()
        return [(key, term) for _, key, term in scored[:MAX_QUERY_TERMS]]

    def match(self, run: Run) -> Hits:
        parts = []
        for key, term in self.terms(run):
            parts.append(term_hits(run.reader, key, term))
            run.matched(key, [term])
        return of_roots(run, union(parts, run.reader.size)[0])


@OPERATORS.register("moreLikeThis")
def op_moreLikeThis(body: Mapping[str, Any], place: str, definition: TextDefinition) -> Query:
    check_fields(body, place, ("like",), ("like",))
    like = body["like"]
    docs = like if isinstance(like, list) else [like]
    if isinstance(like, list) and not like:
        raise search_error(f'"{place}.like" cannot be empty')
    if not all(isinstance(doc, Mapping) for doc in docs):
        raise search_error(f'"{place}.like" must be a document or an array of documents')
    texts = [pair for doc in docs for key, value in doc.items() for pair in _strings(value, key)]
    return MoreLikeThisQuery(texts, definition)
