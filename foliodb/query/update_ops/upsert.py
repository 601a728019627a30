"""The document an upsert starts from: the equality conditions of its filter.

Manual: https://www.mongodb.com/docs/manual/reference/method/db.collection.updateOne/#upsert-with-operator-expressions

As MongoDB's ``extractEqualityMatches`` over the canonical query: plain
values and ``$eq`` (and what canonicalization turns into equalities: a
one-value ``$in``, each value of ``$all``, a one-clause ``$or``), at any
depth of ``$and``. Ranges, ``$ne``, ``$in`` of several values, regexes and
``$elemMatch`` contribute nothing. Dotted paths become embedded documents.
Two equalities on one path, or on a path and its prefix, are MongoDB's
NotSingleValueField error (checked in path order, as the canonical query
sorts them). Fields keep the filter's order, ``_id`` first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.errors import CommandError, ErrorCode
from foliodb.query import compare as cmp
from foliodb.query.filter import is_operator_doc
from foliodb.query.update_ops.core import clone


def seed_from_filter(filter_spec: Mapping[str, Any] | None) -> dict[str, Any]:
    equalities: list[tuple[str, Any]] = []
    if filter_spec:
        _collect(filter_spec, equalities)
    _check_conflicts([path for path, _ in equalities])
    seed: dict[str, Any] = {}
    for path, value in sorted(equalities, key=lambda e: e[0] != "_id" and not e[0].startswith("_id.")):
        *parents, last = path.split(".")
        doc = seed
        for part in parents:
            doc = doc.setdefault(part, {})
        doc[last] = clone(value)
    return seed


def _collect(spec: Mapping[str, Any], out: list[tuple[str, Any]]) -> None:
    for key, value in spec.items():
        if key == "$and" and isinstance(value, list):
            for clause in value:
                if isinstance(clause, Mapping):
                    _collect(clause, out)
        elif key == "$or" and isinstance(value, list) and len(value) == 1 and isinstance(value[0], Mapping):
            _collect(value[0], out)
        elif not key.startswith("$"):
            _field(key, value, out)


def _is_regex(value: Any) -> bool:
    return cmp.bracket(value) == cmp.REGEX


def _field(path: str, value: Any, out: list[tuple[str, Any]]) -> None:
    if not is_operator_doc(value):
        if not _is_regex(value):  # {a: /x/} matches, it is no equality
            out.append((path, value))
        return
    for op, arg in value.items():
        if op == "$eq":
            out.append((path, arg))
        elif op == "$in" and isinstance(arg, list) and len(arg) == 1 and not _is_regex(arg[0]):
            out.append((path, arg[0]))
        elif op == "$all" and isinstance(arg, list):
            for item in arg:
                if not _is_regex(item) and not (isinstance(item, Mapping) and "$elemMatch" in item):
                    out.append((path, item))


def _check_conflicts(found: list[str]) -> None:
    seen: set[str] = set()
    for path in sorted(found):
        parts = path.split(".")
        for n in range(len(parts), 0, -1):
            prefix = ".".join(parts[:n])
            if prefix in seen:
                if n == len(parts):
                    detail = f"path '{path}' is matched twice"
                else:
                    detail = f"both paths '{path}' and '{prefix}' are matched"
                raise CommandError(ErrorCode.NotSingleValueField, f"cannot infer query fields to set, {detail}")
        seen.add(path)
