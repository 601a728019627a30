"""Bulk writes as pymongo runs them: operations grouped into insert, update and
delete commands (consecutive runs when ordered, one batch per kind when
not), results merged into ``BulkWriteResult`` and errors into
``BulkWriteError`` with each error's index in the caller's request list.

pymongo's request classes (``InsertOne``, ``UpdateMany``...) add themselves
to a bulk through ``add_insert``/``add_update``/``add_replace``/``add_delete``;
:class:`Bulk` offers exactly those.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from itertools import repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import bson
from bson.errors import InvalidDocument
from pymongo import common
from pymongo.errors import DocumentTooLarge, InvalidOperation
from pymongo.results import BulkWriteResult

from foliodb.client import _reply
from foliodb.client.arguments import command_doc, statement
from foliodb.client.codec import with_id
from foliodb.commands.insert import point_insert_batch_encoded
from foliodb.commands.params import MAX_WRITE_BATCH_SIZE

if TYPE_CHECKING:
    from foliodb.client.collection import Collection

INSERT, UPDATE, DELETE = "insert", "update", "delete"
_LIST_FIELD = {INSERT: "documents", UPDATE: "updates", DELETE: "deletes"}


class Bulk:
    def __init__(
        self,
        collection: Collection,
        ordered: bool,
        bypass_document_validation: bool | None = None,
        comment: Any = None,
        let: Mapping[str, Any] | None = None,
        session: Any = None,
    ) -> None:
        self.collection = collection
        self.ordered = ordered
        self.bypass = bypass_document_validation
        self.comment = comment
        self.let = let
        self.session = session
        self.ops: list[tuple[str, dict[str, Any]]] = []
        # The BSON of inserts of a plain caller's dicts, by op index, when the bulk may take the
        # point path (no session, options or concern of its own): their ops are the caller's
        # documents as they are, checked (the codec's walk) only if the general path runs them.
        self.encoded: dict[int, bytes] = {}
        self._encoding = (
            collection._codec.plain
            and session is None
            and bypass_document_validation is None
            and comment is None
            and collection._default_write
        )
        # pymongo's: a bulk with a multi-document update or delete is not a retryable write.
        self.retryable = True

    # -- called by pymongo's request classes ---------------------------------------

    def add_insert(self, document: Any) -> None:
        document = with_id(document)
        if self._encoding and type(document) is dict:
            try:
                self.encoded[len(self.ops)] = bson.encode(document, codec_options=self.collection._codec.options)
            except (InvalidDocument, TypeError, OverflowError, ValueError):
                pass  # the general path reports it as the engine does
            else:
                self.ops.append((INSERT, document))
                return
        self.ops.append((INSERT, self.collection._codec.encode(document)))

    def add_inserts(self, documents: list[Any]) -> list[Any]:
        """:meth:`add_insert` of each of ``documents`` (insert_many's); their ``_id``s. Plain
        dicts that all have one are encoded in one C loop (map), the usual insert_many."""
        if (
            self._encoding
            and set(map(type, documents)) == {dict}
            and all(map(dict.__contains__, documents, repeat("_id")))
        ):
            try:
                rows = list(
                    map(functools.partial(bson.encode, codec_options=self.collection._codec.options), documents)
                )
            except (InvalidDocument, TypeError, OverflowError, ValueError):
                pass  # one by one: add_insert sends the one that fails the general way
            else:
                start = len(self.ops)
                self.encoded.update(zip(range(start, start + len(rows)), rows, strict=True))
                self.ops.extend(zip(repeat(INSERT), documents))
                return list(map(itemgetter("_id"), documents))
        ids = []
        for document in documents:
            self.add_insert(document)
            ids.append(document["_id"])
        return ids

    def add_update(
        self,
        selector: Mapping[str, Any],
        update: Any,
        multi: bool = False,
        upsert: bool | None = None,
        collation: Any = None,
        array_filters: Any = None,
        hint: Any = None,
        sort: Any = None,
        **_: Any,
    ) -> None:
        common.validate_ok_for_update(update)
        self._add_update(selector, update, multi, upsert, collation, array_filters, hint, sort)

    def add_replace(
        self,
        selector: Mapping[str, Any],
        replacement: Mapping[str, Any],
        upsert: bool | None = None,
        collation: Any = None,
        hint: Any = None,
        sort: Any = None,
        **_: Any,
    ) -> None:
        common.validate_ok_for_replace(replacement)
        self._add_update(selector, replacement, False, upsert, collation, None, hint, sort)

    def add_delete(
        self, selector: Mapping[str, Any], limit: int, collation: Any = None, hint: Any = None, **_: Any
    ) -> None:
        fields = {"q": self.collection._codec.encode(selector), "limit": limit}
        self.ops.append((DELETE, statement(fields, collation=collation, hint=hint)))
        if not limit:
            self.retryable = False

    def _add_update(
        self,
        selector: Mapping[str, Any],
        update: Any,
        multi: bool,
        upsert: bool | None,
        collation: Any,
        array_filters: Any,
        hint: Any,
        sort: Any,
    ) -> None:
        codec = self.collection._codec
        fields = {"q": codec.encode(selector), "u": codec.encode_update(update), "multi": multi}
        upsert = None if upsert is None else bool(upsert)
        self.ops.append((UPDATE, statement(fields, upsert, collation, hint, sort, array_filters)))
        if multi:
            self.retryable = False

    # -- running ---------------------------------------------------------------------

    def _runs(self) -> list[tuple[str, list[tuple[int, dict[str, Any]]]]]:
        """(kind, [(request index, op)]) in the order the commands are sent: runs
        of one kind, each cut into commands of at most maxWriteBatchSize
        operations, as pymongo splits them."""
        runs: list[tuple[str, list[tuple[int, dict[str, Any]]]]] = []
        if set(map(itemgetter(0), self.ops)) == {INSERT}:  # insert_many's: one run, ordered or not
            runs.append((INSERT, list(enumerate(map(itemgetter(1), self.ops)))))
        elif self.ordered:
            for index, (kind, op) in enumerate(self.ops):
                if runs and runs[-1][0] == kind:
                    runs[-1][1].append((index, op))
                else:
                    runs.append((kind, [(index, op)]))
        else:
            for kind in (INSERT, UPDATE, DELETE):
                batch = [(index, op) for index, (k, op) in enumerate(self.ops) if k == kind]
                if batch:
                    runs.append((kind, batch))
        return [
            (kind, batch[start : start + MAX_WRITE_BATCH_SIZE])
            for kind, batch in runs
            for start in range(0, len(batch), MAX_WRITE_BATCH_SIZE)
        ]

    def _checked(self, batch: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
        """``batch`` with its encoded inserts' documents as the codec gives them to the engine."""
        encode, encoded = self.collection._codec.encode, self.encoded
        return [(index, encode(op) if index in encoded else op) for index, op in batch]

    def _point_insert(self, batch: list[tuple[int, dict[str, Any]]]) -> Mapping[str, Any]:
        """The checked reply to an insert of encoded documents: by the point path when the client
        allows it (``point_insert_batch_encoded``), else (or where that path declines) the
        general one, given the documents checked."""
        collection = self.collection
        name, ordered = collection.name, self.ordered

        def general() -> dict[str, Any]:
            return {INSERT: name, "documents": [op for _, op in self._checked(batch)], "ordered": ordered}

        if collection._pointable():
            cmd = {INSERT: name, "documents": list(map(itemgetter(1), batch)), "ordered": ordered}
            rows = list(map(self.encoded.__getitem__, map(itemgetter(0), batch)))
            reply = collection._point(cmd, functools.partial(point_insert_batch_encoded, rows), "write", general)
        else:
            cmd = general()
            concern = collection._write_concern_doc(cmd, None)
            reply = collection._run_command(cmd, None, retryable_write=self.retryable, write_concern=concern)
        return _reply.check(reply, write_concern=False)

    def execute(self) -> BulkWriteResult:
        if not self.ops:
            raise InvalidOperation("No operations to execute")
        result: dict[str, Any] = {
            "writeErrors": [],
            "writeConcernErrors": [],
            "nInserted": 0,
            "nUpserted": 0,
            "nMatched": 0,
            "nModified": 0,
            "nRemoved": 0,
            "upserted": [],
        }
        acknowledged = True
        encoded = self.encoded
        for kind, batch in self._runs():
            if encoded and kind == INSERT and all(map(encoded.__contains__, map(itemgetter(0), batch))):
                reply = self._point_insert(batch)
                if "writeErrors" in reply:
                    batch = self._checked(batch)  # the documents the general path ran (its errors' ops)
            else:
                if encoded:
                    batch = self._checked(batch)
                cmd = command_doc(
                    {kind: self.collection.name, _LIST_FIELD[kind]: [op for _, op in batch], "ordered": self.ordered},
                    bypassDocumentValidation=self.bypass,
                    comment=self.comment,
                    let=None if kind == INSERT else self.let,
                )
                concern = self.collection._write_concern_doc(cmd, self.session)
                acknowledged = concern.acknowledged
                # Each command of a retryable bulk is a retryable write of its own txnNumber (pymongo's).
                reply = _reply.check(
                    self.collection._run_command(
                        cmd, self.session, retryable_write=self.retryable, write_concern=concern
                    ),
                    write_concern=False,
                )
            if "writeConcernError" in reply:
                result["writeConcernErrors"].append(reply["writeConcernError"])
            n = reply.get("n", 0)
            if kind == INSERT:
                result["nInserted"] += n
            elif kind == DELETE:
                result["nRemoved"] += n
            else:
                upserted = reply.get("upserted", [])
                result["nMatched"] += n - len(upserted)
                result["nModified"] += reply.get("nModified", 0)
                result["nUpserted"] += len(upserted)
                for item in upserted:
                    result["upserted"].append({"index": batch[item["index"]][0], "_id": item["_id"]})
            for error in reply.get("writeErrors", []):
                if error.get("code") == _reply.BSON_OBJECT_TOO_LARGE:
                    raise DocumentTooLarge(error.get("errmsg", "BSON document too large"))
                error = dict(error)
                index, op = batch[error["index"]]
                error["index"] = index
                error["op"] = op
                result["writeErrors"].append(error)
            if result["writeErrors"] and self.ordered:
                break
        if not acknowledged:
            return BulkWriteResult({}, False)
        if result["writeErrors"] or result["writeConcernErrors"]:
            result["writeErrors"].sort(key=lambda e: e["index"])
            _reply.raise_bulk_error(result)
        return BulkWriteResult(result, True)
