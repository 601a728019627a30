"""$_internalUnpackBucket: a time-series collection's buckets as measurements.

Manual: https://www.mongodb.com/docs/manual/core/timeseries/timeseries-bucketing/

The view a time-series collection reads through is this one stage over its
``system.buckets`` collection, as in mongod. When a ``$match`` follows it,
the pipeline optimizer asks the stage to ``absorb`` it: a bucket-level
filter (``foliodb.engine.buckets.bucket_filter``) goes before the stage,
where the query planner can use the bucket indexes. Clauses on the meta
field move there whole (a bucket's meta value is each of its measurements');
the rest of the ``$match`` stays after the stage, time clauses included, so
the time bounds on ``control.min``/``max`` only prune.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.aggregation.pipeline import STAGES, Docs, Stage, Where
from foliodb.engine.buckets import BucketSpec, split_match, unpack
from foliodb.errors import CommandError, ErrorCode, location

_FIELDS = ("timeField", "metaField", "bucketMaxSpanSeconds", "bucketRoundingSeconds")


@STAGES.register("$_internalUnpackBucket")
def stage_internalUnpackBucket(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise location(5346500, "$_internalUnpackBucket specification must be an object")
    for key in spec:
        if key not in _FIELDS:
            raise location(5346506, f"unrecognized parameter to $_internalUnpackBucket: {key}")
    if not isinstance(spec.get("timeField"), str):
        raise location(5346504, "timeField field must be a single-element field path string")
    if "metaField" in spec and not isinstance(spec["metaField"], str):
        raise CommandError(ErrorCode.TypeMismatch, "metaField field must be a single-element field path string")
    return _stage(dict(spec), BucketSpec.of(spec), where, absorbed=False)


def _stage(spec: dict[str, Any], bucketing: BucketSpec, where: Where, absorbed: bool) -> Stage:
    def run(docs: Docs) -> Docs:
        for bucket in docs:
            yield from unpack(bucketing, bucket)

    def absorb(match: Mapping[str, Any]) -> list[Stage] | None:
        on_buckets, rest = split_match(bucketing, match)
        if on_buckets is None:
            return None
        stages = [STAGES.get("$match")(on_buckets, where), _stage(spec, bucketing, where, absorbed=True)]
        if rest is not None:
            stages.append(STAGES.get("$match")(rest, where))
        return stages  # type: ignore[return-value]

    return Stage("$_internalUnpackBucket", spec, run, absorb=None if absorbed else absorb)
