"""Export, then import, gives back every document exactly, however the input is
cut into reads.

mongoexport's and mongoimport's formats
(https://www.mongodb.com/docs/database-tools/mongoexport/,
https://www.mongodb.com/docs/database-tools/mongoimport/): Extended JSON,
canonical or relaxed (https://www.mongodb.com/docs/manual/reference/mongodb-extended-json/),
one document a line, as a JSON array, or pretty; and CSV, which carries the
types ``--columnsHaveTypes`` names. The reader is fed ``chunk`` bytes a read
and reads ``chunk`` characters of JSON at a time, for every chunk size from 1
up, so every value meets a read boundary at every offset.

Relaxed Extended JSON writes an int64 as a plain number, so one within int32's
range reads back as an int32: the type loss the manual states for relaxed
mode, applied by hand to the expected documents.
"""

from __future__ import annotations

import datetime
import io
from collections.abc import Iterator
from typing import Any

import pytest
from bson import Decimal128, Int64
from hypothesis import given, settings
from hypothesis import strategies as st

import foliodb
from foliodb.tools.exporter import ExportOptions, export_documents
from foliodb.tools.importer import ImportOptions, import_documents
from tests.bson_values import documents
from tests.property.test_roundtrip import assert_same

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


class Pieces(io.RawIOBase):
    """Bytes handed out at most ``size`` at a time, as a pipe or a slow disk may."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size, self.at = data, size, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        piece = self.data[self.at : self.at + min(self.size, len(buffer))]
        buffer[: len(piece)] = piece
        self.at += len(piece)
        return len(piece)


@pytest.fixture(scope="module")
def database() -> Iterator[Any]:
    client = foliodb.MongoClient(":memory:")
    yield client.roundtrip
    client.close()


def export(collection: Any, **options: Any) -> bytes:
    out = io.StringIO()
    export_documents(collection, out, ExportOptions(**options))
    return out.getvalue().encode()


def load(collection: Any, data: bytes, chunk: int, **options: Any) -> Any:
    collection.drop()
    return import_documents(collection, Pieces(data, chunk), ImportOptions(**options), chunk=chunk)


def relaxed(value: Any) -> Any:
    """What relaxed Extended JSON keeps of a value: an int64 within int32's range becomes an int32."""
    if isinstance(value, Int64):
        return int(value) if INT32_MIN <= value <= INT32_MAX else value
    if isinstance(value, dict):
        return {k: relaxed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [relaxed(v) for v in value]
    return value


# -- JSON --------------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    docs=st.lists(documents(max_leaves=8), min_size=1, max_size=6),
    json_format=st.sampled_from(["canonical", "relaxed"]),
    shape=st.sampled_from(["lines", "array", "pretty", "pretty array"]),
    data=st.data(),
)
def test_json_export_then_import_round_trips(
    database: Any, docs: list[dict[str, Any]], json_format: str, shape: str, data: st.DataObject
) -> None:
    source = database.source
    source.drop()
    source.insert_many([{"_id": n, **doc} for n, doc in enumerate(docs)])
    array, pretty = "array" in shape, "pretty" in shape
    text = export(source, json_format=json_format, json_array=array, pretty=pretty)
    chunk = data.draw(st.integers(min_value=1, max_value=len(text) + 1), label="chunk")
    report = load(database.copy, text, chunk, json_array=array)
    assert (report.imported, report.failed, report.problems) == (len(docs), 0, [])
    expected = list(source.find())
    if json_format == "relaxed":
        expected = [relaxed(doc) for doc in expected]
    assert_same(list(database.copy.find()), expected)


# Every JSON token the old reader lost when a read cut it (issue 26), and the ones
# that are cut in other ways: strings with escapes and surrogate pairs, long numbers.
TRICKY = (
    '{"_id":1,"f":-1.5e-7,"g":1E+300,"t":true,"u":false,"n":null,"z":-0.0,"i":-12345678901}\n'
    '{"_id":2,"s":"a\\"b\\\\c\\u00e9\\ud83d\\ude00\\n","l":{"$numberLong":"-9"},"a":[[-1],{"b":[true,null]}]}\n'
    '\t{"_id" : 3 ,\n "pretty" : [ 1.25 , -2 ] }\n'
    '{"_id":4,"d":{"$date":"2020-01-02T03:04:05.678Z"},"x":{"$numberDecimal":"-1.0E-10"}}'
)


def test_every_read_boundary_of_tricky_tokens(database: Any) -> None:
    data = TRICKY.encode()
    expected = [
        {"_id": 1, "f": -1.5e-7, "g": 1e300, "t": True, "u": False, "n": None, "z": -0.0, "i": Int64(-12345678901)},
        {"_id": 2, "s": 'a"b\\cé\U0001f600\n', "l": Int64(-9), "a": [[-1], {"b": [True, None]}]},
        {"_id": 3, "pretty": [1.25, -2]},
        {"_id": 4, "d": datetime.datetime(2020, 1, 2, 3, 4, 5, 678000), "x": Decimal128("-1.0E-10")},
    ]
    for chunk in range(1, len(data) + 2):
        report = load(database.copy, data, chunk)
        assert (report.imported, report.failed) == (4, 0), (chunk, report.problems)
        assert_same(list(database.copy.find()), expected)


def test_a_bad_line_is_still_reported_once_whatever_the_boundary(database: Any) -> None:
    # A genuine error is not taken for a cut value: one problem, on its own line, the rest imported.
    data = b'{"_id": 1, "a": -1.5}\n{"_id": 2, "a": tru}\n{"_id": 3, "a": 2e5}\n{"_id": 4, "a": [1,]}'
    for chunk in range(1, len(data) + 2):
        report = load(database.copy, data, chunk)
        assert (report.imported, report.failed) == (2, 2), chunk
        assert [p.split(":")[0] for p in report.problems] == ["line 2", "line 4"], chunk
        assert [d["_id"] for d in database.copy.find()] == [1, 3]


def test_a_large_export_reimports_whole(database: Any) -> None:
    # The regression at the default read size: 20,000 lines full of floats, negatives,
    # booleans and nulls (1.3 MB, 20 read boundaries) lost documents at boundaries before the fix.
    # scripts/import_round_trip.py runs the 200,000.
    source = database.source
    source.drop()
    count = 20_000
    source.insert_many(
        [{"_id": i, "f": -i / 7, "e": i * 1e-9, "t": i % 2 == 0, "n": None, "neg": -i} for i in range(count)]
    )
    text = export(source)
    assert len(text) > 20 * 65536
    database.copy.drop()
    report = import_documents(database.copy, io.BytesIO(text), ImportOptions())
    assert (report.imported, report.failed) == (count, 0)
    assert database.copy.count_documents({}) == count
    assert_same(list(database.copy.find()), list(source.find()))


# -- CSV ---------------------------------------------------------------------------------------------

# The types a CSV column can carry (mongoimport's --columnsHaveTypes), each as
# mongoexport writes it: dates in its ISO layout, binary as hex, doubles as Go prints them.
COLUMNS = {
    "_id": "int32()",
    "s": "string()",
    "i": "int32()",
    "l": "int64()",
    "d": "double()",
    "b": "boolean()",
    "t": "date_go(2006-01-02T15:04:05.000Z)",
    "m": "decimal()",
    "x": "binary(hex)",
    "in.s": "string()",
}
_VALUES = {
    "s": st.text(min_size=1),  # an empty cell is a missing field (--ignoreBlanks)
    "i": st.integers(min_value=-(2**31), max_value=2**31 - 1),
    "l": st.integers(min_value=-(2**63), max_value=2**63 - 1).map(Int64),
    "d": st.floats(),
    "b": st.booleans(),
    "t": st.datetimes(min_value=datetime.datetime(1900, 1, 1), max_value=datetime.datetime(2200, 1, 1)).map(
        lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)
    ),
    "m": st.one_of(
        st.decimals(allow_nan=False, allow_infinity=False, places=4, min_value=-(10**29), max_value=10**29).map(
            lambda d: Decimal128(str(d))
        ),  # within 34 significant digits: a wider decimal is no Decimal128
        st.sampled_from([Decimal128(t) for t in ("NaN", "-Infinity", "-0", "1E+6000", "1.000", "-1E-6100")]),
    ),
    "x": st.binary(min_size=1),
    "in.s": st.text(min_size=1),
}


@st.composite
def csv_documents(draw: st.DrawFn, _id: int) -> dict[str, Any]:
    """A document whose fields are any of the typed columns, in their order."""
    doc: dict[str, Any] = {"_id": _id}
    for name, values in _VALUES.items():
        if draw(st.booleans()):
            if name == "in.s":
                doc["in"] = {"s": draw(values)}
            else:
                doc[name] = draw(values)
    return doc


@settings(max_examples=150, deadline=None)
@given(
    docs=st.integers(min_value=1, max_value=6).flatmap(lambda n: st.tuples(*(csv_documents(i) for i in range(n)))),
    data=st.data(),
)
def test_csv_export_then_import_round_trips(
    database: Any, docs: tuple[dict[str, Any], ...], data: st.DataObject
) -> None:
    source = database.source
    source.drop()
    source.insert_many(list(docs))
    text = export(source, type="csv", fields=list(COLUMNS), no_header_line=True)
    chunk = data.draw(st.integers(min_value=1, max_value=len(text) + 1), label="chunk")
    typed = [f"{name}.{kind}" for name, kind in COLUMNS.items()]
    report = load(database.copy, text, chunk, type="csv", fields=typed, columns_have_types=True, ignore_blanks=True)
    assert (report.imported, report.failed, report.problems) == (len(docs), 0, [])
    assert_same(list(database.copy.find()), list(source.find()))
