"""gridfs, unchanged, on the embedded client and through ``foliodb serve``
(issue 13): ``GridFS`` and ``GridFSBucket`` store, stream, find and delete
files of several chunks, and download by name with revisions.

Sizes are chosen against GridFS's default chunk of 255 KiB (261,120 bytes):
600,000 bytes make 3 chunks (2 full ones and 77,760 bytes).

Expected values are written out by hand from the cited pages.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gridfs
import pytest
from gridfs.errors import NoFile

import foliodb
from tests.clients.conftest import RunningServer

pytestmark = pytest.mark.clients

GRIDFS = "https://www.mongodb.com/docs/manual/core/gridfs/"
BUCKET = "https://pymongo.readthedocs.io/en/stable/api/gridfs/index.html#gridfs.GridFSBucket"
BY_NAME = (
    "https://pymongo.readthedocs.io/en/stable/api/gridfs/index.html#gridfs.GridFSBucket.open_download_stream_by_name"
)

CHUNK = 255 * 1024
SIZE = 600_000
CHUNKS = 3  # ceil(600_000 / 261_120)


@pytest.fixture(params=["embedded", "wire"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "embedded":
        with foliodb.MongoClient(str(tmp_path / "data")) as client:
            yield client.files
        return
    server = RunningServer(tmp_path / "served")
    client = server.client()
    try:
        yield client.files
    finally:
        client.close()
        server.stop()


@pytest.fixture(scope="module")
def payload() -> bytes:
    return os.urandom(SIZE)


def test_gridfs_put_get_find_delete(db: Any, payload: bytes) -> None:
    # GRIDFS: a file is one fs.files document and its fs.chunks, numbered n = 0, 1, ...
    fs = gridfs.GridFS(db)
    file_id = fs.put(payload, filename="photo.jpg", contentType="image/jpeg")
    assert db.fs.chunks.count_documents({"files_id": file_id}) == CHUNKS
    assert sorted(c["n"] for c in db.fs.chunks.find({"files_id": file_id})) == [0, 1, 2]
    assert len(db.fs.chunks.find_one({"files_id": file_id, "n": 2})["data"]) == SIZE - 2 * CHUNK
    out = fs.get(file_id)
    assert (out.filename, out.length, out.chunk_size) == ("photo.jpg", SIZE, CHUNK)
    assert db.fs.files.find_one({"_id": file_id})["contentType"] == "image/jpeg"
    assert out.read() == payload
    assert fs.exists(file_id) and fs.exists(filename="photo.jpg")
    assert [f.filename for f in fs.find({"contentType": "image/jpeg"})] == ["photo.jpg"]
    assert fs.find_one({"filename": "photo.jpg"})._id == file_id
    assert fs.list() == ["photo.jpg"]
    fs.delete(file_id)
    assert not fs.exists(file_id)
    assert db.fs.chunks.count_documents({}) == 0
    with pytest.raises(NoFile):
        fs.get(file_id)


def test_gridfs_streams_in_pieces_and_seeks(db: Any, payload: bytes) -> None:
    fs = gridfs.GridFS(db, collection="media")
    file_id = fs.put(io.BytesIO(payload), filename="clip")
    out = fs.get(file_id)
    # Reads that cross chunk boundaries, then a seek back into the first chunk.
    assert out.read(CHUNK - 10) == payload[: CHUNK - 10]
    assert out.read(20) == payload[CHUNK - 10 : CHUNK + 10]
    out.seek(5)
    assert out.tell() == 5
    assert out.read(10) == payload[5:15]
    out.seek(-100, os.SEEK_END)
    assert out.read() == payload[-100:]
    assert b"".join(fs.get(file_id)) == payload  # iteration yields the chunks
    assert db.media.files.count_documents({}) == 1


def test_gridfs_versions_by_filename(db: Any) -> None:
    # gridfs.GridFS.get_version: 0 the oldest, -1 the newest.
    fs = gridfs.GridFS(db)
    for body in (b"one", b"two", b"three"):
        fs.put(body, filename="notes.txt")
    assert fs.get_last_version("notes.txt").read() == b"three"
    assert fs.get_version("notes.txt", 0).read() == b"one"
    assert fs.get_version("notes.txt", -2).read() == b"two"
    with pytest.raises(NoFile):
        fs.get_version("notes.txt", 3)


def test_bucket_upload_download_and_revisions(db: Any, payload: bytes) -> None:
    bucket = gridfs.GridFSBucket(db, bucket_name="docs")
    first = bucket.upload_from_stream("report.pdf", io.BytesIO(payload), metadata={"v": 1})
    with bucket.open_upload_stream("report.pdf", metadata={"v": 2}) as upload:
        upload.write(b"second ")
        upload.write(b"revision")
    bucket.upload_from_stream("report.pdf", b"third")
    # BY_NAME: revision 0 the original, 1 the second, -1 the most recent, -2 the one before.
    assert bucket.open_download_stream_by_name("report.pdf").read() == b"third"
    assert bucket.open_download_stream_by_name("report.pdf", revision=0).read() == payload
    assert bucket.open_download_stream_by_name("report.pdf", revision=1).read() == b"second revision"
    assert bucket.open_download_stream_by_name("report.pdf", revision=-2).read() == b"second revision"
    with pytest.raises(NoFile):
        bucket.open_download_stream_by_name("report.pdf", revision=3)
    sink = io.BytesIO()
    bucket.download_to_stream(first, sink)
    assert sink.getvalue() == payload
    sink = io.BytesIO()
    bucket.download_to_stream_by_name("report.pdf", sink, revision=0)
    assert sink.getvalue() == payload
    stream = bucket.open_download_stream(first)
    assert (stream.length, stream.metadata) == (SIZE, {"v": 1})
    assert stream.read(CHUNK + 1) == payload[: CHUNK + 1]
    assert db.docs.chunks.count_documents({"files_id": first}) == CHUNKS


def test_bucket_find_rename_delete(db: Any, payload: bytes) -> None:
    bucket = gridfs.GridFSBucket(db)
    ids = [bucket.upload_from_stream(name, payload[:size]) for name, size in (("a", 10), ("b", SIZE), ("c", 30))]
    # BUCKET: find takes a filter and cursor options on fs.files.
    by_length = bucket.find({}, sort=[("length", -1)], limit=2)
    assert [(f.filename, f.length) for f in by_length] == [("b", SIZE), ("c", 30)]
    assert [f.filename for f in bucket.find({"length": {"$lt": 100}}).sort("filename", 1).skip(1)] == ["c"]
    bucket.rename(ids[0], "renamed")
    assert bucket.open_download_stream_by_name("renamed").read() == payload[:10]
    bucket.delete(ids[1])
    assert db.fs.chunks.count_documents({"files_id": ids[1]}) == 0
    assert sorted(f.filename for f in bucket.find()) == ["c", "renamed"]
    with pytest.raises(NoFile):
        bucket.delete(ids[1])
    bucket.upload_from_stream_with_id("fixed-id", "d", b"data")
    assert bucket.open_download_stream("fixed-id").read() == b"data"


def test_an_explicit_session_is_carried_through(db: Any, payload: bytes) -> None:
    # gridfs passes session= to every operation, and GridOutCursor (pymongo's own Cursor) holds it.
    fs = gridfs.GridFS(db)
    with db.client.start_session() as session:
        file_id = fs.put(payload, filename="s", session=session)
        found = fs.find({"filename": "s"}, session=session)
        assert found.session is session
        assert [f.read() == payload for f in found] == [True]
        assert fs.get(file_id, session=session).length == SIZE
        bucket = gridfs.GridFSBucket(db)
        assert bucket.open_download_stream_by_name("s", session=session).read(4) == payload[:4]
