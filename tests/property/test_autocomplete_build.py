"""The autocomplete build's fast path against the general one it mirrors.

Documents are analysed by a definition with random autocomplete options (tokenization,
``minGrams``/``maxGrams``, ``foldDiacritics``, analyzer; texts with diacritics, CJK,
punctuation, repeated words, arrays of strings). A mutable segment fed their grams as
``Entry.grams`` (numbered grams in flat arrays) must read and freeze exactly as one fed the
same grams as terms at consecutive positions, the general path every other key takes and
the way the grams were stored before: terms, postings and tfs, positions, field lengths
(what the norms encode), the frozen arrays as saved (the format-2 file's arrays), and a
merge of frozen segments with some entries dead - which must also equal one segment built
from the live entries alone (a string field beside, so positions move in the merge too).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from foliodb.engine.search.text.mapping import compile_definition
from foliodb.engine.search.text.segments import MutableSegment, merge

KEY = "t\x00ac"
WORDS = ["ab", "Abc", "abcd", "café", "CAFE", "x", "élan", "naïve", "ß", "中文", "o'neil", "3.14", "zzzzzzzzzzzzzzzzz"]
TEXTS = st.lists(st.sampled_from(WORDS), max_size=9).map(" ".join) | st.text(
    alphabet="aAbé ,.'-\u0301\u4e2dΣς", max_size=40
)
VALUES = st.lists(TEXTS, min_size=1, max_size=3).map(lambda v: v[0] if len(v) == 1 else v)
DOCS = st.lists(VALUES, min_size=1, max_size=12)


@st.composite
def fields(draw: Any) -> dict[str, Any]:
    low = draw(st.integers(0, 4))
    return {
        "type": "autocomplete",
        "minGrams": low,
        "maxGrams": draw(st.integers(low, low + 12)),
        "tokenization": draw(st.sampled_from(["edgeGram", "rightEdgeGram", "nGram"])),
        "foldDiacritics": draw(st.booleans()),
        "analyzer": draw(st.sampled_from(["lucene.standard", "lucene.keyword", "lucene.whitespace", "lucene.french"])),
    }


def _reads(segment: Any, probes: list[str]) -> list[Any]:
    terms = list(segment.terms(KEY))
    out: list[Any] = [terms, [a.tolist() for a in segment.key_lengths(KEY)]]
    for term in [*terms, *probes] * 3:  # past the scans a fast segment makes before it sorts
        ords, tfs = segment.lookup(KEY, term)
        positions = [tuple(p) for p in segment.positions(KEY, term)]
        out.append((term, ords.dtype.str, ords.tolist(), tfs.dtype.str, tfs.tolist(), positions))
    return out


def _saved(arrays: dict[str, Any]) -> dict[str, Any]:
    return {name: (a.dtype.str, a.tolist()) for name, a in arrays.items()}


def _content(segment: Any) -> dict[str, Any]:
    """Each key's arrays, leaving out keys with nothing (a merge keeps a key all of whose
    entries died; a segment built afresh has no such key)."""
    out = {}
    for key, a in segment.key_arrays.items():
        if len(a.terms) or len(a.len_ords):
            arrays = (a.starts, a.ords, a.tfs, a.positions, a.len_ords, a.lens)
            out[key] = (a.terms, [(x.dtype.str, x.tolist()) for x in arrays])
    return out


@settings(max_examples=200, deadline=None)
@given(fields(), fields(), DOCS, DOCS, st.lists(st.booleans(), min_size=24, max_size=24))
def test_gram_segments_equal_the_general_path(
    field: dict[str, Any], other: dict[str, Any], first: list[Any], second: list[Any], live: list[bool]
) -> None:
    # Sometimes two autocomplete mappings of one field: both add to its one key.
    mapped = {"t": [field, other] if live[0] else field, "s": {"type": "string"}}
    definition = compile_definition({"mappings": {"fields": mapped}})
    mask = np.asarray(live[: len(first) + len(second)], dtype=bool)
    alive = MutableSegment(0)  # the live entries alone, by the general path
    fast_parts, general_parts = [], []
    ord_ = 0
    for docs in (first, second):
        fast, general = MutableSegment(ord_), MutableSegment(ord_)
        for value in docs:
            (entry,) = definition.analyze({"t": value, "s": value})
            assert KEY not in entry.terms
            grams = entry.grams.get(KEY, [])
            fast.add(ord_, entry.terms, {}, entry.grams)
            as_terms = {**entry.terms, KEY: list(zip(grams, range(len(grams)), strict=True))} if grams else entry.terms
            general.add(ord_, as_terms, {}, {})
            if mask[ord_]:
                alive.add(ord_, as_terms, {}, {})
            ord_ += 1
        fast.end = general.end = ord_
        probes = ["", "zz", "ab", "caf", "a b"]
        assert _reads(fast, probes) == _reads(general, probes)
        fast_frozen, general_frozen = fast.freeze(), general.freeze()
        assert _saved(fast_frozen.arrays()) == _saved(general_frozen.arrays())
        assert _reads(fast_frozen, probes) == _reads(general_frozen, probes)
        fast_parts.append(fast_frozen)
        general_parts.append(general_frozen)
    merged = merge(fast_parts, mask)
    assert _saved(merged.arrays()) == _saved(merge(general_parts, mask).arrays())
    assert _content(merged) == _content(alive.freeze())
