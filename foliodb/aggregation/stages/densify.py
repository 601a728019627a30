"""$densify.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/densify/

The input is sorted by (partition fields, field) - only by the field for
``bounds: "full"`` - and every missing step of the sequence is added as a
new document holding just the field and the partition fields. Steps are
counted from the lower bound: the smallest value of the partition
(``"partition"``), of all documents (``"full"``, applied to every partition)
or the given lower bound (an explicit ``[lower, upper]``, upper exclusive;
documents outside pass through; with no partitions the range is filled even
without input). Dates step by ``unit`` (calendar months for
month/quarter/year). Documents without the field pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from foliodb import interrupt
from foliodb.aggregation.accumulators import is_numeric
from foliodb.aggregation.pipeline import LIMITS, STAGES, Docs, Stage, Where
from foliodb.aggregation.window import add_numbers, add_time, is_integral, parse_time_unit
from foliodb.engine.sorter import sort_documents
from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query import keystring
from foliodb.query.bsontypes import is_string, type_name
from foliodb.query.collation import key_encoder
from foliodb.query.compare import DATE, bracket, compare
from foliodb.query.idl import check_fields, wrong_type
from foliodb.query.paths import MISSING
from foliodb.query.reshape import get_path, set_path, split_path
from foliodb.query.sort import compile_sort


def _step_up(value: Any, step: Any, unit: str | None) -> Any:
    if unit is not None:
        return add_time(value, unit, int(step))
    return add_numbers(value, step)


def _range(spec: Any) -> tuple[Any, str | None, Any]:
    if not isinstance(spec, Mapping):
        raise wrong_type("$densify.range", spec, "object")
    check_fields(spec, "$densify.range", ("step", "unit", "bounds"), ("step", "bounds"))
    step = spec["step"]
    if not is_numeric(step) or compare(step, 0) <= 0:
        raise location(5733401, "The step parameter in a range statement must be a strictly positive numeric value")
    unit = None
    if "unit" in spec:
        if not is_integral(step):
            raise location(
                6586400, "The step parameter in a range statement must be a whole number when densifying a date range"
            )
        unit = parse_time_unit(spec["unit"])
    bounds = spec["bounds"]
    if isinstance(bounds, list):
        if len(bounds) != 2:
            raise location(5733403, "A bounding array in a range statement must have exactly two elements")
        lo, hi = bounds
        if compare(lo, hi) > 0:
            raise location(5733402, "A bounding array must be an ascending array of either two dates or two numbers")
        if is_numeric(lo):
            if unit is not None:
                raise location(5733409, "Numeric bounds may not have unit parameter")
            if not is_numeric(hi):
                raise location(5733406, "A bounding array must contain either both dates or both numeric types")
            if type_name(lo) != type_name(hi) or type_name(lo) != type_name(step):
                raise location(5876900, "Upper bound, lower bound, and step must all have the same type")
        elif bracket(lo) == DATE:
            if bracket(hi) != DATE:
                raise location(5733405, "A bounding array must contain either both dates or both numeric types")
            if unit is None:
                raise location(5733410, "A bounding array of dates must specify a unit")
        else:
            raise location(5946800, "Explicit bounds must be numeric or dates")
    elif is_string(bounds):
        if bounds not in ("full", "partition"):
            raise location(5946802, "Bounds string must either be 'full' or 'partition'")
    else:
        raise location(
            5733404,
            "The bounds in a range statement must be the string 'full', 'partition', or an ascending array of two "
            "numbers or two dates",
        )
    return step, unit, bounds


@STAGES.register("$densify")
def stage_densify(spec: Any, where: Where) -> Stage:
    if not isinstance(spec, Mapping):
        raise CommandError(
            ErrorCode.FailedToParse, f"The $densify stage specification must be an object, found {type_name(spec)}"
        )
    check_fields(spec, "$densify", ("field", "partitionByFields", "range"), ("field", "range"))
    field = spec["field"]
    if not is_string(field):
        raise wrong_type("$densify.field", field, "string")
    field_parts = split_path(field)
    partition_fields = spec.get("partitionByFields", [])
    if not isinstance(partition_fields, list) or not all(is_string(f) for f in partition_fields):
        raise wrong_type("$densify.partitionByFields", partition_fields, "array")
    for name in partition_fields:
        if name.startswith(field):
            raise location(
                8993000, f"partitionByFields '{name}' cannot include field '{field}' that is being densified."
            )
        if field.startswith(name):
            raise location(
                9554500, f"field '{field}' that is being densified cannot include partitionByFields '{name}'."
            )
    step, unit, bounds = _range(spec["range"])
    if bounds == "partition" and not partition_fields:
        raise location(
            5733408,
            "One cannot specify the bounds as 'partition' without specifying a non-empty array of partitionByFields. "
            "You may have meant to specify 'full' bounds.",
        )
    partition_parts = [split_path(name) for name in partition_fields]
    sort_fields = ([] if bounds == "full" else list(partition_fields)) + [field]
    # Partitions are told apart, and sorted, under the pipeline's collation,
    # as mongod's partition table (its expression context's value comparator) does.
    collator = where.scope.collator
    sort_key = compile_sort(dict.fromkeys(sort_fields, 1), collator=collator).key
    encode_partition = key_encoder(collator)
    allow_disk_use = where.env.allow_disk_use

    def value_of(doc: dict[str, Any]) -> Any:
        value = get_path(doc, field_parts)
        if value is None or value is MISSING:
            return MISSING
        if unit is None and not is_numeric(value):
            raise location(5733201, f"Densify field type must be numeric, but found {type_name(value)}")
        if unit is not None and bracket(value) != DATE:
            raise location(
                6053600, f"Densify field type must be a date when a unit is specified, but found {type_name(value)}"
            )
        return value

    def partition_of(doc: dict[str, Any]) -> tuple[bytes, list[Any]]:
        values = [get_path(doc, parts) for parts in partition_parts]
        return encode_partition([None if v is MISSING else v for v in values]), values

    def generated(value: Any, partition: list[Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for parts, v in zip(partition_parts, partition, strict=True):
            if v is not MISSING:
                out = set_path(out, parts, v)
        return set_path(out, field_parts, value)

    def fill(
        start: Any, stop: Any, existing: list[Any], partition: list[Any], inclusive: bool
    ) -> Iterator[dict[str, Any]]:
        """New documents for grid values from ``start`` below ``stop`` absent from ``existing``."""
        present = {keystring.encode(v) for v in existing}
        value = start
        n = 0
        while compare(value, stop) < 0 or (inclusive and compare(value, stop) == 0):
            n += 1
            if not n & 255:
                interrupt.check()
            if keystring.encode(value) not in present:
                yield generated(value, partition)
            value = _step_up(value, step, unit)

    def densify_partition(
        docs: list[dict[str, Any]], partition: list[Any], lo: Any, hi: Any, inclusive: bool
    ) -> Iterator[dict[str, Any]]:
        """The partition's documents (in field order) with the missing grid values between them."""
        values = [value_of(d) for d in docs]
        present = [v for v in values if v is not MISSING]
        grid = fill(lo, hi, present, partition, inclusive) if lo is not MISSING else iter(())
        pending = next(grid, None)
        for doc, value in zip(docs, values, strict=True):
            while pending is not None and value is not MISSING and compare(get_path(pending, field_parts), value) < 0:
                yield pending
                pending = next(grid, None)
            yield doc
        while pending is not None:
            yield pending
            pending = next(grid, None)

    def run(docs: Docs) -> Docs:
        ordered = sort_documents(docs, sort_key, max_memory_bytes=LIMITS.sort_bytes, allow_disk_use=allow_disk_use)
        groups: dict[bytes, tuple[list[Any], list[dict[str, Any]]]] = {}
        if bounds == "full":
            # One pass for the global range, then each partition in order of appearance.
            low: Any = MISSING
            high: Any = MISSING
            for doc in ordered:
                key, values = partition_of(doc)
                groups.setdefault(key, (values, []))[1].append(doc)
                v = value_of(doc)
                if v is not MISSING:
                    low = v if low is MISSING else low
                    high = v
            for values, members in groups.values():
                yield from densify_partition(members, values, low, high, True)
            return
        current: list[dict[str, Any]] = []
        current_key: bytes | None = None
        current_values: list[Any] = []
        for doc in ordered:
            key, values = partition_of(doc)
            if current and key != current_key:
                yield from _bounded(current, current_values)
                current = []
            current_key, current_values = key, values
            current.append(doc)
        if current or (isinstance(bounds, list) and not partition_parts):
            # An explicit range without partitions is filled even when no document came.
            yield from _bounded(current, current_values)

    def _bounded(members: list[dict[str, Any]], values: list[Any]) -> Iterator[dict[str, Any]]:
        if isinstance(bounds, list):
            return densify_partition(members, values, bounds[0], bounds[1], False)
        present = [v for v in (value_of(d) for d in members) if v is not MISSING]
        if not present:
            return iter(members)
        return densify_partition(members, values, present[0], present[-1], True)

    return Stage("$densify", spec, run)
