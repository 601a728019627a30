"""A sandboxed JavaScript context for one operation's server-side code.

The engine is QuickJS, in its maintained fork quickjs-ng (the ``quickjs-ng``
wheel, a drop-in for the archived ``quickjs`` one, whose 2021 engine crashes
when an allocation fails near the heap limit), chosen over V8 (the
``mini_racer`` wheel) by measurement and by what each bounds. A call into
JavaScript with a small document costs about 5 microseconds on QuickJS and
about 240 on mini_racer, whose every call crosses to V8's own thread: for
``$where``, which calls once per document, that is the difference between a
usable and an unusable operator. Both are sandboxes by construction: the
context has the language's built-ins and nothing else (no ``require``,
``load``, ``fetch``, ``process``, no quickjs-libc ``std``/``os`` modules), so
user code can reach no file, socket or process. QuickJS also bounds each
context's heap (``jsHeapLimitMB``, as mongod) and its stack.

Invariants:

* A context belongs to one compiled program of one operation, and runs on one
  thread at a time: the wheel releases the GIL while JavaScript runs, so
  :class:`Runtime` holds a lock around every call (operations on other
  threads have contexts of their own and run in parallel).
* Long-running code stops at the operation's deadline (MaxTimeMSExpired) or
  when ``killOp`` marks it (Interrupted), as every other FolioDB loop does
  (:mod:`foliodb.interrupt`). The wheel's own time limit counts process CPU
  time and forbids callbacks, so instead a QuickJS interrupt handler,
  installed through ``ctypes`` (the extension exports
  ``JS_SetInterruptHandler``), polls the thread's operation every few
  thousand JavaScript steps.
* Memory: each context's heap is bounded by ``jsHeapLimitMB`` (as mongod's),
  lent out of a budget shared by every context alive in the process
  (``jsHeapLimitTotalMB``, FolioDB's own knob): a context gets its limit, or
  half of what is left of the budget, and fails to start (JSInterpreterFailure,
  "Out of memory") when less than :data:`MIN_HEAP_BYTES` is left; what it was lent
  comes back when the context is freed (at its operation's end). So scripts
  running at once never take more than the total, whatever they allocate.
* Any error of user code, of conversion or of a limit is a CommandError:
  JSInterpreterFailure (139) carrying the JavaScript message.
* The shell's globals are the context's own: a ``system.js`` entry of the
  same name (or a language built-in's) is left out, since the conversions
  find the shell's types by name (mongod's types are native, out of reach).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.metadata
import logging
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import _quickjs
import quickjs
from bson import Code

from foliodb import interrupt, lane
from foliodb.errors import CommandError, ErrorCode
from foliodb.javascript.shell import PRELUDE
from foliodb.javascript.values import from_json, to_json

log = logging.getLogger("foliodb")

_STACK_BYTES = 1024 * 1024
MIN_HEAP_BYTES = 8 * 1024 * 1024  # the least heap a context starts with (the prelude takes about 1 MB)


class _HeapBudget:
    """The bytes of heap lent to the contexts alive in this process."""

    def __init__(self) -> None:
        self.lent = 0
        self._lock = threading.Lock()

    def lend(self, wanted: int, total: int) -> int:
        """Up to ``wanted`` bytes and at most half of what is left of ``total`` (so scripts that
        start later still find room: a script alone gets its whole limit from the default
        total); 0 when less than MIN_HEAP_BYTES is left."""
        with self._lock:
            left = total - self.lent
            floor = min(wanted, MIN_HEAP_BYTES)
            if left < floor:
                return 0
            granted = min(wanted, max(floor, left // 2))
            self.lent += granted
            return granted

    def give_back(self, size: int) -> None:
        with self._lock:
            self.lent -= size


HEAP_BUDGET = _HeapBudget()
_UNSET = object()


def _check_engine() -> None:
    # Both wheels install `_quickjs`; where the archived one was installed first its
    # interpreter-specific extension outranks quickjs-ng's abi3 one on import.
    try:
        ours = {f.name for f in importlib.metadata.files("quickjs-ng") or ()}
    except importlib.metadata.PackageNotFoundError:
        ours = set()
    if Path(_quickjs.__file__ or "").name not in ours:
        raise ImportError(
            f"{_quickjs.__file__} is not quickjs-ng's engine (the archived `quickjs` package shadows it): "
            "run `pip uninstall quickjs quickjs-ng` and then `pip install quickjs-ng`"
        )


_check_engine()
_lib = ctypes.CDLL(_quickjs.__file__)
_Handler = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_lib.JS_SetInterruptHandler.argtypes = [ctypes.c_void_p, _Handler, ctypes.c_void_p]
_lib.JS_SetInterruptHandler.restype = None
_lib.JS_GetRuntimeOpaque.argtypes = [ctypes.c_void_p]
_lib.JS_GetRuntimeOpaque.restype = ctypes.c_void_p
# The extension's RuntimeData starts with PyObject_HEAD, then its JSRuntime pointer.
_RUNTIME_OFFSET = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)


def _should_stop(runtime: int | None, opaque: int | None) -> int:
    # Runs on the thread running the JavaScript, which is the operation's.
    op = interrupt.current()
    if op is None:
        return 0
    if op.killed:
        return 1
    deadline = op.deadline
    return 1 if deadline is not None and time.monotonic() > deadline else 0


_HANDLER = _Handler(_should_stop)  # module-level: ctypes must keep the callback alive


def _install_interrupt_handler(context: quickjs.Context) -> None:
    pointer = ctypes.c_void_p.from_address(id(context) + _RUNTIME_OFFSET).value
    # The runtime's opaque is the extension's own object: proof the layout is the one assumed.
    if not pointer or _lib.JS_GetRuntimeOpaque(pointer) != id(context):
        raise CommandError(ErrorCode.InternalError, "unexpected quickjs extension layout: cannot bound JavaScript")
    _lib.JS_SetInterruptHandler(pointer, _HANDLER, None)


def _failure(exc: Exception, context: quickjs.Context, throws: bool) -> CommandError:
    """The CommandError of a JavaScript exception (its first line, as mongod reports);
    ``throws``: the context's user code has a ``throw`` statement."""
    first = str(exc).split("\n", 1)[0].strip()
    if _should_stop(None, None):  # interrupted (QuickJS's handler, or sleep() cut short): the operation's error
        interrupt.check()
    if first == "InternalError: interrupted":
        return CommandError(ErrorCode.Interrupted, "operation was interrupted")
    memory = context.memory()
    # Running out of memory while raising "out of memory", QuickJS throws null (or an
    # InternalError it had no memory to give a message) instead, and may have freed the heap by
    # the time the error arrives: such an error from code that throws nothing itself is that; from
    # code with a `throw` it is taken as the code's own unless the heap is full.
    bare = first in ("null", "", "InternalError")
    full = bare and (not throws or memory["malloc_size"] > 0.9 * memory["malloc_limit"])
    if first == "InternalError: out of memory" or full:
        return CommandError(ErrorCode.JSInterpreterFailure, "Out of memory")
    return CommandError(ErrorCode.JSInterpreterFailure, first)


def _hex_md5(text: Any) -> str:
    return hashlib.md5(str(text).encode(), usedforsecurity=False).hexdigest()


def _sleep(millis: Any) -> None:
    """mongod's ``sleep(ms)`` (jstests slow ``$where`` down with it): a wait, out of the lane, that
    ends early once the operation is out of time, and ends the script once it is killed."""
    seconds = float(millis) / 1000.0 if isinstance(millis, int | float) and not isinstance(millis, bool) else 0.0
    until = time.monotonic() + seconds
    lane.leave()
    op = interrupt.current()
    while (left := until - time.monotonic()) > 0:
        if op is not None and op.killed:
            # Thrown into the script, which stops: the rest of it may be too short for QuickJS's
            # handler to run, and the error becomes the operation's (see _failure).
            raise InterruptedError("interrupted")
        if _should_stop(None, None):
            return  # out of time: the operation stops at its next check (a peek past a full batch need not)
        time.sleep(min(left, 0.01))


@functools.cache
def _shell_globals() -> frozenset[str]:
    """The names every context starts with: the language's built-ins and the shell's."""
    context = quickjs.Context()
    context.eval(PRELUDE)
    names: str = context.eval("Object.getOwnPropertyNames(globalThis).join('\\n')")
    return frozenset(names.split("\n")) | {"hex_md5", "sleep"}


def function_source(code: str) -> str:
    """A JavaScript expression whose value is the function ``code`` defines:
    a function as written, or (like mongod) a bare expression as the body of
    one returning it, or statements as the body of one."""
    text = code.strip()
    if re.match(r"function[\s(]", text) or re.match(r"(async\s+)?(\([^)]*\)|[A-Za-z_$][\w$]*)\s*=>", text):
        return f"({text})"
    return f"(function() {{ return ({text}\n); }})"


class Runtime:
    """A fresh context: the shell prelude, ``scope`` as globals, the ``stored``
    (``system.js``) documents' values as globals, and limits."""

    def __init__(
        self,
        heap_limit_mb: int,
        scope: Any = None,
        stored: Iterable[Mapping[str, Any]] = (),
        *,
        total_mb: int = interrupt.DEFAULT_JS_HEAP_TOTAL_MB,
    ) -> None:
        heap = HEAP_BUDGET.lend(heap_limit_mb * 1024 * 1024, total_mb * 1024 * 1024)
        if not heap:
            raise CommandError(
                ErrorCode.JSInterpreterFailure,
                f"Out of memory: the scripts running hold the {total_mb} MB of jsHeapLimitTotalMB",
            )
        weakref.finalize(self, HEAP_BUDGET.give_back, heap)
        self._lock = threading.Lock()
        self._throws = False  # some user code compiled here has a `throw` (see _failure)
        self._context = quickjs.Context()
        self._context.set_memory_limit(heap)
        self._context.set_max_stack_size(_STACK_BYTES)
        _install_interrupt_handler(self._context)
        # mongod's hex_md5 (the $where and $function manual examples call it): hashing touches nothing outside.
        self._context.add_callable("hex_md5", _hex_md5)
        self._context.add_callable("sleep", _sleep)
        self._run(self._context.eval, PRELUDE)
        get = self._context.get
        self._call, self._where, self._map, self._each = get("__call"), get("__where"), get("__map"), get("__each")
        if scope:
            text, tagged = to_json(scope)
            self._run(get("__setScope"), text, tagged)
        # After the scope, as mongod loads them: a stored function replaces a scope variable of its name.
        self._define_stored(stored)

    def _define_stored(self, docs: Iterable[Mapping[str, Any]]) -> None:
        """Each ``{_id: name, value}`` as the global ``name`` (a function for Code), as
        mongod's Scope::loadStored: a name that is not a string (10209), no value
        (10210) or code with scope (4546000) fails the operation; code that does not
        compile is logged and left out."""
        for doc in docs:
            name, value = doc.get("_id"), doc.get("value", _UNSET)
            if not isinstance(name, str):
                raise CommandError(10209, f"name has to be a string: _id: {name!r}")
            if value is _UNSET:
                raise CommandError(10210, "value has to be set")
            if isinstance(value, Code) and value.scope is not None:
                raise CommandError(
                    4546000,
                    "BSON type 'CodeWithScope' not supported in system.js scripts. "
                    f"As an alternative use 'Code'. Script _id value: '{name}'",
                )
            if name in _shell_globals():
                continue
            if not isinstance(value, Code):  # mongod defines any other value as it is: a string stays a string
                text, tagged = to_json({name: value})
                self._run(self._context.get("__setScope"), text, tagged)
                continue
            try:
                self._context.set(name, self.function(str(value)))
            except CommandError as exc:
                if exc.code != ErrorCode.JSInterpreterFailure:
                    raise
                log.error("unable to load stored JavaScript function %s(): %s", name, exc.errmsg)

    def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        with self._lock:
            try:
                return fn(*args)
            except quickjs.JSException as exc:  # StackOverflow is one too
                raise _failure(exc, self._context, self._throws) from None

    def function(self, code: str) -> Any:
        """The function ``code`` defines, compiled in this context."""
        self._throws = self._throws or "throw" in code
        try:
            return self._run(self._context.eval, function_source(code))
        except CommandError as exc:
            if exc.code != ErrorCode.JSInterpreterFailure or not exc.errmsg.startswith("SyntaxError"):
                raise
            # Statements rather than an expression: they are the body (as `return ...;` ones are).
            return self._run(self._context.eval, f"(function() {{ {code}\n}})")

    def bind(self, wrapper: str, *functions: Any) -> Any:
        """The function that the JavaScript ``wrapper`` returns when given ``functions``."""
        return self._run(self._run(self._context.eval, wrapper), *functions)

    def call(self, fn: Any, args: list[Any]) -> Any:
        """``fn(...args)`` with ``this`` an empty object (as mongod calls $function,
        $accumulator's functions, reduce and finalize), converted back."""
        text, tagged = to_json(args)
        return from_json(self._run(self._call, fn, text, tagged))

    def where(self, fn: Any, doc: Any) -> bool:
        """``$where``: is ``fn`` truthy with ``this`` (and ``obj``) the document?"""
        text, tagged = to_json(doc)
        return bool(self._run(self._where, fn, text, tagged))

    def map(self, fn: Any, docs: list[Any]) -> list[list[Any]]:
        """mapReduce's map over a batch of documents: the ``[key, value]`` pairs they emitted."""
        text, tagged = to_json(docs)
        pairs: list[list[Any]] = from_json(self._run(self._map, fn, text, tagged))
        return pairs

    def each(self, fn: Any, pairs: list[list[Any]]) -> list[Any]:
        """``fn(key, x)`` for each ``[key, x]`` (mapReduce's reduce and finalize), in one call."""
        text, tagged = to_json(pairs)
        results: list[Any] = from_json(self._run(self._each, fn, text, tagged))
        return results
