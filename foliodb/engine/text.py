"""Text search: the terms a text index stores, ``$text`` queries, and scores, as mongod's FTS (version 3).

A text index lists its key as ``{<prefix fields>, _fts: "text", _ftsx: 1, <suffix fields>}`` with
``weights``, ``default_language`` and ``language_override``. It stores one entry per distinct term of a
document's indexed strings; the entry's key is the prefix fields' values, the term, the term's score in
the document, then the suffix fields' values, each KeyString-encoded (descending fields complemented),
so a ``$text`` query scans ``prefix values + term`` for each of its terms. Prefix and suffix values may not be arrays
(CannotBuildIndexKeys), and a document with no terms has no entries.

Terms (mongod's ``UnicodeFTSTokenizer``): a string splits at the Unicode delimiters (White_Space, Dash,
Hyphen, Quotation_Mark, Terminal_Punctuation, Pattern_Syntax, STerm; English keeps ``'`` inside words);
each token is lower-cased (Turkish dotted and dotless i as Turkish), dropped if it is a stop word of
the language (the lists in ``stop_words/``, mongod's), stemmed by the language's Snowball stemmer, and
then stripped of diacritics. Index keys and query terms drop stop words; the matcher's re-tokenisation
of a document keeps them. ``"none"`` neither stems nor drops stop words.

The strings a document offers, with their weights and languages, follow mongod's FTSElementIterator:
the fields the weights name (a weight on ``a`` reaches the strings of ``a`` and of arrays under it; a
weight on ``a.b`` descends through ``a``'s sub-documents and arrays), every string under a wildcard
(``$**``) index, and a sub-document's own ``language_override`` field sets the language of its strings.

A ``$search`` string parses as mongod's FTSQueryParser: words, ``"phrases"``, ``-negated`` words and
``-"negated phrases"`` (a ``-`` negates up to the next space). Words of phrases count as terms too. A
document matches when it holds a term, no negated term, every phrase and no negated phrase (phrases
compare within one string, case- and diacritic-insensitively unless the query says otherwise). Its
score (FTSSpec scoring) sums, over the query's terms, the term's score in each string: repeated
occurrences count 1, 1/2, 1/4..., times the weight, times ``0.5 + 0.5 * count / tokens``, times 1.1
when the string is the term itself.
"""

from __future__ import annotations

import bisect
import functools
import importlib.resources
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import icu
import snowballstemmer
from bson.regex import Regex

from foliodb.errors import CommandError, ErrorCode, bad_value
from foliodb.query import keystring
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.paths import MISSING, split
from foliodb.query.render import render_document

# MongoDB's language names and their ISO codes, to Snowball's algorithms (and to the stop-word lists).
LANGUAGES = {
    "danish": "danish",
    "da": "danish",
    "dutch": "dutch",
    "nl": "dutch",
    "english": "english",
    "en": "english",
    "finnish": "finnish",
    "fi": "finnish",
    "french": "french",
    "fr": "french",
    "german": "german",
    "de": "german",
    "hungarian": "hungarian",
    "hu": "hungarian",
    "italian": "italian",
    "it": "italian",
    "norwegian": "norwegian",
    "nb": "norwegian",
    "portuguese": "portuguese",
    "pt": "portuguese",
    "romanian": "romanian",
    "ro": "romanian",
    "russian": "russian",
    "ru": "russian",
    "spanish": "spanish",
    "es": "spanish",
    "swedish": "swedish",
    "sv": "swedish",
    "turkish": "turkish",
    "tr": "turkish",
    "none": "none",
}

# mongod's delimiters (fts/unicode/gen_delimiter_list.py): these Unicode properties.
_DELIMITERS = icu.UnicodeSet(
    "[[:White_Space:][:Dash:][:Hyphen:][:Quotation_Mark:][:Terminal_Punctuation:][:Pattern_Syntax:][:STerm:]]"
)


def _token_pattern(keep: str) -> re.Pattern[str]:
    """Runs of non-delimiters, the characters of ``keep`` not counting as delimiters."""
    parts = []
    for first, last in _DELIMITERS.ranges():
        low = ord(first)
        for code in range(ord(first), ord(last) + 1):
            if chr(code) in keep:
                if low < code:
                    parts.append(_class_range(low, code - 1))
                low = code + 1
        if low <= ord(last):
            parts.append(_class_range(low, ord(last)))
    return re.compile("[^" + "".join(parts) + "]+")


def _class_range(start: int, end: int) -> str:
    first = re.escape(chr(start))
    return first if start == end else f"{first}-{re.escape(chr(end))}"


_ENGLISH_TOKEN = _token_pattern("'")
_TOKEN = _token_pattern("")


def language_of(name: Any) -> str:
    """The language a ``$language``, ``default_language`` or override names (17262 if none)."""
    if not is_string(name) or name.lower() not in LANGUAGES:
        raise CommandError(17262, f"language override unsupported: {name}")
    return LANGUAGES[name.lower()]


def _query_language(name: str) -> str:
    if name.lower() not in LANGUAGES:
        raise bad_value(f'unsupported language: "{name}" for text index version 3')
    return LANGUAGES[name.lower()]


@functools.cache
def stop_words(language: str) -> frozenset[str]:
    """mongod's stop words of a language (lower-case, diacritics kept); none for "none"."""
    if language == "none":
        return frozenset()
    text = importlib.resources.files("foliodb.engine").joinpath(f"stop_words/{language}.txt").read_text("utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


@functools.lru_cache(maxsize=32)
def _stemmer(language: str) -> Any:
    # PyStemmer's C stemmer (a dependency) when importable, else Snowball's pure Python: the same
    # algorithms; the C one stems in about 0.1 µs a word where the other took 150 µs.
    return snowballstemmer.stemmer(language)


def _lower(text: str, language: str) -> str:
    if language == "turkish":
        # Turkish case folding: dotless I to dotless i, dotted I to i.
        text = text.replace("I", "\u0131").replace("\u0130", "i")
    return text.lower()


def strip_diacritics(text: str) -> str:
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", "".join(ch for ch in decomposed if not unicodedata.combining(ch)))


def fold(text: str, case_sensitive: bool = False, diacritic_sensitive: bool = False, language: str = "") -> str:
    """A string as a phrase compares: lower-cased and without diacritics, unless sensitive."""
    if not case_sensitive:
        text = _lower(text, language)
    if not diacritic_sensitive:
        text = strip_diacritics(text)
    return text


def terms(
    text: str,
    language: str,
    case_sensitive: bool = False,
    diacritic_sensitive: bool = False,
    filter_stop_words: bool = True,
) -> list[str]:
    """The terms of a string, in order, repeats kept (mongod's UnicodeFTSTokenizer)."""
    pattern = _ENGLISH_TOKEN if language == "english" else _TOKEN
    stop = stop_words(language) if filter_stop_words else frozenset()
    stem = _stemmer(language).stemWord if language != "none" else None
    out = []
    for token in pattern.findall(text):
        word = _lower(token, language)
        if word in stop:
            continue
        if case_sensitive:
            word = token
        if stem is not None:
            word = stem(word)  # the stemmer sees the diacritics
        out.append(word if diacritic_sensitive else strip_diacritics(word))
    return out


@dataclass(frozen=True)
class TextIndex:
    """What a text index's spec says about documents (mongod's FTSSpec)."""

    weights: dict[str, float]
    wildcard: bool
    default_language: str
    language_override: str
    before: tuple[str, ...] = ()  # the key's fields before _fts (equality required to search)
    after: tuple[str, ...] = ()  # and after _ftsx
    descending: tuple[bool, ...] = ()  # of before + after
    names: list[str] = field(default_factory=list)  # the weighted paths, sorted (the iterator seeks in them)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> TextIndex:
        weights = {k: float(v) for k, v in spec.get("weights", {}).items() if k != "$**"}
        before: list[str] = []
        after: list[str] = []
        descending: list[bool] = []
        passed = False
        for name, direction in spec.get("key", {}).items():
            if name in ("_fts", "_ftsx"):
                passed = True
                continue
            (after if passed else before).append(name)
            descending.append(isinstance(direction, (int, float)) and direction < 0)
        return cls(
            weights,
            "$**" in spec.get("weights", {}),
            language_of(spec.get("default_language", "english")),
            str(spec.get("language_override", "language")),
            tuple(before),
            tuple(after),
            tuple(descending),
            sorted(weights),
        )

    def language(self, doc: Mapping[str, Any], current: str | None = None) -> str:
        """The language of a (sub-)document's strings: its override field, else ``current``."""
        value = doc.get(self.language_override, MISSING)
        if value is MISSING:
            return current if current is not None else self.default_language
        if not is_string(value):
            raise CommandError(17261, "found language override field in document with non-string type")
        return language_of(value)

    def strings(self, doc: Mapping[str, Any]) -> Iterator[tuple[str, str, float]]:
        """(string, language, weight) of every indexed string in ``doc``, as mongod's FTSElementIterator."""
        yield from self._frame(doc, self.language(doc), "", False)

    def _frame(self, obj: Any, language: str, parent: str, is_array: bool) -> Iterator[tuple[str, str, float]]:
        items = enumerate(obj) if is_array else obj.items()
        names = self.names
        for key, value in items:
            name = str(key)
            if self.wildcard and name == self.language_override:
                continue
            dotted = name if not parent else parent if is_array else f"{parent}.{name}"
            i = bisect.bisect_left(names, dotted + "." if isinstance(value, Mapping) else dotted)
            possible = i < len(names)
            if not self.wildcard and not (possible and (names[i] == dotted or names[i].startswith(dotted + "."))):
                continue
            exact = possible and names[i] == dotted
            # mongod's weight: the first weighted path at or after this one (1 past the end).
            weight = self.weights[names[i]] if possible else 1.0
            if is_string(value):
                if exact or self.wildcard:
                    yield value, language, weight
            elif isinstance(value, Mapping):
                if not exact or self.wildcard:
                    yield from self._frame(value, self.language(value, language), dotted, False)
            elif isinstance(value, list) and (not is_array or self.wildcard):
                yield from self._frame(value, language, dotted, True)

    def term_scores(self, doc: Mapping[str, Any]) -> dict[str, float]:
        """Each term of ``doc`` (stop words dropped) and its score (mongod's scoreDocument)."""
        scores: dict[str, float] = {}
        for text, language, weight in self.strings(doc):
            tokens = terms(text, language)
            freq: dict[str, float] = {}
            count: dict[str, int] = {}
            for token in tokens:
                n = count.get(token, 0)
                freq[token] = freq.get(token, 0.0) + 1.0 / (2**n)
                count[token] = n + 1
            for term, f in freq.items():
                coeff = 0.5 * count[term] / len(tokens) + 0.5
                adjustment = 1.1 if len(text) == len(term) and text.lower() == term.lower() else 1.0
                scores[term] = scores.get(term, 0.0) + weight * f * coeff * adjustment
        return scores

    def score(self, doc: Mapping[str, Any], query_terms: set[str]) -> float:
        """MongoDB's text score of ``doc`` for the (stemmed) query terms."""
        scores = self.term_scores(doc)
        return sum(scores.get(term, 0.0) for term in query_terms)

    def extra_keys(self, doc: Mapping[str, Any]) -> tuple[bytes, bytes]:
        """The encoded prefix and suffix values of a document's entries (mongod's
        extractNonFTSKeyElement: a missing field is null, an array is CannotBuildIndexKeys)."""
        encoded = []
        for path, descending in zip((*self.before, *self.after), self.descending, strict=True):
            value = _extra_value(doc, path)
            key = keystring.encode(value)
            encoded.append(keystring.complement(key) if descending else key)
        n = len(self.before)
        return b"".join(encoded[:n]), b"".join(encoded[n:])

    def prefix_key(self, values: list[Any]) -> bytes:
        """The encoded prefix of a search for these prefix values."""
        out = b""
        for value, descending in zip(values, self.descending, strict=False):
            key = keystring.encode(value)
            out += keystring.complement(key) if descending else key
        return out


def _extra_value(doc: Mapping[str, Any], path: str) -> Any:
    value: Any = doc
    for part in split(path):
        if isinstance(value, list):
            raise _array_in_key(path, doc)
        if isinstance(value, Mapping):
            value = value.get(part, MISSING)
        else:
            return None
        if value is MISSING:
            return None
    if isinstance(value, list):
        raise _array_in_key(path, doc)
    return value


def _array_in_key(path: str, doc: Mapping[str, Any]) -> CommandError:
    return CommandError(
        ErrorCode.CannotBuildIndexKeys,
        f"Field '{path}' of text index contains an array in document: {render_document(dict(doc))}",
    )


@dataclass
class TextQuery:
    """A parsed ``$text`` operand (mongod's FTSQueryImpl)."""

    terms: set[str]  # what the index is searched for (positive, case- and diacritic-insensitive)
    positive: set[str]  # what the matcher looks for (sensitive forms when asked)
    negated: set[str]
    phrases: list[str]
    negated_phrases: list[str]
    language: str
    case_sensitive: bool
    diacritic_sensitive: bool
    spec: dict[str, Any] = field(default_factory=dict)  # the operand, as explain shows it

    def matches(self, index: TextIndex, doc: Mapping[str, Any]) -> bool:
        """mongod's FTSMatcher: a positive term, no negated term, every phrase, no negated phrase."""
        strings = list(index.strings(doc))
        if not self._has_term(strings, self.positive):
            return False
        if self.negated and self._has_term(strings, self.negated):
            return False
        for phrase in self.phrases:
            if not self._phrase_in(strings, phrase):
                return False
        return not any(self._phrase_in(strings, phrase) for phrase in self.negated_phrases)

    def _has_term(self, strings: list[tuple[str, str, float]], wanted: set[str]) -> bool:
        for text, language, _ in strings:
            found = terms(text, language, self.case_sensitive, self.diacritic_sensitive, filter_stop_words=False)
            if not wanted.isdisjoint(found):
                return True
        return False

    def _phrase_in(self, strings: list[tuple[str, str, float]], phrase: str) -> bool:
        for text, language, _ in strings:
            needle = fold(phrase, self.case_sensitive, self.diacritic_sensitive, language)
            if needle in fold(text, self.case_sensitive, self.diacritic_sensitive, language):
                return True
        return False

    def parsed(self) -> dict[str, Any]:
        """explain's ``parsedTextQuery``."""
        return {
            "terms": sorted(self.positive),
            "negatedTerms": sorted(self.negated),
            "phrases": self.phrases,
            "negatedPhrases": self.negated_phrases,
        }


_WHITESPACE = "\n\v\f\r "


def _query_tokens(search: str) -> Iterator[tuple[str, str, int, bool]]:
    """(kind, text, offset, whitespace before) of a ``$search`` string: "text" runs, and the
    delimiters ``-`` and ``"`` one at a time (mongod's FTSQueryParser)."""
    pos = 0
    n = len(search)
    while pos < n and search[pos] in _WHITESPACE:
        pos += 1
    previous_white = True
    while pos < n:
        start = pos
        pos += 1
        if search[start] in '-"':
            kind = "delimiter"
        else:
            kind = "text"
            while pos < n and search[pos] not in _WHITESPACE and search[pos] not in '-"':
                pos += 1
        white_start = pos
        while pos < n and search[pos] in _WHITESPACE:
            pos += 1
        yield kind, search[start:white_start], start, previous_white
        previous_white = pos > white_start


def parse_text(arg: Any, index: TextIndex) -> TextQuery:
    """A ``$text`` operand, checked as mongod's ExtensionsCallback and parsed as FTSQueryImpl."""
    if not isinstance(arg, Mapping):
        raise bad_value("$text expects an object")
    search = _field(arg, "$search", is_string, "string", required=True)
    language_name = _field(arg, "$language", is_string, "string")
    case_sensitive = bool(_field(arg, "$caseSensitive", _is_bool, "bool", default=False))
    diacritic_sensitive = bool(_field(arg, "$diacriticSensitive", _is_bool, "bool", default=False))
    if len(arg) != 1 + sum(key in arg for key in ("$language", "$caseSensitive", "$diacriticSensitive")):
        raise bad_value("extra fields in $text")
    language = _query_language(language_name) if language_name is not None else index.default_language
    positive: list[str] = []
    negative: list[str] = []
    phrases: list[str] = []
    negated_phrases: list[str] = []
    in_negation = in_phrase = False
    quote = 0
    for kind, text, offset, white_before in _query_tokens(search):
        if kind == "text":
            if in_phrase and in_negation:
                continue
            if in_negation and white_before:
                in_negation = False  # a negation lasts until the next space
            (negative if in_negation else positive).append(text)
        elif text == "-":
            if not in_phrase and white_before:
                in_negation = True
        elif in_phrase:
            (negated_phrases if in_negation else phrases).append(search[quote + 1 : offset])
            in_phrase = False
        else:
            in_phrase = True
            if in_negation and white_before:
                in_negation = False
            quote = offset
    bounds = set(terms(" ".join(positive), language))
    negated = set(terms(" ".join(negative), language))
    matched = bounds
    if case_sensitive or diacritic_sensitive:
        matched = set(terms(" ".join(positive), language, case_sensitive, diacritic_sensitive))
        negated = set(terms(" ".join(negative), language, case_sensitive, diacritic_sensitive))
    shown = {
        "$search": search,
        "$language": language_name if language_name is not None else index.default_language,
        "$caseSensitive": case_sensitive,
        "$diacriticSensitive": diacritic_sensitive,
    }
    return TextQuery(
        bounds, matched, negated, phrases, negated_phrases, language, case_sensitive, diacritic_sensitive, shown
    )


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _field(
    arg: Mapping[str, Any],
    name: str,
    check: Callable[[Any], bool],
    wanted: str,
    required: bool = False,
    default: Any = None,
) -> Any:
    """A field as mongod's bsonExtract*Field reads it (NoSuchKey, TypeMismatch)."""
    if name not in arg:
        if required:
            raise CommandError(ErrorCode.NoSuchKey, f'Missing expected field "{name}"')
        return default
    value = arg[name]
    if not check(value):
        raise CommandError(
            ErrorCode.TypeMismatch, f'"{name}" had the wrong type. Expected {wanted}, found {type_name(value)}'
        )
    return value


# -- where $text sits in a filter --------------------------------------------------------------------


def split_text(filter_spec: Mapping[str, Any] | None) -> tuple[Any, dict[str, Any] | None]:
    """(the ``$text`` operand or None, the rest of the filter).

    ``$text`` at the top level or in a top-level ``$and``: the rest is the filter without it. Deeper (a
    branch of an ``$or``): the rest is the whole filter, whose ``$text`` clause a :class:`Context` with a
    text matcher judges. ``$text`` inside ``$nor``, or twice, is BadValue (mongod's CanonicalQuery)."""
    if not filter_spec:
        return None, dict(filter_spec) if filter_spec is not None else None
    found = _text_clauses(filter_spec, False)
    if not found:
        return None, dict(filter_spec)
    if len(found) > 1:
        raise bad_value("Too many text expressions")
    text, nested = found[0]
    if nested:
        return text, dict(filter_spec)
    rest: dict[str, Any] = {}
    for key, value in filter_spec.items():
        if key == "$text":
            continue
        if key == "$and" and isinstance(value, list):
            branches = []
            for branch in value:
                if isinstance(branch, Mapping) and "$text" in branch:
                    others = {k: v for k, v in branch.items() if k != "$text"}
                    if others:
                        branches.append(others)
                else:
                    branches.append(branch)
            if branches:
                rest["$and"] = branches
        else:
            rest[key] = value
    return text, rest


def _text_clauses(spec: Mapping[str, Any], nested: bool) -> list[tuple[Any, bool]]:
    """(operand, under an $or?) of each $text in a filter's logical tree."""
    found: list[tuple[Any, bool]] = []
    for key, value in spec.items():
        if key == "$text":
            found.append((value, nested))
        elif key in ("$and", "$or", "$nor") and isinstance(value, list):
            for branch in value:
                if isinstance(branch, Mapping):
                    inner = _text_clauses(branch, nested or key != "$and")
                    if inner and key == "$nor":
                        raise bad_value("text expression not allowed in nor")
                    found.extend(inner)
    return found


def prefix_values(index: TextIndex, rest: Mapping[str, Any] | None) -> list[Any] | None:
    """The equality values a filter gives a compound text index's prefix fields (top level or in a
    top-level ``$and``), or None when one has none (mongod then cannot use the index)."""
    if not index.before:
        return []
    equalities: dict[str, Any] = {}
    _collect_equalities(rest or {}, equalities)
    values = []
    for path in index.before:
        if path not in equalities:
            return None
        values.append(equalities[path])
    return values


def _collect_equalities(spec: Mapping[str, Any], out: dict[str, Any]) -> None:
    for key, value in spec.items():
        if key == "$and" and isinstance(value, list):
            for branch in value:
                if isinstance(branch, Mapping):
                    _collect_equalities(branch, out)
        elif key.startswith("$"):
            continue
        elif isinstance(value, Mapping) and value and next(iter(value)).startswith("$"):
            if "$eq" in value and not isinstance(value["$eq"], (list, re.Pattern, Regex)):
                out.setdefault(key, value["$eq"])
        elif not isinstance(value, (list, re.Pattern, Regex)):
            out.setdefault(key, value)
