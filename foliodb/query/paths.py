"""Dotted paths through documents and arrays: MongoDB's matching rules.

A query path such as ``items.sku`` names *every* value it can reach:

* through a document, a component selects that field;
* through an array, a component is applied to each element that is a
  document (``{"items": [{"sku": 1}, {"sku": 2}]}`` reaches 1 and 2); scalar
  elements reach nothing; nested arrays are not entered implicitly;
* a numeric component (``items.0``) also selects that array position (in
  its canonical spelling only: ``items.00`` names a field);
* a DBRef is the document it is stored as, so ``ref.$id`` reaches its id
  (``$ref``, ``$id`` and ``$db`` are the only ``$``-prefixed names MongoDB
  allows in a field path: :data:`DBREF_FIELDS`);
* a path that stops at a missing field (or runs into a scalar) reaches
  *missing*, which equality with ``null`` matches and ``$exists`` does not;
* at the end of the path an array offers each of its elements and then
  itself, so ``{"tags": "x"}`` matches ``{"tags": ["x", "y"]}`` and
  ``{"tags": ["x", "y"]}`` matches it as a whole.

``{"a.b": null}`` thus matches ``{"a": 5}`` and ``{"a": [{"c": 1}]}`` but not
``{"a": [1, 2]}``, as in MongoDB's ``BSONElementIterator``.

Each reached value carries the position in the *first* array the path went
through; the positional operator ``$`` of updates and projections uses it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from bson import DBRef


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()

# The field names of a DBRef: the only "$"-prefixed path components MongoDB's
# FieldPath accepts (https://www.mongodb.com/docs/manual/reference/database-references/).
DBREF_FIELDS: Final = frozenset({"$ref", "$id", "$db"})


def split(path: str) -> tuple[str, ...]:
    return tuple(path.split("."))


def is_index(component: str) -> bool:
    """True for a path component that can address an array position."""
    return component.isdigit() and component.isascii()


def document_fields(value: Any) -> Mapping[str, Any] | None:
    """The fields a path can step into: a document's, or a DBRef's (BSON
    stores it as the document ``{$ref, $id, $db, ...}``); None for others."""
    if isinstance(value, dict):
        return value
    if isinstance(value, DBRef):
        return value.as_doc()
    return None


def stored_form(fields: dict[str, Any]) -> Any:
    """A document as reading it back from BSON gives it: a DBRef when it has
    a string ``$ref``, an ``$id`` and no non-string ``$db`` (pymongo's
    decoding rule), else the document. Writers that step into a DBRef use it,
    so the embedded client returns what the wire would."""
    ref = fields.get("$ref")
    db = fields.get("$db")
    if not isinstance(ref, str) or "$id" not in fields or not (db is None or isinstance(db, str)):
        return fields
    extra = {k: v for k, v in fields.items() if k not in DBREF_FIELDS}
    return DBRef(ref, fields["$id"], db, **extra)


def reach(doc: Any, parts: tuple[str, ...], expand: bool = True) -> Iterator[tuple[Any, int | None]]:
    """Every (value, first-array position) the path reaches, leaf arrays
    expanded when ``expand`` (elements first, then the array itself); MISSING
    where the path stops short."""
    yield from _reach(doc, parts, 0, None, expand)


def _reach(
    value: Any, parts: tuple[str, ...], i: int, pos: int | None, expand: bool
) -> Iterator[tuple[Any, int | None]]:
    if i == len(parts):
        if expand and isinstance(value, list):
            for n, element in enumerate(value):
                yield element, n if pos is None else pos
            yield value, pos
        else:
            yield value, pos
        return
    key = parts[i]
    if value.__class__ is dict:
        yield from _reach(value.get(key, MISSING), parts, i + 1, pos, expand)
    elif isinstance(value, list):
        # An array's elements are named "0", "1", ...: "01" names none of them.
        if is_index(key) and (len(key) == 1 or key[0] != "0"):
            n = int(key)
            if n < len(value):
                yield from _reach(value[n], parts, i + 1, n if pos is None else pos, expand)
        for n, element in enumerate(value):
            fields = document_fields(element)
            if fields is not None:
                yield from _reach(fields.get(key, MISSING), parts, i + 1, n if pos is None else pos, expand)
    else:
        fields = document_fields(value)
        if fields is None:
            yield MISSING, pos
        else:
            yield from _reach(fields.get(key, MISSING), parts, i + 1, pos, expand)


def path_matcher(
    parts: tuple[str, ...],
    pred: Callable[[Any], bool],
    match_missing: bool,
    expand: bool = True,
    position: Callable[[Any], int | None] | None = None,
) -> Callable[[Any, Any], bool]:
    """A function ``(doc, details) -> bool``: does any value the path
    reaches satisfy ``pred``? ``match_missing`` says whether a path that
    reaches nothing-there (MISSING) counts as a match; ``expand`` whether leaf
    arrays offer their elements (array operators such as ``$size`` see only
    whole arrays).

    ``details``, when not None, receives ``array_index`` of the matching value:
    its position in the first array on the path, or, for a whole array that
    ``pred`` accepted, ``position(array)`` (``$elemMatch``'s matching element).
    """
    if len(parts) == 1:
        key = parts[0]

        def match_top(doc: Any, details: Any = None) -> bool:
            value = doc.get(key, MISSING)
            if value is MISSING:
                return match_missing
            if expand and value.__class__ is list:
                for n, element in enumerate(value):
                    if pred(element):
                        if details is not None:
                            details.array_index = n
                        return True
            if pred(value):
                if details is not None and position is not None:
                    details.array_index = position(value)
                return True
            return False

        return match_top

    def match_dotted(doc: Any, details: Any = None) -> bool:
        for value, pos in _reach(doc, parts, 0, None, expand):
            if value is MISSING:
                if match_missing:
                    return True
            elif pred(value):
                if details is not None:
                    if pos is not None:
                        details.array_index = pos
                    elif position is not None:
                        details.array_index = position(value)
                return True
        return False

    return match_dotted


def get_plain(doc: Any, parts: tuple[str, ...]) -> Any:
    """The value at a path without array expansion: documents by field,
    arrays by numeric position only. MISSING when there is none."""
    value = doc
    for key in parts:
        if isinstance(value, list):
            if not is_index(key) or int(key) >= len(value):
                return MISSING
            value = value[int(key)]
            continue
        fields = document_fields(value)
        if fields is None:
            return MISSING
        value = fields.get(key, MISSING)
        if value is MISSING:
            return MISSING
    return value


def get_expr(doc: Any, parts: tuple[str, ...]) -> Any:
    """An aggregation field path (``"$a.b"``): through an array, the path maps
    over the elements that are documents and collects the results (missing
    ones dropped; arrays reached at a step are not flattened further)."""
    value = doc
    for i, key in enumerate(parts):
        if isinstance(value, list):
            return _map_array(value, parts[i:])
        fields = document_fields(value)
        if fields is None:
            return MISSING
        value = fields.get(key, MISSING)
        if value is MISSING:
            return MISSING
    return value


def _map_array(array: list[Any], parts: tuple[str, ...]) -> list[Any]:
    result = []
    for element in array:
        if isinstance(element, list):
            result.append(_map_array(element, parts))
        elif document_fields(element) is not None:
            v = get_expr(element, parts)
            if v is not MISSING:
                result.append(v)
    return result


def leaf_values(doc: Any, parts: tuple[str, ...]) -> list[Any]:
    """The values a path reaches for sort keys and index keys: every reached
    value with leaf arrays expanded to their elements (the array itself is not
    included); MISSING entries kept."""
    out: list[Any] = []
    _leaves(doc, parts, 0, out)
    return out


def _leaves(value: Any, parts: tuple[str, ...], i: int, out: list[Any]) -> None:
    if i == len(parts):
        if isinstance(value, list):
            out.extend(value)
        else:
            out.append(value)
        return
    key = parts[i]
    if isinstance(value, list):
        if is_index(key) and int(key) < len(value):
            _leaves(value[int(key)], parts, i + 1, out)
            return
        for element in value:
            if isinstance(element, list):
                continue
            fields = document_fields(element)
            if fields is None:
                out.append(MISSING)
            else:
                _leaves(fields.get(key, MISSING), parts, i + 1, out)
        return
    fields = document_fields(value)
    if fields is None:
        out.append(MISSING)
    else:
        _leaves(fields.get(key, MISSING), parts, i + 1, out)
