"""Server-side JavaScript: ``$where``, ``$function``, ``$accumulator`` and ``mapReduce``.

:mod:`~foliodb.javascript.runtime` runs code in a sandboxed, bounded,
interruptible QuickJS context; :mod:`~foliodb.javascript.shell` is the
JavaScript every context starts with (the shell's types, ``emit``,
``tojson``); :mod:`~foliodb.javascript.values` converts BSON values.
Like :mod:`foliodb.interrupt`, this package sits below ``query/``, which
uses it, and knows nothing of commands or storage: the stored functions of
a database's ``system.js`` come from the running operation
(:attr:`~foliodb.interrupt.Operation.stored_javascript`, which the command
executor sets), as documents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from foliodb import interrupt
from foliodb.errors import CommandError, ErrorCode

if TYPE_CHECKING:
    from foliodb.javascript.runtime import Runtime


def settings() -> tuple[bool, int, int]:
    """Is server-side JavaScript enabled for this thread's operation, its heap limit and the
    limit of all running scripts' heaps together (MB)."""
    op = interrupt.current()
    if op is None:
        return True, interrupt.DEFAULT_JS_HEAP_LIMIT_MB, interrupt.DEFAULT_JS_HEAP_TOTAL_MB
    return op.javascript, op.js_heap_limit_mb, op.js_heap_total_mb


def stored_functions() -> Sequence[Mapping[str, Any]]:
    """The ``system.js`` documents of the running operation's database (none outside an operation)."""
    op = interrupt.current()
    if op is None or op.stored_javascript is None:
        return []
    return op.stored_javascript(op.db)


def new_runtime(scope: Any = None, stored: bool = False) -> Runtime:
    """A context for the running operation; 31264 when scripting is off (``--noscripting``).

    ``stored``: the database's ``system.js`` functions are globals in it. mongod
    loads them for ``$where`` and ``mapReduce`` only, not for ``$function`` or
    ``$accumulator`` (its ExpressionContext::getJsExecWithScope: "Stored
    procedures are only loaded for the $where expression and MapReduce command")."""
    enabled, heap_mb, total_mb = settings()
    if not enabled:
        raise CommandError(31264, "Cannot run server-side javascript without the javascript engine enabled")
    # QuickJS and ctypes load on first use: a client that runs no JavaScript never pays for them.
    try:
        from foliodb.javascript.runtime import Runtime
    except ImportError as exc:  # the engine's wheel is missing or shadowed: the message says which
        raise CommandError(ErrorCode.InternalError, str(exc)) from None
    return Runtime(heap_mb, scope, stored_functions() if stored else (), total_mb=total_mb)
