"""Explain of the writing stages ($out, $merge) as mongod 8 serializes them, found by MongoDB's
jstests/aggregation/explain_writing_aggs.js: its later versions (the one mongod 8 runs) check that
$out shows its target as {db, coll}, that $merge shows 'on' and both modes with their defaults, and
that executionStats explains of either succeed without writing or creating the target."""

from __future__ import annotations

from typing import Any

import pytest


def _stage(explained: dict[str, Any], name: str) -> Any:
    return next(stage[name] for stage in explained["stages"] if name in stage)


def _explain(db: Any, pipeline: list[dict[str, Any]], verbosity: str = "queryPlanner") -> dict[str, Any]:
    return db.command("explain", {"aggregate": "src", "pipeline": pipeline, "cursor": {}}, verbosity=verbosity)


def test_out_shows_its_target_namespace(db: Any) -> None:
    # mongod's DocumentSourceOut::serialize writes a DocumentSourceOutSpec: {db, coll}.
    db.src.insert_one({"_id": 1})
    assert _stage(_explain(db, [{"$out": "tgt"}]), "$out") == {"db": db.name, "coll": "tgt"}
    other = _explain(db, [{"$out": {"db": "elsewhere", "coll": "t2"}}])
    assert _stage(other, "$out") == {"db": "elsewhere", "coll": "t2"}


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("tgt", {"on": "_id", "whenMatched": "merge", "whenNotMatched": "insert"}),
        ({"into": "tgt", "whenMatched": "fail"}, {"on": "_id", "whenMatched": "fail", "whenNotMatched": "insert"}),
        (
            {"into": "tgt", "whenMatched": "keepExisting", "whenNotMatched": "discard"},
            {"on": "_id", "whenMatched": "keepExisting", "whenNotMatched": "discard"},
        ),
        (
            {"into": "tgt", "whenMatched": [{"$set": {"x": 1}}]},
            {"on": "_id", "let": {"new": "$$ROOT"}, "whenMatched": [{"$set": {"x": 1}}], "whenNotMatched": "insert"},
        ),
        (
            {"into": "tgt", "on": ["b", "a"], "whenMatched": "replace"},
            {"on": ["a", "b"], "whenMatched": "replace", "whenNotMatched": "insert"},
        ),
    ],
)
def test_merge_shows_every_default(db: Any, spec: Any, shown: dict[str, Any]) -> None:
    # DocumentSourceMerge::serialize: into as {db, coll}, 'on' from a std::set (sorted; a lone field
    # as a string), a pipeline's let defaulting to {new: "$$ROOT"}, both modes always.
    db.src.insert_one({"_id": 1})
    db.tgt.create_index([("a", 1), ("b", 1)], unique=True)
    got = _stage(_explain(db, [{"$merge": spec}]), "$merge")
    assert got == {"into": {"db": db.name, "coll": "tgt"}, **shown}
    assert list(got) == ["into", *shown]


@pytest.mark.parametrize("verbosity", ["executionStats", "allPlansExecution"])
@pytest.mark.parametrize("stage", [{"$out": "tgt"}, {"$merge": {"into": "tgt", "whenMatched": "replace"}}])
def test_execution_explain_of_a_writing_stage_does_not_write(db: Any, verbosity: str, stage: dict[str, Any]) -> None:
    db.src.insert_many([{"_id": 1}, {"_id": 2}])
    _explain(db, [stage], verbosity)
    assert "tgt" not in db.list_collection_names()
