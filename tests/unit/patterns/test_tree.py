"""Categories with ancestors: breadcrumbs in one read, subtree moves."""

from __future__ import annotations

from typing import Any

import pytest

from foliodb.patterns import tree


def _catalogue(db: Any) -> None:
    tree.ensure_indexes(db.categories)
    tree.insert(db.categories, {"_id": "home", "name": "Home", "slug": "home"})
    tree.insert(db.categories, {"_id": "outdoors", "name": "Outdoors", "slug": "outdoors"}, "home")
    tree.insert(db.categories, {"_id": "gardening", "name": "Gardening", "slug": "gardening"}, "home")
    tree.insert(db.categories, {"_id": "tools", "name": "Tools", "slug": "tools"}, "outdoors")
    tree.insert(db.categories, {"_id": "seedlings", "name": "Seedlings", "slug": "seedlings"}, "tools")


def _ids(crumbs: list[dict[str, Any]]) -> list[str]:
    return [c["_id"] for c in crumbs]


def test_breadcrumbs_and_descendants(db: Any) -> None:
    _catalogue(db)
    assert _ids(tree.breadcrumbs(db.categories, "seedlings")) == ["home", "outdoors", "tools", "seedlings"]
    assert tree.breadcrumbs(db.categories, "tools")[1] == {"_id": "outdoors", "name": "Outdoors", "slug": "outdoors"}
    assert sorted(n["_id"] for n in tree.descendants(db.categories, "outdoors")) == ["seedlings", "tools"]


def test_move_subtree_rewrites_every_descendant(db: Any) -> None:
    _catalogue(db)
    # Tools (with seedlings) moves from Outdoors to Gardening.
    assert tree.move(db.categories, "tools", "gardening") == 2
    assert _ids(tree.breadcrumbs(db.categories, "seedlings")) == ["home", "gardening", "tools", "seedlings"]
    assert db.categories.find_one({"_id": "tools"})["parent_id"] == "gardening"
    assert tree.descendants(db.categories, "outdoors") == []
    assert sorted(n["_id"] for n in tree.descendants(db.categories, "gardening")) == ["seedlings", "tools"]
    # To the root: ancestors shrink.
    assert tree.move(db.categories, "tools", None) == 2
    assert _ids(tree.breadcrumbs(db.categories, "seedlings")) == ["tools", "seedlings"]


def test_move_under_own_descendant_is_refused(db: Any) -> None:
    _catalogue(db)
    with pytest.raises(tree.TreeError):
        tree.move(db.categories, "outdoors", "seedlings")
    with pytest.raises(tree.TreeError):
        tree.move(db.categories, "tools", "tools")
    with pytest.raises(tree.TreeError):
        tree.insert(db.categories, {"_id": "x"}, "missing")
    assert _ids(tree.breadcrumbs(db.categories, "seedlings")) == ["home", "outdoors", "tools", "seedlings"]
