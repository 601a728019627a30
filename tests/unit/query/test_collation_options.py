"""Collation options, one by one: the order and the equalities each gives.

Manual: https://www.mongodb.com/docs/manual/reference/collation/ (the
fields and their meaning) and
https://www.mongodb.com/docs/manual/reference/collation-locales-defaults/
(the locales). The expected orders are written by hand from the Unicode
Collation Algorithm's levels as the ICU user guide describes them
(https://unicode-org.github.io/icu/userguide/collation/concepts.html):
primary = base letters, secondary = accents, tertiary = case, quaternary =
the ignored punctuation under "shifted", identical = code points.
"""

from __future__ import annotations

from typing import Any

import pytest
from pymongo.errors import OperationFailure


def _sorted(db: Any, values: list[str], collation: dict[str, Any]) -> list[str]:
    db.c.drop()
    db.c.insert_many([{"_id": n, "s": v} for n, v in enumerate(values)])
    return [d["s"] for d in db.c.find({}, {"_id": 0}).sort([("s", 1), ("_id", 1)]).collation(collation)]


def _matching(db: Any, values: list[str], query: str, collation: dict[str, Any]) -> list[str]:
    db.c.drop()
    db.c.insert_many([{"_id": n, "s": v} for n, v in enumerate(values)])
    return [d["s"] for d in db.c.find({"s": query}).sort("_id", 1).collation(collation)]


WORDS = ["b", "A", "á", "a", "B"]


@pytest.mark.parametrize(
    "collation, order",
    [
        # simple: code points (uppercase ASCII before lowercase, accents last).
        ({"locale": "simple"}, ["A", "B", "a", "b", "á"]),
        # strength 3 (the default): a < A (lowercase first at the tertiary level), á after both (secondary).
        ({"locale": "en"}, ["a", "A", "á", "b", "B"]),
        # caseFirst upper: uppercase sorts first at the tertiary level.
        ({"locale": "en", "caseFirst": "upper"}, ["A", "a", "á", "B", "b"]),
        # strength 1: a, A and á are one primary weight; ties keep _id order (b=0, A=1, á=2, a=3, B=4).
        ({"locale": "en", "strength": 1}, ["A", "á", "a", "b", "B"]),
        # strength 2: case ignored, accents not: a == A < á.
        ({"locale": "en", "strength": 2}, ["A", "a", "á", "b", "B"]),
    ],
)
def test_strength_and_case_first_order(db: Any, collation: dict[str, Any], order: list[str]) -> None:
    assert _sorted(db, WORDS, collation) == order


@pytest.mark.parametrize(
    "collation, query, expected",
    [
        ({"locale": "en", "strength": 1}, "a", ["A", "á", "a"]),
        ({"locale": "en", "strength": 2}, "a", ["A", "a"]),
        ({"locale": "en", "strength": 3}, "a", ["a"]),
        # caseLevel at strength 1: case counts, accents still do not.
        ({"locale": "en", "strength": 1, "caseLevel": True}, "a", ["á", "a"]),
        ({"locale": "simple"}, "a", ["a"]),
    ],
)
def test_strength_and_case_level_equality(db: Any, collation: dict[str, Any], query: str, expected: list[str]) -> None:
    assert _matching(db, WORDS, query, collation) == expected


def test_numeric_ordering_compares_digit_runs_as_numbers(db: Any) -> None:
    values = ["10", "9", "2", "100"]
    assert _sorted(db, values, {"locale": "en", "numericOrdering": True}) == ["2", "9", "10", "100"]
    # Without it digits compare one by one, as characters.
    assert _sorted(db, values, {"locale": "en"}) == ["10", "100", "2", "9"]


def test_alternate_shifted_ignores_spaces_and_punctuation(db: Any) -> None:
    values = ["ab", "a b", "a-b"]
    assert _matching(db, values, "ab", {"locale": "en", "alternate": "shifted"}) == values
    # maxVariable "space": only whitespace is ignorable.
    shifted_space = {"locale": "en", "alternate": "shifted", "maxVariable": "space"}
    assert _matching(db, values, "ab", shifted_space) == ["ab", "a b"]
    # strength 4 (quaternary) tells the shifted characters apart again.
    assert _matching(db, values, "ab", {"locale": "en", "alternate": "shifted", "strength": 4}) == ["ab"]
    assert _matching(db, values, "ab", {"locale": "en"}) == ["ab"]


def test_backwards_compares_accents_from_the_end(db: Any) -> None:
    # The ICU guide's French example: accents weighed from the last one back.
    words = ["côté", "coté", "côte", "cote"]
    assert _sorted(db, words, {"locale": "fr", "backwards": True}) == ["cote", "côte", "coté", "côté"]
    assert _sorted(db, words, {"locale": "fr"}) == ["cote", "coté", "côte", "côté"]


def test_normalization_makes_canonical_equivalents_equal(db: Any) -> None:
    # a + circumflex + dot below, and a + dot below + circumflex: canonically
    # equivalent, but the first is not in canonical order (not FCD), which
    # ICU only sees through with normalization on.
    values = ["a\u0302\u0323", "a\u0323\u0302"]
    assert _matching(db, values, "a\u0323\u0302", {"locale": "en", "normalization": True}) == values
    assert _matching(db, values, "a\u0323\u0302", {"locale": "en"}) == ["a\u0323\u0302"]


def test_identical_strength_breaks_ties_by_code_point(db: Any) -> None:
    # U+0001 is completely ignorable in the UCA: invisible up to strength 4.
    values = ["ab", "a\u0001b"]
    assert _matching(db, values, "ab", {"locale": "en", "strength": 4}) == values
    assert _matching(db, values, "ab", {"locale": "en", "strength": 5}) == ["ab"]


@pytest.mark.parametrize(
    "locale, order",
    [
        ("en", ["a", "ä", "z"]),
        # Swedish: ä is a letter of its own, after z.
        ("sv", ["a", "z", "ä"]),
        # German phonebook: ä sorts as "ae".
        ("de@collation=phonebook", ["a", "ä", "af", "z"]),
    ],
)
def test_locales_have_their_own_alphabets(db: Any, locale: str, order: list[str]) -> None:
    values = ["z", "ä", "a"] + (["af"] if "phonebook" in locale else [])
    assert _sorted(db, values, {"locale": locale}) == order


@pytest.mark.parametrize(
    "collation, code, message",
    [
        ({"locale": "xx"}, 2, "Field 'locale' is invalid in: { locale: \"xx\" }"),
        ({"strength": 2}, 40414, "BSON field 'find.collation.locale' is missing but a required field"),
        ({"locale": "en", "bogus": 1}, 40415, "BSON field 'collation.bogus' is an unknown field."),
        ({"locale": "en", "strength": 6}, 51024, "BSON field 'strength' value must be <= 5, actual value '6'"),
        ({"locale": "en", "strength": 0}, 51024, "BSON field 'strength' value must be >= 1, actual value '0'"),
        (
            {"locale": "en", "caseFirst": "first"},
            2,
            "Enumeration value 'first' for field 'collation.caseFirst' is not a valid value.",
        ),
        (
            {"locale": "en", "alternate": "ignore"},
            2,
            "Enumeration value 'ignore' for field 'collation.alternate' is not a valid value.",
        ),
        ({"locale": "en", "caseLevel": 1}, 14, None),
        ({"locale": 5}, 14, None),
        ({"locale": "simple", "strength": 2}, 9, None),
    ],
)
def test_bad_collations_fail_as_mongod(db: Any, collation: dict[str, Any], code: int, message: str | None) -> None:
    db.c.insert_one({"s": "a"})
    with pytest.raises(OperationFailure) as info:
        db.command({"find": "c", "collation": collation})
    assert info.value.code == code
    if message is not None:
        assert info.value.details is not None and info.value.details["errmsg"] == message


def test_collation_is_reported_in_full(db: Any) -> None:
    # The manual's collation document, every field spelled out, with the
    # locale's own defaults (fr_CA: backwards true; en: all false/off/3).
    db.create_collection("fr", collation={"locale": "fr_CA"})
    assert db.fr.options()["collation"] == {
        "locale": "fr_CA",
        "caseLevel": False,
        "caseFirst": "off",
        "strength": 3,
        "numericOrdering": False,
        "alternate": "non-ignorable",
        "maxVariable": "punct",
        "normalization": False,
        "backwards": True,
        "version": "57.1",
    }


def test_regex_ignores_the_collation(db: Any) -> None:
    # https://www.mongodb.com/docs/manual/reference/operator/query/regex/ : $regex is not collation-aware.
    db.c.insert_many([{"s": "a"}, {"s": "A"}])
    found = db.c.find({"s": {"$regex": "^a"}}).collation({"locale": "en", "strength": 1})
    assert [d["s"] for d in found] == ["a"]
