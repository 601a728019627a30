"""$unwind.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/unwind/

The path is followed through embedded documents only (an array before the
last component leaves nothing to unwind). An array yields one document per
element, its index in ``includeArrayIndex`` as a long; any other non-null
value is output once with a null index. Null, missing and empty arrays
produce nothing unless ``preserveNullAndEmptyArrays``, which outputs the
document as it is (an empty array removed from it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson import Int64

from foliodb.aggregation.pipeline import STAGES, Docs, Stage, Where
from foliodb.errors import location
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.paths import MISSING
from foliodb.query.reshape import get_path, set_path, split_path


def _path(value: Any) -> tuple[str, ...]:
    if not is_string(value):
        raise location(28808, f"expected a string as the path for $unwind stage, got {type_name(value)}")
    if not value.startswith("$"):
        raise location(28818, "path option to $unwind stage should be prefixed with a '$': " + value)
    return split_path(value[1:])


@STAGES.register("$unwind")
def stage_unwind(spec: Any, where: Where) -> Stage:
    index_field: tuple[str, ...] | None = None
    preserve = False
    if is_string(spec):
        parts = _path(spec)
    elif isinstance(spec, Mapping):
        path_spec: Any = MISSING
        for key, value in spec.items():
            if key == "path":
                path_spec = value
            elif key == "preserveNullAndEmptyArrays":
                if not isinstance(value, bool):
                    raise location(
                        28809,
                        "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage, "
                        f"got {type_name(value)}",
                    )
                preserve = value
            elif key == "includeArrayIndex":
                if not is_string(value) or not value:
                    shown = type_name(value) if not is_string(value) else "empty string"
                    raise location(
                        28810,
                        f"expected a non-empty string for the includeArrayIndex option to $unwind stage, got {shown}",
                    )
                if value.startswith("$"):
                    raise location(
                        28822, f"includeArrayIndex option to $unwind stage should not be prefixed with a '$': {value}"
                    )
                index_field = split_path(value)
            else:
                raise location(28811, f"unrecognized option to $unwind stage: {key}")
        if path_spec is MISSING:
            raise location(28812, "no path specified to $unwind stage")
        parts = _path(path_spec)
    else:
        raise location(
            15981, f"expected either a string or an object as specification for $unwind stage, got {type_name(spec)}"
        )

    def emit(doc: dict[str, Any], value: Any, index: Any) -> dict[str, Any]:
        return with_index(set_path(doc, parts, value), index)

    def with_index(doc: dict[str, Any], index: Any) -> dict[str, Any]:
        return doc if index_field is None else set_path(doc, index_field, index)

    def run(docs: Docs) -> Docs:
        for doc in docs:
            value = get_path(doc, parts)
            if isinstance(value, list):
                if value:
                    for i, element in enumerate(value):
                        yield emit(doc, element, Int64(i))
                elif preserve:
                    yield emit(doc, MISSING, None)
            elif value is None or value is MISSING:
                if preserve:
                    yield with_index(doc, None)
            else:
                yield emit(doc, value, None)

    unwound = {parts[0]} | ({index_field[0]} if index_field else set())
    return Stage("$unwind", spec, run, keeps=lambda f: f not in unwound)
