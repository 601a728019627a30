"""The Stable API's generic command fields: ``apiVersion``, ``apiStrict``,
``apiDeprecationErrors`` (pymongo's ``server_api=ServerApi("1")``).

Every command may carry them (they are in ``params.GENERIC_FIELDS``); this
module checks them once per command, before its handler runs, as mongod's
``validateAPIParameters`` does:

* ``apiStrict``/``apiDeprecationErrors`` need an ``apiVersion`` (4886600);
* the only version is ``"1"`` (APIVersionError, 322);
* ``apiStrict: true`` refuses a command outside API Version 1, and a write
  to ``system.js`` (APIStrictError, 323);
* with the server parameter ``requireApiVersion`` on, a command without
  ``apiVersion`` is refused (498870).

No command of API Version 1 is deprecated, so ``apiDeprecationErrors`` is
checked for its type only.

Manual: https://www.mongodb.com/docs/manual/reference/stable-api/ and
https://www.mongodb.com/docs/manual/reference/stable-api-changelog/ (the commands of V1),
https://www.mongodb.com/docs/manual/reference/parameters/#mongodb-parameter-param.requireApiVersion
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.bsontypes import type_name

# The commands of API Version 1 in MongoDB 8.0 (the Stable API changelog).
API_V1_COMMANDS = frozenset(
    {
        "abortTransaction",
        "aggregate",
        "authenticate",
        "bulkWrite",
        "collMod",
        "commitTransaction",
        "count",
        "create",
        "createIndexes",
        "delete",
        "drop",
        "dropDatabase",
        "dropIndexes",
        "endSessions",
        "explain",
        "find",
        "findAndModify",
        "getMore",
        "hello",
        "insert",
        "killCursors",
        "listCollections",
        "listDatabases",
        "listIndexes",
        "ping",
        "refreshSessions",
        "saslContinue",
        "saslStart",
        "update",
    }
)

_WRITES = frozenset({"insert", "update", "delete", "findAndModify"})

# Aggregation stages registered AllowedWithApiStrict::kNeverInVersion1 in mongod 8.0.
STAGES_NOT_IN_V1 = frozenset(
    {
        "$currentOp",
        "$indexStats",
        "$listLocalSessions",
        "$listSessions",
        "$planCacheStats",
        "$listSampledQueries",
        "$listSearchIndexes",
        "$queryStats",
        "$querySettings",
        "$search",
        "$searchMeta",
        "$vectorSearch",
        "$shardedDataDistribution",
        "$listClusterCatalog",
        "$rankFusion",
        "$scoreFusion",
    }
)
# Stage fields whose value is a sub-pipeline, or a document of them ($facet).
_SUB_PIPELINES = {"$lookup": "pipeline", "$unionWith": "pipeline", "$facet": None}


def _flag(command: Mapping[str, Any], name: str) -> bool | None:
    value = command.get(name)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise CommandError(
            ErrorCode.TypeMismatch,
            f"BSON field '{name}' is the wrong type '{type_name(value)}', expected type 'boolean'",
        )
    return value


def check_api_parameters(name: str, command: Mapping[str, Any], parameters: Mapping[str, Any]) -> None:
    """Refuse ``command`` (named ``name``) if its Stable API fields, or the
    server's ``requireApiVersion`` (in ``parameters``), do not allow it."""
    if (
        "apiVersion" not in command
        and "apiStrict" not in command
        and "apiDeprecationErrors" not in command
        and not parameters.get("requireApiVersion")
    ):
        return  # most commands: nothing to check
    version = command.get("apiVersion")
    if version is not None and type_name(version) != "string":
        raise CommandError(
            ErrorCode.TypeMismatch,
            f"BSON field 'apiVersion' is the wrong type '{type_name(version)}', expected type 'string'",
        )
    strict = _flag(command, "apiStrict")
    deprecation_errors = _flag(command, "apiDeprecationErrors")
    if version is None:
        if parameters.get("requireApiVersion"):
            raise location(
                498870, "The apiVersion parameter is required, please configure your MongoClient's API version"
            )
        if strict is not None or deprecation_errors is not None:
            raise location(4886600, "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion")
        return
    if version != "1":
        raise CommandError(ErrorCode.APIVersionError, 'API version must be "1"')
    if not strict:
        return
    if name not in API_V1_COMMANDS:
        raise CommandError(
            ErrorCode.APIStrictError,
            f"Provided apiStrict:true, but the command {name} is not in API Version 1. Information on supported "
            "commands and migrations in API Version 1 can be found at "
            "https://dochub.mongodb.org/core/manual-versioned-api.",
        )
    if name in _WRITES and command.get(name) == "system.js":
        raise CommandError(
            ErrorCode.APIStrictError, f"Provided apiStrict:true, but the command {name} attempts to write to system.js."
        )
    if name == "aggregate":
        _check_stages(command.get("pipeline"))


def _check_stages(pipeline: Any) -> None:
    """Refuse a stage outside API Version 1 anywhere in a pipeline (mongod's LiteParsedPipeline
    checks sub-pipelines too), on collections and on ``aggregate: 1`` alike."""
    if not isinstance(pipeline, list):
        return
    for stage in pipeline:
        if not isinstance(stage, Mapping) or len(stage) != 1:
            continue
        ((stage_name, arg),) = stage.items()
        if stage_name in STAGES_NOT_IN_V1:
            raise CommandError(
                ErrorCode.APIStrictError, f"{stage_name} is not allowed with 'apiStrict: true' in API Version 1"
            )
        if stage_name in _SUB_PIPELINES and isinstance(arg, Mapping):
            field = _SUB_PIPELINES[stage_name]
            for inner in [arg.get(field)] if field is not None else list(arg.values()):
                _check_stages(inner)
