"""$accumulator: a custom accumulator written in JavaScript.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/accumulator/

``init(...initArgs)`` makes a group's state (``initArgs`` evaluated once
per group, against the group key as ``$group``'s other per-group arguments
are); ``accumulate(state, ...accumulateArgs)`` folds in each document;
``merge(state1, state2)`` folds in a partial state (``$group`` spills
partial groups and merges them); ``finalize(state)``, when given, makes the
output. As mongod does, calls are buffered and run in one JavaScript loop
per batch, so a batch crosses into JavaScript once.

States hold plain data (the state value and the pending calls) and a
:class:`Program`, which pickles as its source and finds the live one again
in the same process, so spilled states share one JavaScript context.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from foliodb import javascript
from foliodb.aggregation.accumulators.core import ACCUMULATORS, Accumulator
from foliodb.errors import location
from foliodb.query.bsontypes import type_name
from foliodb.query.expr import Scope, compile_expression
from foliodb.query.expr.function import js_code
from foliodb.query.paths import MISSING
from foliodb.query.render import render

if TYPE_CHECKING:
    from foliodb.javascript.runtime import Runtime

# Calls buffered per state before they run in one batch.
_BATCH = 256

_ACCUMULATE = """(function(accumulate) { return function(state, calls) {
  for (var i = 0; i < calls.length; i++) state = accumulate.apply(null, [state].concat(calls[i]));
  return state;
}; })"""
_MERGE = """(function(merge) { return function(state, calls) {
  for (var i = 0; i < calls.length; i++) state = merge(state, calls[i]);
  return state;
}; })"""

_tokens = itertools.count()
_programs: weakref.WeakValueDictionary[int, Program] = weakref.WeakValueDictionary()


class Program:
    """An $accumulator's four functions, compiled into one context on first use."""

    def __init__(self, token: int, sources: tuple[str, str, str, str | None]) -> None:
        self.token = token
        self.sources = sources
        self._lock = threading.Lock()
        self._compiled: tuple[Runtime, Any, Any, Any, Any] | None = None
        _programs[token] = self

    def __reduce__(self) -> tuple[Any, tuple[int, tuple[str, str, str, str | None]]]:
        return (_program, (self.token, self.sources))

    def _functions(self) -> tuple[Runtime, Any, Any, Any, Any]:
        with self._lock:
            if self._compiled is None:
                init, accumulate, merge, finalize = self.sources
                js = javascript.new_runtime()
                self._compiled = (
                    js,
                    js.function(init),
                    js.bind(_ACCUMULATE, js.function(accumulate)),
                    js.bind(_MERGE, js.function(merge)),
                    js.function(finalize) if finalize is not None else None,
                )
            return self._compiled

    def init(self, args: list[Any]) -> Any:
        js, init, _, _, _ = self._functions()
        return js.call(init, args)

    def run(self, state: Any, calls: list[Any], merging: bool) -> Any:
        js, _, accumulate, merge, _ = self._functions()
        return js.call(merge if merging else accumulate, [state, calls])

    def finalize(self, state: Any) -> Any:
        js, _, _, _, finalize = self._functions()
        return state if finalize is None else js.call(finalize, [state])


def _program(token: int, sources: tuple[str, str, str, str | None]) -> Program:
    live = _programs.get(token)
    return live if live is not None else Program(token, sources)


class JsState:
    """One group's state: the JavaScript state value and the calls not yet run."""

    __slots__ = ("merging", "pending", "program", "state")

    def __init__(self, program: Program, state: Any) -> None:
        self.program = program
        self.state = state
        self.pending: list[Any] = []
        self.merging = False

    def add(self, value: Any) -> int:
        if not isinstance(value, list):
            raise location(4544712, f"$accumulator accumulateArgs must evaluate to an array: {render(value)}")
        self._queue(value, False)
        return 16 + 16 * len(value)

    def merge(self, other: Any) -> None:
        other.flush()
        self._queue(other.state, True)

    def result(self) -> Any:
        self.flush()
        return self.program.finalize(self.state)

    def flush(self) -> None:
        if self.pending:
            self.state = self.program.run(self.state, self.pending, self.merging)
            self.pending = []

    def _queue(self, call: Any, merging: bool) -> None:
        if self.pending and merging != self.merging:
            self.flush()
        self.merging = merging
        self.pending.append(call)
        if len(self.pending) >= _BATCH:
            self.flush()


def _function(spec: Mapping[str, Any], name: str) -> str:
    try:
        return js_code(spec[name], name)
    except Exception as exc:  # the same checks as $function, under $accumulator's codes
        code = 4544701 if getattr(exc, "code", None) == 31432 else 4544702
        what = "must be a constant expression" if code == 4544701 else "must be a String or Code"
        raise location(code, f"$accumulator '{name}' {what}") from None


@ACCUMULATORS.register("$accumulator")
def acc_accumulator(arg: Any, scope: Scope) -> Accumulator:
    if not isinstance(arg, Mapping):
        raise location(4544703, f"$accumulator expects an object as an argument; found: {type_name(arg)}")
    functions: dict[str, str] = {}
    init_args = accumulate_args = None
    for name, spec in arg.items():
        if name in ("init", "accumulate", "merge", "finalize"):
            functions[name] = _function(arg, name)
        elif name == "initArgs":
            init_args = compile_expression(spec, scope)
        elif name == "accumulateArgs":
            accumulate_args = compile_expression(spec, scope)
        elif name == "lang":
            if not isinstance(spec, str):
                raise location(4544704, f"$accumulator lang must be a string; found: {type_name(spec)}")
            if spec != "js":
                raise location(4544705, "$accumulator only supports lang: 'js'")
        else:
            raise location(4544706, f"$accumulator got an unexpected field: {name}")
    for required, code in (("init", 4544707), ("accumulate", 4544708), ("merge", 4544709)):
        if not functions.get(required):
            raise location(code, f"$accumulator missing required argument '{required}'")
    if accumulate_args is None:
        raise location(4544710, "$accumulator missing required argument 'accumulateArgs'")
    program = Program(
        next(_tokens), (functions["init"], functions["accumulate"], functions["merge"], functions.get("finalize"))
    )

    def start(key: Any, vars: dict[str, Any]) -> JsState:
        values = init_args(key if isinstance(key, dict) else {}, vars) if init_args is not None else []
        if values is MISSING or not isinstance(values, list):
            raise location(4544711, f"$accumulator initArgs must evaluate to an array: {render(values)}")
        return JsState(program, program.init(values))

    return Accumulator("$accumulator", accumulate_args, start)
