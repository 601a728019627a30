"""A finished find, insert, update or delete of a collection is counted by
:func:`foliodb.engine.usage.point_finished` (the executor's path for them) exactly as
:func:`~foliodb.engine.usage.command_finished` (every other command's) counts it.

What both keep is what ``top`` and ``$collStats``' ``latencyStats`` report
(https://www.mongodb.com/docs/manual/reference/command/top/): per namespace, each
command's total time and count; reads (find) and writes latencies with their histogram
buckets; a collection's index counters brought up to date with the catalog. A view's
namespace and a missing collection's count too, as mongod's Top does; a view has no
index counters. Random sequences of commands, applied to two fresh counter sets, must
leave them equal.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from foliodb.commands import Executor
from foliodb.engine.catalog import Catalog
from foliodb.engine.usage import EngineUsage, NamespaceUsage, command_finished, point_finished

_COMMANDS = st.lists(
    st.tuples(
        st.sampled_from(["find", "insert", "update", "delete"]),
        st.sampled_from(["plain", "indexed", "view", "missing"]),
        st.integers(0, 5_000_000),  # µs: up to 5 s, past the histogram's fine buckets
    ),
    max_size=30,
)


def _state(usage: EngineUsage) -> dict[tuple[str, str], Any]:
    """All a counter set holds, but the time its index counters started (the clock's)."""

    def one(entry: NamespaceUsage) -> Any:
        indexes = {name: (used.index_id, used.ops) for name, used in entry.indexes.items()}
        latency = {kind: (lat.micros, lat.ops, lat.buckets) for kind, lat in entry.latency.items()}
        return (entry.collection, indexes, entry.collection_scans, entry.synced, latency, entry.by_command)

    return {key: one(entry) for key, entry in usage.namespaces.items()}


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    """A catalog with a plain collection, one with a second index, and a view."""
    executor = Executor.open(str(tmp_path_factory.mktemp("usage")))
    executor.execute("db", {"create": "plain"})
    executor.execute("db", {"createIndexes": "indexed", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})
    executor.execute("db", {"create": "view", "viewOn": "plain", "pipeline": []})
    published = executor.engine.storage.published
    executor.close()
    return published


@settings(max_examples=150, deadline=None)
@given(commands=_COMMANDS, known=st.booleans())
def test_point_finished_counts_as_command_finished(
    catalog: Catalog, commands: list[tuple[str, str, int]], known: bool
) -> None:
    # ``known``: the counters start from the catalog (an engine's opening), or from nothing.
    general = EngineUsage(catalog) if known else EngineUsage(Catalog({}))
    point = EngineUsage(catalog) if known else EngineUsage(Catalog({}))
    for name, coll, micros in commands:
        seconds = micros / 1_000_000
        command_finished(general, catalog, "db", name, {name: coll}, seconds)
        point_finished(point, catalog, "db", coll, name, int(seconds * 1_000_000))
    assert _state(point) == _state(general)
    for (_, coll), entry in general.namespaces.items():
        if coll in ("plain", "indexed") and commands:
            assert entry.synced is catalog.get("db", coll)  # index counters brought up to date
