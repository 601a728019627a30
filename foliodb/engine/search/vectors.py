"""Vectors: reading them from documents and queries, and scoring them.

A document's vector at ``path`` (reached through embedded documents, never
through arrays, as MongoDB Vector Search indexes it) is an array of exactly
``numDimensions`` numbers, or a BSON vector (binary subtype 9) of FLOAT32 or
INT8 elements of that length, or of PACKED_BIT whose bits (as 0.0/1.0) number
that many. Anything else - a missing field, another length, a non-number -
leaves the document out of the index, as MongoDB does. With ``cosine``, a
zero vector is left out too (it has no direction).

Vectors are kept as float32 (MongoDB indexes float32 vectors); scores are
computed in float64 from those float32 values, with MongoDB's normalisation
to [0, 1], and then rounded to float32 precision, as MongoDB's similarity is a
float (so two documents exactly as similar tie, and then come in ``_id``
order, instead of differing in the last bits of a float64):

* cosine:     (1 + cos(q, v)) / 2
* dotProduct: (1 + q . v) / 2
* euclidean:  1 / (1 + |q - v|)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson import Decimal128, Int64
from bson.binary import Binary, BinaryVectorDtype

from foliodb.engine.search import numeric
from foliodb.errors import CommandError, ErrorCode

np = numeric.np

_NUMBER_TYPES = (int, float, Int64, Decimal128)
_FLOAT = {float}


def numbers(value: list[Any]) -> list[float] | None:
    """An array's numbers as floats (None if any element is not a number): the general path of
    :func:`as_vector`."""
    for x in value:
        if type(x) not in _NUMBER_TYPES:
            return None
    return [float(x.to_decimal()) if type(x) is Decimal128 else float(x) for x in value]


def _binary_vector(value: Binary) -> list[float] | None:
    vector = value.as_vector()
    if vector.dtype == BinaryVectorDtype.PACKED_BIT:
        bits = [((int(byte) >> (7 - i)) & 1) for byte in vector.data for i in range(8)]
        return [float(b) for b in bits[: len(bits) - vector.padding]]
    return [float(x) for x in vector.data]


def as_vector(value: Any) -> list[float] | None:
    """The numbers of a vector value (an array of numbers or a BSON vector), or None."""
    if isinstance(value, list):
        if set(map(type, value)) <= _FLOAT:
            # The usual embedding, doubles only: already what the general path makes of it, at a
            # tenth of its cost (a change-log catch-up reads every written vector through here).
            return value
        return numbers(value)
    if isinstance(value, Binary) and value.subtype == 9:
        try:
            return _binary_vector(value)
        except (ValueError, TypeError):
            return None
    return None


def at_path(doc: Mapping[str, Any], parts: tuple[str, ...]) -> Any:
    """The value at a dotted path through embedded documents only; None when there is none."""
    value: Any = doc
    for part in parts:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _row(values: list[float], similarity: str) -> Any:
    """float32 numbers; None when they cannot be scored (infinite, NaN, or a zero vector under
    cosine)."""
    with np.errstate(over="ignore"):  # a double past float32's range becomes inf: left out below
        row = np.asarray(values, dtype=np.float32)
    if not np.all(np.isfinite(row)) or (similarity == "cosine" and not row.any()):
        return None
    return row


def prepared(values: list[float] | None, dimensions: int, similarity: str) -> Any:
    """The float32 row stored for a document's vector, or None when the value is not indexed."""
    if values is None or len(values) != dimensions:
        return None
    return _row(values, similarity)


def query_row(value: Any, dimensions: int, similarity: str, path: str) -> Any:
    """A $vectorSearch ``queryVector`` as the row it is compared with."""
    values = as_vector(value)
    if values is None:
        raise CommandError(
            ErrorCode.TypeMismatch,
            '"$vectorSearch.queryVector" must be an array of numbers or a BSON vector (binary subtype 9)',
        )
    if len(values) != dimensions:
        raise CommandError(
            ErrorCode.BadValue,
            f"vector field is indexed with {dimensions} dimensions but queried with {len(values)} (path '{path}')",
        )
    row = _row(values, similarity)
    if row is None:
        raise CommandError(ErrorCode.BadValue, "queryVector must hold finite numbers, not all zero for cosine")
    return row


def scores(rows: Any, query: Any, similarity: str) -> Any:
    """MongoDB's normalised score of each row (float64 values of float32 precision)."""
    if len(rows) == 0:
        return np.zeros(0, dtype=np.float64)
    matrix = np.asarray(rows, dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    if similarity == "euclidean":
        score = 1.0 / (1.0 + np.sqrt(np.maximum(((matrix - q) ** 2).sum(axis=1), 0.0)))
    elif similarity == "cosine":
        score = (1.0 + (matrix @ q) / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(q))) / 2.0
    else:
        score = (1.0 + matrix @ q) / 2.0
    return score.astype(np.float32).astype(np.float64)
