"""Timelines by fan-out on read and on write answer the same question."""

from __future__ import annotations

import datetime
from typing import Any

from foliodb.patterns import fanout

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def _network(db: Any) -> None:
    fanout.ensure_indexes(db.follows, db.posts, db.timeline)
    db.users.insert_many([{"_id": name} for name in ["ann", "bob", "cat", "star"]])
    for follower, followee in [("ann", "bob"), ("ann", "star"), ("bob", "star"), ("cat", "star"), ("cat", "ann")]:
        assert fanout.follow(db.follows, db.users, follower, followee)


def test_follow_counts_once(db: Any) -> None:
    _network(db)
    assert not fanout.follow(db.follows, db.users, "ann", "bob")
    counts = {u["_id"]: (u.get("following_count", 0), u.get("followers_count", 0)) for u in db.users.find()}
    assert counts == {"ann": (2, 1), "bob": (1, 1), "cat": (2, 0), "star": (0, 3)}


def test_both_designs_give_the_same_timelines(db: Any) -> None:
    _network(db)
    authors = ["star", "bob", "ann", "star", "cat", "star", "bob"]
    writes_on_write = 0
    for n, author in enumerate(authors):
        post = {"_id": n, "author": author, "created_at": T0 + datetime.timedelta(minutes=n), "text": f"p{n}"}
        fanout.post_on_read(db.posts_read, post)
        writes_on_write += fanout.post_on_write(db.posts, db.follows, db.timeline, post, bucket_size=2)
    followers = {"ann": 1, "bob": 1, "cat": 0, "star": 3}
    # Each post is one write plus one per follower of its author.
    assert writes_on_write == sum(1 + followers[a] for a in authors)
    # ann follows bob and star: posts 0, 1, 3, 5, 6, newest first.
    expected = {"ann": [6, 5, 3, 1, 0], "bob": [5, 3, 0], "cat": [5, 3, 2, 0], "star": []}
    for owner, ids in expected.items():
        on_read = [p["_id"] for p in fanout.timeline_on_read(db.posts_read, db.follows, owner, 10)]
        on_write = [p["_id"] for p in fanout.timeline_on_write(db.timeline, owner, 10)]
        assert on_read == on_write == ids
    assert [p["_id"] for p in fanout.timeline_on_write(db.timeline, "ann", 3)] == [6, 5, 3]
    # Buckets of two: ann's wall of five posts is three buckets.
    assert db.timeline.count_documents({"owner": "ann"}) == 3
