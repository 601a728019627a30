"""Collations: locale-aware string comparison through ICU, as mongod does.

Manual: https://www.mongodb.com/docs/manual/reference/collation/ and
https://www.mongodb.com/docs/manual/reference/collation-locales-defaults/

A collation document is parsed once (:func:`parse`) into a :class:`Collator`,
or ``None`` for ``{locale: "simple"}`` (code-point order, no collator at all,
so the common case costs nothing). A collator orders strings by their ICU
*sort keys*: byte strings whose plain order is the collation's order and which
are equal exactly when the collation calls the strings equal.

The rest of FolioDB compares collated values through :meth:`Collator.transform`,
which replaces every string inside a value (array elements and document values
alike; field names stay binary, as in MongoDB) by its sort key spelled as a
``str`` of code points 0-255 (latin-1). Code-point order over such strings is
byte order over the sort keys, so :func:`foliodb.query.compare.compare` and
:func:`foliodb.query.keystring.encode` of transformed values *are* the collated
comparison and the collated index key, with no change to either. A transformed
value only ever serves as a comparison or key: what a command returns is
always the original value. Code, regexes and symbols-as-code are not strings
to a collation and pass unchanged; ``$regex`` ignores collations.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import icu

from foliodb.errors import CommandError, ErrorCode
from foliodb.query import keystring
from foliodb.query.bsontypes import type_name
from foliodb.query.compare import is_number, number_value

# mongod reports the collation version of its bundled ICU; FolioDB reports the
# same so specs read back from listIndexes round-trip unchanged.
VERSION = "57.1"

# The manual's "Supported Languages and Locales" table: locale -> variants.
LOCALES: dict[str, tuple[str, ...]] = {
    "af": (), "sq": (), "am": (), "ar": ("compat",), "hy": (), "as": (), "az": ("search",),
    "bn": ("traditional",), "be": (), "bs": ("search",), "bs_Cyrl": (), "bg": (), "my": (),
    "ca": ("search",), "chr": (), "zh": ("big5han", "gb2312han", "unihan", "zhuyin"), "zh_Hant": (),
    "hr": ("search",), "cs": ("search",), "da": ("search",), "nl": (), "dz": (), "en": (), "en_US": (),
    "en_US_POSIX": (), "eo": (), "et": (), "ee": (), "fo": (), "fil": (), "fi": ("search", "traditional"),
    "fr": (), "fr_CA": (), "gl": ("search",), "ka": (), "de": ("search", "eor", "phonebook"),
    "de_AT": ("phonebook",), "el": (), "gu": (), "ha": (), "haw": (), "he": ("search",), "hi": (),
    "hu": (), "is": ("search",), "ig": (), "smn": ("search",), "id": (), "ga": (), "it": (),
    "ja": ("unihan",), "kl": ("search",), "kn": ("traditional",), "kk": (), "km": (), "kok": (),
    "ko": ("search", "searchjl", "unihan"), "ky": (), "lkt": (), "lo": (), "lv": (), "ln": ("phonetic",),
    "lt": (), "dsb": (), "lb": (), "mk": (), "ms": (), "ml": (), "mt": (), "mr": (), "mn": (), "ne": (),
    "se": ("search",), "nb": ("search",), "nn": ("search",), "or": (), "om": (), "ps": (), "fa": (),
    "fa_AF": (), "pl": (), "pt": (), "pa": (), "ro": (), "ru": (), "sr": (), "sr_Latn": ("search",),
    "si": ("dictionary",), "sk": ("search",), "sl": (), "es": ("search", "traditional"), "sw": (),
    "sv": ("search",), "ta": (), "te": (), "th": (), "bo": (), "to": (), "tr": ("search",), "uk": (),
    "hsb": (), "ur": (), "ug": (), "vi": ("traditional",), "wae": (), "cy": (), "yi": ("search",),
    "yo": (), "zu": (),
}  # fmt: skip

_FIELDS = (
    "locale",
    "caseLevel",
    "caseFirst",
    "strength",
    "numericOrdering",
    "alternate",
    "maxVariable",
    "normalization",
    "backwards",
    "version",
)
_BOOLS = ("caseLevel", "numericOrdering", "normalization", "backwards")
_ENUMS = {
    "caseFirst": ("upper", "lower", "off"),
    "alternate": ("non-ignorable", "shifted"),
    "maxVariable": ("punct", "space"),
}

_A = icu.UCollAttribute
_V = icu.UCollAttributeValue
_STRENGTHS = {1: icu.Collator.PRIMARY, 2: icu.Collator.SECONDARY, 3: icu.Collator.TERTIARY, 4: 3, 5: 15}
_CASE_FIRST = {"upper": _V.UPPER_FIRST, "lower": _V.LOWER_FIRST, "off": _V.OFF}
_ON_OFF = {True: _V.ON, False: _V.OFF}


class Collator:
    """One parsed collation: its full spec (as mongod spells it back) and
    the ICU collator behind :meth:`key`."""

    __slots__ = ("_icu", "key", "spec")

    def __init__(self, spec: dict[str, Any], collator: Any) -> None:
        self.spec = spec
        self._icu = collator
        # Sort keys are pure functions of the string: a bounded cache makes
        # repeated values (group keys, index bounds, sorts) cheap.
        self.key: Any = functools.lru_cache(maxsize=1 << 16)(self._sort_key)

    def _sort_key(self, text: str) -> str:
        # ICU ends every key with one 0x00 and uses no other 0x00 bytes;
        # dropping it keeps the order.
        return self._icu.getSortKey(text)[:-1].decode("latin-1")

    def transform(self, value: Any) -> Any:
        """``value`` with every string replaced by its sort key (see the module
        docstring): compare and encode the result, never return it."""
        cls = value.__class__
        if cls is str:
            return self.key(value)
        if cls is int or cls is float or value is None or cls is bool:
            return value
        if isinstance(value, str):
            return self.key(str(value))
        if isinstance(value, (list, tuple)):
            return [self.transform(item) for item in value]
        if isinstance(value, Mapping):
            return {name: self.transform(item) for name, item in value.items()}
        return value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Collator) and other.spec == self.spec

    def __hash__(self) -> int:
        return hash(tuple(self.spec.items()))

    def __repr__(self) -> str:
        return f"Collator({self.spec!r})"


def key_encoder(collator: Collator | None) -> Callable[[Any], bytes]:
    """:func:`foliodb.query.keystring.encode` under ``collator``: equal keys
    for values the collation calls equal, ordered as it orders them."""
    if collator is None:
        return keystring.encode
    transform = collator.transform
    return lambda value: keystring.encode(transform(value))


def shown_key(key: str) -> str:
    """A sort key (as :meth:`Collator.transform` spells it) as mongod prints
    a collation key in messages and explain: ``CollationKey(0x<hex>)``."""
    return f"CollationKey(0x{key.encode('latin-1').hex()})"


def same(a: Collator | None, b: Collator | None) -> bool:
    """Whether two collations (None = simple) order strings alike."""
    return a is b or (a is not None and b is not None and a.spec == b.spec)


def spec_of(collator: Collator | None) -> dict[str, Any]:
    """The collation document mongod reports (``{locale: "simple"}`` for none)."""
    return {"locale": "simple"} if collator is None else dict(collator.spec)


def _render(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k}: {_render(v)}" for k, v in value.items()) + " }"
    return str(value)


def parse(value: Any, where: str = "collation") -> Collator | None:
    """The collator of a collation document (None for ``simple``), raising
    mongod's errors for a bad one. ``where`` prefixes the field names in
    "missing" errors, as mongod's command parsers do."""
    if not isinstance(value, Mapping):
        raise CommandError(
            ErrorCode.TypeMismatch,
            f"BSON field '{where}' is the wrong type '{type_name(value)}', expected type 'object'",
        )
    for name in value:
        if name not in _FIELDS:
            raise CommandError(40415, f"BSON field 'collation.{name}' is an unknown field.")
    locale = value.get("locale")
    if locale is None:
        raise CommandError(40414, f"BSON field '{where}.locale' is missing but a required field")
    if not isinstance(locale, str):
        raise _wrong_type("locale", locale, "string")
    for name in _BOOLS:
        if name in value and not isinstance(value[name], bool):
            raise _wrong_type(name, value[name], "bool")
    for name, allowed in _ENUMS.items():
        if name in value:
            choice = value[name]
            if not isinstance(choice, str):
                raise _wrong_type(name, choice, "string")
            if choice not in allowed:
                raise CommandError(
                    ErrorCode.BadValue,
                    f"Enumeration value '{choice}' for field 'collation.{name}' is not a valid value.",
                )
    strength = value.get("strength")
    if strength is not None:
        strength = _strength(strength)
    if "version" in value and not isinstance(value["version"], str):
        raise _wrong_type("version", value["version"], "string")
    if locale == "simple":
        if len(value) > 1 and set(value) != {"locale", "version"}:
            raise CommandError(
                ErrorCode.FailedToParse,
                f"If locale=simple, no other fields should be present in: {_render(value)}",
            )
        return None
    if not _known_locale(locale):
        raise CommandError(ErrorCode.BadValue, f"Field 'locale' is invalid in: {_render(value)}")
    return _collator(
        locale,
        value.get("caseLevel"),
        value.get("caseFirst"),
        strength,
        value.get("numericOrdering"),
        value.get("alternate"),
        value.get("maxVariable"),
        value.get("normalization"),
        value.get("backwards"),
    )


def _wrong_type(name: str, value: Any, expected: str) -> CommandError:
    return CommandError(
        ErrorCode.TypeMismatch,
        f"BSON field 'collation.{name}' is the wrong type '{type_name(value)}', expected type '{expected}'",
    )


def _strength(value: Any) -> int:
    if isinstance(value, bool) or not is_number(value):
        raise CommandError(
            ErrorCode.TypeMismatch,
            f"BSON field 'collation.strength' is the wrong type '{type_name(value)}', "
            "expected types '[long, int, decimal, double]'",
        )
    number = number_value(value)
    if number != number or int(number) != number:
        raise CommandError(ErrorCode.BadValue, f"BSON field 'strength' value must be a whole number: {value}")
    strength = int(number)
    if strength < 1:
        raise CommandError(51024, f"BSON field 'strength' value must be >= 1, actual value '{strength}'")
    if strength > 5:
        raise CommandError(51024, f"BSON field 'strength' value must be <= 5, actual value '{strength}'")
    return strength


def _known_locale(locale: str) -> bool:
    base, _, keywords = locale.partition("@")
    if base not in LOCALES:
        return False
    if not keywords:
        return True
    key, _, variant = keywords.partition("=")
    return key == "collation" and variant in LOCALES[base]


@functools.lru_cache(maxsize=256)
def _collator(
    locale: str,
    case_level: bool | None,
    case_first: str | None,
    strength: int | None,
    numeric: bool | None,
    alternate: str | None,
    max_variable: str | None,
    normalization: bool | None,
    backwards: bool | None,
) -> Collator:
    """One collator per distinct spec: ICU collators are costly to open.
    A field left out takes the locale's own default, read back from ICU."""
    name = locale
    if max_variable == "space":
        # PyICU has no setMaxVariable; ICU reads the same setting from the locale's kv keyword.
        name += (";" if "@" in name else "@") + "kv=space"
    collator = icu.Collator.createInstance(icu.Locale(name))
    if case_level is not None:
        collator.setAttribute(_A.CASE_LEVEL, _ON_OFF[case_level])
    if case_first is not None:
        collator.setAttribute(_A.CASE_FIRST, _CASE_FIRST[case_first])
    if strength is not None:
        collator.setStrength(_STRENGTHS[strength])
    if numeric is not None:
        collator.setAttribute(_A.NUMERIC_COLLATION, _ON_OFF[numeric])
    if alternate is not None:
        collator.setAttribute(_A.ALTERNATE_HANDLING, _V.SHIFTED if alternate == "shifted" else _V.NON_IGNORABLE)
    if normalization is not None:
        collator.setAttribute(_A.NORMALIZATION_MODE, _ON_OFF[normalization])
    if backwards is not None:
        collator.setAttribute(_A.FRENCH_COLLATION, _ON_OFF[backwards])
    level = collator.getStrength()
    case = collator.getAttribute(_A.CASE_FIRST)
    spec = {
        "locale": locale,
        "caseLevel": collator.getAttribute(_A.CASE_LEVEL) == _V.ON,
        "caseFirst": "upper" if case == _V.UPPER_FIRST else "lower" if case == _V.LOWER_FIRST else "off",
        "strength": {v: k for k, v in _STRENGTHS.items()}[level],
        "numericOrdering": collator.getAttribute(_A.NUMERIC_COLLATION) == _V.ON,
        "alternate": "shifted" if collator.getAttribute(_A.ALTERNATE_HANDLING) == _V.SHIFTED else "non-ignorable",
        "maxVariable": max_variable or _default_max_variable(collator),
        "normalization": collator.getAttribute(_A.NORMALIZATION_MODE) == _V.ON,
        "backwards": collator.getAttribute(_A.FRENCH_COLLATION) == _V.ON,
        "version": VERSION,
    }
    return Collator(spec, collator)


@functools.cache
def _space_top() -> int:
    top: int = icu.Collator.createInstance(icu.Locale("root@kv=space")).getVariableTop()
    return top


def _default_max_variable(collator: Any) -> str:
    return "space" if collator.getVariableTop() == _space_top() else "punct"
