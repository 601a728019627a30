"""A checked ``$vectorSearch`` request: what the stage hands the engine.

The aggregation stage (aggregation/stages/search.py) checks the stage's fields once and
builds it; the engine (engine/search/vector_search.py) runs it. ``num_candidates`` is None
exactly when ``exact`` is true; ``filter`` is the filter document (checked against the
index's filter fields when the index is known, at run time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class VectorQuery:
    index: str
    path: str
    query_vector: Any  # a list of numbers or a BSON vector (Binary subtype 9)
    limit: int
    num_candidates: int | None
    exact: bool
    filter: Any
