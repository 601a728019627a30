"""Reshaping stages: $project $unset $addFields $set $replaceRoot $replaceWith $redact.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/project/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/unset/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/addFields/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/replaceRoot/
https://www.mongodb.com/docs/manual/reference/operator/aggregation/redact/

``$project`` and ``$unset`` use the projection compiler shared with ``find``
(:func:`foliodb.query.projection.compile_projection` with ``find=False``);
``$addFields``/``$set``, ``$unset``'s and ``$replaceRoot``'s checks and the
non-document error of ``$replaceRoot``/``$replaceWith`` are shared with update
pipelines in :mod:`foliodb.query.reshape`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from foliodb.aggregation.pipeline import STAGES, Docs, Stage, Where
from foliodb.errors import location
from foliodb.query import metadata
from foliodb.query.compare import BOOL, NUMBER, bracket, number_value
from foliodb.query.expr.fold import folded
from foliodb.query.paths import MISSING
from foliodb.query.projection import Projection, compile_projection
from foliodb.query.render import render
from foliodb.query.reshape import (
    apply_tree,
    compile_add_fields,
    new_root_spec,
    replacement,
    unset_fields,
)


def _projection_stage(name: str, projection: Projection, shown: Any, keeps: Callable[[str], bool]) -> Stage:
    apply = projection.apply

    def run(docs: Docs) -> Docs:
        for doc in docs:
            meta = metadata.of(doc)
            if meta is None:
                yield apply(doc)
            else:
                out = apply(doc, None, meta)
                out[metadata.FIELD] = meta  # a projection keeps the metadata
                yield out

    return Stage(name, shown, run, keeps=keeps)


def renames_of(spec: Mapping[str, Any]) -> dict[str, str]:
    """The paths a $project/$addFields specification sets to another path's value, new -> old, as
    mongod's getComputedPaths finds them: a field path of one component ("$a", "$$CURRENT.a",
    "$$ROOT.a"; "$a.b" can make arrays of arrays, so it is no rename), and through a $map over such
    a path whose 'in' is an object of such paths of its variable (nested $maps too)."""
    renames: dict[str, str] = {}
    for key, value in spec.items():
        if not key.startswith("$"):
            renames.update(_renames(value, key, None))
    return renames


def _renames(expr: Any, path: str, var: str | None) -> dict[str, str]:
    """Renames ``expr`` makes at ``path``; ``var`` is the variable whose fields count (None: the
    document's, as at a stage's top level)."""
    if isinstance(expr, str):
        old = _renamed_field(expr, var)
        return {path: old} if old is not None else {}
    if not isinstance(expr, Mapping):
        return {}
    if len(expr) == 1 and "$map" in expr and isinstance(expr["$map"], Mapping):
        spec = expr["$map"]
        array = _renamed_field(spec.get("input"), var)
        each = spec.get("in")
        if array is None or not isinstance(each, Mapping) or any(k.startswith("$") for k in each):
            return {}
        inner = _renames(each, path, spec.get("as", "this"))
        return {new: f"{array}.{old}" for new, old in inner.items()}
    if any(key.startswith("$") for key in expr):
        return {}
    out: dict[str, str] = {}
    for key, value in expr.items():
        out.update(_renames(value, f"{path}.{key}", var))
    return out


def _renamed_field(expr: Any, var: str | None) -> str | None:
    """The one field a field-path expression reads of ``var`` (None: the document), or None."""
    if not isinstance(expr, str) or not expr.startswith("$"):
        return None
    if expr.startswith("$$"):
        name, _, field = expr[2:].partition(".")
        ok = name == var if var is not None else name in ("CURRENT", "ROOT")
    else:
        field = expr[1:]
        ok = var is None
    return field if ok and field and "." not in field else None


def _plain(spec: Mapping[str, Any]) -> bool:
    """Is a projection only inclusions or exclusions, nested ones ({c: {d: 1}}) too?"""
    return bool(spec) and all(
        not key.startswith("$") and (_flag(value) is not None or (isinstance(value, Mapping) and _plain(value)))
        for key, value in spec.items()
    )


def _flag(value: Any) -> bool | None:
    """True for an inclusion (1, true), False for an exclusion (0, false),
    None for anything computed."""
    b = bracket(value)
    if b == BOOL:
        return bool(value)
    if b == NUMBER:
        return number_value(value) != 0
    return None


@STAGES.register("$project")
def stage_project(spec: Any, where: Where) -> Stage:
    projection = compile_projection(spec, where.env.ctx, find=False)
    excluded = {k.split(".", 1)[0] for k, v in spec.items() if k != "_id" and _flag(v) is False}
    touched = {k.split(".", 1)[0] for k in spec}
    if excluded:

        def keeps(field: str) -> bool:
            return field not in touched
    else:
        kept = {k for k, v in spec.items() if "." not in k and _flag(v) is True}
        if "_id" not in spec:
            kept.add("_id")

        def keeps(field: str) -> bool:
            return field in kept

    shown = spec if excluded else {k: v if _flag(v) is not None else folded(v, where.scope) for k, v in spec.items()}
    stage = _projection_stage("$project", projection, shown, keeps)
    if not excluded:
        stage.renames = renames_of(spec)
    if _plain(spec):
        stage.projection = spec  # plain inclusions or exclusions: a find's projection means the same
    return stage


@STAGES.register("$unset")
def stage_unset(spec: Any, where: Where) -> Stage:
    names = unset_fields(spec)
    projection = compile_projection(dict.fromkeys(names, 0), where.env.ctx, find=False)
    touched = {n.split(".", 1)[0] for n in names}
    return _projection_stage("$unset", projection, spec, lambda f: f not in touched)


def _add_fields(name: str) -> Callable[[Any, Where], Stage]:
    def compile_stage(spec: Any, where: Where) -> Stage:
        tree = compile_add_fields(name, spec, where.scope)
        vars_for = where.variables()

        def run(docs: Docs) -> Docs:
            for doc in docs:
                yield apply_tree(doc, tree, doc, vars_for(doc))

        shown = {key: folded(value, where.scope) for key, value in spec.items()}
        return Stage(name, shown, run, keeps=lambda f: f not in tree, renames=renames_of(spec))

    compile_stage.__name__ = f"stage_{name[1:]}"
    return compile_stage


STAGES.register("$addFields")(_add_fields("$addFields"))
STAGES.register("$set")(_add_fields("$set"))


def _replace(name: str, spec: Any, where: Where, what: str) -> Stage:
    new_root = where.expression(spec)
    vars_for = where.variables()

    def run(docs: Docs) -> Docs:
        for doc in docs:
            yield replacement(new_root(doc, vars_for(doc)), doc, what)

    return Stage(name, spec, run)


@STAGES.register("$replaceRoot")
def stage_replaceRoot(spec: Any, where: Where) -> Stage:
    stage = _replace("$replaceRoot", new_root_spec(spec), where, "'newRoot' expression")
    stage.spec = spec
    return stage


@STAGES.register("$replaceWith")
def stage_replaceWith(spec: Any, where: Where) -> Stage:
    return _replace("$replaceWith", spec, where, "'replacement document'")


_DESCEND, _PRUNE, _KEEP = "descend", "prune", "keep"


@STAGES.register("$redact")
def stage_redact(spec: Any, where: Where) -> Stage:
    decide = where.expression_with(spec, "DESCEND", "PRUNE", "KEEP")
    vars_for = where.variables()

    def redact(doc: dict[str, Any], vars: dict[str, Any]) -> dict[str, Any] | None:
        verdict = decide(doc, vars)
        if verdict == _KEEP:
            return doc
        if verdict == _PRUNE:
            return None
        if verdict != _DESCEND:
            shown = "MISSING" if verdict is MISSING else render(verdict)
            raise location(
                17053,
                "$redact's expression should not return anything aside from the variables $$KEEP, "
                f"$$DESCEND, and $$PRUNE, but returned {shown}",
            )
        out: dict[str, Any] = {}
        for key, value in doc.items():
            if isinstance(value, dict):
                kept = redact(value, vars)
                if kept is not None:
                    out[key] = kept
            elif isinstance(value, list):
                out[key] = redact_array(value, vars)
            else:
                out[key] = value
        return out

    def redact_array(values: list[Any], vars: dict[str, Any]) -> list[Any]:
        out: list[Any] = []
        for value in values:
            if isinstance(value, dict):
                kept = redact(value, vars)
                if kept is not None:
                    out.append(kept)
            elif isinstance(value, list):
                out.append(redact_array(value, vars))
            else:
                out.append(value)
        return out

    def run(docs: Docs) -> Docs:
        for doc in docs:
            vars = vars_for(doc)
            vars.update(DESCEND=_DESCEND, PRUNE=_PRUNE, KEEP=_KEEP)
            kept = redact(doc, vars)
            if kept is not None:
                yield kept

    return Stage("$redact", spec, run)
