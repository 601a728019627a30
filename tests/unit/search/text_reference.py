"""An independent reference for full-text tests: Lucene's BM25 and norm encoding in plain Python.

Written from Lucene's documentation of BM25Similarity (k1 = 1.2, b = 0.75, idf =
ln(1 + (N - n + 0.5) / (n + 0.5)), score = idf * tf / (tf + k1 * (1 - b + b * dl / avgdl)))
and of SmallFloat.intToByte4 / byte4ToInt (lengths below 24 exact, then 4 significant bits),
with integer arithmetic only: no FolioDB code.
"""

from __future__ import annotations

import math
import re


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
