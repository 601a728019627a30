"""Relevance as Lucene computes it, and the hit sets operators combine.

BM25 with Lucene's defaults (``BM25Similarity``, k1 = 1.2, b = 0.75), as Lucene 9 scores a
term in a document::

    idf    = ln(1 + (docCount - docFreq + 0.5) / (docFreq + 0.5))
    norm   = k1 * (1 - b + b * dl / avgdl)        avgdl = sumTotalTermFreq / docCount
    score  = boost * idf * tf / (tf + norm)

where ``dl`` is the field length as Lucene's one-byte norm keeps it
(``SmallFloat.intToByte4``, then back: exact below 24, then 4 significant bits), and
``docCount``, ``docFreq`` count the reader's live documents holding the key, the term.
Scores are float32 values in Lucene; here they are computed in float64 and rounded to
float32 once, where a search reports them.

A :data:`Hits` is ``(ordinals, scores)``: ordinals unique and ascending, scores aligned.
"""

from __future__ import annotations

import math
from typing import Any

from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.reader import Reader

K1 = 1.2
B = 0.75
Hits = tuple[Any, Any]


def idf(doc_count: int, doc_freq: int) -> float:
    return math.log(1 + (doc_count - doc_freq + 0.5) / (doc_freq + 0.5))


def bm25(reader: Reader, key: str, ords: Any, tfs: Any, weight: float) -> Any:
    """Each posting's score; ``weight`` is boost x idf."""
    tf = tfs.astype(np.float64)
    return weight * tf / (tf + reader.norm_factors(key, ords))


def norm_factors(lengths: Any, doc_count: int, total: int) -> Any:
    """BM25's length normalisation, ``k1 * (1 - b + b * dl / avgdl)``, of each of ``lengths``
    (what the norm bytes give back); ``doc_count`` documents of ``total`` length."""
    avgdl = total / doc_count if doc_count else 1.0
    return K1 * (1 - B + B * lengths / avgdl)


def term_hits(reader: Reader, key: str, term: str, boost: float = 1.0, doc_freq: int | None = None) -> Hits:
    ords, tfs = reader.postings(key, term)
    if not len(ords):
        return ords, np.zeros(0)
    doc_count, _ = reader.stats(key)
    weight = boost * idf(doc_count, len(ords) if doc_freq is None else doc_freq)
    return ords, bm25(reader, key, ords, tfs, weight)


# -- combining hit sets ------------------------------------------------------------------------


def empty() -> Hits:
    return np.zeros(0, dtype=np.int64), np.zeros(0)


def union(parts: list[Hits], size: int) -> tuple[Hits, Any]:
    """(every ordinal in any part with its summed score, how many parts each is in)."""
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return empty(), np.zeros(0, dtype=np.int64)
    if len(parts) == 1:
        return parts[0], np.ones(len(parts[0][0]), dtype=np.int64)
    if len(parts) == 2:
        return _union_of_two(parts[0], parts[1])
    ords = np.concatenate([p[0] for p in parts])
    scores = np.concatenate([p[1] for p in parts])
    if len(ords) * 16 > size:
        counts = np.bincount(ords, minlength=size)
        sums = np.bincount(ords, weights=scores, minlength=size)
        found = np.flatnonzero(counts)
        return (found, sums[found]), counts[found]
    found, inverse, counts = np.unique(ords, return_inverse=True, return_counts=True)
    return (found, np.bincount(inverse, weights=scores, minlength=len(found))), counts


def _union_of_two(a: Hits, b: Hits) -> tuple[Hits, Any]:
    """:func:`union` of two parts (ordinals ascending, each once): one merge (a stable sort of
    two sorted runs), with no pass over the whole index. An ordinal in both scores
    ``a + b``, as the general path's summing in part order does."""
    ords = np.concatenate([a[0], b[0]])
    order = np.argsort(ords, kind="stable")  # a's before b's among equals
    ords, scores = ords[order], np.concatenate([a[1], b[1]]).astype(np.float64)[order]
    first = np.ones(len(ords), dtype=bool)
    first[1:] = ords[1:] != ords[:-1]
    at = np.flatnonzero(first)
    sums = scores[at]
    counts = np.diff(np.append(at, len(ords)))
    both = at[counts == 2]
    sums[counts == 2] += scores[both + 1]
    return (ords[at], sums), counts


def intersect(parts: list[Hits], size: int) -> Hits:
    """The ordinals in every part, scores summed."""
    if not parts:
        return empty()
    if any(not len(p[0]) for p in parts):
        return empty()
    (ords, scores), counts = union(parts, size)
    keep = counts == len(parts)
    return ords[keep], scores[keep]


def subtract(hits: Hits, ords: Any) -> Hits:
    keep = ~np.isin(hits[0], ords, assume_unique=True)
    return hits[0][keep], hits[1][keep]


def restrict(hits: Hits, ords: Any) -> Hits:
    keep = np.isin(hits[0], ords, assume_unique=True)
    return hits[0][keep], hits[1][keep]


def constant(ords: Any, value: float = 1.0) -> Hits:
    unique = np.unique(ords)
    return unique, np.full(len(unique), value)
