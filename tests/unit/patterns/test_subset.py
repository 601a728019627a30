"""The subset recipe: the last N embedded, the whole history beside."""

from __future__ import annotations

from typing import Any

from foliodb.patterns import subset


def test_parent_keeps_the_last_n_and_history_keeps_all(db: Any) -> None:
    db.posts.insert_one({"_id": 1, "title": "t", "comments": []})
    for n in range(12):
        assert subset.push(
            db.posts, {"_id": 1}, "comments", {"n": n}, keep=5, history=db.comments, history_fields={"post_id": 1}
        )
    post = db.posts.find_one({"_id": 1})
    assert [c["n"] for c in post["comments"]] == [7, 8, 9, 10, 11]
    assert db.comments.count_documents({"post_id": 1}) == 12
    # The page after the embedded five, newest first: 6, 5, 4.
    page = subset.older(db.comments, {"post_id": 1}, sort=[("n", -1)], skip=5, limit=3)
    assert [c["n"] for c in page] == [6, 5, 4]


def test_sorted_subset_keeps_the_top_n(db: Any) -> None:
    db.products.insert_one({"_id": "p", "top_reviews": []})
    for votes in [3, 9, 1, 7, 5]:
        subset.push(db.products, {"_id": "p"}, "top_reviews", {"votes": votes}, keep=2, sort={"votes": -1})
    assert [r["votes"] for r in db.products.find_one({"_id": "p"})["top_reviews"]] == [9, 7]


def test_missing_parent_is_reported(db: Any) -> None:
    assert not subset.push(db.posts, {"_id": "none"}, "comments", {"n": 1}, keep=3)
