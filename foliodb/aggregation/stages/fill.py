"""$fill.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/fill/

Desugared as MongoDB does: the ``method`` outputs become one
``$setWindowFields`` (``$locf`` / ``$linearFill`` of the field itself, with
the stage's ``sortBy`` and partition), then the ``value`` outputs one
``$addFields`` of ``{$ifNull: ["$field", value]}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.aggregation.pipeline import STAGES, Stage, Where
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.idl import check_fields

_FIELDS = ("partitionBy", "partitionByFields", "sortBy", "output")


@STAGES.register("$fill")
def stage_fill(spec: Any, where: Where) -> list[Stage]:
    if not isinstance(spec, Mapping):
        raise CommandError(
            ErrorCode.FailedToParse, f"The $fill stage specification must be an object, found {type_name(spec)}"
        )
    check_fields(spec, "$fill", _FIELDS, ("output",))
    output = spec["output"]
    if not isinstance(output, Mapping) or not output:
        raise location(6050203, "The output field in '$fill' must contain an object with at least one element")
    windows: dict[str, Any] = {}
    values: dict[str, Any] = {}
    for field, field_spec in output.items():
        if not isinstance(field_spec, Mapping):
            raise location(6050200, "Each fill output specification must be an object with exactly one field")
        check_fields(field_spec, "$fill", ("method", "value"))
        if "method" in field_spec:
            if "value" in field_spec:
                raise location(
                    6050201,
                    "Each fill output specification must have exactly one of 'method' or 'value' fields, not both",
                )
            method = field_spec["method"]
            if method not in ("locf", "linear"):
                raise location(6050202, "Method must be either locf or linear")
            windows[field] = {"$linearFill" if method == "linear" else "$locf": "$" + field}
        elif "value" in field_spec:
            values[field] = {"$ifNull": ["$" + field, field_spec["value"]]}
    window_spec: dict[str, Any] = {"output": windows}
    if "sortBy" in spec:
        window_spec["sortBy"] = spec["sortBy"]
    if "partitionBy" in spec:
        if "partitionByFields" in spec:
            raise location(6050204, "Maximum one of 'partitionBy' and 'partitionByFields can be specified in '$fill'")
        window_spec["partitionBy"] = spec["partitionBy"]
    if "partitionByFields" in spec:
        fields = spec["partitionByFields"]
        if not isinstance(fields, list) or not all(is_string(f) for f in fields):
            raise CommandError(
                ErrorCode.TypeMismatch,
                f"BSON field '$fill.partitionByFields' is the wrong type '{type_name(fields)}', expected type 'array'",
            )
        window_spec["partitionBy"] = {f: "$" + f for f in fields}
    stages: list[Stage] = []
    if windows:
        stages.append(STAGES.get("$setWindowFields")(window_spec, where))  # type: ignore[arg-type]
    if values:
        stages.append(STAGES.get("$addFields")(values, where))  # type: ignore[arg-type]
    return stages
