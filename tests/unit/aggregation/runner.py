"""Running pipelines over in-memory documents, for the aggregation tests.

Pure stages (everything that reads only its input) run through
:func:`run_pipeline` with :class:`ContextOnly`, the part of PipelineEnv they
read: the command's context and ``allowDiskUse``. It has no collection
methods, so a stage that reached for the engine would fail; the stages that
do ($lookup, $out, $merge...) are tested end to end through
``foliodb.MongoClient`` instead.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from foliodb.aggregation.pipeline import compile_pipeline
from foliodb.errors import CommandError
from foliodb.query.context import Context

NOW = datetime.datetime(2024, 5, 1, 12, 30)


@dataclass
class ContextOnly:
    ctx: Context = field(default_factory=lambda: Context(now=NOW))
    db: str = "test"
    coll: str | None = "c"
    allow_disk_use: bool = True


def run_pipeline(
    pipeline: list[Any],
    docs: Iterable[dict[str, Any]] = (),
    *,
    let: dict[str, Any] | None = None,
    allow_disk_use: bool = True,
) -> list[dict[str, Any]]:
    env = ContextOnly(Context(variables=dict(let or {}), now=NOW), allow_disk_use=allow_disk_use)
    return list(compile_pipeline(pipeline, env).run(iter([dict(d) for d in docs])))


def pipeline_error(pipeline: list[Any], docs: Iterable[dict[str, Any]] = (), **kw: Any) -> CommandError:
    with pytest.raises(CommandError) as info:
        run_pipeline(pipeline, docs, **kw)
    return info.value
