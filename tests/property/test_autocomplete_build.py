"""The autocomplete build's fast paths against the general ones they mirror.

* :class:`~foliodb.engine.search.text.grams.GramMaker` (grams by cached windows) makes the
  list :func:`~foliodb.engine.search.text.grams.autocomplete_grams` makes gram by gram, for
  random texts (diacritics, CJK, punctuation, repeated words) and every autocomplete option;
* a mutable segment fed grams (``Entry.grams``: numbered grams in flat arrays) reads and
  freezes exactly as one fed the same grams as terms at consecutive positions (the general
  path, which every other key still takes): terms, postings and tfs, positions, field
  lengths (what the norms encode), the frozen arrays as saved (the format-2 file's arrays)
  and a merge of frozen segments.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from foliodb.engine.search.text.analysis import BUILT_IN
from foliodb.engine.search.text.grams import GramMaker, autocomplete_grams
from foliodb.engine.search.text.segments import MutableSegment, merge

KEY = "t\x00ac"
ANALYZERS = ["lucene.standard", "lucene.keyword", "lucene.whitespace", "lucene.simple", "lucene.french"]
WORDS = ["ab", "Abc", "abcd", "café", "CAFE", "x", "élan", "naïve", "ß", "中文", "o'neil", "3.14", "zzzzzzzzzzzzzzzzz"]
TEXTS = st.lists(st.sampled_from(WORDS), max_size=9).map(" ".join) | st.text(
    alphabet="aAbé ,.'-\u0301\u4e2dΣς", max_size=40
)


@st.composite
def options(draw: Any) -> tuple[Any, int, int, str, bool]:
    low = draw(st.integers(0, 4))
    high = draw(st.integers(low, low + 12))
    tokenization = draw(st.sampled_from(["edgeGram", "rightEdgeGram", "nGram"]))
    return BUILT_IN[draw(st.sampled_from(ANALYZERS))], low, high, tokenization, draw(st.booleans())


@settings(max_examples=400, deadline=None)
@given(options(), st.lists(TEXTS, min_size=1, max_size=6))
def test_gram_maker_equals_autocomplete_grams(option: tuple[Any, int, int, str, bool], texts: list[str]) -> None:
    make = GramMaker(*option)
    for text in texts * 2:  # the second time from the caches
        assert make(text) == autocomplete_grams(*option, text), text


def _as_terms(grams: list[str]) -> list[tuple[str, int]]:
    """The grams as mapping stored them before ``Entry.grams``: terms at positions 0, 1, ..."""
    return list(zip(grams, range(len(grams)), strict=True))


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


DOCS = st.lists(st.lists(TEXTS, min_size=1, max_size=3), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(options(), DOCS, DOCS, st.lists(st.booleans(), min_size=24, max_size=24))
def test_gram_segments_equal_the_general_path(
    option: tuple[Any, int, int, str, bool], first: list[list[str]], second: list[list[str]], live: list[bool]
) -> None:
    make = GramMaker(*option)
    fast_parts, general_parts = [], []
    ord_ = 0
    for docs in (first, second):
        fast, general = MutableSegment(ord_), MutableSegment(ord_)
        for values in docs:
            # An array field: each value's grams (each value deduplicated alone), one key.
            grams = [g for value in values for g in make(value)]
            if grams:
                fast.add(ord_, {}, {}, {KEY: grams})
                general.add(ord_, {KEY: _as_terms(grams)}, {}, {})
            ord_ += 1
        fast.end = general.end = ord_
        probes = ["", "zz", "ab", "caf", "a b"]
        assert _reads(fast, probes) == _reads(general, probes)
        fast_frozen, general_frozen = fast.freeze(), general.freeze()
        assert _saved(fast_frozen.arrays()) == _saved(general_frozen.arrays())
        assert _reads(fast_frozen, probes) == _reads(general_frozen, probes)
        fast_parts.append(fast_frozen)
        general_parts.append(general_frozen)
    mask = np.asarray(live[:ord_], dtype=bool)
    assert _saved(merge(fast_parts, mask).arrays()) == _saved(merge(general_parts, mask).arrays())
