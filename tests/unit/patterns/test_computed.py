"""The computed recipe: counters and averages maintained on write."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pymongo.errors import DuplicateKeyError

from foliodb.patterns import computed


def test_average_rating_is_kept_in_one_update(db: Any) -> None:
    db.products.insert_one({"_id": "p"})
    for rating in [5, 3, 4, 4]:
        assert computed.add_rating(db.products, {"_id": "p"}, rating)
    product = db.products.find_one({"_id": "p"})
    assert product["total_reviews"] == 4 and product["rating_sum"] == 16 and product["average_review"] == 4.0
    assert not computed.add_rating(db.products, {"_id": "none"}, 5)


def test_concurrent_ratings_are_all_counted(db: Any) -> None:
    db.products.insert_one({"_id": "p"})

    def rate() -> None:
        for _ in range(50):
            computed.add_rating(db.products, {"_id": "p"}, 2)

    threads = [threading.Thread(target=rate) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    product = db.products.find_one({"_id": "p"})
    assert (product["total_reviews"], product["rating_sum"], product["average_review"]) == (150, 300, 2.0)


def test_child_and_counter_commit_together(client: Any, db: Any) -> None:
    db.posts.insert_one({"_id": 1, "comment_count": 0})
    for n in range(3):
        computed.add_child_atomically(
            client, db.comments, db.posts, {"post_id": 1, "n": n}, {"_id": 1}, "comment_count"
        )
    assert db.posts.find_one({"_id": 1})["comment_count"] == 3 == db.comments.count_documents({"post_id": 1})


def test_aborted_transaction_writes_neither(client: Any, db: Any) -> None:
    db.posts.insert_one({"_id": 1, "comment_count": 0})
    db.comments.insert_one({"_id": "dup", "post_id": 1})
    # The child's _id collides: the insert fails, so the counter must not move either.
    with pytest.raises(DuplicateKeyError):
        computed.add_child_atomically(
            client, db.comments, db.posts, {"_id": "dup", "post_id": 1}, {"_id": 1}, "comment_count"
        )
    assert db.posts.find_one({"_id": 1})["comment_count"] == 0


def test_recount_repairs_a_drifted_counter(db: Any) -> None:
    db.posts.insert_one({"_id": 1, "comment_count": 10})
    db.comments.insert_many([{"post_id": 1} for _ in range(4)] + [{"post_id": 2}])
    assert computed.recount(db.comments, db.posts, 1, child_field="post_id", counter="comment_count") == 4
    assert db.posts.find_one({"_id": 1})["comment_count"] == 4
