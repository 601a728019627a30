"""Search index definitions: checked once, when created or updated.

Two types, as MongoDB Search defines them:

* ``vectorSearch``: ``{fields: [...]}``, each field
  ``{type: "vector", path, numDimensions (1..8192), similarity: "cosine" |
  "euclidean" | "dotProduct", quantization?: "none" | "scalar" | "binary",
  hnswOptions?: {maxEdges (16..64), numEdgeCandidates (100..3200)}}`` or
  ``{type: "filter", path}``; at least one vector field, no path twice.
* ``search``: ``{mappings: {dynamic: bool | {typeSet}, fields: {<name>:
  <field definition or a list of them>}}, analyzer?, searchAnalyzer?,
  analyzers?, storedSource?, synonyms?, numPartitions?, typeSets?}``, compiled
  by :mod:`foliodb.engine.search.text.mapping` (analyzers named must exist,
  custom ones are built, field options checked).

A bad definition fails the command with BadValue, naming the offending place
as MongoDB Search does (``"definition.fields[0].numDimensions"``); the exact
wording of Atlas's messages is not published, so the text is FolioDB's own
(docs/differences.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from foliodb.errors import CommandError, ErrorCode
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import is_string, type_name

if TYPE_CHECKING:
    from foliodb.engine.search.text.mapping import TextDefinition

MAX_DIMENSIONS = 8192
SIMILARITIES = ("cosine", "euclidean", "dotProduct")
QUANTIZATIONS = ("none", "scalar", "binary")
_SEARCH_TOP = frozenset(
    {
        "analyzer",
        "analyzers",
        "mappings",
        "numPartitions",
        "searchAnalyzer",
        "storedSource",
        "synonyms",
        "typeSets",
        "sort",
    }
)


def invalid(place: str, problem: str) -> CommandError:
    """A definition error, naming its place as MongoDB Search does."""
    return CommandError(ErrorCode.BadValue, f'Invalid index definition: "{place}" {problem}')


@dataclass(frozen=True, slots=True)
class VectorField:
    path: str
    dimensions: int
    similarity: str  # cosine, euclidean, dotProduct
    quantization: str  # none, scalar, binary
    max_edges: int  # HNSW connectivity (hnswOptions.maxEdges)
    edge_candidates: int  # HNSW construction beam (hnswOptions.numEdgeCandidates)


@dataclass(frozen=True, slots=True)
class VectorDefinition:
    vectors: tuple[VectorField, ...]
    filters: tuple[str, ...]  # the paths a $vectorSearch filter may use

    def vector(self, path: str) -> VectorField | None:
        return next((field for field in self.vectors if field.path == path), None)


Definition: TypeAlias = "VectorDefinition | TextDefinition"  # TextDefinition: engine/search/text/mapping.py


def parse(kind: str, definition: Any) -> Definition:
    if not isinstance(definition, Mapping):
        raise invalid("definition", f"must be a document, found {type_name(definition)}")
    if kind == "vectorSearch":
        return _vector_definition(definition)
    return _text_definition(definition)


def _integer(value: Any, place: str, low: int, high: int) -> int:
    if (
        not cmp.is_number(value)
        or isinstance(value, bool)
        or float(cmp.number_value(value)) != int(cmp.number_value(value))
    ):
        raise invalid(place, "must be an integer")
    number = int(cmp.number_value(value))
    if not low <= number <= high:
        raise invalid(place, f"must be between {low} and {high}")
    return number


def _choice(value: Any, place: str, choices: tuple[str, ...]) -> str:
    if not is_string(value) or value not in choices:
        raise invalid(place, f"must be one of [{', '.join(choices)}]")
    return str(value)


def _path(field: Mapping[str, Any], place: str) -> str:
    if "path" not in field:
        raise invalid(f"{place}.path", "is required")
    path = field["path"]
    if not is_string(path) or not path or path.startswith("$") or ".." in path or path.endswith("."):
        raise invalid(f"{place}.path", "must be a non-empty field path")
    return str(path)


def _vector_definition(definition: Mapping[str, Any]) -> VectorDefinition:
    for key in definition:
        if key not in ("fields", "storedSource"):
            raise invalid(f"definition.{key}", "is not a valid field")
    fields = definition.get("fields")
    if not isinstance(fields, list):
        raise invalid("definition.fields", "is required and must be an array")
    vectors: list[VectorField] = []
    filters: list[str] = []
    seen: set[str] = set()
    for i, field in enumerate(fields):
        place = f"definition.fields[{i}]"
        if not isinstance(field, Mapping):
            raise invalid(place, "must be a document")
        kind = _choice(field.get("type"), f"{place}.type", ("vector", "filter"))
        path = _path(field, place)
        if path in seen:
            raise invalid(f"{place}.path", f"'{path}' is indexed more than once")
        seen.add(path)
        if kind == "filter":
            for key in field:
                if key not in ("type", "path"):
                    raise invalid(f"{place}.{key}", "is not a valid field of a filter field")
            filters.append(path)
            continue
        vectors.append(_vector_field(field, place, path))
    if not vectors:
        raise invalid("definition.fields", "must contain at least one field of type vector")
    return VectorDefinition(tuple(vectors), tuple(filters))


def _vector_field(field: Mapping[str, Any], place: str, path: str) -> VectorField:
    for key in field:
        if key not in ("type", "path", "numDimensions", "similarity", "quantization", "hnswOptions"):
            raise invalid(f"{place}.{key}", "is not a valid field of a vector field")
    if "numDimensions" not in field:
        raise invalid(f"{place}.numDimensions", "is required")
    dimensions = _integer(field["numDimensions"], f"{place}.numDimensions", 1, MAX_DIMENSIONS)
    if "similarity" not in field:
        raise invalid(f"{place}.similarity", "is required")
    similarity = _choice(field["similarity"], f"{place}.similarity", SIMILARITIES)
    quantization = _choice(field.get("quantization", "none"), f"{place}.quantization", QUANTIZATIONS)
    if quantization == "binary" and dimensions % 8:
        raise invalid(f"{place}.numDimensions", "must be a multiple of 8 with binary quantization")
    options = field.get("hnswOptions", {})
    if not isinstance(options, Mapping):
        raise invalid(f"{place}.hnswOptions", "must be a document")
    for key in options:
        if key not in ("maxEdges", "numEdgeCandidates"):
            raise invalid(f"{place}.hnswOptions.{key}", "is not a valid field")
    max_edges = _integer(options.get("maxEdges", 16), f"{place}.hnswOptions.maxEdges", 16, 64)
    candidates = _integer(options.get("numEdgeCandidates", 100), f"{place}.hnswOptions.numEdgeCandidates", 100, 3200)
    return VectorField(path, dimensions, similarity, quantization, max_edges, candidates)


def _text_definition(definition: Mapping[str, Any]) -> TextDefinition:
    for key in definition:
        if key not in _SEARCH_TOP:
            raise invalid(f"definition.{key}", "is not a valid field")
    for name in ("analyzer", "searchAnalyzer"):
        if name in definition and not is_string(definition[name]):
            raise invalid(f"definition.{name}", "must be a string")
    from foliodb.engine.search.text.mapping import TextDefinition  # the text engine imports this module

    return TextDefinition(definition)
