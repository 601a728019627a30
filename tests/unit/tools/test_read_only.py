"""``--readOnly`` for the tools that only read (``dump``, ``export``, ``advise``):
the dbpath's files are opened read-only, as the API's ``read_only=True``
opens them, so a backup copy, another user's files, or a dbpath another
process holds can be read, and nothing is written to it. A dbpath the user
cannot write is opened that way without the flag. (mongod's read-only mode is
``storage.readOnly``, not a tools' option; the name follows it.)

The commands run in this process (``foliodb.cli.main``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import foliodb
from foliodb.cli import main


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    with foliodb.MongoClient(str(path)) as client:
        client.shop.orders.insert_many([{"_id": i, "status": "new"} for i in range(20)])
    return path


def digest(path: Path) -> str:
    return hashlib.sha256((path / "foliodb.sqlite").read_bytes()).hexdigest()


@contextmanager
def unwritable(path: Path) -> Iterator[None]:
    """The dbpath as this user cannot write it: modes for a user, the immutable flag for root
    (whom modes do not stop)."""
    entries = [path, *path.iterdir()]
    if os.geteuid() != 0:
        for entry in entries:
            entry.chmod(0o555 if entry.is_dir() else 0o444)
        try:
            yield
        finally:
            for entry in entries:
                entry.chmod(0o700 if entry.is_dir() else 0o600)
        return
    if subprocess.run(["chattr", "+i", *map(str, entries)], capture_output=True, check=False).returncode != 0:
        pytest.skip("root, and chattr +i is refused here: no way to make a dbpath root cannot write")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *map(str, entries)], check=True)


def test_dump_read_only_while_another_client_holds_the_dbpath(data: Path, tmp_path: Path, capsys: Any) -> None:
    with foliodb.MongoClient(str(data)) as holder:
        holder.shop.orders.insert_one({"_id": 20, "status": "late"})  # committed, maybe only in the WAL yet
        before = digest(data)
        out = tmp_path / "dump"
        assert main(["dump", "--dbpath", str(data), "--readOnly", "--out", str(out), "--quiet"]) == 0
        assert digest(data) == before
        assert (out / "shop" / "orders.bson").stat().st_size > 0
    assert main(["restore", "--dbpath", str(tmp_path / "copy"), str(out), "--quiet"]) == 0
    with foliodb.MongoClient(str(tmp_path / "copy")) as copy:
        assert copy.shop.orders.count_documents({}) == 21


def test_export_and_advise_read_only(data: Path, tmp_path: Path, capsys: Any) -> None:
    before = digest(data)
    out = tmp_path / "orders.json"
    assert main(["export", "--dbpath", str(data), "-d", "shop", "-c", "orders", "--readOnly", "-o", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 20
    assert main(["advise", str(data), "--readOnly", "--json", "-", "--quiet"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["database"] for r in report] == ["shop"]
    assert digest(data) == before and not (data / "foliodb.lock").read_text()


def test_a_dbpath_the_user_cannot_write_is_read_without_the_flag(data: Path, tmp_path: Path, capsys: Any) -> None:
    out = tmp_path / "orders.json"
    with unwritable(data):
        assert main(["export", "--dbpath", str(data), "-d", "shop", "-c", "orders", "-o", str(out), "--quiet"]) == 0
        assert main(["dump", "--dbpath", str(data), "--out", str(tmp_path / "dump"), "--quiet"]) == 0
        # A tool that writes still says why it cannot.
        status = main(["import", "--dbpath", str(data), "-c", "x", str(out), "--quiet"])
        assert status == 1 and "cannot open the dbpath" in capsys.readouterr().err
    assert len(out.read_text().splitlines()) == 20


def test_read_only_refuses_what_it_cannot_do(data: Path, tmp_path: Path, capsys: Any) -> None:
    assert main(["export", "--uri", "mongodb://127.0.0.1:1", "-c", "x", "--readOnly"]) == 1
    assert capsys.readouterr().err == (
        "foliodb export: --readOnly opens a --dbpath's files: it does not apply to --uri\n"
    )
    assert main(["dump", "--dbpath", str(tmp_path / "missing"), "--readOnly"]) == 1
    assert "no database at" in capsys.readouterr().err
    assert not (tmp_path / "missing").exists()
