"""How a spec test runs against each target, with the skips that belong to
the target rather than to the runner: what the embedded facade lacks yet,
and what pymongo itself decides."""

from __future__ import annotations

from pathlib import Path

import pymongo.common
import pytest

from tests.spec.runner import (
    Run,
    Skip,
    SpecTest,
    expects_read_preference,
    requires_auth,
)
from tests.spec.targets import (
    EMBEDDED_SKIPS,
    FACADE_READ_PREFERENCE_REASON,
    NETWORK_PARTIAL_RESULT,
    EmbeddedTarget,
    ServerTarget,
    facade_sends_read_preference,
)

# Tests whose outcome pymongo decides from a reply that is already MongoDB's: test id -> why.
_PARTIAL_RESULT = (
    "pymongo 4.20 sets partialResult whenever nErrors < the operations sent (client_bulk.py), so an ordered"
    " failure at index 0 still has one; the Node driver skips these too (NODE-6384)"
)
DRIVER_DECIDES = {
    "client-bulkWrite-partialResults: partialResult is unset when first operation fails during an ordered bulk"
    " write (verbose)": _PARTIAL_RESULT,
    "client-bulkWrite-partialResults: partialResult is unset when first operation fails during an ordered bulk"
    " write (summary)": _PARTIAL_RESULT,
    "bulkWrite: First insertOne is never committed": NETWORK_PARTIAL_RESULT,
    "bulkWrite: Second updateOne is never committed": NETWORK_PARTIAL_RESULT,
    "bulkWrite: Third updateOne is never committed": NETWORK_PARTIAL_RESULT,
}
# pymongo waits this long between server checks after an error (common.MIN_HEARTBEAT_INTERVAL, 0.5 s);
# shortened as the unified format allows for tests with fail points, as pymongo's own test suite does.
MIN_HEARTBEAT_INTERVAL = 0.01


def run_embedded(spec: SpecTest, tmp_path: Path) -> None:
    """``spec`` against a fresh embedded dbpath."""
    if spec.id in EMBEDDED_SKIPS:
        pytest.skip(EMBEDDED_SKIPS[spec.id])
    if expects_read_preference(spec) and not facade_sends_read_preference():
        pytest.skip(FACADE_READ_PREFERENCE_REASON)
    target = EmbeddedTarget(tmp_path / "db")
    try:
        Run(spec, target).execute()
    except Skip as reason:
        pytest.skip(str(reason))
    finally:
        target.close()


def run_over_wire(spec: SpecTest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``spec`` against a fresh ``foliodb serve`` (one-member replica set), through pymongo;
    with authentication when the test can run only so."""
    if spec.id in DRIVER_DECIDES:
        pytest.skip(DRIVER_DECIDES[spec.id])
    monkeypatch.setattr(pymongo.common, "MIN_HEARTBEAT_INTERVAL", MIN_HEARTBEAT_INTERVAL)
    target = ServerTarget(tmp_path / "db", auth=requires_auth(spec))
    try:
        Run(spec, target).execute()
    except Skip as reason:
        pytest.skip(str(reason))
    finally:
        target.close()
