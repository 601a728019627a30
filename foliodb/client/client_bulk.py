"""``MongoClient.bulk_write``: writes to many collections in one ``bulkWrite``
command (MongoDB 8.0), as pymongo sends it.

pymongo's request classes with a ``namespace`` (``InsertOne(doc,
namespace="db.coll")``...) add themselves through ``add_insert``,
``add_update``, ``add_replace`` and ``add_delete``; :class:`ClientBulk`
offers exactly those. The reply's per-operation results become pymongo's
``ClientBulkWriteResult`` (verbose results only when asked for), and any
write error a ``ClientBulkWriteException`` carrying the results of the
operations that succeeded, as pymongo reports them.

pymongo docs: https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html#pymongo.mongo_client.MongoClient.bulk_write
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pymongo import common
from pymongo.errors import ClientBulkWriteException, InvalidOperation, OperationFailure
from pymongo.results import ClientBulkWriteResult, DeleteResult, InsertOneResult, UpdateResult
from pymongo.write_concern import WriteConcern

from foliodb.client import _reply
from foliodb.client.arguments import command_doc, statement
from foliodb.client.codec import DocumentCodec, with_id

if TYPE_CHECKING:
    from foliodb.client.mongo_client import MongoClient
    from foliodb.client.session import ClientSession


class ClientBulk:
    def __init__(
        self,
        client: MongoClient,
        write_concern: WriteConcern,
        ordered: bool,
        bypass_document_validation: bool | None,
        comment: Any,
        let: Mapping[str, Any] | None,
        verbose_results: bool,
        session: Any,
    ) -> None:
        if let is not None:
            common.validate_is_document_type("let", let)
        self.client = client
        self.write_concern = write_concern
        self.ordered = ordered
        self.bypass = bypass_document_validation
        self.comment = comment
        self.let = let
        self.verbose = verbose_results
        self.session = session
        self.ops: list[tuple[str, dict[str, Any]]] = []
        # pymongo's: a bulk with a multi-document update or delete is not a retryable write.
        self.retryable = True
        self.namespaces: list[str] = []
        self._codec = DocumentCodec(client.codec_options)

    # -- called by pymongo's request classes ---------------------------------------

    def add_insert(self, namespace: str, document: Any) -> None:
        self._add("insert", namespace, {"document": self._codec.encode(with_id(document))})

    def add_update(
        self,
        namespace: str,
        selector: Mapping[str, Any],
        update: Any,
        multi: bool,
        upsert: bool | None = None,
        collation: Mapping[str, Any] | None = None,
        array_filters: list[Mapping[str, Any]] | None = None,
        hint: Any = None,
        sort: Any = None,
    ) -> None:
        common.validate_ok_for_update(update)
        op = self._update(selector, update, multi, upsert, collation, array_filters, hint, sort)
        self._add("update", namespace, op)

    def add_replace(
        self,
        namespace: str,
        selector: Mapping[str, Any],
        replacement: Mapping[str, Any],
        upsert: bool | None = None,
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
        sort: Any = None,
    ) -> None:
        common.validate_ok_for_replace(replacement)
        op = self._update(selector, replacement, False, upsert, collation, None, hint, sort)
        self._add("replace", namespace, op)

    def add_delete(
        self,
        namespace: str,
        selector: Mapping[str, Any],
        multi: bool,
        collation: Mapping[str, Any] | None = None,
        hint: Any = None,
    ) -> None:
        fields = {"filter": self._codec.encode(selector), "multi": multi}
        self._add("delete", namespace, statement(fields, collation=collation, hint=hint))

    def _update(
        self,
        selector: Mapping[str, Any],
        mods: Any,
        multi: bool,
        upsert: bool | None,
        collation: Any,
        array_filters: Any,
        hint: Any,
        sort: Any,
    ) -> dict[str, Any]:
        fields = {"filter": self._codec.encode(selector), "updateMods": self._codec.encode_update(mods), "multi": multi}
        return statement(fields, upsert, collation, hint, sort, array_filters)

    def _add(self, kind: str, namespace: str, op: dict[str, Any]) -> None:
        if op.get("multi"):
            self.retryable = False
        self.ops.append((kind, op))
        self.namespaces.append(namespace)

    # -- running ---------------------------------------------------------------------

    def _run_command(self, session: ClientSession | None) -> dict[str, Any]:
        ns_index: dict[str, int] = {}
        ops = []
        for (kind, op), namespace in zip(self.ops, self.namespaces, strict=True):
            index = ns_index.setdefault(namespace, len(ns_index))
            ops.append({"update" if kind == "replace" else kind: index, **op})
        cmd: dict[str, Any] = {
            "bulkWrite": 1,
            "errorsOnly": not self.verbose,
            "ordered": self.ordered,
            "ops": ops,
            "nsInfo": [{"ns": namespace} for namespace in ns_index],
        }
        # Inside a transaction only its commit carries a write concern (the transaction's, see bulk_write).
        if self.write_concern.document and not (session is not None and session.in_transaction):
            cmd["writeConcern"] = self.write_concern.document
        return command_doc(cmd, bypassDocumentValidation=self.bypass, comment=self.comment, let=self.let)

    def execute(self) -> ClientBulkWriteResult:
        if not self.ops:
            raise InvalidOperation("No operations to execute")
        # The session of the command is the session of its results' cursor too.
        session = self.client._ensure_session(self.session)
        try:
            return self._execute(session)
        finally:
            if session is not None and session._implicit:
                session._end_implicit_session()

    def _execute(self, session: ClientSession | None) -> ClientBulkWriteResult:
        concern = self.write_concern
        reply = self.client._execute(
            "admin", self._run_command(session), session, retryable_write=self.retryable, write_concern=concern
        )
        if not concern.acknowledged:
            return ClientBulkWriteResult(None, False, False)  # type: ignore[arg-type]
        result: dict[str, Any] = {
            "anySuccessful": False,
            "error": None,
            "writeErrors": [],
            "writeConcernErrors": [],
            "nInserted": reply.get("nInserted", 0),
            "nUpserted": reply.get("nUpserted", 0),
            "nMatched": reply.get("nMatched", 0),
            "nModified": reply.get("nModified", 0),
            "nDeleted": reply.get("nDeleted", 0),
            "insertResults": {},
            "updateResults": {},
            "deleteResults": {},
        }
        if not reply.get("ok"):
            # As pymongo does, a failed command travels inside the bulk's exception.
            try:
                _reply.check(reply)
            except OperationFailure as exc:
                result["error"] = exc
                raise ClientBulkWriteException(result, self.verbose) from exc
        entries = self._entries(reply, session)
        failed = [entry["idx"] for entry in entries if not entry["ok"]]
        # An ordered bulk stops at its first error: the operations before it succeeded.
        result["anySuccessful"] = (failed[0] if self.ordered and failed else len(self.ops) - len(failed)) > 0
        for entry in entries:
            idx = entry["idx"]
            kind, op = self.ops[idx]
            if not entry["ok"]:
                result["writeErrors"].append({**entry, "op": op})
            elif self.verbose:
                self._record(result, idx, kind, op, entry)
        if "writeConcernError" in reply:
            result["writeConcernErrors"].append(reply["writeConcernError"])
        if result["writeErrors"] or result["writeConcernErrors"]:
            result["writeErrors"].sort(key=lambda error: error["idx"])
            raise ClientBulkWriteException(result, self.verbose)
        return ClientBulkWriteResult(result, True, self.verbose)

    def _entries(self, reply: Mapping[str, Any], session: ClientSession | None) -> list[dict[str, Any]]:
        """Every per-operation result, following the reply's cursor."""
        cursor = reply["cursor"]
        entries = list(cursor["firstBatch"])
        cursor_id = cursor["id"]
        while cursor_id:
            cmd = {"getMore": cursor_id, "collection": "$cmd.bulkWrite"}
            more = _reply.check(self.client._execute("admin", cmd, session, kind="otherRead"))["cursor"]
            entries.extend(more["nextBatch"])
            cursor_id = more["id"]
        return entries

    @staticmethod
    def _record(result: dict[str, Any], idx: int, kind: str, op: Mapping[str, Any], entry: Mapping[str, Any]) -> None:
        if kind == "insert":
            result["insertResults"][idx] = InsertOneResult(op["document"]["_id"], acknowledged=True)
        elif kind == "delete":
            result["deleteResults"][idx] = DeleteResult(dict(entry), acknowledged=True)
        else:
            result["updateResults"][idx] = UpdateResult(dict(entry), acknowledged=True, in_client_bulk=True)
