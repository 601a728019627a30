"""Autocomplete grams: what an ``autocomplete`` field stores for a string.

:func:`autocomplete_grams` is the definition: the field's analyzer's tokens (folded unless
``foldDiacritics`` is false, lower-cased) joined by spaces into one *run*, then, ``minGrams``
to ``maxGrams`` characters long, edge grams (the prefixes of the run from each word on: a
word's prefixes, and words in sequence from any word, as mongot's edgeGram tokenization of
the whole field), right-edge grams (the suffixes of the run up to each word's end) or
n-grams (every substring); each gram once, in the order first made.

:class:`GramMaker` makes the same list faster, as indexing needs it (about fifty grams a
title). Every gram starting at one place of the run is a prefix of the run's next
``maxGrams`` characters there (a right-edge gram: a suffix of the previous ``maxGrams``), so
the grams of such a *window* are made once and kept: titles repeat words and word pairs,
and most windows have been seen. Words are normalised once each too. The caches are
bounded (cleared when full), so memory stays flat however much is indexed.
tests/property/test_autocomplete_build.py checks the two agree.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain
from typing import TypeVar

from foliodb.engine.search.text.analysis import Analyzer, fold_diacritics

CACHE_LIMIT = 65_536  # windows (or words) kept per field before the cache starts again

V = TypeVar("V")


def _words(analyzer: Analyzer, fold: bool, text: str) -> list[str]:
    words = [t for t, _ in analyzer.terms(text)]
    if fold:
        words = [fold_diacritics(w) for w in words]
    return [w.lower() for w in words]


def autocomplete_grams(analyzer: Analyzer, low: int, high: int, tokenization: str, fold: bool, text: str) -> list[str]:
    """The grams of ``text`` (see the module docstring), made one by one."""
    words = _words(analyzer, fold, text)
    run = " ".join(words)
    out: list[str] = []
    if tokenization == "nGram":
        out = [run[s : s + k] for s in range(len(run)) for k in range(low, high + 1) if s + k <= len(run)]
    else:
        at, bounds = 0, []  # each word's (start, end) in the run
        for word in words:
            bounds.append((at, at + len(word)))
            at += len(word) + 1
        for start, end in bounds:
            if tokenization == "edgeGram":  # the run from this word on: its prefixes
                out += [run[start : start + k] for k in range(low, min(high, len(run) - start) + 1)]
            else:  # the run up to this word: its suffixes
                out += [run[end - k : end] for k in range(low, min(high, end) + 1)]
    return list(dict.fromkeys(out))


class _Cache(dict[str, V]):
    """``make(key)`` for keys not yet held (a dict's ``__getitem__``: a hit costs no Python
    call), forgetting everything when :data:`CACHE_LIMIT` keys are held."""

    def __init__(self, make: Callable[[str], V]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: str) -> V:
        if len(self) >= CACHE_LIMIT:
            self.clear()
        value = self[key] = self.make(key)
        return value


class GramMaker:
    """:func:`autocomplete_grams` for one field's options, by windows (module docstring)."""

    def __init__(self, analyzer: Analyzer, low: int, high: int, tokenization: str, fold: bool) -> None:
        self.analyzer, self.low, self.high, self.tokenization, self.fold = analyzer, low, high, tokenization, fold
        self.words: _Cache[str] = _Cache(self._word)
        grams = self._suffixes if tokenization == "rightEdgeGram" else self._prefixes
        self.windows: _Cache[tuple[str, ...]] = _Cache(grams)

    def _word(self, term: str) -> str:
        return (fold_diacritics(term) if self.fold else term).lower()

    def _prefixes(self, window: str) -> tuple[str, ...]:
        return tuple([window[:k] for k in range(self.low, len(window) + 1)])

    def _suffixes(self, window: str) -> tuple[str, ...]:
        n = len(window)
        return tuple([window[n - k :] for k in range(self.low, n + 1)])

    def __call__(self, text: str) -> list[str]:
        words = list(map(self.words.__getitem__, self.analyzer.words(text)))
        run, high = " ".join(words), self.high
        if self.tokenization == "nGram":
            windows = [run[s : s + high] for s in range(len(run))]
        else:
            windows, at = [], 0
            edge = self.tokenization == "edgeGram"
            for word in words:
                end = at + len(word)
                windows.append(run[at : at + high] if edge else run[max(0, end - high) : end])
                at = end + 1
        return list(dict.fromkeys(chain.from_iterable(map(self.windows.__getitem__, windows))))
