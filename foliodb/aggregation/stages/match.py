"""$match.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/match/

The filter is compiled by :func:`foliodb.query.filter.compile_filter`, so
``$match`` and ``find`` agree on every document. ``$text`` is only allowed
in a pipeline's first ``$match`` (checked by the pipeline compiler).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.aggregation.pipeline import STAGES, Docs, Stage, Where, has_text, keep_all
from foliodb.engine.text import split_text
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.filter import compile_filter
from foliodb.query.filter_ops.geo import has_near


@STAGES.register("$match")
def stage_match(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise location(15959, "the match filter must be an expression in an object")
    if _has_where(spec):
        # mongod parses $match without the JavaScript feature (expression_parser.cpp's parseWhere).
        raise location(ErrorCode.BadValue, "$where is not allowed in this context")
    if has_near(spec):
        # Distance order needs the find's geo scan: a pipeline uses $geoNear instead.
        raise location(ErrorCode.BadValue, "$geoNear, $near, and $nearSphere are not allowed in this context")
    if has_text(spec):
        # Only a pipeline's first $match may hold $text (the pipeline compiler
        # checks), and that one always goes to the query planner, which runs
        # the text search; the stage itself checks the other conditions.
        # A $text in an $or stays in the rest: the find judges it, this compile only checks the rest.
        rest = split_text(spec)[1]
        match = compile_filter(rest or {}, where.env.ctx.with_text(_judged_by_the_find))
    else:
        match = compile_filter(spec, where.env.ctx)

    def run(docs: Docs) -> Docs:
        for doc in docs:
            if match(doc):
                yield doc

    return Stage("$match", spec, run, keeps=keep_all)


def _judged_by_the_find(doc: Any) -> bool:
    # The first $match goes to the query planner (pushed down), so this stage never runs.
    raise CommandError(ErrorCode.InternalError, "a $match with $text runs as its pipeline's find")


def _has_where(spec: Mapping[str, Any]) -> bool:
    """Does a filter use $where, at its top level or in a logical operator's branches?"""
    for key, value in spec.items():
        if key == "$where":
            return True
        if (
            key in ("$and", "$or", "$nor")
            and isinstance(value, list)
            and any(isinstance(branch, Mapping) and _has_where(branch) for branch in value)
        ):
            return True
    return False
