"""pymongo's write methods of a Collection: inserts, updates, deletes, bulk writes, find-and-modify.

Each builds the command pymongo would send and checks the reply as pymongo
does. A single-statement write with no session, no options and default
concerns takes the client's point path (``_point``, with the command's point
handler); every other goes through ``_run_command`` with its write concern,
retryable as pymongo decides (not a multi-document update or delete).
``self`` is always a :class:`~foliodb.client.collection.Collection` (this class
is only its base), hence the casts where a Bulk is given it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import bson
from bson.errors import InvalidDocument
from pymongo import common
from pymongo.collection import ReturnDocument
from pymongo.results import DeleteResult, InsertManyResult, InsertOneResult, UpdateResult
from pymongo.write_concern import WriteConcern

from foliodb.client import _reply
from foliodb.client.arguments import command_doc, index_spec, projection_doc, sort_spec, statement, validate_boolean
from foliodb.client.bulk import Bulk
from foliodb.client.codec import with_id
from foliodb.client.collection_base import CollectionBase
from foliodb.commands.delete import point_delete
from foliodb.commands.insert import point_insert, point_insert_encoded
from foliodb.commands.update import point_update

if TYPE_CHECKING:
    from foliodb.client.collection import Collection


class CollectionWrites(CollectionBase):
    """Collection's write methods (see the module docstring)."""

    # -- plumbing -------------------------------------------------------------------

    def _concern(self, cmd: dict[str, Any], session: Any) -> WriteConcern:
        """:meth:`_write_concern_doc`, without its calls when there is nothing to add."""
        if session is None and self._default_write:
            return self._write_concern
        return self._write_concern_doc(cmd, session)

    # -- inserts ----------------------------------------------------------------------

    def insert_one(
        self, document: Any, bypass_document_validation: bool | None = None, session: Any = None, comment: Any = None
    ) -> InsertOneResult:
        """Insert a document (given an ObjectId ``_id`` when it has none); an InsertOneResult.

        https://www.mongodb.com/docs/manual/reference/command/insert/"""
        document = with_id(document)
        if (
            session is None
            and bypass_document_validation is None
            and comment is None
            and self._default_write
            and self._pointable()
        ):  # nothing but the document: the point path
            _reply.check_single_write(self._point_insert(document))
            return InsertOneResult(document.get("_id"), True)
        cmd = {"insert": self._name, "ordered": True, "documents": [self._codec.encode(document)]}
        if bypass_document_validation is not None or comment is not None:
            command_doc(cmd, bypassDocumentValidation=bypass_document_validation, comment=comment)
        concern = self._concern(cmd, session)
        reply = self._run_command(cmd, session, retryable_write=True, write_concern=concern)
        _reply.check_single_write(reply)
        return InsertOneResult(document.get("_id"), concern.acknowledged)

    def _point_insert(self, document: Any) -> dict[str, Any]:
        """insert_one's point path. A plain caller's dict is encoded here, once, by pymongo's C
        codec, and goes to the engine as those bytes (``point_insert_encoded``) instead of being
        walked for its types; a document that will not encode so, or that the engine declines
        in that form, goes as the codec gives it (as any other caller's)."""
        codec = self._codec
        name = self._name

        def general() -> dict[str, Any]:
            return {"insert": name, "ordered": True, "documents": [codec.encode(document)]}

        if codec.plain and type(document) is dict:
            try:
                data = bson.encode(document, codec_options=codec.options)
            except (InvalidDocument, TypeError, OverflowError, ValueError):
                pass  # the general path reports it as the engine does
            else:
                cmd = {"insert": name, "ordered": True, "documents": [document]}
                return self._point(cmd, functools.partial(point_insert_encoded, data), "write", general)
        return self._point(general(), point_insert, "write")

    def insert_many(
        self,
        documents: Iterable[Any],
        ordered: bool = True,
        bypass_document_validation: bool | None = None,
        session: Any = None,
        comment: Any = None,
    ) -> InsertManyResult:
        """Insert documents, ordered or not; an InsertManyResult, or BulkWriteError.

        https://www.mongodb.com/docs/manual/reference/command/insert/"""
        if not isinstance(documents, Iterable) or isinstance(documents, Mapping) or not documents:
            raise TypeError("documents must be a non-empty list")
        bulk = Bulk(cast("Collection", self), ordered, bypass_document_validation, comment, session=session)
        ids = bulk.add_inserts(documents if type(documents) is list else list(documents))
        if not ids:
            raise TypeError("documents must be a non-empty list")
        result = bulk.execute()
        return InsertManyResult(ids, result.acknowledged)

    # -- updates -------------------------------------------------------------------

    def _run_update(
        self,
        filter: Any,
        update: Any,
        multi: bool,
        upsert: bool,
        array_filters: Any,
        hint: Any,
        collation: Any,
        let: Any,
        sort: Any,
        comment: Any,
        bypass_document_validation: bool | None,
        session: Any,
    ) -> UpdateResult:
        if type(filter) is not dict:  # a dict passes (pymongo's check is an ABC check, slow per call)
            common.validate_is_mapping("filter", filter)
        if type(upsert) is not bool:
            validate_boolean("upsert", upsert)
        fields = {"q": self._codec.encode(filter), "u": self._codec.encode_update(update), "multi": multi}
        if array_filters is not None:
            common.validate_list("array_filters", array_filters)
        if collation is None and hint is None and sort is None and array_filters is None:
            fields["upsert"] = upsert  # statement()'s answer without the call: upsert is a bool
            update_statement = fields
        else:
            update_statement = statement(fields, upsert, collation, hint, sort, array_filters)
        cmd = {"update": self._name, "ordered": True, "updates": [update_statement]}
        if let is not None or comment is not None or bypass_document_validation is not None:
            command_doc(cmd, let=let, comment=comment, bypassDocumentValidation=bypass_document_validation)
        concern = self._concern(cmd, session)
        if session is None and len(cmd) == 3 and self._pointable():  # one statement, nothing else
            reply = _reply.check_single_write(self._point(cmd, point_update, "write"))
        else:
            # As pymongo: a multi-document update is not a retryable write.
            reply = _reply.check_single_write(
                self._run_command(cmd, session, retryable_write=not multi, write_concern=concern)
            )
        acknowledged = concern.acknowledged
        if len(reply) == 3 and "nModified" in reply and "n" in reply:  # {n, nModified, ok}: what follows, built at once
            n = reply["n"]
            raw = {"n": n, "nModified": reply["nModified"], "updatedExisting": bool(n), "ok": 1.0}
            return UpdateResult(raw if acknowledged else None, acknowledged)
        raw = dict(reply)
        raw.pop("ok", None)
        raw.setdefault("nModified", 0)
        if "upserted" in raw:
            raw["upserted"] = raw["upserted"][0]["_id"]
        raw["updatedExisting"] = bool(reply.get("n", 0)) and "upserted" not in reply
        raw["ok"] = 1.0
        return UpdateResult(raw if acknowledged else None, acknowledged)

    def replace_one(
        self,
        filter: Mapping[str, Any],
        replacement: Mapping[str, Any],
        upsert: bool = False,
        bypass_document_validation: bool | None = None,
        collation: Any = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        sort: Any = None,
        comment: Any = None,
    ) -> UpdateResult:
        """Replace the first matching document (or upsert); an UpdateResult.

        https://www.mongodb.com/docs/manual/reference/command/update/"""
        common.validate_ok_for_replace(replacement)
        return self._run_update(
            filter,
            replacement,
            False,
            upsert,
            None,
            hint,
            collation,
            let,
            sort,
            comment,
            bypass_document_validation,
            session,
        )

    def update_one(
        self,
        filter: Mapping[str, Any],
        update: Any,
        upsert: bool = False,
        bypass_document_validation: bool | None = None,
        collation: Any = None,
        array_filters: Sequence[Mapping[str, Any]] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        sort: Any = None,
        comment: Any = None,
    ) -> UpdateResult:
        """Apply update operators or a pipeline to the first matching document; an UpdateResult.

        https://www.mongodb.com/docs/manual/reference/command/update/"""
        common.validate_ok_for_update(update)
        return self._run_update(
            filter,
            update,
            False,
            upsert,
            array_filters,
            hint,
            collation,
            let,
            sort,
            comment,
            bypass_document_validation,
            session,
        )

    def update_many(
        self,
        filter: Mapping[str, Any],
        update: Any,
        upsert: bool = False,
        array_filters: Sequence[Mapping[str, Any]] | None = None,
        bypass_document_validation: bool | None = None,
        collation: Any = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
    ) -> UpdateResult:
        """Apply update operators or a pipeline to every matching document; an UpdateResult.

        https://www.mongodb.com/docs/manual/reference/command/update/"""
        common.validate_ok_for_update(update)
        return self._run_update(
            filter,
            update,
            True,
            upsert,
            array_filters,
            hint,
            collation,
            let,
            None,
            comment,
            bypass_document_validation,
            session,
        )

    # -- deletes ------------------------------------------------------------------

    def _run_delete(
        self, filter: Any, limit: int, collation: Any, hint: Any, let: Any, comment: Any, session: Any
    ) -> DeleteResult:
        if type(filter) is not dict:  # as in _run_update
            common.validate_is_mapping("filter", filter)
        delete_statement = {"q": self._codec.encode(filter), "limit": limit}
        if collation is not None or hint is not None:
            statement(delete_statement, None, collation, hint)
        cmd = {"delete": self._name, "ordered": True, "deletes": [delete_statement]}
        if let is not None or comment is not None:
            command_doc(cmd, let=let, comment=comment)
        concern = self._concern(cmd, session)
        if session is None and len(cmd) == 3 and self._pointable():  # one statement, nothing else
            reply = _reply.check_single_write(self._point(cmd, point_delete, "write"))
        else:
            # As pymongo: delete_many (limit 0) is not a retryable write.
            reply = _reply.check_single_write(
                self._run_command(cmd, session, retryable_write=limit == 1, write_concern=concern)
            )
        acknowledged = concern.acknowledged
        return DeleteResult({"n": reply.get("n", 0), "ok": 1.0} if acknowledged else {}, acknowledged)

    def delete_one(
        self,
        filter: Mapping[str, Any],
        collation: Any = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
    ) -> DeleteResult:
        """Delete the first matching document; a DeleteResult.

        https://www.mongodb.com/docs/manual/reference/command/delete/"""
        return self._run_delete(filter, 1, collation, hint, let, comment, session)

    def delete_many(
        self,
        filter: Mapping[str, Any],
        collation: Any = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
    ) -> DeleteResult:
        """Delete every matching document; a DeleteResult.

        https://www.mongodb.com/docs/manual/reference/command/delete/"""
        return self._run_delete(filter, 0, collation, hint, let, comment, session)

    # -- bulk -------------------------------------------------------------------------

    def bulk_write(
        self,
        requests: Sequence[Any],
        ordered: bool = True,
        bypass_document_validation: bool | None = None,
        session: Any = None,
        comment: Any = None,
        let: Mapping[str, Any] | None = None,
    ) -> Any:
        """Run InsertOne/UpdateOne/.../DeleteMany requests in order or not; a BulkWriteResult.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        common.validate_list("requests", requests)
        bulk = Bulk(cast("Collection", self), ordered, bypass_document_validation, comment, let, session)
        for request in requests:
            try:
                request._add_to_bulk(bulk)
            except AttributeError:
                raise TypeError(f"{request!r} is not a valid request") from None
        return bulk.execute()

    # -- find and modify ------------------------------------------------------------------

    def _run_find_and_modify(
        self,
        filter: Any,
        projection: Any,
        sort: Any,
        upsert: Any,
        return_document: bool,
        array_filters: Any,
        hint: Any,
        let: Any,
        comment: Any,
        session: Any,
        **kwargs: Any,
    ) -> Any:
        common.validate_is_mapping("filter", filter)
        if not isinstance(return_document, bool):
            raise ValueError("return_document must be ReturnDocument.BEFORE or ReturnDocument.AFTER")
        query = self._codec.encode(filter)
        fields = projection_doc(projection)
        order = None if sort is None else sort_spec(sort)
        if upsert is not None:
            validate_boolean("upsert", upsert)
        if array_filters is not None:
            common.validate_list("array_filters", array_filters)
        cmd = command_doc(
            {"findAndModify": self._name, "query": query, "new": return_document},
            kwargs,
            fields=fields,
            sort=order,
            upsert=upsert,
            arrayFilters=array_filters,
            hint=index_spec(hint),
            let=let,
            comment=comment,
        )
        concern = self._write_concern_doc(cmd, session)
        reply = _reply.check(self._run_command(cmd, session, retryable_write=True, write_concern=concern))
        value = reply.get("value")
        return self._codec.decode([value])[0] if value is not None else None

    def find_one_and_delete(
        self,
        filter: Mapping[str, Any],
        projection: Any = None,
        sort: Any = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Delete the first matching document (by ``sort``) and return it.

        https://www.mongodb.com/docs/manual/reference/command/findAndModify/"""
        kwargs["remove"] = True
        return self._run_find_and_modify(
            filter, projection, sort, None, False, None, hint, let, comment, session, **kwargs
        )

    def find_one_and_replace(
        self,
        filter: Mapping[str, Any],
        replacement: Mapping[str, Any],
        projection: Any = None,
        sort: Any = None,
        upsert: bool = False,
        return_document: bool = ReturnDocument.BEFORE,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Replace the first matching document; return it as it was before, or after.

        https://www.mongodb.com/docs/manual/reference/command/findAndModify/"""
        common.validate_ok_for_replace(replacement)
        kwargs["update"] = self._codec.encode(replacement)
        return self._run_find_and_modify(
            filter, projection, sort, upsert, return_document, None, hint, let, comment, session, **kwargs
        )

    def find_one_and_update(
        self,
        filter: Mapping[str, Any],
        update: Any,
        projection: Any = None,
        sort: Any = None,
        upsert: bool = False,
        return_document: bool = ReturnDocument.BEFORE,
        array_filters: Sequence[Mapping[str, Any]] | None = None,
        hint: Any = None,
        session: Any = None,
        let: Mapping[str, Any] | None = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Any:
        """Update the first matching document; return it as it was before, or after.

        https://www.mongodb.com/docs/manual/reference/command/findAndModify/"""
        common.validate_ok_for_update(update)
        common.validate_list_or_none("array_filters", array_filters)
        kwargs["update"] = self._codec.encode_update(update)
        return self._run_find_and_modify(
            filter, projection, sort, upsert, return_document, array_filters, hint, let, comment, session, **kwargs
        )
