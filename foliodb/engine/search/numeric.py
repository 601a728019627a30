"""The numerical libraries vector search runs on, named once.

numpy (exact scoring) and usearch (the HNSW graph) come with the
``foliodb[search]`` extra; without them FolioDB still stores and lists
search indexes, and a ``$vectorSearch`` fails with an error naming the
extra to install.
"""

from __future__ import annotations

from typing import Any

from foliodb.errors import CommandError, ErrorCode

np: Any
usearch_index: Any
try:
    import numpy as np
    from usearch import index as usearch_index
except ImportError:  # pragma: no cover - the test extra installs both
    np = None
    usearch_index = None

MISSING_EXTRA = (
    "vector search needs numpy and usearch: install them with `pip install foliodb[search]` "
    "(or `pip install numpy usearch`)"
)


def require() -> None:
    """Fail clearly when the search extra is not installed."""
    if np is None or usearch_index is None:
        raise CommandError(ErrorCode.CommandNotSupported, MISSING_EXTRA)
