"""An independent reference for full-text tests: Lucene's BM25 and norm encoding in plain Python.

Written from Lucene's documentation of BM25Similarity (k1 = 1.2, b = 0.75, idf =
ln(1 + (N - n + 0.5) / (n + 0.5)), score = idf * tf / (tf + k1 * (1 - b + b * dl / avgdl)))
and of SmallFloat.intToByte4 / byte4ToInt (lengths below 24 exact, then 4 significant bits),
with integer arithmetic only: no FolioDB code. Multi-term queries (prefix, regex, wildcard,
fuzzy) expand as Lucene's documentation describes them (:func:`expanded_terms`).
"""

from __future__ import annotations

import fnmatch
import math
import re
from typing import Any


def _int4(i: int) -> int:
    bits = i.bit_length()
    if bits < 4:
        return i
    shift = bits - 4
    return ((i >> shift) & 0x07) | ((shift + 1) << 3)


def _from_int4(e: int) -> int:
    bits, shift = e & 0x07, (e >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


def norm_length(length: int) -> int:
    """The field length Lucene's norm byte keeps."""
    if length < 24:
        return length
    return 24 + _from_int4(_int4(length - 24))


def bm25(tf: float, df: int, n: int, dl: int, avgdl: float, boost: float = 1.0) -> float:
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return boost * idf * tf / (tf + 1.2 * (1 - 0.75 + 0.75 * norm_length(dl) / avgdl))


def standard_terms(text: str) -> list[str]:
    """lucene.standard on plain ASCII words and spaces: lower-cased words."""
    return re.findall(r"[a-z0-9]+", text.lower())


def score_terms(docs: dict[int, str], query_terms: list[str]) -> dict[int, float]:
    """BM25 of a boolean SHOULD of term queries over one field, per matching document."""
    tokens = {k: standard_terms(v) for k, v in docs.items()}
    holding = [k for k, t in tokens.items() if t]
    n = len(holding)
    avgdl = sum(len(tokens[k]) for k in holding) / n
    out: dict[int, float] = {}
    for term in query_terms:
        df = sum(1 for k in holding if term in tokens[k])
        for k in holding:
            tf = tokens[k].count(term)
            if tf:
                out[k] = out.get(k, 0.0) + bm25(tf, df, n, len(tokens[k]), avgdl)
    return out


def float32(x: float) -> float:
    import struct

    return float(struct.unpack("f", struct.pack("f", x))[0])


def osa_distance(a: str, b: str) -> int:
    """Optimal string alignment distance (insert, delete, substitute, swap neighbours)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def expanded_terms(body: dict[str, Any], vocabulary: set[str]) -> set[str]:
    """The index terms (``vocabulary``) a span ``term`` stands for: Lucene's PrefixQuery,
    RegexpQuery, WildcardQuery (on queries whose syntax Python's re and fnmatch read alike) or
    FuzzyQuery's top terms by similarity then term, the query lower-cased."""
    query = body["query"].lower()
    if body.get("prefix"):
        return {t for t in vocabulary if t.startswith(query)}
    if body.get("regex"):
        return {t for t in vocabulary if re.fullmatch(query, t)}
    if body.get("wildcard"):
        return {t for t in vocabulary if fnmatch.fnmatchcase(t, query)}
    if "fuzzy" in body:
        edits = body["fuzzy"].get("maxEdits", 2)
        prefix = body["fuzzy"].get("prefixLength", 0)
        limit = body["fuzzy"].get("maxExpansions", 256)
        if edits == 0 or prefix >= len(query):
            return {query} & vocabulary
        ranked = sorted(
            (-(1.0 if osa_distance(query, t) == 0 else 1 - osa_distance(query, t) / min(len(t), len(query))), t)
            for t in vocabulary
            if t[:prefix] == query[:prefix] and osa_distance(query, t) <= edits
        )
        return {t for _, t in ranked[:limit]}
    return {query} & vocabulary
