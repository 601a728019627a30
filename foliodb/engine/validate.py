"""Check a collection's invariant: its indexes hold exactly the entries its
documents yield, and nothing else.

Used by the ``validate`` command, and by the crash tests after every
``kill -9``: a crash may lose an unacknowledged write but must never leave an
index out of step with its collection.
"""

from __future__ import annotations

from typing import Any

import bson

from foliodb import interrupt
from foliodb.engine.catalog import CODEC
from foliodb.engine.index_keys import with_rid
from foliodb.engine.records import CollectionStore
from foliodb.errors import CommandError


def validate_collection(store: CollectionStore) -> dict[str, Any]:
    errors: list[str] = []
    expected: dict[str, set[tuple[bytes, int]]] = {w.info.name: set() for w in store.writers}
    n_records = 0
    invalid_docs = 0
    for rid, data in store.scan():
        n_records += 1
        if not n_records & 255:
            interrupt.check()
        try:
            doc = bson.decode(data, CODEC)
        except Exception as exc:  # a corrupt record is exactly what validate reports
            errors.append(f"record {rid} is not valid BSON: {exc}")
            invalid_docs += 1
            continue
        for writer in store.writers:
            try:
                keys = writer.keys(doc)
            except CommandError as exc:
                errors.append(f"record {rid} cannot be indexed by {writer.info.name}: {exc.errmsg}")
                continue
            for key in keys:
                expected[writer.info.name].add((key if writer.unique else with_rid(key, rid), rid))
    keys_per_index: dict[str, int] = {}
    index_details: dict[str, dict[str, Any]] = {}
    for writer in store.writers:
        name = writer.info.name
        actual: set[tuple[bytes, int]] = set()
        entries = store.conn.execute(f"SELECT key, rid FROM {writer.table}")
        while chunk := entries.fetchmany(4096):
            interrupt.check()
            actual.update(chunk)
        keys_per_index[name] = len(actual)
        missing = expected[name] - actual
        extra = actual - expected[name]
        valid = not missing and not extra
        if missing:
            errors.append(f"index {name} is missing {len(missing)} entries")
        if extra:
            errors.append(f"index {name} has {len(extra)} entries that no document yields")
        index_details[name] = {"valid": valid}
    return {
        "ns": store.info.ns,
        "nInvalidDocuments": invalid_docs,
        "nNonCompliantDocuments": 0,
        "nrecords": n_records,
        "nIndexes": len(store.writers),
        "keysPerIndex": keys_per_index,
        "indexDetails": index_details,
        "valid": not errors,
        "repaired": False,
        "warnings": [],
        "errors": errors,
        "extraIndexEntries": [],
        "missingIndexEntries": [],
        "corruptRecords": [],
        "ok": 1.0,
    }
