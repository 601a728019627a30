"""Carts and sessions that never expire: a TTL index removes them once
their time has passed, as the texts' shopping cart does with a TTL index on
``last_modified``.

Which collections expire is the application's knowledge; the advisor takes
the texts' kinds by name (carts, sessions, baskets, tokens) or an expiry
field (``expires_at``, ``expireAt``), and fires when no TTL index exists and
at least :data:`STALE_SHARE` of the documents have not been touched for
:data:`RETENTION` before the newest one (an expiry field: have expired).

Manual: https://www.mongodb.com/docs/manual/core/index-ttl/
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator

from foliodb.advisor.context import Context
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.sampling import CollectionProfile
from foliodb.advisor.shell import call, count

RETENTION = datetime.timedelta(days=30)
STALE_SHARE = 0.1
_EXPIRING = re.compile(r"(^|_)(carts?|sessions?|baskets?|tokens?)$", re.IGNORECASE)
_EXPIRY = ("expires_at", "expiresAt", "expire_at", "expireAt", "expiry", "expires")
_TOUCHED = ("last_modified", "lastModified", "updated_at", "updatedAt", "last_activity", "last_seen", "lastSeen")


def rule_missing_ttl(ctx: Context) -> Iterator[Finding]:
    for profile in ctx.profiles.values():
        if any("expireAfterSeconds" in index for index in profile.indexes):
            continue
        dated = [s.path for s in profile.fields.values() if "." not in s.path and s.share("date") >= 0.95 and s.present]
        expiry = next((p for p in _EXPIRY if p in dated), None)
        if expiry is None and not _EXPIRING.search(profile.name):
            continue
        field = expiry or next((p for p in _TOUCHED if p in dated), dated[0] if dated else None)
        if field is None:
            continue
        finding = _finding(ctx, profile, field, expiry is not None)
        if finding is not None:
            yield finding


def _finding(ctx: Context, profile: CollectionProfile, field: str, is_expiry: bool) -> Finding | None:
    coll = ctx.database[profile.name]
    latest = list(coll.find({field: {"$type": "date"}}, {field: 1}).sort(field, -1).limit(1))
    if not latest:
        return None
    newest = latest[0][field]
    cutoff = newest if is_expiry else newest - RETENTION
    stale = coll.count_documents({field: {"$lt": cutoff}})
    if stale < STALE_SHARE * profile.count:
        return None
    seconds = 0 if is_expiry else int(RETENTION.total_seconds())
    return Finding(
        collection=profile.name,
        path=field,
        problem="missing-ttl",
        recommendation="ttl-index",
        severity="medium",
        summary=(
            f"{count(stale)} of {count(profile.count)} {profile.name} documents "
            + ("have expired" if is_expiry else f"were last modified more than {RETENTION.days} days before the newest")
            + ", and no TTL index removes them."
        ),
        evidence={
            "documents": profile.count,
            "expired" if is_expiry else "untouched_for_retention": stale,
            "share": round(stale / max(profile.count, 1), 3),
            "field": field,
            "newest": newest,
            "retention_days": 0 if is_expiry else RETENTION.days,
        },
        change=Change(
            f"Create a TTL index on {field}"
            + ("" if is_expiry else f" (expire {RETENTION.days} days after the last change; pick your retention)")
            + ": the server deletes each document once its time has passed.",
            [call(profile.name, "createIndex", {field: 1}, {"expireAfterSeconds": seconds})],
            {"key": {field: 1}, "expireAfterSeconds": seconds},
        ),
        effect=(
            f"{count(stale)} documents ({stale / max(profile.count, 1):.0%}) go now, and the collection stops growing."
        ),
    )
