"""``foliodb import``: mongoimport's formats and write modes, into any
pymongo-compatible collection.

Formats (``mongoimport/json.go``, ``csv.go``, ``tsv.go``):

- JSON (the default): one document a line, in canonical or relaxed Extended
  JSON (and the legacy forms pymongo reads, ``{"$date": <millis>}``...). A
  document may span lines (``mongoexport --pretty``); a line that starts a
  document that never parses is reported and skipped, and reading resumes on
  the next line.
- ``json_array``: one JSON array of documents, read element by element. A
  syntax error ends the import there, since no element boundary can be found
  after it.
- CSV (RFC 4180 quoting) and TSV (split on tabs, no quoting). Fields come from
  the first line (``header_line``), or ``fields``; a dotted field makes
  embedded documents; columns past the fields are ``field<N>``; with
  ``columns_have_types`` every column is typed (:mod:`foliodb.tools.fields`)
  and ``parse_grace`` says what a value that does not parse does:
  ``autoCast`` (parse it as ``auto``), ``skipField``, ``skipRow``, or
  ``stop``. ``ignore_blanks`` leaves empty values out.

A UTF-8 byte order mark is skipped. Input is streamed: a batch of at most
1,000 documents is held at a time.

Modes: ``insert`` (a document whose ``_id`` exists is a failure, the rest go
on, as ``insert_many(ordered=False)``); ``upsert`` (replace the document
matching ``upsert_fields``, default ``_id``, or insert); ``merge`` (``$set``
the document's fields into the match, or insert); ``delete`` (delete one
match). As in mongoimport, a document without any upsert field is inserted
(upsert, merge) or skipped (delete), and the modes other than insert write
in input order and stop at the first write error. ``stop_on_error`` stops
an insert at the first bad line or refused document.

Manual: https://www.mongodb.com/docs/database-tools/mongoimport/
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from bson import ObjectId, json_util
from bson.errors import BSONError, InvalidId
from pymongo import DeleteOne, InsertOne, ReplaceOne, UpdateOne
from pymongo.errors import BulkWriteError

from foliodb.tools.fields import (
    MISSING,
    CoercionError,
    Column,
    auto,
    check_fields,
    get_path,
    set_path,
    typed_columns,
    untyped_columns,
)
from foliodb.tools.progress import SILENT, Reporter

BATCH = 1000
CHUNK = 1 << 16  # characters of JSON read at a time
MAX_DOCUMENT_TEXT = 64 * 1024 * 1024  # a JSON document this long without parsing is a bad line
MODES = ("insert", "upsert", "merge", "delete")
PARSE_GRACE = ("autoCast", "skipField", "skipRow", "stop")
_JSON_OPTIONS = json_util.JSONOptions(json_mode=json_util.JSONMode.RELAXED)
_ISO_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?(Z|[+-]\d\d:\d\d)")


def _object(pairs: list[tuple[str, Any]]) -> Any:
    """json_util's Extended JSON hook, with fast paths for the two wrappers exported
    data is full of (``$oid``, and ``$date`` as an ISO string, which json_util reads
    with strptime at a fifth of the speed); the results are the same."""
    if len(pairs) == 1:
        key, value = pairs[0]
        if key == "$oid" and isinstance(value, str) and len(value) == 24:
            try:
                return ObjectId(value)
            except InvalidId:
                pass  # json_util raises its own error for it below
        elif key == "$date" and isinstance(value, str) and _ISO_DATE.fullmatch(value):
            moment = datetime.datetime.fromisoformat(value)
            return moment.astimezone(datetime.UTC).replace(tzinfo=None)
    return json_util.object_pairs_hook(pairs, _JSON_OPTIONS)


_DECODER = json.JSONDecoder(object_pairs_hook=_object)


@dataclass
class ImportOptions:
    type: str = "json"  # json, csv or tsv
    json_array: bool = False
    fields: Sequence[str] | None = None
    header_line: bool = False
    columns_have_types: bool = False
    parse_grace: str = "stop"
    ignore_blanks: bool = False
    mode: str = "insert"
    upsert_fields: Sequence[str] | None = None
    stop_on_error: bool = False


@dataclass
class ImportReport:
    imported: int = 0  # inserted, replaced, merged or deleted
    failed: int = 0  # bad lines and refused documents
    problems: list[str] = field(default_factory=list)  # "line N: why", in input order


class InputError(ValueError):
    """An input problem that ends the import (a bad header, a broken JSON array, bytes
    that are not UTF-8...); ``report`` says what was imported before it."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.report = ImportReport()


@dataclass
class _Line:
    number: int  # where the document starts, counting from 1
    document: dict[str, Any] | None
    problem: str = ""


def check_options(options: ImportOptions) -> None:
    """mongoimport's validateSettings, as ValueErrors with its messages."""
    if options.type not in ("json", "csv", "tsv"):
        raise ValueError(f"unknown type {options.type}")
    if options.mode not in MODES:
        raise ValueError(f"invalid --mode argument: {options.mode}")
    if options.parse_grace not in PARSE_GRACE:
        raise ValueError(f"invalid --parseGrace argument: {options.parse_grace}")
    if options.type == "json":
        for flag, value in (
            ("--headerline", options.header_line),
            ("--fields", options.fields is not None),
            ("--ignoreBlanks", options.ignore_blanks),
            ("--columnsHaveTypes", options.columns_have_types),
        ):
            if value:
                raise ValueError(f"cannot use {flag} when input type is JSON")
    else:
        if options.json_array:
            raise ValueError("cannot use --jsonArray when input type is not JSON")
        if options.fields is None and not options.header_line:
            raise ValueError("must specify --fields, --fieldFile or --headerline to import this file type")
        if options.fields is not None and options.header_line:
            raise ValueError("incompatible options: --fields and --headerline")
    if options.upsert_fields is not None:
        if options.mode == "insert":
            raise ValueError("cannot use --upsertFields with --mode=insert")
        check_fields(list(options.upsert_fields))


def import_documents(
    collection: Any,
    source: IO[bytes],
    options: ImportOptions,
    size: int | None = None,
    reporter: Reporter = SILENT,
    chunk: int = CHUNK,
) -> ImportReport:
    """Read ``source`` (bytes, of ``size`` if known) and write its documents to ``collection``;
    JSON is read ``chunk`` characters at a time."""
    check_options(options)
    report = ImportReport()
    label = f"{collection.database.name}.{collection.name}"
    with reporter.task(label, size, "bytes") as task:
        text = io.TextIOWrapper(io.BufferedReader(_Counting(source, task)), encoding="utf-8-sig", newline="")
        if options.type == "json":
            lines = _json_array(text, chunk) if options.json_array else _json_lines(text, chunk)
        else:
            lines = _table(text, options)
        writer = _Writer(collection, options, report, reporter)
        try:
            for line in lines:
                if line.document is None:
                    report.failed += 1
                    writer.problem(f"line {line.number}: {line.problem}")
                    if options.stop_on_error:
                        break
                    continue
                if not writer.add(line):
                    break
        except (InputError, UnicodeDecodeError) as exc:
            writer.flush()  # what came before a fatal input error is imported, as mongoimport does
            error = exc if isinstance(exc, InputError) else InputError(_not_text(exc))
            error.report = report
            raise error from None
        writer.flush()
    return report


def _not_text(exc: UnicodeDecodeError) -> str:
    if exc.object[:2] == b"\x1f\x8b":
        return "the input is gzip-compressed: decompress it first (mongoimport reads plain text)"
    byte = exc.object[exc.start : exc.start + 1].hex()
    return f"the input is not UTF-8 text (byte 0x{byte}: {exc.reason})"


class _Counting(io.RawIOBase):
    """Reports the bytes read to a progress task."""

    def __init__(self, raw: IO[bytes], task: Any) -> None:
        self.raw, self.task = raw, task

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        buffer[: len(data)] = data
        self.task.advance(len(data))
        return len(data)


class _Writer:
    """Batches documents into writes of the chosen mode and counts the outcome."""

    def __init__(self, collection: Any, options: ImportOptions, report: ImportReport, reporter: Reporter) -> None:
        self.collection, self.options, self.report, self.reporter = collection, options, report, reporter
        self.upsert_fields = list(options.upsert_fields or ["_id"])
        self.batch: list[tuple[int, Any]] = []  # (line, document or write)
        self.stopped = False

    def problem(self, text: str) -> None:
        if len(self.report.problems) < 1000:  # enough to act on; the count says the rest
            self.report.problems.append(text)
        self.reporter.warn(text)

    def add(self, line: _Line) -> bool:
        """Queue a document; False once the import must stop."""
        assert line.document is not None
        self.batch.append((line.number, self._operation(line.document)))
        if len(self.batch) >= BATCH:
            self.flush()
        return not self.stopped

    def _operation(self, document: dict[str, Any]) -> Any:
        mode = self.options.mode
        if mode == "insert":
            return document
        selector = {name: get_path(document, name) for name in self.upsert_fields}
        if all(value is MISSING for value in selector.values()):
            return None if mode == "delete" else document
        selector = {name: None if value is MISSING else value for name, value in selector.items()}
        if mode == "upsert":
            return ReplaceOne(selector, document, upsert=True)
        if mode == "merge":
            return UpdateOne(selector, {"$set": document}, upsert=True)
        return DeleteOne(selector)

    def flush(self) -> None:
        batch, self.batch = self.batch, []
        if not batch or self.stopped:
            return
        if self.options.mode == "insert":
            self._insert(batch)
        else:
            self._bulk(batch)

    def _insert(self, batch: list[tuple[int, Any]]) -> None:
        ordered = self.options.stop_on_error
        try:
            self.collection.insert_many([doc for _, doc in batch], ordered=ordered)
            self.report.imported += len(batch)
        except BulkWriteError as exc:
            self._refused(exc, [line for line, _ in batch])
            if ordered:
                self.stopped = True

    def _bulk(self, batch: list[tuple[int, Any]]) -> None:
        requests, lines = [], []
        for line, op in batch:
            if op is None:
                continue  # delete mode, a document without upsert fields: nothing to match
            requests.append(InsertOne(op) if isinstance(op, dict) else op)
            lines.append(line)
        if not requests:
            return
        try:
            result = self.collection.bulk_write(requests, ordered=True)
            self.report.imported += (
                result.inserted_count + result.modified_count + result.upserted_count + result.deleted_count
            )
        except BulkWriteError as exc:
            self._refused(exc, lines)
            self.stopped = True

    def _refused(self, exc: BulkWriteError, lines: list[int]) -> None:
        details = exc.details
        self.report.imported += (
            details.get("nInserted", 0)
            + details.get("nModified", 0)
            + details.get("nUpserted", 0)
            + details.get("nRemoved", 0)
        )
        for error in details["writeErrors"]:
            self.report.failed += 1
            self.problem(f"line {lines[error['index']]}: {error['errmsg']}")


# -- JSON -------------------------------------------------------------------------------------

_SPACE = re.compile(r"[ \t\r\n]*")


class _BadValueError(Exception):
    def __init__(self, line: int, problem: str) -> None:
        super().__init__(problem)
        self.line, self.problem = line, problem


class _JsonText:
    """A text stream read as a sequence of JSON values, each with the line it starts on.

    The buffer holds the unread text from ``pos``; it is refilled ``chunk``
    characters at a time. A value cut by the buffer's end is parsed again
    with more text: a parse error is taken for a cut unless a line break
    follows the place it was found (a JSON token never spans a line break,
    and the decoder reports a truncated input within its last token or at
    its end: at the start of a cut string), and a value that parses up to
    the buffer's very end (a number that may go on) is parsed again too. Each
    refill for the same value reads at least as much as is already held, so
    a long value is parsed a bounded number of times over (not once a chunk)."""

    def __init__(self, text: IO[str], chunk: int = CHUNK) -> None:
        self.text, self.chunk = text, chunk
        self.buffer, self.pos, self.line, self.eof = "", 0, 1, False

    def _fill(self, at_least: int = 0) -> bool:
        more = self.text.read(max(self.chunk, at_least))
        if not more:
            self.eof = True
            return False
        self.buffer = self.buffer[self.pos :] + more
        self.pos = 0
        return True

    def _advance(self, to: int) -> None:
        self.line += self.buffer.count("\n", self.pos, to)
        self.pos = to

    def peek(self) -> str:
        """The next character that is not white space ("" at the end)."""
        while True:
            match = _SPACE.match(self.buffer, self.pos)
            assert match is not None
            self._advance(match.end())
            if self.pos < len(self.buffer) or not self._fill():
                return self.buffer[self.pos : self.pos + 1]

    def take(self, char: str) -> None:
        if self.peek() == char:
            self._advance(self.pos + 1)

    def _more(self) -> bool:
        """More text for the value at ``pos``, unless at the end or past the size bound."""
        held = len(self.buffer) - self.pos
        return not self.eof and held < MAX_DOCUMENT_TEXT and self._fill(held)

    def value(self) -> tuple[int, Any]:
        self.peek()
        start = self.line
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buffer, self.pos)
            except json.JSONDecodeError as exc:
                if self.buffer.find("\n", exc.pos) < 0 and self._more():
                    continue
                where = self.line + exc.lineno - 1 - self.buffer.count("\n", 0, self.pos)
                raise _BadValueError(start, f"invalid JSON: {exc.msg} (line {where}, column {exc.colno})") from None
            except (ValueError, TypeError, OverflowError, BSONError) as exc:  # JSON that json_util refuses
                raise _BadValueError(start, f"invalid Extended JSON: {exc}") from None
            if end == len(self.buffer) and self._more():
                continue
            self._advance(end)
            return start, value

    def skip_line(self) -> None:
        """Drop the rest of the current line (where a bad document started)."""
        while True:
            newline = self.buffer.find("\n", self.pos)
            if newline >= 0:
                self._advance(newline + 1)
                return
            self.pos = len(self.buffer)
            if not self._fill():
                return


def _document(line: int, value: Any) -> _Line:
    if isinstance(value, dict):
        return _Line(line, value)
    return _Line(line, None, f"expected a document, got {type(value).__name__}")


def _json_lines(text: IO[str], chunk: int) -> Iterator[_Line]:
    """Documents one after another, usually one a line; a bad one is skipped to the next line."""
    stream = _JsonText(text, chunk)
    while stream.peek():
        try:
            yield _document(*stream.value())
        except _BadValueError as bad:
            yield _Line(bad.line, None, bad.problem)
            stream.line = bad.line  # resume on the line after the one the bad document started on
            stream.skip_line()


def _json_array(text: IO[str], chunk: int) -> Iterator[_Line]:
    """The elements of one JSON array, parsed as they arrive."""
    stream = _JsonText(text, chunk)
    if stream.peek() != "[":
        raise InputError(f"line {stream.line}: expected a JSON array ('[')")
    stream.take("[")
    if stream.peek() == "]":
        stream.take("]")
    else:
        while True:
            try:
                yield _document(*stream.value())
            except _BadValueError as bad:
                raise InputError(f"line {bad.line}: {bad.problem}") from None
            separator = stream.peek()
            if separator == "]":
                stream.take("]")
                break
            if separator != ",":
                raise InputError(f"line {stream.line}: expected ',' or ']' in the JSON array")
            stream.take(",")
    if stream.peek():
        raise InputError(f"line {stream.line}: data after the end of the JSON array")


# -- CSV and TSV -------------------------------------------------------------------------------


def _table(text: IO[str], options: ImportOptions) -> Iterator[_Line]:
    rows = _csv_rows(text) if options.type == "csv" else _tsv_rows(text)
    fields = list(options.fields or [])
    if options.header_line:
        header = next(rows, None)
        if header is None:
            return
        fields = header[1]
    check_fields([_bare(f) for f in fields] if options.columns_have_types else fields)
    columns = typed_columns(fields) if options.columns_have_types else untyped_columns(fields)
    for number, tokens in rows:
        try:
            document = _row(columns, tokens, options)
        except CoercionError as exc:
            yield _Line(number, None, str(exc))
            continue
        if document is not None:
            yield _Line(number, document)


def _bare(typed: str) -> str:
    return typed.rsplit(".", 1)[0] if typed.endswith(")") else typed


def _csv_rows(text: IO[str]) -> Iterator[tuple[int, list[str]]]:
    reader = csv.reader(text, strict=True)
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(f"line {reader.line_num}: {exc}") from None
        yield start, row
        start = reader.line_num + 1


def _tsv_rows(text: IO[str]) -> Iterator[tuple[int, list[str]]]:
    for number, line in enumerate(text, 1):
        yield number, line.rstrip("\r\n").split("\t")


def _row(columns: list[Column], tokens: list[str], options: ImportOptions) -> dict[str, Any] | None:
    """mongoimport's tokensToBSON: None when the row is skipped (parse grace skipRow)."""
    document: dict[str, Any] = {}
    names = {c.name for c in columns}
    for index, token in enumerate(tokens):
        if token == "" and options.ignore_blanks:
            continue
        if index >= len(columns):
            key = f"field{index}"
            if key in names:
                raise CoercionError(f"duplicate field name - on {key} - for token #{index + 1} ({token!r})")
            document[key] = auto(token)
            continue
        column = columns[index]
        try:
            value = column.parse(token)
        except CoercionError:
            grace = options.parse_grace
            if grace == "autoCast":
                value = auto(token)
            elif grace == "skipField":
                continue
            elif grace == "skipRow":
                return None
            else:
                raise CoercionError(
                    f"type coercion failure for column {column.name!r}, "
                    f"could not parse token {token!r} to type {column.type}"
                ) from None
        set_path(document, column.parts, value)
    return document
