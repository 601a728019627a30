"""The keystring encoding orders values exactly as compare() does.

Manual: https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/
"""

from __future__ import annotations

import datetime
import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from foliodb.query import compare as cmp
from foliodb.query import keystring
from tests.bson_values import EDGE_VALUES, bson_values


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def _key_cmp(a: Any, b: Any) -> int:
    ka, kb = keystring.encode(a), keystring.encode(b)
    return (ka > kb) - (ka < kb)


def test_edge_values_pairwise() -> None:
    for a, b in itertools.product(EDGE_VALUES, EDGE_VALUES):
        assert _key_cmp(a, b) == _sign(cmp.compare(a, b)), (a, b)


def test_type_bracket_order_of_the_manual() -> None:
    # MinKey < null < numbers < strings < objects < arrays < binData < ObjectId
    # < bool < date < timestamp < regex < MaxKey
    import datetime

    from bson import MaxKey, MinKey, ObjectId, Regex, Timestamp

    ordered = [
        MinKey(),
        None,
        1,
        "a",
        {"a": 1},
        [1],
        b"x",
        ObjectId(),
        False,
        datetime.datetime(2020, 1, 1),
        Timestamp(1, 1),
        Regex("a"),
        MaxKey(),
    ]
    for lower, higher in itertools.pairwise(ordered):
        assert cmp.compare(lower, higher) < 0
        assert keystring.encode(lower) < keystring.encode(higher)


def test_numbers_compare_by_value_across_types() -> None:
    from bson import Decimal128, Int64

    assert (
        keystring.encode(1)
        == keystring.encode(1.0)
        == keystring.encode(Int64(1))
        == keystring.encode(Decimal128("1.000"))
    )
    assert keystring.encode(-0.0) == keystring.encode(0)
    assert cmp.compare(float("nan"), float("-inf")) < 0
    assert cmp.compare(2**53 + 1, float(2**53)) > 0


@settings(max_examples=400, deadline=None)
@given(bson_values(), bson_values())
def test_random_values_agree(a: Any, b: Any) -> None:
    assert _key_cmp(a, b) == _sign(cmp.compare(a, b))


@settings(max_examples=200, deadline=None)
@given(bson_values(), bson_values(), bson_values())
def test_compare_is_transitive(a: Any, b: Any, c: Any) -> None:
    if cmp.compare(a, b) <= 0 and cmp.compare(b, c) <= 0:
        assert cmp.compare(a, c) <= 0


@settings(max_examples=200, deadline=None)
@given(bson_values(), bson_values())
def test_descending_reverses(a: Any, b: Any) -> None:
    ka, kb = keystring.complement(keystring.encode(a)), keystring.complement(keystring.encode(b))
    assert ((ka > kb) - (ka < kb)) == -_sign(cmp.compare(a, b))


@settings(max_examples=200, deadline=None)
@given(bson_values(), bson_values(), bson_values(), bson_values())
def test_compound_keys_are_lexicographic(a1: Any, a2: Any, b1: Any, b2: Any) -> None:
    # Prefix-freedom is what makes concatenation order-preserving.
    k1 = keystring.encode(a1) + keystring.complement(keystring.encode(a2))
    k2 = keystring.encode(b1) + keystring.complement(keystring.encode(b2))
    expected = _sign(cmp.compare(a1, b1)) or -_sign(cmp.compare(a2, b2))
    assert ((k1 > k2) - (k1 < k2)) == expected


def _typed(value: Any) -> Any:
    """A value with the type of every part, so 1 and 1.0 differ."""
    if isinstance(value, dict):
        return ("dict", [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(v) for v in value])
    if isinstance(value, datetime.datetime):
        return ("datetime", value.isoformat())  # BSON keeps no fold
    return (type(value).__name__, repr(value))


def test_canonical_edge_values_decode_from_their_keys_as_themselves() -> None:
    # Covered queries and DISTINCT_SCAN answer from keys: a canonical value (Int64's
    # minimum among them) must come back type and all.
    for value in EDGE_VALUES:
        if keystring.is_canonical(value):
            assert _typed(keystring.decode_key(keystring.encode(value), [False])[0]) == _typed(value)


@settings(max_examples=300)
@given(bson_values())
def test_canonical_values_decode_from_their_keys_as_themselves(value: Any) -> None:
    if keystring.is_canonical(value):
        assert _typed(keystring.decode_key(keystring.encode(value), [False])[0]) == _typed(value)


@settings(max_examples=300)
@given(st.lists(st.tuples(st.one_of(bson_values(), st.text()), st.booleans()), min_size=1, max_size=3))
def test_compound_keys_decode_field_by_field_either_direction(fields: list[tuple[Any, bool]]) -> None:
    """A compound key (each field complemented when descending, as an index stores it) gives
    back each canonical value, strings with NULs and any code point among them."""
    fields = [(value, descending) for value, descending in fields if keystring.is_canonical(value)]
    key = b"".join(
        keystring.complement(keystring.encode(value)) if descending else keystring.encode(value)
        for value, descending in fields
    )
    decoded = keystring.decode_key(key, [descending for _, descending in fields])
    assert [_typed(v) for v in decoded] == [_typed(value) for value, _ in fields]
