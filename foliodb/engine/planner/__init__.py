"""The query planner: from a filter, a sort and a hint to an access stage.

This first planner knows two access paths: point lookups in the ``_id``
index (for ``_id`` equality or ``$in``) and the collection scan (natural
order or its reverse for ``$natural`` sorts and hints).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.engine.planner.plans import AccessStage, CollScan, IdLookup
from foliodb.engine.records import CollectionStore
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import compare as cmp
from foliodb.query import keystring
from foliodb.query.filter import is_operator_doc


def id_keys(filter_spec: Mapping[str, Any] | None) -> list[bytes] | None:
    """The ``_id`` index keys a filter's ``_id`` condition restricts to, or
    None when it does not restrict ``_id`` to a list of values."""
    if not filter_spec or "_id" not in filter_spec:
        return None
    cond = filter_spec["_id"]
    if not is_operator_doc(cond):
        values = [cond]
    elif len(cond) == 1 and "$eq" in cond:
        values = [cond["$eq"]]
    elif len(cond) == 1 and "$in" in cond and isinstance(cond["$in"], list):
        values = cond["$in"]
    else:
        return None
    if any(cmp.bracket(v) == cmp.REGEX for v in values):
        return None
    return sorted({keystring.encode(v) for v in values})


def plan_access(
    store: CollectionStore, filter_spec: Mapping[str, Any] | None, natural: int | None, hint: Any
) -> AccessStage:
    if hint is not None and hint not in ({}, ""):
        natural_hint = hint.get("$natural") if isinstance(hint, Mapping) else None
        if natural_hint is not None:
            return CollScan(store, -1 if natural_hint < 0 else 1)
        if not _hint_exists(store, hint):
            raise CommandError(ErrorCode.BadValue, "hint provided does not correspond to an existing index")
    if natural is not None:
        return CollScan(store, natural)
    keys = id_keys(filter_spec)
    if keys is not None:
        return IdLookup(store, keys)
    return CollScan(store)


def _hint_exists(store: CollectionStore, hint: Any) -> bool:
    indexes = store.info.indexes.values()
    if isinstance(hint, str):
        return any(index.name == hint for index in indexes)
    if isinstance(hint, Mapping):
        return any(list(index.key.items()) == list(hint.items()) for index in indexes)
    return False
