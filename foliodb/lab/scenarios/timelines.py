"""Timelines: fan-out on read (query the posts of every followee) against
fan-out on write (push each post into every follower's bucketed wall), over a
follower distribution with a celebrity whom half the users follow.

The texts' claim: fan-out on write makes reading a timeline one query, at the
cost of writes (and storage) multiplied by the follower count.
"""

from __future__ import annotations

import random
from typing import Any

from foliodb.lab.scenario import Db, Design, Question, Scenario
from foliodb.patterns import bucket, fanout

TIMELINE = 20
FOLLOWS_EACH = 10
WALL_BUCKET = 1000
CELEBRITY = 0


def generate(size: int, rng: random.Random) -> dict[str, Any]:
    """``size`` users each following about ten others, half of them also the
    celebrity (user 0); two posts a user, the celebrity posting ten times as often."""
    users = max(20, size)
    follows = set()
    for follower in range(1, users):
        for followee in rng.sample(range(1, users), FOLLOWS_EACH):
            if followee != follower:
                follows.add((follower, followee))
        if rng.random() < 0.5:
            follows.add((follower, CELEBRITY))
    posts = []
    for n in range(users * 2):
        author = CELEBRITY if rng.random() < 0.1 else rng.randrange(1, users)
        posts.append({"_id": n, "author": author, "created_at": n, "text": f"post {n}"})
    return {"users": users, "follows": sorted(follows), "posts": posts, "clock": [len(posts)]}


def _reader(data: dict[str, Any], rng: random.Random) -> int:
    return rng.randrange(1, data["users"])


def _new_post(data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    n = data["clock"][0]
    data["clock"][0] += 1
    author = CELEBRITY if rng.random() < 0.1 else rng.randrange(1, data["users"])
    return {"_id": n, "author": author, "created_at": n, "text": f"post {n}"}


def _load_graph(db: Db, data: dict[str, Any]) -> None:
    fanout.ensure_indexes(db.follows, db.posts, db.timeline)
    db.users.insert_many([{"_id": n} for n in range(data["users"])])
    db.follows.insert_many([{"follower": a, "followee": b} for a, b in data["follows"]])
    db.posts.insert_many(data["posts"])


def load_read(db: Db, data: dict[str, Any]) -> None:
    _load_graph(db, data)


def load_write(db: Db, data: dict[str, Any]) -> None:
    _load_graph(db, data)
    # The walls fan-out on write would have built, in post order, written in one batch.
    followers: dict[int, list[int]] = {}
    for follower, followee in data["follows"]:
        followers.setdefault(followee, []).append(follower)
    walls: dict[int, list[dict[str, Any]]] = {}
    for post in data["posts"]:
        for follower in followers.get(post["author"], []):
            walls.setdefault(follower, []).append(post)
    buckets = [doc for owner, entries in walls.items() for doc in bucket.filled({"owner": owner}, entries, WALL_BUCKET)]
    if buckets:
        db.timeline.insert_many(buckets)


def read_on_read(db: Db, owner: int) -> list[int]:
    return [p["_id"] for p in fanout.timeline_on_read(db.posts, db.follows, owner, TIMELINE)]


def read_on_write(db: Db, owner: int) -> list[int]:
    return [p["_id"] for p in fanout.timeline_on_write(db.timeline, owner, TIMELINE)]


def post_on_read(db: Db, post: dict[str, Any]) -> None:
    fanout.post_on_read(db.posts, post)


def post_on_write(db: Db, post: dict[str, Any]) -> None:
    fanout.post_on_write(db.posts, db.follows, db.timeline, post, bucket_size=WALL_BUCKET)


SCENARIO = Scenario(
    name="timelines",
    title="Timelines: fan-out on read against fan-out on write (with a celebrity)",
    claim="Fan-out on write makes reading a timeline one query, and multiplies writes by the follower count.",
    generate=generate,
    questions=(
        Question("read a timeline", "read", 8, _reader),
        Question("publish a post", "write", 2, _new_post),
    ),
    designs=(
        Design(
            "on read",
            "posts once; a timeline queries every followee's posts",
            load_read,
            {"read a timeline": read_on_read, "publish a post": post_on_read},
        ),
        Design(
            "on write",
            "each post pushed to every follower's bucketed wall",
            load_write,
            {"read a timeline": read_on_write, "publish a post": post_on_write},
        ),
    ),
)
