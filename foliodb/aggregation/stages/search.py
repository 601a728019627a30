"""MongoDB Search stages: $vectorSearch and $listSearchIndexes.

Manual: https://www.mongodb.com/docs/atlas/atlas-vector-search/vector-search-stage/,
https://www.mongodb.com/docs/manual/reference/operator/aggregation/listSearchIndexes/

Both are the first stage of a pipeline (40602 elsewhere, 40600 inside
``$facet``) and read the collection themselves, through the pipeline's
environment. ``$vectorSearch`` is checked here, once: ``index``, ``path``,
``queryVector`` and ``limit`` are required; ``numCandidates`` too unless
``exact`` is true (then it must be absent); ``limit`` <= ``numCandidates``
<= 10000; ``filter`` a document. The search itself (and the filter's own
rules) is the engine's (:mod:`foliodb.engine.search.vector_search`); each
document it returns carries ``{$meta: "vectorSearchScore"}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson.binary import Binary

from foliodb.aggregation.pipeline import STAGES, Docs, Stage, Where
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.idl import check_fields, wrong_type
from foliodb.query.vector_query import VectorQuery

MAX_CANDIDATES = 10_000
_FIELDS = ("index", "path", "queryVector", "numCandidates", "limit", "filter", "exact")


def _positive_int(spec: Mapping[str, Any], name: str) -> int:
    value = spec[name]
    if not cmp.is_number(value) or isinstance(value, bool):
        raise wrong_type(f"$vectorSearch.{name}", value, "int")
    number = cmp.number_value(value)
    if number != int(number):
        raise CommandError(ErrorCode.BadValue, f"$vectorSearch.{name} must be an integer, found {number}")
    if int(number) < 1:
        raise CommandError(ErrorCode.BadValue, f"$vectorSearch.{name} must be a positive integer, found {number}")
    return int(number)


def parse_vector_search(spec: Any) -> VectorQuery:
    if not isinstance(spec, Mapping):
        raise CommandError(ErrorCode.FailedToParse, f"$vectorSearch requires an object, found {type_name(spec)}")
    check_fields(spec, "$vectorSearch", _FIELDS, ("index", "path", "queryVector", "limit"))
    for name in ("index", "path"):
        if not is_string(spec[name]):
            raise wrong_type(f"$vectorSearch.{name}", spec[name], "string")
    vector = spec["queryVector"]
    if not isinstance(vector, list) and not (isinstance(vector, Binary) and vector.subtype == 9):
        raise wrong_type("$vectorSearch.queryVector", vector, "array")
    exact = spec.get("exact", False)
    if not isinstance(exact, bool):
        raise wrong_type("$vectorSearch.exact", exact, "bool")
    limit = _positive_int(spec, "limit")
    candidates = None
    if exact:
        if "numCandidates" in spec:
            raise CommandError(ErrorCode.BadValue, "$vectorSearch.numCandidates is not allowed when exact is true")
    else:
        if "numCandidates" not in spec:
            raise CommandError(ErrorCode.BadValue, "$vectorSearch.numCandidates is required when exact is false")
        candidates = _positive_int(spec, "numCandidates")
        if candidates > MAX_CANDIDATES:
            raise CommandError(
                ErrorCode.BadValue, f"$vectorSearch.numCandidates must be less than or equal to {MAX_CANDIDATES}"
            )
        if candidates < limit:
            raise CommandError(
                ErrorCode.BadValue,
                "$vectorSearch.numCandidates must be greater than or equal to the value of $vectorSearch.limit",
            )
    filter_spec = spec.get("filter")
    if filter_spec is not None and not isinstance(filter_spec, Mapping):
        raise wrong_type("$vectorSearch.filter", filter_spec, "object")
    return VectorQuery(str(spec["index"]), str(spec["path"]), vector, limit, candidates, exact, filter_spec)


@STAGES.register("$vectorSearch")
def stage_vectorSearch(spec: Any, where: Where) -> Stage:
    query = parse_vector_search(spec)
    env = where.env
    coll = env.coll
    if coll is None:
        raise location(40602, "$vectorSearch is only valid as the first stage in a pipeline")

    def run(docs: Docs) -> Docs:
        yield from env.vector_search(coll, query)

    return Stage("$vectorSearch", spec, run, search=query)


@STAGES.register("$listSearchIndexes")
def stage_listSearchIndexes(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(ErrorCode.FailedToParse, f"$listSearchIndexes must be an object, found {type_name(spec)}")
    check_fields(spec, "$listSearchIndexes", ("name", "id"))
    for name in ("name", "id"):
        if name in spec and not is_string(spec[name]):
            raise wrong_type(f"$listSearchIndexes.{name}", spec[name], "string")
    if "name" in spec and "id" in spec:
        raise CommandError(ErrorCode.InvalidOptions, "Cannot set both 'name' and 'id' for $listSearchIndexes.")
    env = where.env
    coll = env.coll
    if coll is None:
        raise location(40602, "$listSearchIndexes is only valid as the first stage in a pipeline")

    def run(docs: Docs) -> Docs:
        yield from env.search_indexes(coll, spec.get("name"), spec.get("id"))

    return Stage("$listSearchIndexes", spec, run)
