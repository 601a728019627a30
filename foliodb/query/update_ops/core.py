"""What every update operator shares: the leaf contract and its registry.

An update operator (``$inc``, ``$push``...) compiles, once per update, into a
:class:`Modifier`: the behaviour of one leaf of the update tree (see
:mod:`foliodb.query.update_ops.tree`). A modifier never walks documents and
never mutates a value it is given; it answers

* ``update(old, where)``: the new value for a field that exists, or
  :data:`UNCHANGED`, or :data:`REMOVE` (``$unset``);
* ``create(where)``: the value for a field that does not exist yet, when the
  operator creates fields (``None`` for ``$pull``, ``$pop``, ``$unset``...).

``where`` (a :class:`Where`) tells the leaf's runtime path and the document's
``_id``, which MongoDB's error messages quote.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from bson import Decimal128, Int64

from foliodb.errors import CommandError, ErrorCode, bad_value, failed_to_parse
from foliodb.query import compare as cmp
from foliodb.query.context import Context
from foliodb.query.registry import Registry
from foliodb.query.render import render


class _Sentinel:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


UNCHANGED: Final = _Sentinel("UNCHANGED")
REMOVE: Final = _Sentinel("REMOVE")


class Where:
    """The place a leaf applies to: its runtime path (array positions
    resolved), and the document, for the ``_id`` that messages quote."""

    __slots__ = ("path", "root")

    def __init__(self, root: dict[str, Any], path: tuple[str, ...]) -> None:
        self.root = root
        self.path = path

    @property
    def dotted(self) -> str:
        return ".".join(self.path)

    @property
    def field(self) -> str:
        return self.path[-1]

    def id_text(self) -> str:
        return id_text(self.root)


def id_text(doc: dict[str, Any]) -> str:
    """``_id: 1`` as MongoDB prints a document's _id element, or ``no id``."""
    return render_element("_id", doc["_id"]) if "_id" in doc else "no id"


@dataclass(frozen=True, slots=True)
class Modifier:
    update: Callable[[Any, Where], Any]
    create: Callable[[Where], Any] | None = None
    # A missing path through a scalar is an error for operators that read an
    # array ($pop, $pull, $pullAll) and a no-op for $unset.
    strict_path: bool = True
    insert_only: bool = False  # $setOnInsert


# An operator compiler: (dotted path as written, argument, context) -> Modifier
# ($rename answers its destination path instead; see fields.py).
ModifierCompiler = Callable[[str, Any, Context], "Modifier | tuple[str, ...]"]


def _unknown_modifier(name: str) -> CommandError:
    return failed_to_parse(
        f"Unknown modifier: {name}. Expected a valid update modifier or pipeline-style update specified as an array"
    )


UPDATE_OPS: Registry[ModifierCompiler] = Registry("update operator", _unknown_modifier)


def render_element(name: str, value: Any) -> str:
    """A BSON element as MongoDB prints it in messages: ``a: [ 1, 2 ]``."""
    return f"{name}: {render(value)}"


def clone(value: Any) -> Any:
    """A copy of the containers in ``value`` (scalars are immutable and
    shared), so a spec value placed in several documents is never aliased."""
    if isinstance(value, dict):  # SON and OrderedDict become plain documents too
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clone(v) for v in value]
    return value


def is_integral(value: Any) -> bool:
    """int32 or int64 (``bool`` is not a number in BSON)."""
    cls = value.__class__
    return cls is int or cls is Int64


def integer_argument(value: Any, element: str) -> int:
    """A whole-number argument as MongoDB's ``parseIntegerElementToLong``
    reads it; FailedToParse otherwise. ``element`` is the argument as MongoDB
    prints it (``a: 1.5``)."""
    if not cmp.is_number(value):
        raise failed_to_parse(f"Expected a number in: {element}")
    if value.__class__ in (int, Int64):
        return int(value)
    n = value.to_decimal() if value.__class__ is Decimal128 else Decimal(value)
    if n.is_nan():
        raise failed_to_parse(f"Expected an integer, but found NaN in: {element}")
    if not n.is_finite() or n >= 2**63 or n < -(2**63):
        raise failed_to_parse(f"Cannot represent as a 64-bit integer: {element}")
    if n != n.to_integral_value():
        raise failed_to_parse(f"Expected an integer: {element}")
    return int(n)


def is_array_filter(part: str) -> bool:
    """``$[]`` or ``$[<identifier>]``."""
    return len(part) >= 3 and part.startswith("$[") and part.endswith("]")


def update_path(path: str) -> tuple[str, ...]:
    """The components of an update path, checked as MongoDB's
    ``fieldchecker::isUpdatable`` and positional rules do."""
    if not path:
        raise CommandError(ErrorCode.EmptyFieldName, "An empty update path is not valid.")
    parts = tuple(path.split("."))
    if "" in parts:
        raise CommandError(
            ErrorCode.EmptyFieldName,
            f"The update path '{path}' contains an empty field name, which is not allowed.",
        )
    positions = [i for i, part in enumerate(parts) if part == "$"]
    if len(positions) > 1:
        raise bad_value(f"Too many positional (i.e. '$') elements found in path '{path}'")
    if positions and positions[0] == 0:
        raise bad_value(f"Cannot have positional (i.e. '$') element in the first position in path '{path}'")
    return parts


def reject_special_features(spec: Mapping[str, Any]) -> None:
    """$pull conditions and arrayFilters may not use $expr, $where or $text
    (MongoDB parses them with ``kBanAllSpecialFeatures``)."""
    for name, value in spec.items():
        if name in ("$expr", "$where", "$text"):
            raise CommandError(ErrorCode.QueryFeatureNotAllowed, f"{name} is not allowed in this context")
        if name in ("$and", "$or", "$nor") and isinstance(value, list):
            for clause in value:
                if isinstance(clause, Mapping):
                    reject_special_features(clause)
