"""An operator's ``score`` option: ``boost``, ``constant``, ``function`` (and ``embedded``,
read by embeddedDocument itself).

Manual: https://www.mongodb.com/docs/atlas/atlas-search/scoring/

* ``boost: {value}`` multiplies; ``boost: {path, undefined}`` multiplies by the document's
  number at ``path`` (its first value; ``undefined``, default 0, without one);
* ``constant: {value}`` replaces the score;
* ``function``: an expression of ``score: "relevance"``, ``constant``, ``path`` (``{value,
  undefined}`` or a field name), ``add``, ``multiply``, ``log`` (log10; 0 for a value at or
  below 0), ``log1p`` (log10(1 + x)) and ``gauss`` (``path``, ``origin``, ``scale``,
  ``offset`` 0, ``decay`` 0.5: ``decay ^ (max(0, |x - origin| - offset) / scale) ^ 2``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from foliodb.engine.search.numeric import np
from foliodb.engine.search.text.mapping import TextDefinition
from foliodb.engine.search.text.operators import Run, number, search_error
from foliodb.engine.search.text.scoring import Hits

Scorer = Callable[[Run, Hits], Hits]
Values = Callable[[Run, Hits], Any]  # an expression: one value per hit


def field_values(run: Run, path: str, ords: Any, undefined: float) -> Any:
    """Each ordinal's first number at ``path`` (``undefined`` without one)."""
    column_ords, values = run.reader.column(path + "\x00n")
    out = np.full(len(ords), undefined, dtype=np.float64)
    if len(column_ords):
        first = np.ones(len(column_ords), dtype=bool)
        first[1:] = column_ords[1:] != column_ords[:-1]
        column_ords, values = column_ords[first], values[first]
        at = np.searchsorted(column_ords, ords)
        found = (at < len(column_ords)) & (column_ords[np.minimum(at, len(column_ords) - 1)] == ords)
        out[found] = values[at[found]]
    return out


def _path_spec(spec: Any, place: str) -> tuple[str, float]:
    if isinstance(spec, str):
        return spec, 0.0
    if isinstance(spec, Mapping) and isinstance(spec.get("value"), str):
        return spec["value"], number(spec.get("undefined", 0), f"{place}.undefined")
    raise search_error(f'"{place}" must be a field name or {{value, undefined}}')


def _expression(spec: Any, place: str) -> Values:
    if not isinstance(spec, Mapping) or len(spec) != 1:
        raise search_error(f'"{place}" must be a document holding one expression')
    name, arg = next(iter(spec.items()))
    where = f"{place}.{name}"
    if name == "score":
        if arg != "relevance":
            raise search_error(f'"{where}" must be "relevance"')
        return lambda run, hits: hits[1]
    if name == "constant":
        value = number(arg, where)
        return lambda run, hits: np.full(len(hits[0]), value)
    if name == "path":
        path, undefined = _path_spec(arg, where)
        return lambda run, hits: field_values(run, path, hits[0], undefined)
    if name in ("add", "multiply"):
        if not isinstance(arg, list) or not arg:
            raise search_error(f'"{where}" must be a non-empty array')
        parts = [_expression(a, f"{where}[{i}]") for i, a in enumerate(arg)]
        combine = np.add if name == "add" else np.multiply

        def combined(run: Run, hits: Hits) -> Any:
            out = parts[0](run, hits)
            for part in parts[1:]:
                out = combine(out, part(run, hits))
            return out

        return combined
    if name in ("log", "log1p"):
        inner = _expression(arg, where)
        shift = 1.0 if name == "log1p" else 0.0

        def logged(run: Run, hits: Hits) -> Any:
            x = inner(run, hits) + shift
            return np.where(x > 0, np.log10(np.maximum(x, 1e-300)), 0.0)

        return logged
    if name == "gauss":
        if not isinstance(arg, Mapping):
            raise search_error(f'"{where}" must be a document')
        path, undefined = _path_spec(arg.get("path"), f"{where}.path")
        origin = number(arg.get("origin"), f"{where}.origin")
        scale = number(arg.get("scale"), f"{where}.scale")
        offset = number(arg.get("offset", 0), f"{where}.offset")
        decay = number(arg.get("decay", 0.5), f"{where}.decay")
        if scale <= 0 or not 0 < decay < 1:
            raise search_error(f'"{where}" needs a positive scale and a decay between 0 and 1')
        sigma2 = -(scale**2) / (2 * math.log(decay))

        def gauss(run: Run, hits: Hits) -> Any:
            x = field_values(run, path, hits[0], undefined)
            distance = np.maximum(0.0, np.abs(x - origin) - offset)
            return np.exp(-(distance**2) / (2 * sigma2))

        return gauss
    raise search_error(f'"{where}" is not a score function expression')


def compile_score(spec: Any, place: str, definition: TextDefinition) -> Scorer | None:
    if not isinstance(spec, Mapping) or len(spec) != 1:
        raise search_error(f'"{place}" must hold one of [boost, constant, embedded, function]')
    name, arg = next(iter(spec.items()))
    where = f"{place}.{name}"
    if name == "embedded":
        return None  # embeddedDocument reads it
    if not isinstance(arg, Mapping):
        raise search_error(f'"{where}" must be a document')
    if name == "boost":
        if "value" in arg:
            factor = number(arg["value"], f"{where}.value")
            if factor <= 0:
                raise search_error(f'"{where}.value" must be positive')
            return lambda run, hits: (hits[0], hits[1] * factor)
        path, undefined = _path_spec({"value": arg.get("path"), "undefined": arg.get("undefined", 0)}, where)
        return lambda run, hits: (hits[0], hits[1] * field_values(run, path, hits[0], undefined))
    if name == "constant":
        value = number(arg.get("value"), f"{where}.value")
        return lambda run, hits: (hits[0], np.full(len(hits[0]), value))
    if name == "function":
        expression = _expression(arg, where)
        return lambda run, hits: (hits[0], np.asarray(expression(run, hits), dtype=np.float64))
    raise search_error(f'"{place}" must hold one of [boost, constant, embedded, function]')
