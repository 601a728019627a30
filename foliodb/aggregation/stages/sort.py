"""Ordering and slicing stages: $sort $limit $skip $sample.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/sort/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/limit/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/skip/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/sample/

``$sort`` keys come from :func:`foliodb.query.sort.compile_sort` and the
documents are ordered by :func:`foliodb.engine.sorter.sort_documents`
(stable, spilling past ``LIMITS.sort_bytes``). A ``$limit`` right after a
``$sort`` is fused into it (a top-k, see the pipeline's reordering).
``$sample`` keeps a uniform random sample of ``size`` documents (reservoir
sampling) and outputs it in random order.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from foliodb.aggregation.pipeline import LIMITS, STAGES, Docs, Stage, Where, keep_all
from foliodb.engine.sorter import sort_documents
from foliodb.errors import location
from foliodb.query import metadata
from foliodb.query.compare import is_number, number_value
from foliodb.query.expr.numeric import to_long
from foliodb.query.render import render
from foliodb.query.sort import compile_sort


def sort_stage(spec: Mapping[str, Any], where: Where, limit: int | None = None) -> Stage:
    sort = compile_sort(spec, stage=True, collator=where.scope.collator)

    def key(doc: Any) -> bytes:
        return sort.key(doc, metadata.of(doc))

    allow_disk_use = where.env.allow_disk_use

    def run(docs: Docs) -> Docs:
        return sort_documents(docs, key, limit=limit, max_memory_bytes=LIMITS.sort_bytes, allow_disk_use=allow_disk_use)

    shown: dict[str, Any] = {"sortKey": spec}
    if limit is not None:
        shown["limit"] = limit
    return Stage(
        "$sort",
        shown,
        run,
        keeps=keep_all if limit is None else None,
        sort=spec,
        limit=limit,
        with_limit=lambda n: sort_stage(spec, where, n),
    )


@STAGES.register("$sort")
def stage_sort(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise location(15973, "the $sort key specification must be an object")
    return sort_stage(spec, where)


def _count(stage: str, code: int, value: Any) -> int:
    """MongoDB's parseIntegerElementToNonNegativeLong, with its error reasons."""
    prefix = f"invalid argument to {stage} stage: "
    shown = f"{stage}: {render(value)}"
    if not is_number(value):
        raise location(code, f"{prefix}Expected a number in: {shown}")
    n = number_value(value)
    finite = n.is_finite() if isinstance(n, Decimal) else n - n == 0
    if not finite or n != int(n):
        raise location(code, f"{prefix}Expected an integer: {shown}")
    if not -(2**63) <= int(n) < 2**63:
        raise location(code, f"{prefix}Cannot represent as a 64-bit integer: {shown}")
    if n < 0:
        raise location(code, f"{prefix}Expected a non-negative number in: {shown}")
    return int(n)


@STAGES.register("$limit")
def stage_limit(spec: Any, where: Where) -> Stage:
    n = _count("$limit", 5107201, spec)
    if n == 0:
        raise location(15958, "the limit must be positive")

    def run(docs: Docs) -> Docs:
        for i, doc in enumerate(docs, 1):
            yield doc
            if i >= n:
                return

    return Stage("$limit", n, run, limit=n)


@STAGES.register("$skip")
def stage_skip(spec: Any, where: Where) -> Stage:
    n = _count("$skip", 5107200, spec)

    def run(docs: Docs) -> Docs:
        for i, doc in enumerate(docs):
            if i >= n:
                yield doc

    # ``limit`` carries the count so the reordering can add skips together.
    return Stage("$skip", n, run, limit=n)


@STAGES.register("$sample")
def stage_sample(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise location(28745, "the $sample stage specification must be an object")
    size: int | None = None
    for key, value in spec.items():
        if key != "size":
            raise location(28748, f"unrecognized option to $sample: {key}")
        if not is_number(value):
            raise location(28746, "size argument to $sample must be a number")
        size = to_long(value)
    if size is None:
        raise location(28749, "$sample stage must specify a size")
    if size <= 0:
        raise location(28747, "size argument to $sample must be a positive integer")
    rng = random.Random()
    k = size

    def run(docs: Docs) -> Docs:
        reservoir: list[Any] = []
        for i, doc in enumerate(docs):
            if i < k:
                reservoir.append(doc)
            else:
                j = rng.randrange(i + 1)
                if j < k:
                    reservoir[j] = doc
        rng.shuffle(reservoir)
        yield from reservoir

    return Stage("$sample", {"size": size}, run)
