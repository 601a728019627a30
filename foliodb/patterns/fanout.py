"""Timelines, two ways, as the texts weigh them.

``follows {follower, followee}`` is a collection (embedded follower arrays break
for a celebrity with millions of followers), with ``following_count`` and
``followers_count`` kept on the users.

* Fan-out on read: a post is one insert; reading a timeline queries the posts of
  every followee (``author: {$in: [...]}``) and sorts them.
* Fan-out on write: a post is also pushed into each follower's wall, bucketed
  (``timeline {owner, count, posts: [...]}``, at most ``bucket_size`` posts a
  bucket, see :mod:`foliodb.patterns.bucket`); reading a timeline reads the
  newest buckets of one owner. Writes and storage grow with the follower count.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pymongo import ASCENDING, DESCENDING
from pymongo.errors import DuplicateKeyError

from foliodb.patterns import bucket
from foliodb.patterns._types import Coll, Session


def ensure_indexes(follows: Coll, posts: Coll, timeline: Coll) -> None:
    """The indexes the recipes' queries need: one follow per pair, followers of a
    user, a user's posts by time, a wall's buckets."""
    follows.create_index([("follower", ASCENDING), ("followee", ASCENDING)], unique=True)
    follows.create_index([("followee", ASCENDING)])
    posts.create_index([("author", ASCENDING), ("created_at", DESCENDING)])
    timeline.create_index([("owner", ASCENDING), ("count", ASCENDING)])


def follow(follows: Coll, users: Coll, follower: Any, followee: Any, *, session: Session = None) -> bool:
    """Record that ``follower`` follows ``followee`` and count it on both users;
    a repeated follow changes nothing and returns False. The follow and the two
    counts are three documents: pass a transaction's ``session`` to make them
    commit together."""
    try:
        follows.insert_one({"follower": follower, "followee": followee}, session=session)
    except DuplicateKeyError:
        return False
    users.update_one({"_id": follower}, {"$inc": {"following_count": 1}}, session=session)
    users.update_one({"_id": followee}, {"$inc": {"followers_count": 1}}, session=session)
    return True


def post_on_read(posts: Coll, post: Mapping[str, Any], *, session: Session = None) -> int:
    """Fan-out on read: the post is stored once. Returns the documents written (1)."""
    posts.insert_one(dict(post), session=session)
    return 1


def post_on_write(
    posts: Coll,
    follows: Coll,
    timeline: Coll,
    post: Mapping[str, Any],
    *,
    bucket_size: int = 1000,
    session: Session = None,
) -> int:
    """Fan-out on write: store the post, then push its summary to the wall of every
    follower of its ``author``. Returns the documents written (1 + followers)."""
    stored = dict(post)
    posts.insert_one(stored, session=session)
    entry = {key: stored[key] for key in ("_id", "author", "created_at", "text") if key in stored}
    written = 1
    for edge in follows.find({"followee": stored["author"]}, {"follower": 1}, session=session):
        bucket.append(timeline, {"owner": edge["follower"]}, entry, size=bucket_size, session=session)
        written += 1
    return written


def timeline_on_read(
    posts: Coll, follows: Coll, owner: Any, limit: int, *, session: Session = None
) -> list[dict[str, Any]]:
    """The ``limit`` newest posts of everyone ``owner`` follows, newest first."""
    followees = [edge["followee"] for edge in follows.find({"follower": owner}, {"followee": 1}, session=session)]
    cursor = posts.find(
        {"author": {"$in": followees}}, sort=[("created_at", -1), ("_id", -1)], limit=limit, session=session
    )
    return list(cursor)


def timeline_on_write(timeline: Coll, owner: Any, limit: int, *, session: Session = None) -> list[dict[str, Any]]:
    """The ``limit`` newest entries of ``owner``'s wall, newest first: the order
    they were pushed, which is the order the posts were written."""
    return bucket.latest(timeline, {"owner": owner}, limit, session=session)
