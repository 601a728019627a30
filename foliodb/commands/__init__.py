"""The command layer: one handler per MongoDB command, one module per family.

Importing this package registers every command; :class:`Executor` runs them.
"""

from foliodb.commands import aggregate, collections, cursors, diagnostics, explain, find, indexes, write  # noqa: F401
from foliodb.commands.executor import Executor, Request

__all__ = ["Executor", "Request"]
