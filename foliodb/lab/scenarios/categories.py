"""Product categories as a tree, two ways: each category with its ancestors
(``[{_id, name, slug}]``, the texts' design) against the parent id alone
(walked with ``$graphLookup``). Products hold ``category_ids``.

The claim: with ancestors, breadcrumbs are one read and a subtree one indexed
query; the price is rewriting the ancestors of a whole subtree when it moves.
"""

from __future__ import annotations

import random
from typing import Any

from foliodb.lab.scenario import Db, Design, Question, Scenario
from foliodb.patterns import tree

BRANCHING = 4
DEPTH = 4  # root, then three levels


def generate(size: int, rng: random.Random) -> dict[str, Any]:
    """A tree of categories (a root, 4 children each, 4 levels: 85 nodes) and
    ``size`` products in one to three leaf or inner categories each."""
    nodes = [{"_id": 0, "name": "All", "slug": "all", "parent": None, "depth": 0}]
    frontier = [0]
    for depth in range(1, DEPTH):
        grown = []
        for parent in frontier:
            for _ in range(BRANCHING):
                n = len(nodes)
                nodes.append(
                    {"_id": n, "name": f"Category {n}", "slug": f"category-{n}", "parent": parent, "depth": depth}
                )
                grown.append(n)
        frontier = grown
    products = [
        {"_id": n, "name": f"product {n}", "category_ids": rng.sample(range(1, len(nodes)), rng.randrange(1, 4))}
        for n in range(size)
    ]
    return {"nodes": nodes, "products": products}


def _any_category(data: dict[str, Any], rng: random.Random) -> int:
    return rng.randrange(1, len(data["nodes"]))


def _move(data: dict[str, Any], rng: random.Random) -> tuple[int, int]:
    """A depth-2 category moved under a depth-1 one: depth-1 categories never
    move, so the target is never inside the moved subtree."""
    movable = [n["_id"] for n in data["nodes"] if n["depth"] == 2]
    targets = [n["_id"] for n in data["nodes"] if n["depth"] == 1]
    return rng.choice(movable), rng.choice(targets)


def _load_products(db: Db, data: dict[str, Any]) -> None:
    db.products.insert_many(data["products"])
    db.products.create_index("category_ids")


def _products_in(db: Db, ids: list[int]) -> tuple[int, list[int]]:
    found = [p["_id"] for p in db.products.find({"category_ids": {"$in": ids}}, {"_id": 1}, sort=[("_id", 1)])]
    return len(found), found[:10]


# -- ancestors ------------------------------------------------------------------


def load_ancestors(db: Db, data: dict[str, Any]) -> None:
    tree.ensure_indexes(db.categories)
    for node in data["nodes"]:
        tree.insert(db.categories, {"_id": node["_id"], "name": node["name"], "slug": node["slug"]}, node["parent"])
    _load_products(db, data)


def crumbs_ancestors(db: Db, category: int) -> list[str]:
    return [c["name"] for c in tree.breadcrumbs(db.categories, category)]


def subtree_ancestors(db: Db, category: int) -> tuple[int, list[int]]:
    below = [n["_id"] for n in db.categories.find({"ancestors._id": category}, {"_id": 1})]
    return _products_in(db, [category, *below])


def move_ancestors(db: Db, move: tuple[int, int]) -> None:
    tree.move(db.categories, move[0], move[1])


# -- parent only ----------------------------------------------------------------


def load_parent(db: Db, data: dict[str, Any]) -> None:
    db.categories.insert_many(
        [{"_id": n["_id"], "name": n["name"], "slug": n["slug"], "parent_id": n["parent"]} for n in data["nodes"]]
    )
    db.categories.create_index("parent_id")
    _load_products(db, data)


def crumbs_parent(db: Db, category: int) -> list[str]:
    pipeline: list[dict[str, Any]] = [
        {"$match": {"_id": category}},
        {
            "$graphLookup": {
                "from": "categories",
                "startWith": "$parent_id",
                "connectFromField": "parent_id",
                "connectToField": "_id",
                "as": "up",
                "depthField": "d",
            }
        },
    ]
    (node,) = db.categories.aggregate(pipeline)
    return [a["name"] for a in sorted(node["up"], key=lambda a: -a["d"])] + [node["name"]]


def subtree_parent(db: Db, category: int) -> tuple[int, list[int]]:
    pipeline: list[dict[str, Any]] = [
        {"$match": {"_id": category}},
        {
            "$graphLookup": {
                "from": "categories",
                "startWith": "$_id",
                "connectFromField": "_id",
                "connectToField": "parent_id",
                "as": "down",
            }
        },
    ]
    (node,) = db.categories.aggregate(pipeline)
    return _products_in(db, [category, *(d["_id"] for d in node["down"])])


def move_parent(db: Db, move: tuple[int, int]) -> None:
    db.categories.update_one({"_id": move[0]}, {"$set": {"parent_id": move[1]}})


_QUESTIONS = ("breadcrumbs of a category", "products of a category and its subcategories", "move a subtree")

SCENARIO = Scenario(
    name="categories",
    title="Category trees: ancestors in each node against the parent id alone",
    claim="Ancestors make breadcrumbs one read and a subtree one indexed query; moving a subtree rewrites it.",
    generate=generate,
    questions=(
        Question(_QUESTIONS[0], "read", 5, _any_category),
        Question(_QUESTIONS[1], "read", 3, _any_category),
        Question(_QUESTIONS[2], "write", 1, _move),
    ),
    designs=(
        Design(
            "ancestors",
            "parent_id and ancestors [{_id, name, slug}] in each category",
            load_ancestors,
            dict(zip(_QUESTIONS, (crumbs_ancestors, subtree_ancestors, move_ancestors), strict=True)),
        ),
        Design(
            "parent only",
            "parent_id alone, walked with $graphLookup",
            load_parent,
            dict(zip(_QUESTIONS, (crumbs_parent, subtree_parent, move_parent), strict=True)),
        ),
    ),
)
