"""Nothing is lost silently: a document not imported or restored makes the
command's status non-zero, and damaged input (a truncated or corrupt gzip
file, a cut or corrupt BSON dump, bad metadata, malformed JSON or CSV, bytes
that are not UTF-8) is one line on stderr and status 1, never a traceback.

mongoimport and mongorestore end with "N document(s) imported successfully.
M document(s) failed to import." (``mongoimport/main/mongoimport.go``,
``mongorestore/main/mongorestore.go``). Unlike them, FolioDB's status is 1
when any document failed, a duplicate ``_id`` included, so a script can tell
(issue 26); the summary is shown even with ``--quiet``.

The commands run in this process (``foliodb.cli.main``): an exception that
escaped would fail the test, where a subprocess would print a traceback.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

import foliodb
from foliodb.cli import main

LOG_LINE = r"\d{4}-\d\d-\d\dT[\d:.]+[+-]\d{4}\t"


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    with foliodb.MongoClient(str(tmp_path / "data")) as client:
        client.shop.orders.insert_many([{"_id": i, "item": "x" * 40} for i in range(3000)])
    assert main(["dump", "--dbpath", str(tmp_path / "data"), "--out", str(tmp_path / "dump"), "--quiet"]) == 0
    assert (
        main(["dump", "--dbpath", str(tmp_path / "data"), f"--archive={tmp_path / 'a.gz'}", "--gzip", "--quiet"]) == 0
    )
    return tmp_path


def one_line(capsys: Any, status: int) -> str:
    assert status == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return str(err.rstrip("\n"))


def restore(shop: Path, *args: str) -> int:
    return main(["restore", "--dbpath", str(shop / "copy"), "--quiet", *args])


# -- restore ------------------------------------------------------------------------------------


def test_a_truncated_gzip_archive(shop: Path, capsys: Any) -> None:
    data = (shop / "a.gz").read_bytes()
    (shop / "cut.gz").write_bytes(data[: len(data) // 2])
    assert one_line(capsys, restore(shop, f"--archive={shop / 'cut.gz'}", "--gzip")) == (
        f"foliodb restore: {shop / 'cut.gz'}: the gzip data is cut short (the file is truncated)"
    )


def test_a_gzip_archive_with_a_bad_crc(shop: Path, capsys: Any) -> None:
    data = bytearray((shop / "a.gz").read_bytes())
    data[-8] ^= 0xFF  # the trailer's CRC-32 of the uncompressed data
    (shop / "bad.gz").write_bytes(bytes(data))
    assert one_line(capsys, restore(shop, f"--archive={shop / 'bad.gz'}", "--gzip")).startswith(
        f"foliodb restore: {shop / 'bad.gz'}: corrupt gzip data (CRC check failed"
    )


def test_an_archive_that_is_not_gzip(shop: Path, capsys: Any) -> None:
    bson_file = shop / "dump" / "shop" / "orders.bson"
    assert one_line(capsys, restore(shop, f"--archive={bson_file}", "--gzip")).startswith(
        f"foliodb restore: {bson_file}: corrupt gzip data (Not a gzipped file"
    )


def test_an_archive_cut_inside_a_document(shop: Path, capsys: Any) -> None:
    data = gzip.decompress((shop / "a.gz").read_bytes())
    (shop / "cut").write_bytes(data[:-1000])
    assert one_line(capsys, restore(shop, f"--archive={shop / 'cut'}")) == (
        f"foliodb restore: {shop / 'cut'}: corruption found in archive; truncated BSON document"
    )


def test_a_truncated_bson_file(shop: Path, capsys: Any) -> None:
    path = shop / "dump" / "shop" / "orders.bson"
    path.write_bytes(path.read_bytes()[:-10])
    assert one_line(capsys, restore(shop, str(shop / "dump"))) == (
        f"foliodb restore: {path}: truncated BSON document (the file is cut short)"
    )


def test_a_truncated_gzip_bson_file(shop: Path, capsys: Any) -> None:
    path = shop / "dump" / "shop" / "orders.bson"
    compressed = gzip.compress(path.read_bytes())
    path.unlink()
    path.with_name("orders.bson.gz").write_bytes(compressed[:-20])
    assert one_line(capsys, restore(shop, str(shop / "dump"))) == (
        f"foliodb restore: {path}.gz: the gzip data is cut short (the file is truncated)"
    )


def test_a_corrupt_bson_document(shop: Path, capsys: Any) -> None:
    path = shop / "dump" / "shop" / "orders.bson"
    data = bytearray(path.read_bytes())
    data[4] = 0x99  # the first element's type byte: no BSON type has that number
    path.write_bytes(bytes(data))
    assert one_line(capsys, restore(shop, str(shop / "dump"))).startswith(
        "foliodb restore: shop.orders: corrupt BSON document in the dump (Detected unknown BSON type b'\\x99'"
    )


def test_a_bad_length_in_a_bson_file(shop: Path, capsys: Any) -> None:
    path = shop / "dump" / "shop" / "orders.bson"
    data = bytearray(path.read_bytes())
    data[3] = 0x7F  # the first document's length becomes 2 GB
    path.write_bytes(bytes(data))
    assert one_line(capsys, restore(shop, str(shop / "dump"))).startswith(
        f"foliodb restore: {path}: corrupt BSON document length"
    )


def test_bad_metadata(shop: Path, capsys: Any) -> None:
    path = shop / "dump" / "shop" / "orders.metadata.json"
    path.write_text("{bad")
    assert one_line(capsys, restore(shop, str(shop / "dump"))).startswith(
        f"foliodb restore: {path}: not valid Extended JSON metadata"
    )


def test_documents_refused_by_the_target_make_the_status_1(shop: Path, capsys: Any) -> None:
    with foliodb.MongoClient(str(shop / "copy")) as client:
        client.shop.create_collection("orders", validator={"item": {"$type": "int"}})
    assert restore(shop, str(shop / "dump")) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1] == "0 document(s) restored successfully. 3000 document(s) failed to restore."
    assert lines[0].startswith("shop.orders: 3000 document(s) failed to restore, the first: Document failed validation")


def test_documents_already_there_are_skipped_with_status_0(shop: Path, capsys: Any) -> None:
    # mongorestore's documented behaviour: a restore into existing data inserts only what is missing.
    assert restore(shop, str(shop / "dump")) == 0
    assert restore(shop, str(shop / "dump")) == 0
    assert capsys.readouterr().err == ""


# -- import ---------------------------------------------------------------------------------------


def load(shop: Path, data: bytes, *args: str) -> int:
    (shop / "in.txt").write_bytes(data)
    return main(["import", "--dbpath", str(shop / "data"), "-d", "shop", "-c", "new", *args, str(shop / "in.txt")])


def test_an_import_with_a_bad_line_says_so_and_fails(shop: Path, capsys: Any) -> None:
    assert load(shop, b'{"a": 1}\n{bad\n{"a": 2}\n', "--quiet") == 1
    assert capsys.readouterr().err.splitlines() == [
        "line 2: invalid JSON: Expecting property name enclosed in double quotes (line 2, column 2)",
        "2 document(s) imported successfully. 1 document(s) failed to import.",
    ]


def test_an_import_with_a_duplicate_says_so_and_fails(shop: Path, capsys: Any) -> None:
    assert load(shop, b'{"_id": 1}\n{"_id": 1}\n') == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].endswith(
        "\tline 2: E11000 duplicate key error collection: shop.new index: _id_ dup key: { _id: 1 }"
    )
    assert lines[1].endswith("\t1 document(s) imported successfully. 1 document(s) failed to import.")


def test_a_clean_import_is_status_0(shop: Path, capsys: Any) -> None:
    assert load(shop, b'{"_id": 1}\n{"_id": 2}\n', "--quiet") == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("data", "args", "message"),
    [
        (
            b'[{"a": 1},\n{"a": 2},\n{"a": ,}]',
            ["--jsonArray"],
            "line 3: invalid JSON: Expecting value (line 3, column 7) (2 document(s) imported before it)",
        ),
        (
            b'a,b\n1,2\n3,"x\n',
            ["--type", "csv", "--headerline"],
            "line 3: unexpected end of data (1 document(s) imported before it)",
        ),
        (
            b'{"a": 1}\n\xff\n',
            [],
            "the input is not UTF-8 text (byte 0xff: invalid start byte) (0 document(s) imported before it)",
        ),
        (
            gzip.compress(b'{"a": 1}\n'),
            [],
            "the input is gzip-compressed: decompress it first"
            " (mongoimport reads plain text) (0 document(s) imported before it)",
        ),
    ],
    ids=["broken-array", "broken-csv", "not-utf8", "gzip"],
)
def test_input_that_ends_an_import(shop: Path, capsys: Any, data: bytes, args: list[str], message: str) -> None:
    assert one_line(capsys, load(shop, data, "--quiet", *args)) == f"foliodb import: {message}"
