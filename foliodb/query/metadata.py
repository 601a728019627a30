"""Document metadata: what ``{"$meta": name}`` reads (``textScore``...).

A stage that produces metadata (a ``$text`` search) attaches it to each
document under :data:`FIELD`, a name no application writes; it travels with
the document through the stages that pass documents on ($match, $sort,
$addFields, $project, $unwind...), expressions read it through
``vars[METADATA]``, and it is stripped before documents leave the database
(cursor replies, $out, $merge).
"""

from __future__ import annotations

from typing import Any

FIELD = "$$meta"


def of(doc: Any) -> dict[str, Any] | None:
    """The metadata a document carries, or None."""
    if isinstance(doc, dict):
        meta = doc.get(FIELD)
        if isinstance(meta, dict):
            return meta
    return None


def strip(doc: Any) -> Any:
    """The document without its metadata (the same object when it has none)."""
    if isinstance(doc, dict) and FIELD in doc:
        return {k: v for k, v in doc.items() if k != FIELD}
    return doc
