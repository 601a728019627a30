"""The blog in the texts' four designs, for "show a post page" and "list posts".

A: users, posts and comments apart, joined in the application (3+ queries a page).
B: comments embedded in the post with their author's ``{_id, name}`` (one read).
C: posts with ``comment_count``, comments in buckets of 100.
D: posts and comments apart, the author's name and the counts copied in.

The texts' claim: a post page read as one ``findOne`` (B) instead of three
joined queries (A) went from 80 ms to 12 ms. Renaming a user is where B, C and
D pay: every copy of the name is rewritten.
"""

from __future__ import annotations

import random
from typing import Any

from pymongo import DESCENDING

from foliodb.lab.scenario import Db, Design, Question, Scenario
from foliodb.patterns import bucket

PAGE_COMMENTS = 10
LIST_POSTS = 20
BUCKET_SIZE = 100


def generate(size: int, rng: random.Random) -> dict[str, Any]:
    """``size`` posts by ``size // 10`` users; comments per post mostly a few, one
    post in fifty with a few hundred (the long threads the texts warn about)."""
    users = [{"_id": n, "name": f"user{n}"} for n in range(max(10, size // 10))]
    clock = 0
    posts: list[dict[str, Any]] = []
    comments: list[dict[str, Any]] = []
    for n in range(size):
        clock += 1
        posts.append(
            {
                "_id": n,
                "title": f"post {n}",
                "body": "text " * 40,
                "author_id": rng.randrange(len(users)),
                "created_at": clock,
            }
        )
        for _ in range(rng.randrange(200, 400) if rng.random() < 0.02 else rng.randrange(0, 12)):
            clock += 1
            comments.append(
                {
                    "_id": len(comments),
                    "post_id": n,
                    "author_id": rng.randrange(len(users)),
                    "body": f"comment {len(comments)}",
                    "created_at": clock,
                }
            )
    return {"users": users, "posts": posts, "comments": comments, "clock": [clock]}


def _new_comment(data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    data["clock"][0] += 1
    n = data["clock"][0]
    return {
        "post_id": rng.randrange(len(data["posts"])),
        "author_id": rng.randrange(len(data["users"])),
        "body": f"new {n}",
        "created_at": n,
    }


def _rename(data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    data["clock"][0] += 1
    return {"user_id": rng.randrange(len(data["users"])), "name": f"renamed{data['clock'][0]}"}


def _names(db: Db, ids: set[Any]) -> dict[Any, str]:
    return {u["_id"]: u["name"] for u in db.users.find({"_id": {"$in": sorted(ids)}}, {"name": 1})}


def _embedded(comment: dict[str, Any], author_name: str) -> dict[str, Any]:
    """A comment as B and C embed it: with its author's ``{_id, name}``."""
    return {
        "author": {"_id": comment["author_id"], "name": author_name},
        "body": comment["body"],
        "created_at": comment["created_at"],
    }


def _name(db: Db, user_id: int) -> str:
    user = db.users.find_one({"_id": user_id}, {"name": 1})
    assert user is not None
    return str(user["name"])


def _page(post: dict[str, Any], author: str, count: int, comments: list[tuple[str, str]]) -> dict[str, Any]:
    return {"title": post["title"], "author": author, "comment_count": count, "comments": comments}


# -- A: flat references ---------------------------------------------------------


def load_a(db: Db, data: dict[str, Any]) -> None:
    db.users.insert_many(data["users"])
    db.posts.insert_many(data["posts"])
    if data["comments"]:
        db.comments.insert_many(data["comments"])
    db.posts.create_index([("created_at", DESCENDING)])
    db.comments.create_index([("post_id", 1), ("created_at", DESCENDING)])


def page_a(db: Db, post_id: int) -> dict[str, Any]:
    post = db.posts.find_one({"_id": post_id})
    assert post is not None
    author = db.users.find_one({"_id": post["author_id"]})
    assert author is not None
    comments = list(db.comments.find({"post_id": post_id}, sort=[("created_at", -1)], limit=PAGE_COMMENTS))
    count = db.comments.count_documents({"post_id": post_id})
    names = _names(db, {c["author_id"] for c in comments})
    return _page(post, author["name"], count, [(names[c["author_id"]], c["body"]) for c in comments])


def list_a(db: Db, _: None) -> list[tuple[str, str, int]]:
    posts = list(db.posts.find({}, {"body": 0}, sort=[("created_at", -1)], limit=LIST_POSTS))
    names = _names(db, {p["author_id"] for p in posts})
    ids = [p["_id"] for p in posts]
    counts = {
        g["_id"]: g["n"]
        for g in db.comments.aggregate(
            [{"$match": {"post_id": {"$in": ids}}}, {"$group": {"_id": "$post_id", "n": {"$sum": 1}}}]
        )
    }
    return [(p["title"], names[p["author_id"]], counts.get(p["_id"], 0)) for p in posts]


def comment_a(db: Db, comment: dict[str, Any]) -> None:
    db.comments.insert_one(comment)


def rename_a(db: Db, change: dict[str, Any]) -> None:
    db.users.update_one({"_id": change["user_id"]}, {"$set": {"name": change["name"]}})


# -- B: comments embedded -------------------------------------------------------


def load_b(db: Db, data: dict[str, Any]) -> None:
    names = {u["_id"]: u["name"] for u in data["users"]}
    by_post: dict[int, list[dict[str, Any]]] = {}
    for c in data["comments"]:
        by_post.setdefault(c["post_id"], []).append(_embedded(c, names[c["author_id"]]))
    db.users.insert_many(data["users"])
    db.posts.insert_many(
        [
            {
                "_id": p["_id"],
                "title": p["title"],
                "body": p["body"],
                "author": {"_id": p["author_id"], "name": names[p["author_id"]]},
                "created_at": p["created_at"],
                "comment_count": len(by_post.get(p["_id"], [])),
                "comments": by_post.get(p["_id"], []),
            }
            for p in data["posts"]
        ]
    )
    db.posts.create_index([("created_at", DESCENDING)])
    db.posts.create_index("author._id")
    db.posts.create_index("comments.author._id")


def page_b(db: Db, post_id: int) -> dict[str, Any]:
    post = db.posts.find_one({"_id": post_id}, {"comments": {"$slice": -PAGE_COMMENTS}})
    assert post is not None
    comments = [(c["author"]["name"], c["body"]) for c in reversed(post["comments"])]
    return _page(post, post["author"]["name"], post["comment_count"], comments)


def list_b(db: Db, _: None) -> list[tuple[str, str, int]]:
    posts = db.posts.find(
        {}, {"title": 1, "author": 1, "comment_count": 1}, sort=[("created_at", -1)], limit=LIST_POSTS
    )
    return [(p["title"], p["author"]["name"], p["comment_count"]) for p in posts]


def comment_b(db: Db, comment: dict[str, Any]) -> None:
    embedded = _embedded(comment, _name(db, comment["author_id"]))
    db.posts.update_one({"_id": comment["post_id"]}, {"$push": {"comments": embedded}, "$inc": {"comment_count": 1}})


def rename_b(db: Db, change: dict[str, Any]) -> None:
    user, name = change["user_id"], change["name"]
    db.users.update_one({"_id": user}, {"$set": {"name": name}})
    db.posts.update_many({"author._id": user}, {"$set": {"author.name": name}})
    db.posts.update_many(
        {"comments.author._id": user},
        {"$set": {"comments.$[c].author.name": name}},
        array_filters=[{"c.author._id": user}],
    )


# -- C: comment buckets ---------------------------------------------------------


def load_c(db: Db, data: dict[str, Any]) -> None:
    names = {u["_id"]: u["name"] for u in data["users"]}
    counts: dict[int, int] = {}
    for c in data["comments"]:
        counts[c["post_id"]] = counts.get(c["post_id"], 0) + 1
    db.users.insert_many(data["users"])
    db.posts.insert_many([{**p, "comment_count": counts.get(p["_id"], 0)} for p in data["posts"]])
    db.posts.create_index([("created_at", DESCENDING)])
    db.comment_buckets.create_index([("post_id", 1), ("count", 1)])
    db.comment_buckets.create_index([("post_id", 1), ("_id", -1)])
    db.comment_buckets.create_index("items.author._id")
    by_post: dict[int, list[dict[str, Any]]] = {}
    for c in data["comments"]:
        by_post.setdefault(c["post_id"], []).append(_embedded(c, names[c["author_id"]]))
    buckets = [
        doc for post_id, items in by_post.items() for doc in bucket.filled({"post_id": post_id}, items, BUCKET_SIZE)
    ]
    if buckets:
        db.comment_buckets.insert_many(buckets)


def page_c(db: Db, post_id: int) -> dict[str, Any]:
    post = db.posts.find_one({"_id": post_id})
    assert post is not None
    author = db.users.find_one({"_id": post["author_id"]})
    assert author is not None
    latest = bucket.latest(db.comment_buckets, {"post_id": post_id}, PAGE_COMMENTS)
    return _page(post, author["name"], post["comment_count"], [(c["author"]["name"], c["body"]) for c in latest])


def list_c(db: Db, _: None) -> list[tuple[str, str, int]]:
    posts = list(db.posts.find({}, {"body": 0}, sort=[("created_at", -1)], limit=LIST_POSTS))
    names = _names(db, {p["author_id"] for p in posts})
    return [(p["title"], names[p["author_id"]], p["comment_count"]) for p in posts]


def comment_c(db: Db, comment: dict[str, Any]) -> None:
    item = _embedded(comment, _name(db, comment["author_id"]))
    bucket.append(db.comment_buckets, {"post_id": comment["post_id"]}, item, size=BUCKET_SIZE)
    db.posts.update_one({"_id": comment["post_id"]}, {"$inc": {"comment_count": 1}})


def rename_c(db: Db, change: dict[str, Any]) -> None:
    user, name = change["user_id"], change["name"]
    db.users.update_one({"_id": user}, {"$set": {"name": name}})
    db.comment_buckets.update_many(
        {"items.author._id": user}, {"$set": {"items.$[c].author.name": name}}, array_filters=[{"c.author._id": user}]
    )


# -- D: denormalized sub-collection ---------------------------------------------


def load_d(db: Db, data: dict[str, Any]) -> None:
    names = {u["_id"]: u["name"] for u in data["users"]}
    counts: dict[int, int] = {}
    last: dict[int, int] = {}
    for c in data["comments"]:
        counts[c["post_id"]] = counts.get(c["post_id"], 0) + 1
        last[c["post_id"]] = c["created_at"]
    db.users.insert_many(data["users"])
    db.posts.insert_many(
        [
            {
                **p,
                "author_name": names[p["author_id"]],
                "comment_count": counts.get(p["_id"], 0),
                "last_comment_at": last.get(p["_id"]),
            }
            for p in data["posts"]
        ]
    )
    if data["comments"]:
        db.comments.insert_many([{**c, "author_name": names[c["author_id"]]} for c in data["comments"]])
    db.posts.create_index([("created_at", DESCENDING)])
    db.posts.create_index("author_id")
    db.comments.create_index([("post_id", 1), ("created_at", DESCENDING)])
    db.comments.create_index("author_id")


def page_d(db: Db, post_id: int) -> dict[str, Any]:
    post = db.posts.find_one({"_id": post_id})
    assert post is not None
    comments = db.comments.find(
        {"post_id": post_id}, {"author_name": 1, "body": 1}, sort=[("created_at", -1)], limit=PAGE_COMMENTS
    )
    return _page(post, post["author_name"], post["comment_count"], [(c["author_name"], c["body"]) for c in comments])


def list_d(db: Db, _: None) -> list[tuple[str, str, int]]:
    posts = db.posts.find(
        {}, {"title": 1, "author_name": 1, "comment_count": 1}, sort=[("created_at", -1)], limit=LIST_POSTS
    )
    return [(p["title"], p["author_name"], p["comment_count"]) for p in posts]


def comment_d(db: Db, comment: dict[str, Any]) -> None:
    db.comments.insert_one({**comment, "author_name": _name(db, comment["author_id"])})
    db.posts.update_one(
        {"_id": comment["post_id"]}, {"$inc": {"comment_count": 1}, "$set": {"last_comment_at": comment["created_at"]}}
    )


def rename_d(db: Db, change: dict[str, Any]) -> None:
    user, name = change["user_id"], change["name"]
    db.users.update_one({"_id": user}, {"$set": {"name": name}})
    db.posts.update_many({"author_id": user}, {"$set": {"author_name": name}})
    db.comments.update_many({"author_id": user}, {"$set": {"author_name": name}})


SCENARIO = Scenario(
    name="blog",
    title="Blog: flat references (A), embedded comments (B), comment buckets (C), denormalized comments (D)",
    claim="A post page read as one findOne (B) instead of three joined queries (A) went from 80 ms to 12 ms.",
    generate=generate,
    questions=(
        Question("show a post page", "read", 6, lambda data, rng: rng.randrange(len(data["posts"]))),
        Question("list posts", "read", 2, lambda data, rng: None),
        Question("add a comment", "write", 2, _new_comment),
        Question("rename a user", "write", 1, _rename),
    ),
    designs=(
        Design(
            "A",
            "flat references, joined in the application",
            load_a,
            {"show a post page": page_a, "list posts": list_a, "add a comment": comment_a, "rename a user": rename_a},
        ),
        Design(
            "B",
            "comments embedded with their author",
            load_b,
            {"show a post page": page_b, "list posts": list_b, "add a comment": comment_b, "rename a user": rename_b},
        ),
        Design(
            "C",
            "comment_count, comments in buckets of 100",
            load_c,
            {"show a post page": page_c, "list posts": list_c, "add a comment": comment_c, "rename a user": rename_c},
        ),
        Design(
            "D",
            "comments apart, author name and counts copied in",
            load_d,
            {"show a post page": page_d, "list posts": list_d, "add a comment": comment_d, "rename a user": rename_d},
        ),
    ),
)
