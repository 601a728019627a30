"""``foliodb import`` and ``foliodb export``: mongoimport's and mongoexport's
formats, options and write modes.

Manual: https://www.mongodb.com/docs/database-tools/mongoimport/ and
https://www.mongodb.com/docs/database-tools/mongoexport/; formats from
mongo-tools' ``mongoimport/`` and ``mongoexport/`` sources.
"""

from __future__ import annotations

import datetime
import io
import math
from typing import Any

import pytest
from bson import Code, Decimal128, Int64, ObjectId, Regex, Timestamp
from bson.binary import Binary

from foliodb.tools.exporter import ExportOptions, csv_cell, export_documents, go_float
from foliodb.tools.importer import ImportOptions, InputError, check_options, import_documents
from tests.bson_values import EDGE_VALUES


def load(coll: Any, text: str | bytes, **options: Any) -> Any:
    data = text.encode() if isinstance(text, str) else text
    return import_documents(coll, io.BytesIO(data), ImportOptions(**options))


def export(coll: Any, **options: Any) -> str:
    out = io.StringIO()
    export_documents(coll, out, ExportOptions(**options))
    return out.getvalue()


def same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to itself and -0.0 told from 0.0 (BSON keeps both)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


# -- round trips --------------------------------------------------------------------------


@pytest.mark.parametrize("json_format", ["canonical", "relaxed"])
def test_every_bson_type_round_trips_through_extended_json(db: Any, json_format: str) -> None:
    values = [v for v in EDGE_VALUES if v != Timestamp(0, 0)]  # an empty top-level timestamp is filled on insert
    if json_format == "relaxed":
        # Relaxed Extended JSON writes an int64 as a plain number, so one that fits in an int32
        # reads back as an int32: the type loss the manual warns of for relaxed mode.
        values = [v for v in values if not (isinstance(v, Int64) and -(2**31) <= v < 2**31)]
    db.src.insert_many([{"_id": n, "v": v, "in": {"list": [v, {"v": v}]}} for n, v in enumerate(values)])
    text = export(db.src, json_format=json_format)
    assert len(text.splitlines()) == len(values)
    report = load(db.dst, text)
    assert (report.imported, report.failed) == (len(values), 0)
    for original, copy in zip(db.src.find(), db.dst.find(), strict=True):
        assert same(copy, original), original


def test_json_array_and_pretty_round_trip(db: Any) -> None:
    db.src.insert_many(
        [{"_id": i, "doc": {"a": [i, "x"]}, "when": datetime.datetime(2024, 1, i + 1)} for i in range(5)]
    )
    for options in ({"json_array": True}, {"pretty": True}, {"json_array": True, "pretty": True}):
        db.dst.drop()
        text = export(db.src, **options)
        report = load(db.dst, text, json_array=options.get("json_array", False))
        assert report.imported == 5 and list(db.dst.find()) == list(db.src.find()), options


def test_csv_round_trip_with_nested_fields(db: Any) -> None:
    db.src.insert_many([{"_id": i, "name": f"n,{i}", "address": {"city": "Oslo", "zip": 100 + i}} for i in range(3)])
    text = export(db.src, type="csv", fields=["_id", "name", "address.city", "address.zip"])
    assert text.splitlines()[:2] == ["_id,name,address.city,address.zip", '0,"n,0",Oslo,100']
    load(db.dst, text, type="csv", header_line=True)
    assert list(db.dst.find()) == list(db.src.find())


# -- what mongoexport writes is read back ----------------------------------------------------

# Lines as mongoexport 100.x writes them (Go's bson.MarshalExtJSON: compact, relaxed by
# default; --jsonFormat=canonical for the second file).
MONGOEXPORT_RELAXED = (
    '{"_id":{"$oid":"5f1e2d3c4b5a697887766554"},"name":"Ann","age":31,"score":4.5,'
    '"joined":{"$date":"2020-05-17T10:00:00.250Z"},"big":{"$numberLong":"9007199254740993"},'
    '"tags":["a","b"],"bin":{"$binary":{"base64":"AQI=","subType":"00"}}}\n'
    '{"_id":{"$oid":"5f1e2d3c4b5a697887766555"},"name":"Bo","ratio":{"$numberDecimal":"0.10"},'
    '"re":{"$regularExpression":{"pattern":"^a","options":"i"}},"ts":{"$timestamp":{"t":5,"i":1}},'
    '"old":{"$date":{"$numberLong":"-86400000"}},"nothing":null}\n'
)
MONGOEXPORT_CANONICAL = (
    '{"_id":{"$oid":"5f1e2d3c4b5a697887766554"},"age":{"$numberInt":"31"},"score":{"$numberDouble":"4.5"},'
    '"inf":{"$numberDouble":"-Infinity"},"long":{"$numberLong":"1"},'
    '"joined":{"$date":{"$numberLong":"1589709600250"}}}\n'
)


def test_reads_mongoexport_relaxed_output(db: Any) -> None:
    assert load(db.people, MONGOEXPORT_RELAXED).imported == 2
    ann, bo = db.people.find()
    assert ann == {
        "_id": ObjectId("5f1e2d3c4b5a697887766554"),
        "name": "Ann",
        "age": 31,
        "score": 4.5,
        "joined": datetime.datetime(2020, 5, 17, 10, 0, 0, 250000),
        "big": Int64(9007199254740993),
        "tags": ["a", "b"],
        "bin": b"\x01\x02",
    }
    assert bo["ratio"] == Decimal128("0.10") and bo["re"] == Regex("^a", "i")
    assert bo["ts"] == Timestamp(5, 1) and bo["old"] == datetime.datetime(1969, 12, 31)
    assert bo["nothing"] is None


def test_reads_mongoexport_canonical_output(db: Any) -> None:
    load(db.c, MONGOEXPORT_CANONICAL)
    doc = db.c.find_one()
    assert type(doc["age"]) is int and doc["score"] == 4.5 and doc["inf"] == float("-inf")
    assert type(doc["long"]) is Int64 and doc["joined"] == datetime.datetime(2020, 5, 17, 10, 0, 0, 250000)


def test_export_writes_mongoexport_lines(db: Any) -> None:
    db.c.insert_one(
        {
            "_id": ObjectId("5f1e2d3c4b5a697887766554"),
            "n": 1,
            "l": Int64(2),
            "d": 2.5,
            "s": "é<",
            "when": datetime.datetime(2020, 1, 2),
        }
    )
    assert export(db.c) == (
        '{"_id":{"$oid":"5f1e2d3c4b5a697887766554"},"n":1,"l":2,"d":2.5,"s":"é<",'
        '"when":{"$date":"2020-01-02T00:00:00Z"}}\n'
    )
    assert export(db.c, json_format="canonical") == (
        '{"_id":{"$oid":"5f1e2d3c4b5a697887766554"},"n":{"$numberInt":"1"},"l":{"$numberLong":"2"},'
        '"d":{"$numberDouble":"2.5"},"s":"é<","when":{"$date":{"$numberLong":"1577923200000"}}}\n'
    )
    assert export(db.c, json_array=True, fields=["n"]) == '[{"_id":{"$oid":"5f1e2d3c4b5a697887766554"},"n":1}]\n'


def test_export_query_sort_skip_limit(db: Any) -> None:
    db.c.insert_many([{"_id": i, "g": i % 2} for i in range(10)])
    text = export(
        db.c, query={"g": 1}, sort={"_id": -1}, skip=1, limit=2, type="csv", fields=["_id"], no_header_line=True
    )
    assert text == "7\n5\n"


# -- CSV cells as mongoexport prints them (common/json/csv_format.go) ---------------------------


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        (ObjectId("5f1e2d3c4b5a697887766554"), "ObjectId(5f1e2d3c4b5a697887766554)"),
        (datetime.datetime(2020, 5, 17, 10, 0, 0, 250000), "2020-05-17T10:00:00.250Z"),
        (datetime.datetime(1969, 12, 31), "1969-12-31T00:00:00.000Z"),
        (True, "true"),
        (31, "31"),
        (Int64(2**40), "1099511627776"),
        (1.0, "1"),  # Go's %v of a float64
        (1e6, "1e+06"),
        (123456.0, "123456"),
        (0.00001, "1e-05"),
        (float("nan"), "NaN"),
        (Decimal128("0.10"), "0.10"),
        (Binary(b"\x01\xab", 0), "01AB"),
        (Binary(b"\x02\x00\x00\x00\x01\xab", 2), "01AB"),  # the old subtype's length prefix is skipped
        (Regex("^a", "i"), "/^a/i"),
        (Timestamp(5, 1), '{ "$timestamp": { "t": 5, "i": 1 } }'),
        (Code("f()"), "f()"),
        (None, ""),
        ({"a": Int64(1), "b": [1.0, "x<"]}, '{"a":{ "$numberLong": "1" },"b":[1.0,"x\\u003c"]}'),
    ],
)
def test_csv_cells(value: Any, cell: str) -> None:
    assert csv_cell(value) == cell


def test_go_float_formatting() -> None:
    # strconv.FormatFloat(f, 'g', -1, 64): exponent form below 1e-4 and from 1e6.
    assert [go_float(v) for v in (0.1, 100.0, 1234567.0, -2.5e-7, 1e21, -0.0)] == [
        "0.1",
        "100",
        "1.234567e+06",
        "-2.5e-07",
        "1e+21",
        "-0",
    ]


def test_csv_quoting_follows_gos_csv_writer(db: Any) -> None:
    db.c.insert_one({"_id": 1, "a": 'say "hi"', "b": " lead", "c": "x\ny", "d": ""})
    text = export(db.c, type="csv", fields=["a", "b", "c", "d", "missing"], no_header_line=True)
    assert text == '"say ""hi"""," lead","x\ny",,\n'


# -- CSV and TSV input ----------------------------------------------------------------------------


def test_csv_types_headerline_and_blanks(db: Any) -> None:
    # mongoimport's autoParse: int32 when it fits, else int64, else double, else the string.
    load(db.c, "a,b,c,d.e\n1,2147483648,1.5,x\n,,,\n", type="csv", header_line=True)
    first, second = db.c.find({}, {"_id": 0})
    assert first == {"a": 1, "b": Int64(2147483648), "c": 1.5, "d": {"e": "x"}}
    assert type(first["a"]) is int and second == {"a": "", "b": "", "c": "", "d": {"e": ""}}
    db.c.drop()
    load(db.c, "a,b\n1,\n", type="csv", header_line=True, ignore_blanks=True)
    assert db.c.find_one({}, {"_id": 0}) == {"a": 1}


def test_extra_columns_and_tsv(db: Any) -> None:
    load(db.c, "1\t2\tthree\n", type="tsv", fields=["x"])
    assert db.c.find_one({}, {"_id": 0}) == {"x": 1, "field1": 2, "field2": "three"}


def test_columns_have_types(db: Any) -> None:
    # The manual's example: --columnsHaveTypes --fields "name.string(),birthdate.date(2006-01-02),..."
    header = "name.string(),birthdate.date(2006-01-02),contacted.boolean(),followerCount.int32(),thumbnail.binary(base64),big.int64(),ratio.decimal(),when.date_ms(yyyy-MM-dd HH:mm)"
    load(
        db.c,
        f"{header}\n0123,1990-05-20,true,7,AQI=,5,0.5,2021-03-04 05:06\n",
        type="csv",
        header_line=True,
        columns_have_types=True,
    )
    assert db.c.find_one({}, {"_id": 0}) == {
        "name": "0123",
        "birthdate": datetime.datetime(1990, 5, 20),
        "contacted": True,
        "followerCount": 7,
        "thumbnail": b"\x01\x02",
        "big": Int64(5),
        "ratio": Decimal128("0.5"),
        "when": datetime.datetime(2021, 3, 4, 5, 6),
    }


@pytest.mark.parametrize(
    ("grace", "expected", "failed"),
    [
        ("stop", [{"n": 1}], 1),
        ("skipRow", [{"n": 1}], 0),
        ("skipField", [{"n": 1}, {}], 0),
        ("autoCast", [{"n": 1}, {"n": "x"}], 0),
    ],
)
def test_parse_grace(db: Any, grace: str, expected: list[dict[str, Any]], failed: int) -> None:
    report = load(db.c, "n.int32()\n1\nx\n", type="csv", header_line=True, columns_have_types=True, parse_grace=grace)
    assert list(db.c.find({}, {"_id": 0})) == expected and report.failed == failed


# -- bad lines, modes, streaming --------------------------------------------------------------------


def test_bad_lines_are_reported_with_their_line_and_the_rest_imported(db: Any) -> None:
    text = '{"_id": 1}\n{"_id": 2,\n "multi": "line"}\nnot json\n{"_id": 3}\n[1, 2]\n{"_id": 1}\n{"_id": {"$oid": "zz"}}\n{"_id": 4}\n'
    report = load(db.c, text)
    assert [d["_id"] for d in db.c.find()] == [1, 2, 3, 4]
    assert (report.imported, report.failed) == (4, 4)
    assert [p.split(":")[0] for p in report.problems] == ["line 4", "line 6", "line 8", "line 7"]
    assert report.problems[0] == "line 4: invalid JSON: Expecting value (line 4, column 1)"
    assert "E11000 duplicate key error" in report.problems[3]


def test_stop_on_error(db: Any) -> None:
    report = load(db.c, '{"_id": 1}\n{"_id": 1}\n{"_id": 2}\n', stop_on_error=True)
    assert [d["_id"] for d in db.c.find()] == [1] and report.failed == 1


def test_a_broken_json_array_stops_with_its_line(db: Any) -> None:
    with pytest.raises(InputError, match="line 3: invalid JSON"):
        load(db.c, '[{"_id": 1},\n{"_id": 2},\n{"_id": 3,,}]', json_array=True)
    assert db.c.count_documents({}) == 2  # what came before the error is imported, as mongoimport does


def test_modes_with_upsert_fields(db: Any) -> None:
    db.c.insert_many([{"_id": 1, "email": "a@x", "n": 1, "keep": True}, {"_id": 2, "email": "b@x", "n": 2}])
    load(db.c, '{"email": "a@x", "n": 10}\n{"email": "c@x", "n": 3}\n', mode="upsert", upsert_fields=["email"])
    assert db.c.find_one({"email": "a@x"}, {"_id": 0}) == {"email": "a@x", "n": 10}  # replaced: "keep" is gone
    assert db.c.count_documents({}) == 3
    load(db.c, '{"email": "b@x", "extra": 1}\n', mode="merge", upsert_fields=["email"])
    assert db.c.find_one({"email": "b@x"}, {"_id": 0}) == {"email": "b@x", "n": 2, "extra": 1}
    report = load(db.c, '{"email": "c@x"}\n{"other": 1}\n', mode="delete", upsert_fields=["email"])
    assert report.imported == 1 and sorted(d["email"] for d in db.c.find()) == ["a@x", "b@x"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"type": "json", "header_line": True}, "cannot use --headerline when input type is JSON"),
        ({"type": "csv"}, "must specify --fields, --fieldFile or --headerline"),
        ({"mode": "insert", "upsert_fields": ["a"]}, "cannot use --upsertFields with --mode=insert"),
        (
            {"type": "csv", "header_line": True, "json_array": True},
            "cannot use --jsonArray when input type is not JSON",
        ),
    ],
)
def test_option_errors_are_mongoimports(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_options(ImportOptions(**options))


class Trickle(io.RawIOBase):
    """A large input that can only be read a little at a time; it records how far ahead anyone read."""

    def __init__(self, lines: int, array: bool) -> None:
        self.lines, self.array, self.sent, self.max_ahead = lines, array, 0, 0
        self.produced = 0
        self.closed_array = not array
        self.pending = b"[" if array else b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while len(self.pending) < len(buffer) and self.produced < self.lines:
            sep = b"," if self.array and self.produced else b""
            self.pending += sep + b'{"_id": %d, "pad": "%s"}\n' % (self.produced, b"x" * 100)
            self.produced += 1
        if self.produced == self.lines and not self.closed_array:
            self.pending += b"]"
            self.closed_array = True
        data, self.pending = self.pending[: len(buffer)], self.pending[len(buffer) :]
        buffer[: len(data)] = data
        self.sent += len(data)
        return len(data)


@pytest.mark.parametrize("array", [False, True], ids=["lines", "array"])
def test_large_inputs_stream(db: Any, array: bool) -> None:
    # 20,000 documents (2.6 MB): every one arrives, and the reader never runs far ahead of the writes.
    source = Trickle(20_000, array)
    seen: list[int] = []
    real_insert = db.c.insert_many

    def insert_many(docs: list[Any], ordered: bool = True) -> Any:
        seen.append(source.sent)
        return real_insert(docs, ordered=ordered)

    coll = db.c
    coll.insert_many = insert_many  # type: ignore[method-assign]
    report = import_documents(coll, io.BufferedReader(source), ImportOptions(json_array=array))
    assert report.imported == 20_000 and db.c.count_documents({}) == 20_000
    # When batch k (1,000 documents, ~130 kB) is written, at most one more chunk has been read.
    assert all(sent <= (k + 1) * 1000 * 130 + 200_000 for k, sent in enumerate(seen))
