"""The extended reference recipe and its update fan-out."""

from __future__ import annotations

from typing import Any

from foliodb.patterns import extended_reference as ref


def test_copy_of_takes_id_and_chosen_fields() -> None:
    user = {"_id": 7, "name": "Ada", "email": "ada@example.com"}
    assert ref.copy_of(user, ["name", "missing"]) == {"_id": 7, "name": "Ada"}


def test_rename_refreshes_every_copy_and_counts_them(db: Any) -> None:
    ada = {"_id": 7, "name": "Ada"}
    db.posts.insert_many([{"_id": n, "author": ref.copy_of(ada, ["name"])} for n in range(4)])
    db.posts.insert_one({"_id": 99, "author": {"_id": 8, "name": "Bob"}})
    assert ref.refresh(db.posts, "author", 7, {"name": "Ada L."}) == 4
    assert sorted(p["author"]["name"] for p in db.posts.find()) == ["Ada L."] * 4 + ["Bob"]


def test_rename_inside_arrays_updates_only_matching_elements(db: Any) -> None:
    db.posts.insert_one(
        {
            "_id": 1,
            "comments": [
                {"_id": 7, "name": "Ada", "body": "x"},
                {"_id": 8, "name": "Bob", "body": "y"},
                {"_id": 7, "name": "Ada", "body": "z"},
            ],
        }
    )
    db.posts.insert_one({"_id": 2, "comments": [{"_id": 8, "name": "Bob", "body": "w"}]})
    # One post holds Ada's comments; both of them change, Bob's stay.
    assert ref.refresh(db.posts, "comments", 7, {"name": "Ada L."}, in_array=True) == 1
    assert [c["name"] for c in db.posts.find_one({"_id": 1})["comments"]] == ["Ada L.", "Bob", "Ada L."]
    assert [c["name"] for c in db.posts.find_one({"_id": 2})["comments"]] == ["Bob"]


def test_flat_denormalized_fields(db: Any) -> None:
    db.comments.insert_many(
        [{"author_id": 7, "author_name": "Ada"} for _ in range(3)] + [{"author_id": 8, "author_name": "Bob"}]
    )
    assert ref.refresh_fields(db.comments, "author_id", 7, {"author_name": "Ada L."}) == 3
    assert db.comments.count_documents({"author_name": "Ada L."}) == 3
