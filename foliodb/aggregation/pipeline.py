"""The aggregation pipeline: compile, reorder, push down, stream.

``compile_pipeline(stages, env)`` checks every stage once (MongoDB's parse
errors are raised there, never while documents flow) and returns a
:class:`Pipeline`: an ordered list of compiled :class:`Stage` objects, each a
name, the spec explain shows, and ``run(docs) -> docs``, a generator over the
documents of the stage before it. Streaming stages hold one document at a
time; blocking stages (``$group``, ``$sort``, ``$bucketAuto``...) consume their
input on their first ``next()``.

Reordering (MongoDB's "Aggregation Pipeline Optimization"), applied until
nothing changes; none of it changes an answer:

* ``$match`` + ``$match`` become one ``$match`` (``$and`` of both);
* a ``$match`` moves before a stage that leaves the fields it reads untouched
  (``$sort``, ``$project``/``$addFields``/``$set``/``$unset`` not touching them,
  ``$unwind`` of another field, ``$lookup`` into another field); a filter
  whose top-level clauses only partly qualify is split, and the qualifying
  clauses move. Fields are compared by their first path component, because an
  array anywhere along a shared prefix can change what a path reaches;
* a ``$match`` after ``$_internalUnpackBucket`` (a time-series read) puts
  the bucket-level filter it implies before the unpacking, to prune buckets
  through their indexes (see that stage);
* ``$skip`` n + ``$limit`` m becomes ``$limit`` n+m + ``$skip`` n, so that
* ``$sort`` + ``$limit`` fuse into one top-k sort; ``$limit`` + ``$limit`` and
  ``$skip`` + ``$skip`` coalesce.

Push-down. The aggregate command asks :meth:`Pipeline.pushdown` for the
work the query planner can do on the collection itself::

    filter, sort, limit, projection = pipeline.pushdown()
    docs = <find over the collection with filter, sort, limit and projection>
    for doc in pipeline.run(docs, pushed=True): ...

``filter`` is the leading ``$match`` (after reordering), ``sort`` the
``$sort`` right after it (or leading) and ``limit`` the limit fused into that
sort, or a ``$limit`` right after the filter, and ``projection`` a plain
``$project`` right after those; any of them may be None.
``run(source, pushed=True)`` then trusts ``source`` to have applied them and
skips those stages; ``run(source)`` (``pushed=False``) applies every stage,
so a caller that ignores push-down still gets the right answer.

Memory. ``LIMITS`` holds MongoDB's per-stage memory limits (100 MB each, as
its server parameters). Past its limit a blocking stage spills to a
temporary SQLite database when ``env.allow_disk_use`` (``$group`` its partial
groups, ``$sort``/``$bucketAuto``/``$setWindowFields``' sort through the
engine's external sorter), or fails with
QueryExceededMemoryLimitNoDiskUseAllowed (292). ``$setWindowFields`` holds one
partition at a time and fails (ExceededMemoryLimit) on a partition larger
than its limit; ``$facet`` buffers its input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from foliodb.aggregation.env import PipelineEnv
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query import compare as cmp
from foliodb.query import metadata
from foliodb.query.context import Context
from foliodb.query.expr import Expr, Scope, compile_expression
from foliodb.query.expr.core import METADATA
from foliodb.query.registry import Registry
from foliodb.query.reshape import split_path

Doc = dict[str, Any]
Docs = Iterator[Doc]


@dataclass(eq=False, slots=True)
class Stage:
    """One compiled stage."""

    name: str  # "$match"
    spec: Any  # as explain shows it
    run: Callable[[Docs], Docs]
    # For moving a $match before this stage: is this top-level field left
    # exactly as it was? None: nothing may move before this stage.
    keeps: Callable[[str], bool] | None = None
    # Paths this stage sets to the value another path had before it (mongod's getComputedPaths
    # renames: {z: "$a"}, or "d.e" for {d: {$map: {input: "$a", in: {e: "$$this.b"}}}}), new -> old;
    # a $match reading them moves before the stage with the old paths.
    renames: Mapping[str, str] | None = None
    sort: Mapping[str, Any] | None = None  # $sort: its pattern
    limit: int | None = None  # $limit: n; $sort: the fused top-k limit
    with_limit: Callable[[int], Stage] | None = None  # $sort: this sort keeping only the first n
    near: Any = None  # $geoNear: the distance-ordered find it runs on (a GeoNearRequest)
    # $project of plain paths included or excluded: the spec, which a find's projection means alike.
    projection: Mapping[str, Any] | None = None
    # $_internalUnpackBucket: what replaces (this stage, a following $match):
    # a bucket $match, this stage, what is left of the $match; or None.
    absorb: Callable[[Mapping[str, Any]], list[Stage] | None] | None = None
    search: Any = None  # $vectorSearch, $search, $searchMeta: the checked query (VectorQuery, SearchQuery), for explain


@dataclass(frozen=True, slots=True)
class Where:
    """What a stage compiler knows about its surroundings."""

    env: PipelineEnv
    scope: Scope  # the $$variables defined here
    parent: str | None = None  # "$facet", "$lookup", "$unionWith" for a sub-pipeline
    depth: int = 0  # how many $lookup/$unionWith sub-pipelines this one is nested in
    text_score: bool = False  # textScore metadata comes in from outside ($facet after a $text search)
    # The (db, collection) the pipeline reads: a sub-pipeline's; None for the aggregated collection.
    source: tuple[str | None, str] | None = None

    def expression(self, spec: Any) -> Expr:
        return compile_expression(spec, self.scope)

    def expression_with(self, spec: Any, *names: str) -> Expr:
        """Compile with extra variables in scope (``$$KEEP``, ``$$new``...)."""
        return compile_expression(spec, self.scope.with_vars(*names))

    def variables(self) -> Callable[[Any], dict[str, Any]]:
        """``vars_for(doc)``: the variables an expression sees for ``doc``
        (``$$ROOT``, ``$$NOW`` and the command's ``let``)."""
        ctx = self.env.ctx  # read per document: $merge rebinds its let variables

        def vars_for(doc: Any) -> dict[str, Any]:
            v = dict(ctx.variables)
            v["NOW"] = ctx.now
            v["ROOT"] = doc
            meta = metadata.of(doc)
            if meta is not None:
                v[METADATA] = meta
            return v

        return vars_for


StageCompiler = Callable[[Any, Where], "Stage | list[Stage]"]


class ScopedEnv:
    """``env`` as a sub-pipeline sees it: with extra ``$$`` variables (a
    ``$lookup``'s or ``$merge``'s ``let``) in ``ctx.variables``, which may be
    rebound between runs; everything else is ``env``'s own."""

    def __init__(self, env: PipelineEnv, variables: Mapping[str, Any]) -> None:
        self._env = env
        self.ctx = Context({**env.ctx.variables, **variables}, env.ctx.now, env.ctx.collator)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)


@dataclass(slots=True)
class Limits:
    """MongoDB's per-stage memory limits (server parameters of the same meaning)."""

    group_bytes: int = 100 * 1024 * 1024  # internalDocumentSourceGroupMaxMemoryBytes
    sort_bytes: int = 100 * 1024 * 1024  # internalQueryMaxBlockingSortMemoryUsageBytes
    window_bytes: int = 100 * 1024 * 1024  # internalDocumentSourceSetWindowFieldsMaxMemoryBytes
    bucket_auto_bytes: int = 100 * 1024 * 1024  # internalDocumentSourceBucketAutoMaxMemoryBytes
    push_bytes: int = 100 * 1024 * 1024  # internalQueryMaxPushBytes / AddToSetBytes
    graph_lookup_bytes: int = 100 * 1024 * 1024  # internalDocumentSourceGraphLookupMaxMemoryBytes


LIMITS = Limits()


def approx_size(value: Any) -> int:
    """A rough byte size of a value in memory, for the stage memory limits."""
    cls = value.__class__
    if cls is dict:
        return 32 + sum(len(k) + 16 + approx_size(v) for k, v in value.items())
    if cls is list:
        return 32 + sum(approx_size(v) for v in value)
    if cls is str or cls is bytes:
        return 40 + len(value)
    return 16


def memory_exceeded(stage: str) -> CommandError:
    return CommandError(
        ErrorCode.QueryExceededMemoryLimitNoDiskUseAllowed,
        f"Exceeded memory limit for {stage}, but didn't allow external sort. Pass allowDiskUse:true to opt in.",
    )


def _unknown_stage(name: str) -> CommandError:
    return location(40324, f"Unrecognized pipeline stage name: '{name}'")


# Known MongoDB stages FolioDB does not build: sharding and diagnostics
# stages, $score.
_UNBUILT = (
    "$listSampledQueries",
    "$shardedDataDistribution",
    "$querySettings",
    "$queryStats",
    "$listClusterCatalog",
    "$score",
)

STAGES: Registry[StageCompiler] = Registry("aggregation stage", _unknown_stage, unbuilt=_UNBUILT)

# Placement rules, checked for every stage before its compiler runs.
# The search stages (mongot's): each comes first, and none runs inside $facet.
_SEARCH = frozenset({"$listSearchIndexes", "$vectorSearch", "$search", "$searchMeta", "$rankFusion", "$scoreFusion"})
FIRST_ONLY = _SEARCH | {
    "$collStats",
    "$indexStats",
    "$planCacheStats",
    "$documents",
    "$currentOp",
    "$listLocalSessions",
    "$listSessions",
}
LAST_ONLY = frozenset({"$out", "$merge"})
NOT_IN_FACET = _SEARCH | {
    "$collStats",
    "$facet",
    "$indexStats",
    "$planCacheStats",
    "$out",
    "$merge",
    "$documents",
    "$geoNear",
    "$listLocalSessions",
    "$listSessions",
}
WRITES = frozenset({"$out", "$merge"})


def compile_pipeline(stages: list[Mapping[str, Any]], env: PipelineEnv) -> Pipeline:
    """Compile a whole pipeline, checking every stage."""
    scope = Scope(frozenset(env.ctx.variables), env.ctx.collator)
    compiled = compile_stages(stages, Where(env, scope))
    optimized = optimize(compiled, Where(env, scope))
    check_dependency_paths(optimized)
    return Pipeline(optimized)


# Stages that name every field the pipeline needs from then on (mongod's exhaustive dependencies).
_EXHAUSTIVE = frozenset({"$group", "$bucket", "$bucketAuto", "$sortByCount", "$count", "$replaceRoot", "$replaceWith"})


def check_dependency_paths(stages: list[Stage]) -> None:
    """mongod's dependency analysis: when a later stage names every field still needed, the paths a
    ``$match`` that runs as a stage (not the first, which the query system takes) reads become
    FieldPaths, so an aggregation-illegal path ("a.$c") is 16410 there."""
    end = next((i for i, stage in enumerate(stages) if _exhaustive(stage)), None)
    for stage in stages[1:end] if end is not None else ():
        if stage.name == "$match":
            for path in _filter_paths(stage.spec):
                split_path(path)


def _exhaustive(stage: Stage) -> bool:
    if stage.name == "$project" and isinstance(stage.spec, Mapping):
        # An inclusion (or computing) projection; an exclusion keeps every other field.
        return any(not _excludes(value) for key, value in stage.spec.items() if key != "_id")
    return stage.name in _EXHAUSTIVE


def _excludes(value: Any) -> bool:
    return value is False or (cmp.is_number(value) and not isinstance(value, bool) and cmp.number_value(value) == 0)


def _filter_paths(spec: Any) -> Iterator[str]:
    if not isinstance(spec, Mapping):
        return
    for key, value in spec.items():
        if key in ("$and", "$or", "$nor") and isinstance(value, list):
            for branch in value:
                yield from _filter_paths(branch)
        elif not key.startswith("$"):
            yield key


def compile_stages(specs: Any, where: Where) -> list[Stage]:
    """Compile a pipeline's stage documents in order (no reordering)."""
    if not isinstance(specs, list):
        raise CommandError(ErrorCode.TypeMismatch, "'pipeline' option must be specified as an array")
    out: list[Stage] = []
    last = len(specs) - 1
    text_score = where.text_score
    for i, doc in enumerate(specs):
        name, arg = stage_entry(doc)
        compiler = STAGES.get(name)
        check_placement(name, i, last, where.parent)
        if name == "$match" and i == 0 and where.parent != "$facet" and has_text(arg):
            # As mongod parses $text: its collection's text index is looked up first (IndexNotFound).
            db, coll = where.source or (None, where.env.coll)
            if coll is not None and not where.env.has_text_index(coll, db):
                raise CommandError(ErrorCode.IndexNotFound, "text index required for $text query")
            text_score = True
        elif not text_score and reads_text_score(name, arg):
            # mongod's dependency analysis: only a $text search of this pipeline gives the score.
            raise location(40218, "query requires text score metadata, but it is not available")
        if name == "$facet" and text_score:
            where = replace(where, text_score=True)
        if name == "$geoNear" and i != 0:
            # First only, but unlike FIRST_ONLY stages it reads the collection.
            raise location(40602, f"{name} is only valid as the first stage in a pipeline")
        if name == "$match" and (i != 0 or where.parent == "$facet") and has_text(arg):
            raise location(17313, "$match with $text is only allowed as the first pipeline stage")
        made = compiler(arg, where)
        if isinstance(made, list):
            out.extend(made)
        else:
            out.append(made)
    return out


def reads_text_score(name: str, spec: Any) -> bool:
    """Does a stage read ``{$meta: "textScore"}`` (not in its own sub-pipelines, which have their own)?"""
    if name in ("$lookup", "$unionWith", "$facet", "$vectorSearch"):
        return False  # $vectorSearch takes no expressions (and its queryVector can be 8192 numbers long)
    return _meta_text_score(spec)


def _meta_text_score(spec: Any) -> bool:
    if isinstance(spec, Mapping):
        if spec.get("$meta") == "textScore":
            return True
        return any(_meta_text_score(value) for value in spec.values())
    if isinstance(spec, list):
        return any(_meta_text_score(value) for value in spec)
    return False


def stage_entry(doc: Any) -> tuple[str, Any]:
    if not isinstance(doc, Mapping):
        raise CommandError(ErrorCode.TypeMismatch, "Each element of the 'pipeline' array must be an object")
    if len(doc) != 1:
        raise location(40323, "A pipeline stage specification object must contain exactly one field.")
    name, arg = next(iter(doc.items()))
    return name, arg


def check_placement(name: str, index: int, last: int, parent: str | None) -> None:
    if parent == "$facet" and name in NOT_IN_FACET:
        raise location(40600, f"{name} is not allowed to be used within a $facet stage")
    if name in LAST_ONLY and index != last:  # mongod checks a sub-pipeline's shape before its context
        raise location(40601, f"{name} can only be the final stage in the pipeline")
    if parent == "$lookup" and name in WRITES:
        raise location(51047, f"{name} is not allowed within a $lookup's sub-pipeline")
    if parent == "$unionWith" and name in WRITES:
        raise location(31441, f"{name} is not allowed within a $unionWith's sub-pipeline")
    if name in FIRST_ONLY and index != 0:
        raise location(40602, f"{name} is only valid as the first stage in a pipeline")


def has_text(spec: Any) -> bool:
    """Does a filter use $text anywhere in its logical tree?"""
    if not isinstance(spec, Mapping):
        return False
    for key, value in spec.items():
        if key == "$text":
            return True
        if key in ("$and", "$or", "$nor") and isinstance(value, list) and any(has_text(c) for c in value):
            return True
    return False


class Pushdown(NamedTuple):
    """What the collection scan can do for the pipeline (see module doc)."""

    filter: Mapping[str, Any] | None
    sort: Mapping[str, Any] | None
    limit: int | None
    projection: Mapping[str, Any] | None = None


class Pipeline:
    """A compiled pipeline; ``stages`` in execution order."""

    def __init__(self, stages: list[Stage]) -> None:
        self.stages = stages

    def _pushdown_plan(self) -> tuple[Pushdown, int]:
        stages = self.stages
        i = 0
        filter_spec = sort = limit = None
        if stages and stages[0].near is not None:
            return Pushdown(None, None, None), 0  # the find is its near scan (geo_near); the stage still runs
        if i < len(stages) and stages[i].name == "$match":
            filter_spec = stages[i].spec
            i += 1
        if i < len(stages) and stages[i].name == "$sort":
            sort = stages[i].sort
            limit = stages[i].limit
            i += 1
        elif i < len(stages) and stages[i].name == "$limit":
            limit = stages[i].limit
            i += 1
        projection = None
        # A plain $project next goes to the find too (mongod's projection pushdown; a covered plan
        # then answers from index keys), unless $text metadata must reach the later stages.
        if i < len(stages) and stages[i].projection is not None and not has_text(filter_spec):
            projection = stages[i].projection
            i += 1
        return Pushdown(filter_spec, sort, limit, projection), i

    def pushdown(self) -> Pushdown:
        return self._pushdown_plan()[0]

    def needs_no_fields(self) -> bool:
        """Do the stages after the pushed ones read no field of their input documents (mongod's
        dependency analysis: then only how many documents match matters, a COUNT_SCAN's answer)?
        Judged conservatively: a $count, or a $group (after $project stages that drop _id and
        compute only constants) whose key and accumulators read no field path."""
        pushed, n = self._pushdown_plan()
        if pushed.projection is not None or (self.stages and self.stages[0].near is not None):
            return False
        for stage in self.stages[n:]:
            if stage.name == "$count":
                return True
            if stage.name == "$group":
                return not _reads_fields(stage.spec)
            if stage.name != "$project" or _flag_value(stage.spec.get("_id", True)) is not False:
                return False
            if any(_flag_value(v) is not None or _reads_fields(v) for k, v in stage.spec.items() if k != "_id"):
                return False
        return False

    def geo_near(self) -> Any:
        """A leading $geoNear's request (the find it runs on), or None."""
        return self.stages[0].near if self.stages else None

    def leading_match(self) -> Mapping[str, Any] | None:
        return self.pushdown().filter

    def run(self, source: Docs, *, pushed: bool = False) -> Docs:
        skip = self._pushdown_plan()[1] if pushed else 0
        docs = iter(source)
        for stage in self.stages[skip:]:
            docs = stage.run(docs)
        return docs

    def explain(self) -> list[dict[str, Any]]:
        return [{stage.name: stage.spec} for stage in self.stages]


def _reads_fields(spec: Any) -> bool:
    """Does an expression (or a stage's specification) read a field path ("$a", "$$ROOT", "$$CURRENT")?"""
    if isinstance(spec, str):
        return spec.startswith("$") and (not spec.startswith("$$") or spec.split(".")[0] in ("$$ROOT", "$$CURRENT"))
    if isinstance(spec, Mapping):
        if "$literal" in spec and len(spec) == 1:
            return False
        return any(_reads_fields(v) for v in spec.values())
    if isinstance(spec, list):
        return any(_reads_fields(v) for v in spec)
    return False


def _flag_value(value: Any) -> bool | None:
    """A projection value's inclusion (True) or exclusion (False); None for a computed one."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    return None


# ---------------------------------------------------------------------------
# Reordering


def optimize(stages: list[Stage], where: Where) -> list[Stage]:
    stages = list(stages)
    changed = True
    while changed:
        changed = False
        i = 0
        while i + 1 < len(stages):
            replacement = _rewrite(stages[i], stages[i + 1], where)
            if replacement is None:
                i += 1
                continue
            stages[i : i + 2] = replacement
            changed = True
            i = max(i - 1, 0)
    return stages


def _rewrite(a: Stage, b: Stage, where: Where) -> list[Stage] | None:
    """A cheaper equivalent of the pair (a, b), or None."""
    match_stage = STAGES.get("$match")
    if a.name == "$match" and b.name == "$match":
        return [match_stage({"$and": [a.spec, b.spec]}, where)]  # type: ignore[list-item]
    if b.name == "$match" and a.keeps is not None:
        movable, rest = split_match(b.spec, a.keeps, a.renames or {})
        if movable is None:
            return None
        moved = match_stage(movable, where)
        if rest is None:
            return [moved, a]  # type: ignore[list-item]
        return [moved, a, match_stage(rest, where)]  # type: ignore[list-item]
    if a.absorb is not None and b.name == "$match":
        return a.absorb(b.spec)
    if a.name == "$skip" and b.name == "$limit":
        assert a.limit is not None and b.limit is not None
        return [STAGES.get("$limit")(a.limit + b.limit, where), a]  # type: ignore[list-item]
    if a.name == "$limit" and b.name == "$limit":
        assert a.limit is not None and b.limit is not None
        return [STAGES.get("$limit")(min(a.limit, b.limit), where)]  # type: ignore[list-item]
    if a.name == "$skip" and b.name == "$skip":
        assert a.limit is not None and b.limit is not None
        return [STAGES.get("$skip")(a.limit + b.limit, where)]  # type: ignore[list-item]
    if a.with_limit is not None and b.name == "$limit":
        assert b.limit is not None
        n = b.limit if a.limit is None else min(a.limit, b.limit)
        return [a.with_limit(n)]
    return None


def split_match(
    spec: Mapping[str, Any], keeps: Callable[[str], bool], renames: Mapping[str, str] | None = None
) -> tuple[Any, Any]:
    """(clauses that may move before the stage, the others), each a filter or
    None. A top-level ``$and`` is split clause by clause; a clause reading only
    kept fields and renamed paths moves with the renamed paths' old names."""
    clauses: list[Mapping[str, Any]] = []
    for key, value in spec.items():
        if key == "$and" and isinstance(value, list) and all(isinstance(c, Mapping) for c in value):
            clauses.extend(value)
        else:
            clauses.append({key: value})
    movable, rest = [], []
    for clause in clauses:
        paths = filter_paths(clause)
        if paths and all(keeps(p.split(".", 1)[0]) or _renamed(p, renames or {}) is not None for p in paths):
            movable.append(_rename_filter(clause, keeps, renames or {}))
        else:
            rest.append(clause)
    return _conjunction(movable), _conjunction(rest)


def filter_paths(spec: Mapping[str, Any]) -> set[str] | None:
    """The field paths a filter's clauses name; None when it cannot be told
    (``$expr``, ``$where``, ``$text``, ``$jsonSchema`` read the whole document)."""
    paths: set[str] = set()
    for key, value in spec.items():
        if key in ("$and", "$or", "$nor"):
            if not isinstance(value, list) or not all(isinstance(clause, Mapping) for clause in value):
                return None
            for clause in value:
                inner = filter_paths(clause)
                if inner is None:
                    return None
                paths |= inner
        elif key == "$comment":
            continue
        elif key.startswith("$"):
            return None
        else:
            paths.add(key)
    return paths


def _renamed(path: str, renames: Mapping[str, str]) -> str | None:
    """``path`` with its renamed prefix (whole components) replaced by the old name, or None."""
    for new, old in renames.items():
        if path == new or path.startswith(new + "."):
            return old + path[len(new) :]
    return None


def _rename_filter(spec: Mapping[str, Any], keeps: Callable[[str], bool], renames: Mapping[str, str]) -> Any:
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if key in ("$and", "$or", "$nor"):
            out[key] = [_rename_filter(clause, keeps, renames) for clause in value]
        elif key.startswith("$") or keeps(key.split(".", 1)[0]):
            out[key] = value
        else:
            renamed = _renamed(key, renames)
            assert renamed is not None  # split_match moves only clauses whose paths all are kept or renamed
            out[renamed] = value
    return out


def _conjunction(clauses: list[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    if not clauses:
        return None
    if len(clauses) == 1:
        return clauses[0]
    return {"$and": clauses}


def keep_all(field: str) -> bool:
    return True


# Register the stages.
from foliodb.aggregation import stages as _stages  # noqa: E402,F401
