"""Server-side JavaScript: ``$where``, ``$function``, ``$accumulator`` and ``mapReduce``.

:mod:`~foliodb.javascript.runtime` runs code in a sandboxed, bounded,
interruptible QuickJS context; :mod:`~foliodb.javascript.shell` is the
JavaScript every context starts with (the shell's types, ``emit``,
``tojson``); :mod:`~foliodb.javascript.values` converts BSON values.
Like :mod:`foliodb.interrupt`, this package sits below ``query/``, which
uses it, and knows nothing of commands or storage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from foliodb import interrupt
from foliodb.errors import CommandError, ErrorCode

if TYPE_CHECKING:
    from foliodb.javascript.runtime import Runtime


def settings() -> tuple[bool, int]:
    """Is server-side JavaScript enabled for this thread's operation, and its heap limit (MB)."""
    op = interrupt.current()
    if op is None:
        return True, interrupt.DEFAULT_JS_HEAP_LIMIT_MB
    return op.javascript, op.js_heap_limit_mb


def new_runtime(scope: Any = None) -> Runtime:
    """A context for the running operation; 31264 when scripting is off (``--noscripting``)."""
    enabled, heap_mb = settings()
    if not enabled:
        raise CommandError(31264, "Cannot run server-side javascript without the javascript engine enabled")
    # QuickJS and ctypes load on first use: a client that runs no JavaScript never pays for them.
    try:
        from foliodb.javascript.runtime import Runtime
    except ImportError as exc:  # the engine's wheel is missing or shadowed: the message says which
        raise CommandError(ErrorCode.InternalError, str(exc)) from None
    return Runtime(heap_mb, scope)
