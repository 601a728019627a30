"""Unique slugs: a unique index on ``slug`` makes the database the judge of
uniqueness (checking first and inserting after races with other writers); an
insert whose slug exists fails with a duplicate-key error and is retried with
the next candidate (``name``, ``name-2``, ``name-3``, ...).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from pymongo.errors import DuplicateKeyError

from foliodb.patterns._types import Coll, Session


def ensure_index(collection: Coll, field: str = "slug") -> str:
    return collection.create_index(field, unique=True)


def slugify(text: str) -> str:
    """Lower-case ASCII words joined by ``-``: accents dropped, other characters
    separators."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-") or "item"


def _on_field(error: DuplicateKeyError, field: str) -> bool:
    """Whether the duplicate is on ``field`` (not on ``_id`` or another unique key)."""
    details = error.details or {}
    pattern = details.get("keyPattern")
    if isinstance(pattern, Mapping):
        return field in pattern
    return f"{field}_" in str(details.get("errmsg", error))


def insert_with_slug(
    collection: Coll,
    document: Mapping[str, Any],
    base: str,
    *,
    field: str = "slug",
    attempts: int = 20,
    session: Session = None,
) -> str:
    """Insert ``document`` with the first free slug derived from ``base``;
    returns the slug. A duplicate on another key is not retried: it is raised."""
    stem = slugify(base)
    for attempt in range(1, attempts + 1):
        slug = stem if attempt == 1 else f"{stem}-{attempt}"
        try:
            collection.insert_one({**document, field: slug}, session=session)
        except DuplicateKeyError as error:
            if not _on_field(error, field):
                raise
            continue
        return slug
    raise DuplicateKeyError(f"no free slug for {base!r} after {attempts} attempts")
