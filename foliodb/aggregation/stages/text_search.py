"""MongoDB Search's full-text stages: $search and $searchMeta.

Manual: https://www.mongodb.com/docs/atlas/atlas-search/aggregation-stages/search/,
https://www.mongodb.com/docs/atlas/atlas-search/aggregation-stages/searchMeta/

Both are first stages (40602 elsewhere, 40600 inside ``$facet``), as mongot's. The stage
checks its own fields once: ``index`` (default ``"default"``), exactly one operator or a
``facet`` collector (``{operator?, facets}``), ``highlight``, ``count``, ``sort``,
``scoreDetails``, ``returnStoredSource``, ``searchAfter`` / ``searchBefore`` (sequence
tokens) and ``returnScope`` (both checked by the engine), ``concurrent`` and ``tracking``
(accepted, no effect on one machine). The operator itself is compiled by the engine against the index's
definition (engine/search/text/). ``$search`` returns the documents best first with
``{$meta: "searchScore"}`` (and ``"score"``), and sets ``$$SEARCH_META`` (the count and
facets) for the stages after it; ``$searchMeta`` returns that one document.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.aggregation.pipeline import STAGES, Docs, Stage, Where
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.idl import wrong_type
from foliodb.query.search_query import SearchQuery

_OPTIONS = frozenset(
    {
        "index",
        "highlight",
        "count",
        "sort",
        "scoreDetails",
        "returnStoredSource",
        "concurrent",
        "tracking",
        "searchAfter",
        "searchBefore",
        "returnScope",
    }
)


def _document(spec: Mapping[str, Any], stage: str, name: str) -> Mapping[str, Any] | None:
    value = spec.get(name)
    if value is not None and not isinstance(value, Mapping):
        raise wrong_type(f"{stage}.{name}", value, "object")
    return value


def _flag(spec: Mapping[str, Any], stage: str, name: str) -> bool:
    value = spec.get(name, False)
    if not isinstance(value, bool):
        raise wrong_type(f"{stage}.{name}", value, "bool")
    return value


def parse_search(spec: Any, stage: str) -> SearchQuery:
    if not isinstance(spec, Mapping):
        raise CommandError(ErrorCode.FailedToParse, f"{stage} value must be an object, found {type_name(spec)}")
    index = spec.get("index", "default")
    if not is_string(index):
        raise wrong_type(f"{stage}.index", index, "string")
    rest = [name for name in spec if name not in _OPTIONS]
    if len(rest) != 1:
        raise CommandError(
            ErrorCode.FailedToParse,
            f"{stage} must hold exactly one operator or a facet collector, found: {', '.join(rest) or 'none'}",
        )
    name = rest[0]
    body = spec[name]
    operator: tuple[str, Any] | None = (name, body)
    facets = None
    if name == "facet":
        if not isinstance(body, Mapping) or not isinstance(body.get("facets"), Mapping):
            raise CommandError(ErrorCode.FailedToParse, f"{stage}.facet requires a 'facets' document")
        inner = [key for key in body if key != "facets"]
        if inner and (inner != ["operator"] or not isinstance(body["operator"], Mapping) or len(body["operator"]) != 1):
            raise CommandError(ErrorCode.FailedToParse, f"{stage}.facet.operator must hold exactly one operator")
        operator = next(iter(body["operator"].items())) if inner else None
        facets = body["facets"]
    return SearchQuery(
        index=str(index),
        operator=operator,
        facets=facets,
        highlight=_document(spec, stage, "highlight"),
        count=_document(spec, stage, "count"),
        sort=_document(spec, stage, "sort"),
        score_details=_flag(spec, stage, "scoreDetails"),
        stored_source=_flag(spec, stage, "returnStoredSource"),
        meta_only=stage == "$searchMeta",
        after=spec.get("searchAfter"),
        before=spec.get("searchBefore"),
        return_scope=spec.get("returnScope"),
    )


@STAGES.register("$search")
def stage_search(spec: Any, where: Where) -> Stage:
    query = parse_search(spec, "$search")
    env = where.env
    coll = env.coll
    if coll is None:
        raise location(40602, "$search is only valid as the first stage in a pipeline")

    def run(docs: Docs) -> Docs:
        meta, found = env.text_search(coll, query)
        env.ctx.variables["SEARCH_META"] = meta
        yield from found

    return Stage("$search", spec, run, search=query)


@STAGES.register("$searchMeta")
def stage_searchMeta(spec: Any, where: Where) -> Stage:
    query = parse_search(spec, "$searchMeta")
    env = where.env
    coll = env.coll
    if coll is None:
        raise location(40602, "$searchMeta is only valid as the first stage in a pipeline")

    def run(docs: Docs) -> Docs:
        meta, _ = env.text_search(coll, query)
        yield dict(meta)

    return Stage("$searchMeta", spec, run, search=query)
