"""Hybrid search: $rankFusion (MongoDB 8.0+) and $scoreFusion (8.2+).

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/rankFusion/,
https://www.mongodb.com/docs/manual/reference/operator/aggregation/scoreFusion/

Both run each named input pipeline over the collection (``input.pipelines``), then merge
their results by ``_id``, first stage of a pipeline:

* ``$rankFusion``: a document's score is the sum, over the pipelines that returned it, of
  ``weight * 1 / (60 + rank)`` (rank from 1; reciprocal rank fusion); an input pipeline
  is *ranked*: it starts with ``$search``, ``$vectorSearch`` or ``$geoNear``, or sorts,
  and holds only selection and ranking stages (``$match $sort $limit $skip $sample
  $search $vectorSearch $geoNear``).
* ``$scoreFusion``: each pipeline's score of the document (``searchScore``,
  ``vectorSearchScore`` or ``score``), normalised by ``input.normalization`` (``none``,
  ``sigmoid``: 1 / (1 + e^-x), ``minMaxScaler``: (x - min) / (max - min) over that
  pipeline's results, 1 when all equal), weighted; combined by ``method: "avg"`` (the mean
  over the pipelines, 0 where a pipeline did not return the document) or ``"expression"``
  (``combination.expression`` with each pipeline's weighted score as ``$$<name>``).

The output is ordered by score (ties by ``_id``); ``{$meta: "score"}`` reads it and, with
``scoreDetails: true``, ``{$meta: "scoreDetails"}`` names each pipeline's contribution.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from foliodb.aggregation.pipeline import STAGES, Docs, Stage, Where, stage_entry
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query import compare as cmp
from foliodb.query import keystring, metadata
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.expr.core import METADATA
from foliodb.query.idl import check_fields, wrong_type

RRF_CONSTANT = 60
_SELECTION = frozenset({"$match", "$sort", "$limit", "$skip", "$sample", "$search", "$vectorSearch", "$geoNear"})
_RANKED_FIRST = frozenset({"$search", "$vectorSearch", "$geoNear"})
_SCORED_FIRST = frozenset({"$search", "$vectorSearch"})


def _failed(stage: str, message: str) -> CommandError:
    return CommandError(ErrorCode.FailedToParse, f"{stage}: {message}")


def _pipelines(spec: Mapping[str, Any], stage: str, scored: bool) -> dict[str, list[Any]]:
    given = spec.get("input")
    if not isinstance(given, Mapping):
        raise wrong_type(f"{stage}.input", given, "object")
    check_fields(given, f"{stage}.input", ("pipelines", "normalization"), ("pipelines",))
    pipelines = given["pipelines"]
    if not isinstance(pipelines, Mapping) or not pipelines:
        raise _failed(stage, "input.pipelines must be a non-empty object of named pipelines")
    out = {}
    for name, pipeline in pipelines.items():
        if not is_string(name) or not name or name.startswith("$") or "." in name:
            raise _failed(stage, f"pipeline name '{name}' must be non-empty, without '.' or a leading '$'")
        if not isinstance(pipeline, list) or not pipeline:
            raise _failed(stage, f"input pipeline '{name}' must be a non-empty array of stages")
        names = [stage_entry(s)[0] for s in pipeline]
        for stage_name in names:
            if stage_name not in _SELECTION:
                raise _failed(
                    stage, f"input pipeline '{name}' may not hold {stage_name}: only selection and ranking stages"
                )
        if scored and names[0] not in _SCORED_FIRST:
            raise _failed(
                stage, f"input pipeline '{name}' must begin with $search or $vectorSearch (a scored pipeline)"
            )
        if not scored and names[0] not in _RANKED_FIRST and "$sort" not in names:
            raise _failed(
                stage, f"input pipeline '{name}' must be ranked: begin with $search or $vectorSearch, or $sort"
            )
        out[str(name)] = pipeline
    return out


def _weights(spec: Mapping[str, Any], stage: str, names: list[str]) -> dict[str, float]:
    combination = spec.get("combination", {})
    if not isinstance(combination, Mapping):
        raise wrong_type(f"{stage}.combination", combination, "object")
    weights = combination.get("weights", {})
    if not isinstance(weights, Mapping):
        raise wrong_type(f"{stage}.combination.weights", weights, "object")
    out = dict.fromkeys(names, 1.0)
    for name, weight in weights.items():
        if name not in out:
            raise _failed(stage, f"combination.weights names an unknown pipeline: '{name}'")
        if not cmp.is_number(weight) or isinstance(weight, bool) or float(cmp.number_value(weight)) < 0:
            raise _failed(stage, f"the weight of pipeline '{name}' must be a non-negative number")
        out[name] = float(cmp.number_value(weight))
    return out


def _first_by_score(a: tuple[float, dict[str, Any]], b: tuple[float, dict[str, Any]]) -> int:
    if a[0] != b[0]:
        return -1 if a[0] > b[0] else 1
    return cmp.compare(a[1].get("_id"), b[1].get("_id"))


def _source_score(doc: Mapping[str, Any]) -> float:
    meta = metadata.of(doc) or {}
    for name in ("score", "searchScore", "vectorSearchScore"):
        if isinstance(meta.get(name), int | float):
            return float(meta[name])
    return 0.0


def _run_all(where: Where, pipelines: dict[str, list[Any]]) -> dict[str, list[dict[str, Any]]]:
    env = where.env
    coll = env.coll
    assert coll is not None
    return {name: list(env.aggregate(coll, pipeline)) for name, pipeline in pipelines.items()}


def _emit(scored: dict[Any, list[Any]], details: bool) -> Docs:
    ordered = sorted(((s[0], s[1]) for s in scored.values()), key=functools.cmp_to_key(_first_by_score))
    for score, doc in ordered:
        meta: dict[str, Any] = {"score": score}
        if details:
            meta["scoreDetails"] = scored[_key(doc)][2]
        out = metadata.strip(doc)
        out[metadata.FIELD] = meta
        yield out


def _key(doc: Mapping[str, Any]) -> bytes:
    """The document's identity across pipelines: its ``_id`` as index key bytes."""
    return keystring.encode(doc.get("_id"))


@STAGES.register("$rankFusion")
def stage_rankFusion(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(ErrorCode.FailedToParse, f"$rankFusion must be an object, found {type_name(spec)}")
    check_fields(spec, "$rankFusion", ("input", "combination", "scoreDetails"), ("input",))
    pipelines = _pipelines(spec, "$rankFusion", scored=False)
    weights = _weights(spec, "$rankFusion", list(pipelines))
    details = spec.get("scoreDetails", False)
    if not isinstance(details, bool):
        raise wrong_type("$rankFusion.scoreDetails", details, "bool")
    if where.env.coll is None:
        raise location(40602, "$rankFusion is only valid as the first stage in a pipeline")

    def run(docs: Docs) -> Docs:
        scored: dict[Any, list[Any]] = {}
        for name, results in _run_all(where, pipelines).items():
            for rank, doc in enumerate(results, 1):
                entry = scored.setdefault(_key(doc), [0.0, doc, {"value": 0.0, "description": "", "details": []}])
                share = weights[name] * (1.0 / (RRF_CONSTANT + rank))
                entry[0] += share
                entry[2]["details"].append(
                    {"inputPipelineName": name, "rank": rank, "weight": weights[name], "value": _source_score(doc)}
                )
        for entry in scored.values():
            entry[2]["value"] = entry[0]
            entry[2]["description"] = (
                "value output by reciprocal rank fusion algorithm, computed as sum of (weight * (1 / (60 + rank))) "
                "across input pipelines from which this document is output, from:"
            )
        yield from _emit(scored, details)

    return Stage("$rankFusion", spec, run)


def _normalized(values: list[float], how: str) -> list[float]:
    if how == "sigmoid":
        return [1.0 / (1.0 + math.exp(-v)) for v in values]
    if how == "minMaxScaler" and values:
        low, high = min(values), max(values)
        return [1.0 if high == low else (v - low) / (high - low) for v in values]
    return values


@STAGES.register("$scoreFusion")
def stage_scoreFusion(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(ErrorCode.FailedToParse, f"$scoreFusion must be an object, found {type_name(spec)}")
    check_fields(spec, "$scoreFusion", ("input", "combination", "scoreDetails"), ("input",))
    pipelines = _pipelines(spec, "$scoreFusion", scored=True)
    normalization = spec["input"].get("normalization", "none")
    if normalization not in ("none", "sigmoid", "minMaxScaler"):
        raise _failed("$scoreFusion", "input.normalization must be one of none, sigmoid, minMaxScaler")
    weights = _weights(spec, "$scoreFusion", list(pipelines))
    combination = spec.get("combination", {})
    method = combination.get("method", "avg")
    if method not in ("avg", "expression"):
        raise _failed("$scoreFusion", "combination.method must be avg or expression")
    expression = None
    if method == "expression":
        if "expression" not in combination:
            raise _failed("$scoreFusion", "combination.expression is required with method 'expression'")
        expression = where.expression_with(combination["expression"], *pipelines)
    details = spec.get("scoreDetails", False)
    if not isinstance(details, bool):
        raise wrong_type("$scoreFusion.scoreDetails", details, "bool")
    if where.env.coll is None:
        raise location(40602, "$scoreFusion is only valid as the first stage in a pipeline")
    vars_for = where.variables()

    def run(docs: Docs) -> Docs:
        per_doc: dict[Any, dict[str, float]] = {}
        first: dict[Any, dict[str, Any]] = {}
        for name, results in _run_all(where, pipelines).items():
            values = _normalized([_source_score(d) for d in results], normalization)
            for doc, value in zip(results, values, strict=True):
                key = _key(doc)
                first.setdefault(key, doc)
                per_doc.setdefault(key, {})[name] = weights[name] * value
        scored: dict[Any, list[Any]] = {}
        for key, shares in per_doc.items():
            if expression is not None:
                variables = vars_for(metadata.strip(first[key]))
                variables.update({name: shares.get(name, 0.0) for name in pipelines})
                variables.pop(METADATA, None)
                score = float(expression(first[key], variables))
            else:
                score = sum(shares.values()) / len(pipelines)
            explained = {
                "value": score,
                "description": f"the {method} of each input pipeline's {normalization}-normalised, weighted score",
                "details": [
                    {"inputPipelineName": name, "weight": weights[name], "value": shares[name]} for name in shares
                ],
            }
            scored[key] = [score, first[key], explained]
        yield from _emit(scored, details)

    return Stage("$scoreFusion", spec, run)
