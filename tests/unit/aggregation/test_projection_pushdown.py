"""A leading $project of inclusions or exclusions, nested ones too, runs as the find's projection
(mongod 8 pushes it into the query: jstests/aggregation/sources/project/remove_redundant_projects.js
in its later version expects {c: {d: 1}} in the winning plan's projection). Expected documents are
written out by hand from the inserted ones."""

from __future__ import annotations

from typing import Any

import pytest

DOCS = [
    {"_id": 1, "a": 1, "c": {"d": 1, "x": 2}},
    {"_id": 2, "a": 2, "c": [{"d": 3, "y": 1}, {"z": 1}, 5]},
]


@pytest.mark.parametrize(
    ("project", "expected"),
    [
        ({"_id": 0, "c": {"d": 1}}, [{"c": {"d": 1}}, {"c": [{"d": 3}, {}]}]),
        ({"c": {"d": 0}, "a": 0}, [{"_id": 1, "c": {"x": 2}}, {"_id": 2, "c": [{"y": 1}, {"z": 1}, 5]}]),
    ],
)
def test_a_nested_projection_runs_in_the_find(db: Any, project: dict[str, Any], expected: list[Any]) -> None:
    db.c.insert_many(DOCS)
    pipeline = [{"$match": {"a": {"$gte": 0}}}, {"$project": project}]
    assert list(db.c.aggregate(pipeline)) == expected
    explained = db.command("explain", {"aggregate": "c", "pipeline": pipeline, "cursor": {}}, verbosity="queryPlanner")
    assert "stages" not in explained  # the whole pipeline is the find (optimizedPipeline)
    plan = explained["queryPlanner"]["winningPlan"]
    assert plan["stage"].startswith("PROJECTION_") and plan["transformBy"] == project


def test_a_computed_nested_field_stays_a_stage(db: Any) -> None:
    db.c.insert_many(DOCS)
    pipeline = [{"$match": {"a": 1}}, {"$project": {"c": {"d": {"$add": ["$a", 1]}}}}]
    assert list(db.c.aggregate(pipeline)) == [{"_id": 1, "c": {"d": 2}}]
    explained = db.command("explain", {"aggregate": "c", "pipeline": pipeline, "cursor": {}}, verbosity="queryPlanner")
    assert [next(iter(stage)) for stage in explained["stages"]] == ["$cursor", "$project"]
