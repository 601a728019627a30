"""$facet.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/facet/

Every sub-pipeline sees the whole input, so the input is buffered once and
each facet runs over it in turn; the output is one document with an array
per facet. Stages that must come first or write ($collStats, $out, ...) and
$facet itself are refused inside (40600).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.aggregation.pipeline import STAGES, Docs, Pipeline, Stage, Where, compile_stages, optimize
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query import metadata
from foliodb.query.bsontypes import type_name
from foliodb.query.render import render
from foliodb.query.reshape import check_field_name


@STAGES.register("$facet")
def stage_facet(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping) or not spec:
        raise location(40169, f"the $facet specification must be a non-empty object, but found: $facet: {render(spec)}")
    facets: list[tuple[str, Pipeline]] = []
    inner = Where(where.env, where.scope, parent="$facet", depth=where.depth, text_score=where.text_score)
    for name, stages in spec.items():
        check_field_name(name)
        if "." in name:
            raise location(40353, "FieldPath field names may not contain '.'.")
        if not isinstance(stages, list):
            raise location(40170, f"arguments to $facet must be arrays, {name} is type {type_name(stages)}")
        for stage in stages:
            if not isinstance(stage, Mapping):
                raise location(
                    40171,
                    f"elements of arrays in $facet spec must be non-empty objects, {name} argument contained "
                    f"an element of type {type_name(stage)}: {render(stage)}",
                )
        if not stages:
            raise CommandError(ErrorCode.BadValue, "sub-pipeline in $facet stage cannot be empty")
        facets.append((name, Pipeline(optimize(compile_stages(stages, inner), inner))))

    def run(docs: Docs) -> Docs:
        buffered = list(docs)
        # Each facet's documents are values of the output document: their metadata stays behind.
        yield {name: [metadata.strip(d) for d in pipeline.run(iter(buffered))] for name, pipeline in facets}

    return Stage("$facet", spec, run)
