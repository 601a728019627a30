# ruff: noqa: RUF001 - apostrophes: Lucene treats the typographic one (U+2019) as the ASCII one
"""Analyzers: a string to the terms a full-text index stores, as Lucene's analyzers make them.

An analyzer is char filters (string to string), a tokenizer (string to ``(text, start,
end)`` tokens) and token filters (a list of :class:`Token` to another), run in that order;
positions count the tokens a tokenizer made, so a removed stop word leaves a gap a phrase
query sees, as Lucene's position increments do. ``start``/``end`` are offsets into the
string after the char filters (highlights use them).

Built in, as MongoDB Search names them:

* ``lucene.standard``: Unicode word boundaries (UAX #29, approximated by one regular
  expression: letters, digits, marks and ``_`` joined by ``.``, ``'`` and ``:`` between word
  characters and ``,`` between digits; each Han or Hiragana character a token of its own),
  tokens longer than 255 characters split, lower-cased; no stop words.
* ``lucene.simple``: runs of letters, lower-cased. ``lucene.whitespace``: runs of
  non-space, as written. ``lucene.keyword``: the whole string, one token.
* ``lucene.<language>`` for the fifteen languages FolioDB's text index knows: the standard
  tokenizer, lower-cased (English drops a trailing ``'s`` first; French and Italian drop
  elided articles, ``l'``), Lucene's stop words (:mod:`.stopwords`), then the Snowball
  stemmer of the language (English: Porter's, as Lucene's EnglishAnalyzer).

:func:`custom` builds a definition's ``analyzers`` entry (MongoDB Search's custom
analyzers) from the char filters, tokenizers and token filters this module registers.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import regex
import snowballstemmer

from foliodb.engine.search.text.stopwords import STOP_WORDS


class Token(NamedTuple):
    text: str
    position: int
    start: int
    end: int


Tokenizer = Callable[[str], list[tuple[str, int, int]]]
TokenFilter = Callable[[list[Token]], list[Token]]
CharFilter = Callable[[str], str]

MAX_TOKEN_LENGTH = 255
_WORD = r"[^\W\p{Han}\p{Hiragana}]"
_STANDARD = regex.compile(rf"{_WORD}+(?:(?:[.'’:]|(?<=\d),(?=\d)){_WORD}+)*|[\p{{Han}}\p{{Hiragana}}]", regex.UNICODE)
_LETTERS = regex.compile(r"\p{L}+")
_NON_SPACE = re.compile(r"\S+")

LANGUAGES = {
    "danish": "danish",
    "dutch": "dutch",
    "english": "porter",
    "finnish": "finnish",
    "french": "french",
    "german": "german",
    "hungarian": "hungarian",
    "italian": "italian",
    "norwegian": "norwegian",
    "portuguese": "portuguese",
    "romanian": "romanian",
    "russian": "russian",
    "spanish": "spanish",
    "swedish": "swedish",
    "turkish": "turkish",
}
# Articles French and Italian elide before a vowel (Lucene's ElisionFilter default sets).
_ELISIONS = {
    "french": frozenset(["l", "m", "t", "qu", "n", "s", "j", "d", "c", "jusqu", "quoiqu", "lorsqu", "puisqu"]),
    "italian": frozenset(
        [
            "c",
            "l",
            "all",
            "dall",
            "dell",
            "nell",
            "sull",
            "coll",
            "pell",
            "gl",
            "agl",
            "dagl",
            "degl",
            "negl",
            "sugl",
            "un",
            "m",
            "t",
            "s",
            "v",
            "d",
        ]
    ),
}


def _split_long(tokens: list[tuple[str, int, int]], limit: int) -> list[tuple[str, int, int]]:
    if all(len(t) <= limit for t, _, _ in tokens):
        return tokens
    out = []
    for text, start, _ in tokens:
        for i in range(0, len(text), limit):
            piece = text[i : i + limit]
            out.append((piece, start + i, start + i + len(piece)))
    return out


def standard_tokenizer(limit: int = MAX_TOKEN_LENGTH) -> Tokenizer:
    def tokenize(text: str) -> list[tuple[str, int, int]]:
        return _split_long([(m.group(), m.start(), m.end()) for m in _STANDARD.finditer(text)], limit)

    return tokenize


def _pattern_tokenizer(pattern: Any, limit: int = MAX_TOKEN_LENGTH) -> Tokenizer:
    def tokenize(text: str) -> list[tuple[str, int, int]]:
        return _split_long([(m.group(), m.start(), m.end()) for m in pattern.finditer(text)], limit)

    return tokenize


def keyword_tokenizer(text: str) -> list[tuple[str, int, int]]:
    return [(text, 0, len(text))] if text else []


def gram_tokenizer(low: int, high: int, edge: bool) -> Tokenizer:
    """Every n-gram (or every prefix, ``edge``) of the whole input of ``low``..``high`` characters."""

    def tokenize(text: str) -> list[tuple[str, int, int]]:
        starts = [0] if edge else range(len(text))
        return [(text[s : s + n], s, s + n) for s in starts for n in range(low, high + 1) if s + n <= len(text)]

    return tokenize


@dataclass(frozen=True)
class Analyzer:
    name: str
    tokenizer: Tokenizer
    filters: tuple[TokenFilter, ...] = ()
    char_filters: tuple[CharFilter, ...] = ()
    # A regular expression's matches, lower-cased (``lower``), as the terms: what the analyzer
    # makes of a text with no token past MAX_TOKEN_LENGTH, without building tokens (indexing's
    # fast path; tests/property/test_text_search.py checks it agrees with the general one).
    fast: Any = None
    lower: bool = True

    def tokens(self, text: str) -> list[Token]:
        for char_filter in self.char_filters:
            text = char_filter(text)
        tokens = [Token(t, i, s, e) for i, (t, s, e) in enumerate(self.tokenizer(text))]
        for token_filter in self.filters:
            tokens = token_filter(tokens)
        return tokens

    def terms(self, text: str) -> list[tuple[str, int]]:
        """(term, position) of each token (what the index stores)."""
        if self.fast is not None:
            found = self.fast.findall(text)
            if all(len(t) <= MAX_TOKEN_LENGTH for t in found):
                return (
                    [(t.lower(), i) for i, t in enumerate(found)]
                    if self.lower
                    else list(zip(found, range(len(found)), strict=True))
                )
        return [(t.text, t.position) for t in self.tokens(text)]


# -- token filters ---------------------------------------------------------------------------


def lowercase(tokens: list[Token]) -> list[Token]:
    return [t._replace(text=t.text.lower()) for t in tokens]


def fold_diacritics(text: str) -> str:
    """Lucene's ASCII folding, for the letters it maps by decomposition (é to e, ß kept)."""
    if text.isascii():
        return text  # unchanged by NFKD, and no combining marks
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def ascii_folding(tokens: list[Token]) -> list[Token]:
    return [t._replace(text=fold_diacritics(t.text)) for t in tokens]


def stop_filter(words: frozenset[str], ignore_case: bool = True) -> TokenFilter:
    def stop(tokens: list[Token]) -> list[Token]:
        if ignore_case:
            return [t for t in tokens if t.text.lower() not in words]
        return [t for t in tokens if t.text not in words]

    return stop


@functools.lru_cache(maxsize=32)
def _stemmer(algorithm: str) -> Callable[[str], str]:
    stemmer = snowballstemmer.stemmer(algorithm)
    return functools.lru_cache(maxsize=200_000)(stemmer.stemWord)


def stem_filter(algorithm: str) -> TokenFilter:
    stem = _stemmer(algorithm)

    def stemmed(tokens: list[Token]) -> list[Token]:
        return [t._replace(text=stem(t.text)) for t in tokens]

    return stemmed


def english_possessive(tokens: list[Token]) -> list[Token]:
    out = []
    for t in tokens:
        text = t.text
        if len(text) > 2 and text[-2] in "'’" and text[-1] in "sS":
            text = text[:-2]
        out.append(t._replace(text=text))
    return out


def elision(articles: frozenset[str]) -> TokenFilter:
    def elide(tokens: list[Token]) -> list[Token]:
        out = []
        for t in tokens:
            head, mark, rest = t.text.replace("’", "'").partition("'")
            out.append(t._replace(text=rest) if mark and rest and head.lower() in articles else t)
        return out

    return elide


def gram_filter(low: int, high: int, edge: bool, keep_short: bool = False) -> TokenFilter:
    """Each token replaced by its n-grams (its prefixes, ``edge``) at the token's position."""

    def grams(tokens: list[Token]) -> list[Token]:
        out: list[Token] = []
        for t in tokens:
            text = t.text
            starts = [0] if edge else range(len(text))
            made = [text[s : s + n] for s in starts for n in range(low, high + 1) if s + n <= len(text)]
            if not made and keep_short:
                made = [text]
            out.extend(t._replace(text=g) for g in made)
        return out

    return grams


# -- the built-in analyzers --------------------------------------------------------------------


def _language(name: str) -> Analyzer:
    filters: list[TokenFilter] = []
    if name == "english":
        filters.append(english_possessive)
    if name in _ELISIONS:
        filters.append(elision(_ELISIONS[name]))
    filters += [lowercase, stop_filter(STOP_WORDS[name]), stem_filter(LANGUAGES[name])]
    return Analyzer(f"lucene.{name}", standard_tokenizer(), tuple(filters))


BUILT_IN: dict[str, Analyzer] = {
    "lucene.standard": Analyzer("lucene.standard", standard_tokenizer(), (lowercase,), fast=_STANDARD),
    "lucene.simple": Analyzer("lucene.simple", _pattern_tokenizer(_LETTERS), (lowercase,), fast=_LETTERS),
    "lucene.whitespace": Analyzer("lucene.whitespace", _pattern_tokenizer(_NON_SPACE), fast=_NON_SPACE, lower=False),
    "lucene.keyword": Analyzer("lucene.keyword", keyword_tokenizer),
    **{f"lucene.{name}": _language(name) for name in LANGUAGES},
}


# -- custom analyzers ------------------------------------------------------------------------


class AnalyzerError(ValueError):
    """A custom analyzer's definition is wrong: (place, problem)."""

    def __init__(self, place: str, problem: str) -> None:
        super().__init__(place, problem)
        self.place, self.problem = place, problem


def _int(spec: Mapping[str, Any], key: str, place: str, default: int | None = None, low: int = 0) -> int:
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value or value < low:
        raise AnalyzerError(f"{place}.{key}", f"must be an integer of at least {low}")
    return int(value)


def _string(spec: Mapping[str, Any], key: str, place: str) -> str:
    value = spec.get(key)
    if not isinstance(value, str):
        raise AnalyzerError(f"{place}.{key}", "is required and must be a string")
    return value


def _compiled(pattern: str, place: str) -> Any:
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise AnalyzerError(place, f"is not a valid regular expression: {exc}") from None


def _char_filter(spec: Mapping[str, Any], place: str) -> CharFilter:
    kind = spec.get("type")
    if kind == "htmlStrip":
        tags = re.compile(r"<[^>]*>")
        return lambda text: html.unescape(tags.sub(" ", text))
    if kind == "icuNormalize":
        return lambda text: unicodedata.normalize("NFKC", text)
    if kind == "mapping":
        mappings = spec.get("mappings")
        if not isinstance(mappings, Mapping) or not all(isinstance(v, str) for v in mappings.values()):
            raise AnalyzerError(f"{place}.mappings", "must be a document of strings")
        keys = sorted(mappings, key=len, reverse=True)
        if not keys:
            return lambda text: text
        pattern = re.compile("|".join(re.escape(k) for k in keys))
        return lambda text: pattern.sub(lambda m: mappings[m.group()], text)
    raise AnalyzerError(f"{place}.type", "must be one of [htmlStrip, icuNormalize, mapping]")


def _tokenizer(spec: Any, place: str) -> Tokenizer:
    if not isinstance(spec, Mapping):
        raise AnalyzerError(place, "is required and must be a document")
    kind = spec.get("type")
    if kind == "standard":
        return standard_tokenizer(_int(spec, "maxTokenLength", place, MAX_TOKEN_LENGTH, 1))
    if kind == "whitespace":
        return _pattern_tokenizer(_NON_SPACE, _int(spec, "maxTokenLength", place, MAX_TOKEN_LENGTH, 1))
    if kind == "keyword":
        return keyword_tokenizer
    if kind in ("edgeGram", "nGram"):
        low, high = _int(spec, "minGram", place, None, 1), _int(spec, "maxGram", place, None, 1)
        if low > high:
            raise AnalyzerError(f"{place}.minGram", "must be less than or equal to maxGram")
        return gram_tokenizer(low, high, kind == "edgeGram")
    if kind == "regexSplit":
        splitter = _compiled(_string(spec, "pattern", place), f"{place}.pattern")

        def split(text: str) -> list[tuple[str, int, int]]:
            out, start = [], 0
            for m in splitter.finditer(text):
                if m.start() > start:
                    out.append((text[start : m.start()], start, m.start()))
                start = max(start, m.end())
            if start < len(text):
                out.append((text[start:], start, len(text)))
            return out

        return split
    if kind == "regexCaptureGroup":
        capture = _compiled(_string(spec, "pattern", place), f"{place}.pattern")
        group = _int(spec, "group", place, None, -1)

        def captured(text: str) -> list[tuple[str, int, int]]:
            if group == -1:  # the pattern splits, as regexSplit
                return _tokenizer({"type": "regexSplit", "pattern": capture.pattern}, place)(text)
            return [(m.group(group), m.start(group), m.end(group)) for m in capture.finditer(text) if m.group(group)]

        return captured
    if kind == "uaxUrlEmail":
        url_email = regex.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|https?://\S+|" + _STANDARD.pattern)
        return _pattern_tokenizer(url_email, _int(spec, "maxTokenLength", place, MAX_TOKEN_LENGTH, 1))
    raise AnalyzerError(
        f"{place}.type",
        "must be one of [edgeGram, keyword, nGram, regexCaptureGroup, regexSplit, standard, uaxUrlEmail, whitespace]",
    )


def _token_filter(spec: Any, place: str) -> TokenFilter:
    if not isinstance(spec, Mapping):
        raise AnalyzerError(place, "must be a document")
    kind = spec.get("type")
    if kind == "lowercase":
        return lowercase
    if kind in ("asciiFolding", "icuFolding"):
        if kind == "icuFolding":
            return lambda tokens: ascii_folding(lowercase(tokens))
        return ascii_folding
    if kind == "icuNormalizer":
        return lambda tokens: [t._replace(text=unicodedata.normalize("NFKC", t.text)) for t in tokens]
    if kind == "stopword":
        words = spec.get("tokens")
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise AnalyzerError(f"{place}.tokens", "is required and must be an array of strings")
        ignore = spec.get("ignoreCase", True)
        return stop_filter(frozenset(w.lower() if ignore else w for w in words), bool(ignore))
    if kind == "snowballStemming":
        name = _string(spec, "stemmerName", place)
        if name not in snowballstemmer.algorithms():
            raise AnalyzerError(f"{place}.stemmerName", f"must be one of [{', '.join(snowballstemmer.algorithms())}]")
        return stem_filter(name)
    if kind == "porterStemming":
        return stem_filter("porter")
    if kind == "englishPossessive":
        return english_possessive
    if kind == "length":
        low, high = _int(spec, "min", place, 0), _int(spec, "max", place, 255)
        return lambda tokens: [t for t in tokens if low <= len(t.text) <= high]
    if kind == "trim":
        return lambda tokens: [t._replace(text=t.text.strip()) for t in tokens]
    if kind == "reverse":
        return lambda tokens: [t._replace(text=t.text[::-1]) for t in tokens]
    if kind == "removeDuplicates":
        return lambda tokens: list({(t.text, t.position): t for t in tokens}.values())
    if kind in ("edgeGram", "nGram"):
        low, high = _int(spec, "minGram", place, None, 1), _int(spec, "maxGram", place, None, 1)
        keep = spec.get("termNotInBounds", "omit") == "include"
        return gram_filter(low, high, kind == "edgeGram", keep)
    if kind == "regex":
        pattern = _compiled(_string(spec, "pattern", place), f"{place}.pattern")
        replacement = _string(spec, "replacement", place)
        first = spec.get("matches", "all") == "first"
        return lambda tokens: [t._replace(text=pattern.sub(replacement, t.text, count=int(first))) for t in tokens]
    if kind == "shingle":
        low, high = _int(spec, "minShingleSize", place, 2, 2), _int(spec, "maxShingleSize", place, 3, 2)

        def shingles(tokens: list[Token]) -> list[Token]:
            out = list(tokens)
            for i, t in enumerate(tokens):
                for n in range(low, high + 1):
                    if i + n <= len(tokens):
                        last = tokens[i + n - 1]
                        out.append(Token(" ".join(x.text for x in tokens[i : i + n]), t.position, t.start, last.end))
            return sorted(out, key=lambda t: t.position)

        return shingles
    if kind == "flattenGraph":
        return lambda tokens: tokens
    raise AnalyzerError(
        f"{place}.type",
        "must be one of [asciiFolding, edgeGram, englishPossessive, flattenGraph, icuFolding, icuNormalizer, "
        "length, lowercase, nGram, porterStemming, regex, removeDuplicates, reverse, shingle, snowballStemming, "
        "stopword, trim]",
    )


def custom(spec: Any, place: str) -> Analyzer:
    """A definition's custom analyzer (``{name, charFilters?, tokenizer, tokenFilters?}``)."""
    if not isinstance(spec, Mapping):
        raise AnalyzerError(place, "must be a document")
    name = _string(spec, "name", place)
    if name.startswith(("lucene.", "builtin.", "mongodb.")):
        raise AnalyzerError(f"{place}.name", "must not start with 'lucene.', 'builtin.' or 'mongodb.'")
    chars = spec.get("charFilters", [])
    filters = spec.get("tokenFilters", [])
    if not isinstance(chars, list):
        raise AnalyzerError(f"{place}.charFilters", "must be an array")
    if not isinstance(filters, list):
        raise AnalyzerError(f"{place}.tokenFilters", "must be an array")
    return Analyzer(
        name,
        _tokenizer(spec.get("tokenizer"), f"{place}.tokenizer"),
        tuple(_token_filter(f, f"{place}.tokenFilters[{i}]") for i, f in enumerate(filters)),
        tuple(
            _char_filter(c if isinstance(c, Mapping) else {}, f"{place}.charFilters[{i}]") for i, c in enumerate(chars)
        ),
    )
