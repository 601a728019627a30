"""A find's reply over the wire carries the documents the general path would.

Over the wire (a request with a connection id, as the server runs it) a find
whose documents go out unchanged - no projection, no sort in memory, no
``returnKey``/``showRecordId`` - puts each document's stored BSON in its reply
undecoded (``FindSpec.raw``; ``FindExecution._stored_matching`` in
foliodb/engine/query.py). The general path, which the embedded client takes,
decodes each document; a reply over the wire then encodes it again. For random
documents (every BSON type), indexes, filters, sorts, skips, limits, batch
sizes, projections, ``returnKey`` and ``showRecordId``, every batch over the wire (the first and each
getMore's) must hold, byte for byte, the BSON of the embedded client's
documents, with the same batch boundaries, the same cursor ends and the same
errors. Manual: https://www.mongodb.com/docs/manual/reference/command/find/
and .../command/getMore/ (a batch holds at most ``batchSize`` documents; a
cursor id of 0 means the results are exhausted).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bson
import pytest
from bson.raw_bson import RawBSONDocument
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from foliodb.commands.executor import Executor
from foliodb.engine.catalog import CODEC
from tests.bson_values import documents
from tests.property.test_indexed_equals_scan import INDEXES, PROJECTIONS, SORTS, _filters

_CONNECTION = 7  # any id: the executor answers a request that carries one as it answers the server's


@pytest.fixture(scope="module")
def executor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Executor]:
    executor = Executor.open(str(Path(tmp_path_factory.mktemp("stored")) / "data"))
    yield executor
    executor.close()


def _encoded(doc: Any) -> bytes:
    """A batch's document as the reply's BSON carries it."""
    return doc.raw if isinstance(doc, RawBSONDocument) else bson.encode(doc, codec_options=CODEC)


def _batches(executor: Executor, command: dict[str, Any], wire: bool, more_size: int | None) -> list[Any]:
    """Each batch of the find's cursor as (its documents' BSON, whether the cursor ended), or its error code."""
    extra = {"connection_id": _CONNECTION} if wire else {}
    reply = executor.execute("test", command, **extra)
    out: list[Any] = []
    key = "firstBatch"
    while True:
        if reply.get("ok") != 1.0:
            out.append(("error", reply.get("code")))
            return out
        cursor = reply["cursor"]
        out.append(([_encoded(doc) for doc in cursor[key]], cursor["id"] == 0))
        if cursor["id"] == 0:
            return out
        get_more: dict[str, Any] = {"getMore": cursor["id"], "collection": "c"}
        if more_size is not None:
            get_more["batchSize"] = more_size
        reply = executor.execute("test", get_more, **extra)
        key = "nextBatch"


_SIZES = st.one_of(st.none(), st.integers(0, 4))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    docs=st.lists(documents(max_leaves=6), max_size=14),
    indexes=st.lists(st.sampled_from(range(len(INDEXES))), max_size=3, unique=True),
    filter_spec=st.one_of(_filters(), st.builds(lambda v: {"a": v}, st.integers(-3, 3))),
    sort=SORTS,
    projection=PROJECTIONS,
    skip=st.sampled_from([0, 0, 1, 3]),
    limit=st.sampled_from([0, 0, 1, 2, 5]),
    batch_size=_SIZES,
    more_size=_SIZES,
    single_batch=st.booleans(),
    options=st.sampled_from([{}, {}, {}, {"showRecordId": True}, {"returnKey": True}]),
)
@example(
    docs=[{"a": 1, "b": "x"}, {"a": 2}, {"a": 1, "b": [1, 2]}, {"a": 1}],
    indexes=[0],
    filter_spec={"a": 1},
    sort=None,
    projection=None,
    skip=0,
    limit=0,
    batch_size=1,
    more_size=None,
    single_batch=False,
    options={},
).via("the indexed equality of the benchmark, its matches in batches")
def test_wire_batches_hold_the_general_paths_documents(
    executor: Executor,
    docs: list[dict[str, Any]],
    indexes: list[int],
    filter_spec: dict[str, Any],
    sort: Any,
    projection: Any,
    skip: int,
    limit: int,
    batch_size: int | None,
    more_size: int | None,
    single_batch: bool,
    options: dict[str, Any],
) -> None:
    executor.execute("test", {"drop": "c"})
    executor.execute("test", {"create": "c"})
    for index in indexes:
        keys, options = INDEXES[index]
        name = "_".join(f"{field}_{direction}" for field, direction in keys)
        executor.execute("test", {"createIndexes": "c", "indexes": [{"key": dict(keys), "name": name, **options}]})
    for doc in docs:
        executor.execute("test", {"insert": "c", "documents": [doc]})  # parallel arrays may fail: left out
    command: dict[str, Any] = {"find": "c", "filter": filter_spec, "skip": skip, "limit": limit, **options}
    if sort:
        command["sort"] = dict(sort)
    if projection is not None:
        command["projection"] = projection
    if batch_size is not None:
        command["batchSize"] = batch_size
    if single_batch:
        command["singleBatch"] = True
    embedded = _batches(executor, command, False, more_size)
    wire = _batches(executor, command, True, more_size)
    assert wire == embedded
