"""Unique slugs retried on a duplicate key."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pymongo.errors import DuplicateKeyError

from foliodb.patterns import slugs


def test_slugify() -> None:
    assert slugs.slugify("Wheel Barrow 9092!") == "wheel-barrow-9092"
    assert slugs.slugify("Crème brûlée") == "creme-brulee"
    assert slugs.slugify("!!!") == "item"


def test_duplicates_get_the_next_slug(db: Any) -> None:
    slugs.ensure_index(db.products)
    assert [slugs.insert_with_slug(db.products, {"n": n}, "Wheel Barrow") for n in range(3)] == [
        "wheel-barrow",
        "wheel-barrow-2",
        "wheel-barrow-3",
    ]


def test_a_duplicate_on_another_key_is_raised(db: Any) -> None:
    slugs.ensure_index(db.products)
    slugs.insert_with_slug(db.products, {"_id": 1}, "x")
    with pytest.raises(DuplicateKeyError):
        slugs.insert_with_slug(db.products, {"_id": 1}, "y")
    assert db.products.count_documents({}) == 1


def test_concurrent_inserts_get_distinct_slugs(db: Any) -> None:
    slugs.ensure_index(db.products)
    got: list[str] = []

    def insert() -> None:
        for _ in range(5):
            got.append(slugs.insert_with_slug(db.products, {}, "Same Name"))

    threads = [threading.Thread(target=insert) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 15 == len(set(got)) == db.products.count_documents({})
