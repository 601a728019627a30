"""The numerical libraries search runs on, named once and loaded on first use.

numpy (exact scoring, the text engine's postings) and usearch (the HNSW
graph) come with the ``foliodb[search]`` extra; without them FolioDB still
stores and lists search indexes, and a search fails with an error naming the
extra to install.

Both load when a search first touches them, not when FolioDB is imported:
numpy and usearch cost a quarter of a second and about 15 MiB of resident
memory, which an application that never searches should not pay.
:class:`_Lazy` stands in for the module; after the first access each
attribute is kept on the stand-in, so later accesses cost what a module
attribute costs.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from foliodb.errors import CommandError, ErrorCode

MISSING_EXTRA = (
    "vector search needs numpy and usearch: install them with `pip install foliodb[search]` "
    "(or `pip install numpy usearch`)"
)


class _Lazy:
    """A module imported at its first attribute access."""

    def __init__(self, name: str) -> None:
        self._name = name

    def _module(self) -> ModuleType:
        try:
            return importlib.import_module(self._name)
        except ImportError as exc:
            raise CommandError(ErrorCode.CommandNotSupported, MISSING_EXTRA) from exc

    def __getattr__(self, attribute: str) -> Any:
        # Called only when the attribute is not yet in the instance's __dict__.
        value = getattr(self._module(), attribute)
        setattr(self, attribute, value)
        return value


np: Any = _Lazy("numpy")
usearch_index: Any = _Lazy("usearch.index")


def available() -> bool:
    """Whether the search extra is installed (imports it: call where a search is about to run)."""
    try:
        importlib.import_module("numpy")
        importlib.import_module("usearch.index")
    except ImportError:
        return False
    return True


def require() -> None:
    """Fail clearly when the search extra is not installed."""
    if not available():
        raise CommandError(ErrorCode.CommandNotSupported, MISSING_EXTRA)
