"""Compile a sort pattern into a key function: bytes that order documents as
MongoDB's sort does.

``compile_sort({"a": 1, "b": -1}).key(doc)`` is the concatenation, field by
field, of the :mod:`foliodb.query.keystring` encoding of the document's sort
value (byte-complemented for descending fields). Encodings are prefix-free,
so plain ``bytes`` comparison of two keys is MongoDB's compound order.

The sort value of a path follows MongoDB's SortKeyGenerator, which sorts as an
index over the sort pattern would: it generates the document's *index keys*
for that pattern and sorts by the first one in the pattern's order. Hence:

* a missing field and ``null`` are both ``null`` (equal, just above MinKey);
* an array offers each element (nested arrays as whole values), so ascending
  sorts by the smallest element and descending by the largest; an empty
  array is ``undefined``, below ``null``;
* a path through an array of documents reaches each element's field (an
  element that is not a document gives ``null``; an empty array on the way
  gives ``null``); a numeric component selects an array position when there
  is one;
* fields of a compound pattern that go through the *same* array take their
  values from the same element together (``{"a.x": 1, "a.y": 1}`` pairs each
  element's x with its own y), and two fields through *different* arrays are
  an error: "cannot sort with keys that are parallel arrays" (BadValue).

:func:`foliodb.query.paths.leaf_values` does not serve here: it cannot pair
compound fields element by element, drops values reached through nested
arrays instead of yielding ``null``, and yields nothing for empty arrays.

``{"$meta": "textScore"}`` (and the other sortable metadata) sorts descending
by the value from ``meta``; ``$natural`` is not a sort but a scan direction,
exposed as :attr:`Sort.natural` for the planner.

Under a collation, strings sort by it: each sort value is encoded through
:meth:`foliodb.query.collation.Collator.transform` (a sort key of sort keys).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bson import DBRef

from foliodb.errors import CommandError, ErrorCode, location
from foliodb.query import compare as cmp
from foliodb.query import keystring
from foliodb.query.bsontypes import is_string
from foliodb.query.collation import Collator
from foliodb.query.paths import MISSING, is_index
from foliodb.query.projection_parser import field_path
from foliodb.query.render import render

# The $meta names a sort accepts (SortPattern's kValidMetaSorts).
META_SORTS = frozenset({"textScore", "randVal", "geoNearDistance", "searchScore", "vectorSearchScore", "score"})


class _Undefined:
    """The index key of an empty array."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "undefined"


UNDEFINED = _Undefined()
_UNDEFINED_KEY = bytes([cmp.UNDEFINED + 16])


def _encode(value: Any) -> bytes:
    if value is MISSING or value is None:
        return keystring.T_NULL
    if value is UNDEFINED:
        return _UNDEFINED_KEY
    return keystring.encode(value)


def _parallel() -> CommandError:
    return CommandError(ErrorCode.BadValue, "cannot sort with keys that are parallel arrays")


def _extract(value: Any, path: tuple[str, ...]) -> tuple[Any, tuple[str, ...]]:
    """Walk ``path`` through documents (and array positions it names) up to
    its end or the first array to expand: (value, rest of the path)."""
    for i, name in enumerate(path):
        if isinstance(value, DBRef):
            value = value.as_doc()  # a DBRef is stored as {$ref, $id, $db}
        if isinstance(value, dict):
            value = value.get(name, MISSING)
        elif isinstance(value, list):
            if is_index(name) and int(name) < len(value):
                value = value[int(name)]
            else:
                return value, path[i:]
        else:
            return MISSING, ()
    return value, ()


def index_keys(doc: Any, paths: Sequence[tuple[str, ...]]) -> list[tuple[Any, ...]]:
    """The index keys of ``doc`` for fields ``paths`` (BtreeKeyGenerator's
    rules, see the module docstring): tuples of values, with None for null and
    :data:`UNDEFINED` for an empty array."""
    out: list[tuple[Any, ...]] = []
    _keys(doc, list(paths), [None] * len(paths), out)
    return out


def _keys(obj: Any, rest: list[tuple[str, ...]], fixed: list[Any], out: list[tuple[Any, ...]]) -> None:
    rest = list(rest)
    fixed = list(fixed)
    array: list[Any] | None = None
    expanding: list[int] = []
    for i, path in enumerate(rest):
        if not path:
            continue
        value, remaining = _extract(obj, path)
        if isinstance(value, list):
            if array is None:
                array = value
            elif value is not array:
                raise _parallel()
            expanding.append(i)
            rest[i] = remaining
        else:
            fixed[i] = None if value is MISSING else value
            rest[i] = ()
    if array is None:
        out.append(tuple(fixed))
        return
    if not array:
        # An empty array is undefined where a path ends at it, null beyond it.
        for i in expanding:
            if not rest[i]:
                fixed[i] = UNDEFINED
        _keys(None, rest, fixed, out)
        return
    for element in array:
        for i in expanding:
            if not rest[i]:
                fixed[i] = element
        if isinstance(element, DBRef):
            element = element.as_doc()
        _keys(element if isinstance(element, dict) else None, rest, fixed, out)


class Sort:
    """A compiled sort pattern."""

    __slots__ = ("_encode", "_parts", "_paths", "collator", "fields", "meta_fields", "natural")

    def __init__(
        self,
        parts: list[tuple[tuple[str, ...] | None, str | None, bool]],
        natural: int | None,
        collator: Collator | None = None,
    ) -> None:
        # parts: (path, None, descending) for a field, (None, meta name, True) for $meta.
        self._parts = parts
        self._paths = [path for path, _, _ in parts if path is not None]
        self.fields: list[tuple[str, int]] = [(".".join(p), -1 if desc else 1) for p, _, desc in parts if p is not None]
        self.meta_fields: list[str] = [name for _, name, _ in parts if name is not None]
        self.natural = natural
        self.collator = collator
        if collator is None:
            self._encode = _encode
        else:
            transform = collator.transform
            self._encode = lambda value: _encode(transform(value))

    def plain_field(self) -> tuple[str, bool] | None:
        """(field, descending) when a key is one top-level field's value alone (no
        collation, no $meta, no natural order): the sorter's numeric shortcut."""
        parts = self._parts
        if self.collator is not None or self.natural is not None or len(parts) != 1:
            return None
        path, _, descending = parts[0]
        if path is None or len(path) != 1:
            return None
        return path[0], descending

    def key(self, doc: Any, meta: Mapping[str, Any] | None = None) -> bytes:
        """The sort key of ``doc`` (with its metadata, for $meta parts)."""
        parts = self._parts
        if len(parts) == 1 and parts[0][0] is not None and len(parts[0][0]) == 1:
            # Fast path: one top-level field that is not an array.
            value = doc.get(parts[0][0][0], MISSING)
            if not isinstance(value, list):
                encoded = self._encode(value)
                return keystring.complement(encoded) if parts[0][2] else encoded
        keys = index_keys(doc, self._paths) if self._paths else [()]
        best: bytes | None = None
        encode = self._encode
        for values in keys:
            chunks = []
            it = iter(values)
            for path, name, desc in parts:
                if path is not None:
                    encoded = encode(next(it))
                elif meta is not None and name is not None:
                    encoded = _encode(meta.get(name, MISSING))
                else:
                    encoded = keystring.T_NULL  # metadata not available: null
                chunks.append(keystring.complement(encoded) if desc else encoded)
            key = b"".join(chunks)
            if best is None or key < best:
                best = key
        assert best is not None
        return best


def _items(spec: Any, stage: bool) -> list[tuple[str, Any]]:
    if spec is None:
        return []
    if isinstance(spec, Mapping):
        return list(spec.items())
    if isinstance(spec, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in spec):
        return [(str(k), v) for k, v in spec]
    if stage:
        raise location(15973, "the $sort key specification must be an object")
    raise CommandError(ErrorCode.TypeMismatch, "sort must be an object")


def _meta_part(name: str, value: Mapping[str, Any]) -> str:
    """SortPattern's parseMetaExpression: the metadata name of ``{"$meta": ...}``."""
    first = next(iter(value), "")
    if first != "$meta":
        raise location(17312, "$meta is the only expression supported by $sort right now")
    if len(value) != 1:
        raise CommandError(ErrorCode.FailedToParse, "Cannot have additional keys in a $meta sort specification")
    arg = value["$meta"]
    if not is_string(arg) or arg not in META_SORTS:
        raise location(31138, f"Illegal $meta sort: $meta: {render(arg)}")
    return arg


def _direction(name: str, value: Any) -> int:
    if not cmp.is_number(value):
        raise location(15974, f"Illegal key in $sort specification: {name}: {render(value)}")
    # safeNumberLong: truncated toward zero, NaN is 0.
    n = cmp.number_value(value)
    direction = 0 if n != n or n in (float("inf"), float("-inf")) else int(n)
    if direction not in (1, -1):
        raise location(15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
    return direction


def compile_sort(spec: Any, *, stage: bool = False, collator: Collator | None = None) -> Sort:
    """Compile a sort pattern: a mapping (or list of pairs) of path to 1/-1 or
    ``{"$meta": name}``. ``stage=True`` for a ``$sort`` stage, whose pattern
    may not be empty (15976); ``collator`` orders strings."""
    items = _items(spec, stage)
    if stage and not items:
        raise location(15976, "$sort stage must have at least one sort key")
    parts: list[tuple[tuple[str, ...] | None, str | None, bool]] = []
    seen: set[tuple[str, ...]] = set()
    natural: int | None = None
    for name, value in items:
        if name == "$natural":
            # A scan direction for the planner, not a sort key.
            natural = -1 if cmp.is_number(value) and cmp.compare_numbers(value, 0) < 0 else 1
            continue
        if isinstance(value, Mapping):
            parts.append((None, _meta_part(name, value), True))
            continue
        desc = _direction(name, value) < 0
        path = field_path(name)
        if path in seen:
            raise location(7472500, f"$sort key must not contain duplicate keys (duplicate: '{name}')")
        seen.add(path)
        parts.append((path, None, desc))
    return Sort(parts, natural, collator)
