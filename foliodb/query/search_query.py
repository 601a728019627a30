"""A checked ``$search`` / ``$searchMeta`` request: what the stage hands the engine.

The aggregation stage (aggregation/stages/text_search.py) checks the stage's own fields
once; the operator and the options that depend on the index (paths, facets, sort fields)
are compiled by the engine (engine/search/text/), which knows the index's definition.
``operator`` is ``(name, body)``, None for a ``facet`` collector without one (every
document); ``facets`` is the collector's ``facets`` document, or None; ``return_scope`` the
``returnScope`` document, whose path the engine checks against the index.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class SearchQuery:
    index: str
    operator: tuple[str, Any] | None
    facets: Mapping[str, Any] | None = None
    highlight: Mapping[str, Any] | None = None
    count: Mapping[str, Any] | None = None
    sort: Mapping[str, Any] | None = None
    score_details: bool = False
    stored_source: bool = False
    meta_only: bool = False  # $searchMeta
    after: Any = None  # searchAfter's token (checked by the engine)
    before: Any = None  # searchBefore's token
    return_scope: Any = None  # returnScope as given (checked by the engine): {path}
