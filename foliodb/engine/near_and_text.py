"""The parts of a find's filter it answers apart from the rest: a ``$near`` (the
index that serves it, the filter without it) and a ``$text`` (whether one may be
in the filter, and whether it sits in a logical branch)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.engine.records import CollectionStore
from foliodb.errors import CommandError, ErrorCode


def geo_near_key(store: CollectionStore) -> str:
    """$geoNear without ``key``: the field of the only 2d index, else of the
    only 2dsphere index (mongod's choice)."""
    ns = f"{store.info.db}.{store.info.name}"
    for kind in ("2d", "2dsphere"):
        found = [i for i in store.info.indexes.values() if i.kind == kind]
        if len(found) > 1:
            raise CommandError(
                ErrorCode.IndexNotFound,
                f"There is more than one {kind} index on {ns}; unsure which to use for $geoNear",
            )
        if found:
            return next(name for name, d in found[0].key.items() if d == kind)
    raise CommandError(ErrorCode.IndexNotFound, "$geoNear requires a 2d or 2dsphere index, but none were found")


def without_near(filter_spec: Mapping[str, Any] | None, path: str) -> dict[str, Any]:
    """The filter without the $near operator (and its distance bounds) on ``path``."""
    out = dict(filter_spec or {})
    cond = {k: v for k, v in out.pop(path).items() if k not in NEAR_PARTS}
    if cond:
        out[path] = cond
    return out


NEAR_PARTS = ("$near", "$nearSphere", "$geoNear", "$minDistance", "$maxDistance")


def may_hold_text(filter_spec: Mapping[str, Any]) -> bool:
    return "$text" in filter_spec or "$and" in filter_spec or "$or" in filter_spec


def nested_text(spec: Mapping[str, Any]) -> bool:
    """Does a filter (without its top-level $text) still hold a $text, in a logical branch?"""
    for key, value in spec.items():
        if key == "$text":
            return True
        if (
            key in ("$and", "$or")
            and isinstance(value, list)
            and any(isinstance(branch, Mapping) and nested_text(branch) for branch in value)
        ):
            return True
    return False
