"""$setWindowFields.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/setWindowFields/

The input is sorted by (partition key, ``sortBy``) with the external sorter,
as MongoDB's desugaring into ``$sort`` + ``$_internalSetWindowFields`` does;
then each partition (consecutive documents with one partition key; missing
is null, an array is an error) is held in memory, every output function is
computed over it (:mod:`foliodb.aggregation.window`), and its documents are
emitted with the output fields set. A partition larger than
``LIMITS.window_bytes`` fails with ExceededMemoryLimit (FolioDB does not
spill partitions).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from foliodb.aggregation.pipeline import LIMITS, STAGES, Docs, Stage, Where, approx_size
from foliodb.aggregation.window import SortBy, WindowFunction, compile_window_function, sort_by_spec
from foliodb.engine.sorter import sort_documents
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query import keystring
from foliodb.query.bsontypes import type_name
from foliodb.query.idl import check_fields, wrong_type
from foliodb.query.paths import MISSING
from foliodb.query.reshape import set_path, split_path


def _partition_too_big() -> CommandError:
    return CommandError(
        ErrorCode.ExceededMemoryLimit,
        f"Exceeded memory limit in DocumentSourceSetWindowFields, used more than {LIMITS.window_bytes} bytes",
    )


@STAGES.register("$setWindowFields")
def stage_setWindowFields(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(
            ErrorCode.FailedToParse,
            f"the $setWindowFields stage specification must be an object, found {type_name(spec)}",
        )
    check_fields(spec, "$setWindowFields", ("partitionBy", "sortBy", "output"), ("output",))
    output = spec["output"]
    if not isinstance(output, Mapping):
        raise CommandError(
            ErrorCode.TypeMismatch,
            f"BSON field '$setWindowFields.output' is the wrong type '{type_name(output)}', expected type 'object'",
        )
    sort_by: SortBy | None = None
    if "sortBy" in spec:
        if not isinstance(spec["sortBy"], Mapping):
            raise wrong_type("$setWindowFields.sortBy", spec["sortBy"], "object")
        sort_by = sort_by_spec(spec["sortBy"], where.scope.collator)
    partition_by = where.expression(spec["partitionBy"]) if "partitionBy" in spec else None
    functions: list[tuple[tuple[str, ...], WindowFunction]] = []
    seen: list[tuple[str, ...]] = []
    for name, fn_spec in output.items():
        parts = split_path(name)
        for other in seen:
            shorter = min(len(other), len(parts))
            if other[:shorter] == parts[:shorter]:
                raise location(6307900, "$setWindowFields 'output' specification contains two conflicting paths")
        seen.append(parts)
        if not isinstance(fn_spec, Mapping):
            raise CommandError(ErrorCode.FailedToParse, f"The field '{name}' must be an object")
        functions.append((parts, compile_window_function(fn_spec, sort_by, where.scope)))
    vars_for = where.variables()
    allow_disk_use = where.env.allow_disk_use
    by = partition_by
    order = sort_by

    def partition_key(doc: dict[str, Any]) -> bytes:
        if by is None:
            return b""
        value = by(doc, vars_for(doc))
        if isinstance(value, list):
            raise CommandError(
                ErrorCode.TypeMismatch, "An expression used to partition cannot evaluate to value of type array"
            )
        return keystring.encode(None if value is MISSING else value)

    def partitions(docs: Docs) -> Iterator[list[dict[str, Any]]]:
        if by is None and order is None:
            ordered: Iterator[dict[str, Any]] = iter(docs)
        else:
            sort_key = order.key if order is not None else None

            def key(doc: dict[str, Any]) -> bytes:
                k = partition_key(doc)
                return k + sort_key(doc) if sort_key is not None else k

            ordered = sort_documents(docs, key, max_memory_bytes=LIMITS.sort_bytes, allow_disk_use=allow_disk_use)
        current: list[dict[str, Any]] = []
        current_key: bytes | None = None
        used = 0
        for doc in ordered:
            k = partition_key(doc)
            if current and k != current_key:
                yield current
                current, used = [], 0
            current_key = k
            current.append(doc)
            used += approx_size(doc)
            if used > LIMITS.window_bytes:
                raise _partition_too_big()
        if current:
            yield current

    def run(docs: Docs) -> Docs:
        for partition in partitions(docs):
            columns = [(parts, fn.compute(partition, vars_for)) for parts, fn in functions]
            for i, doc in enumerate(partition):
                out = doc
                for parts, values in columns:
                    out = set_path(out, parts, values[i])
                yield out

    return Stage("$setWindowFields", spec, run)
