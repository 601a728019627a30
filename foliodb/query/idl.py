"""MongoDB's IDL errors for the fields of a specification object.

Where MongoDB parses a stage's or an operator's argument with its IDL, an
unknown field is 40415, a missing required field 40414 and a field of the
wrong type TypeMismatch, each naming the field by its dotted place
(``'$merge.into.db'``). :func:`check_fields` reports unknown fields first,
in the specification's order, then missing ones in the order given.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from typing import Any

from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query.bsontypes import type_name


def unknown_field(where: str, key: str) -> CommandError:
    return location(40415, f"BSON field '{where}.{key}' is an unknown field.")


def missing_field(where: str, key: str) -> CommandError:
    return location(40414, f"BSON field '{where}.{key}' is missing but a required field")


def wrong_type(field: str, value: Any, expected: str) -> CommandError:
    """``field`` is the whole dotted place (``'$densify.field'``)."""
    return CommandError(
        ErrorCode.TypeMismatch,
        f"BSON field '{field}' is the wrong type '{type_name(value)}', expected type '{expected}'",
    )


def check_fields(spec: Mapping[str, Any], where: str, known: Container[str], required: Iterable[str] = ()) -> None:
    for key in spec:
        if key not in known:
            raise unknown_field(where, key)
    for key in required:
        if key not in spec:
            raise missing_field(where, key)
