"""pymongo's index methods of a Collection: indexes and MongoDB Search indexes.

Index management builds ``createIndexes``/``dropIndexes``/``listIndexes`` as
pymongo does (a missing collection lists no indexes and drops none without
error); search indexes go through foliodb.commands.search_indexes' commands
and the ``$listSearchIndexes`` stage. ``self`` is always a
:class:`~foliodb.client.collection.Collection` (this class is only its base),
hence the casts where a cursor or its aggregate is wanted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from pymongo import common
from pymongo.errors import OperationFailure
from pymongo.operations import IndexModel

from foliodb.client import _reply
from foliodb.client.arguments import command_doc
from foliodb.client.collection_base import CollectionBase
from foliodb.client.command_cursor import CommandCursor

if TYPE_CHECKING:
    from foliodb.client.collection import Collection


class CollectionIndexes(CollectionBase):
    """Collection's index and search-index methods (see the module docstring)."""

    # -- indexes ---------------------------------------------------------------------------

    def create_index(self, keys: Any, session: Any = None, comment: Any = None, **kwargs: Any) -> str:
        """Create one index from a key (``"a"``, ``[("a", 1), ("b", -1)]``) and options; its name.

        https://www.mongodb.com/docs/manual/reference/command/createIndexes/"""
        model = IndexModel(keys, **kwargs)
        return self.create_indexes([model], session, comment=comment)[0]

    def create_indexes(
        self, indexes: Sequence[IndexModel], session: Any = None, comment: Any = None, **kwargs: Any
    ) -> list[str]:
        """Create indexes from IndexModels; their names.

        https://www.mongodb.com/docs/manual/reference/command/createIndexes/"""
        common.validate_list("indexes", indexes)
        docs = []
        for model in indexes:
            if not isinstance(model, IndexModel):
                raise TypeError(f"{model!r} is not an instance of pymongo.operations.IndexModel")
            docs.append(dict(model.document))
        cmd = command_doc({"createIndexes": self._name, "indexes": docs}, kwargs, comment=comment)
        concern = self._write_concern_doc(cmd, session)
        _reply.check(self._run_command(cmd, session, write_concern=concern))
        return [doc["name"] for doc in docs]

    def drop_index(self, index_or_name: Any, session: Any = None, comment: Any = None, **kwargs: Any) -> None:
        """Drop an index by name or key.

        https://www.mongodb.com/docs/manual/reference/command/dropIndexes/"""
        name = index_or_name
        if isinstance(index_or_name, list):
            name = IndexModel(index_or_name).document["name"]
        if not isinstance(name, str):
            raise TypeError("index_or_name must be an instance of str or list")
        cmd = command_doc({"dropIndexes": self._name, "index": name}, kwargs, comment=comment)
        concern = self._write_concern_doc(cmd, session)
        _reply.check(self._run_command(cmd, session, write_concern=concern))

    def drop_indexes(self, session: Any = None, comment: Any = None, **kwargs: Any) -> None:
        """Drop every index but ``_id``'s.

        https://www.mongodb.com/docs/manual/reference/command/dropIndexes/"""
        cmd = command_doc({"dropIndexes": self._name, "index": "*"}, kwargs, comment=comment)
        concern = self._write_concern_doc(cmd, session)
        reply = self._run_command(cmd, session, write_concern=concern)
        if reply.get("code") != 26:  # dropping the indexes of a missing collection is fine
            _reply.check(reply)

    def list_indexes(self, session: Any = None, comment: Any = None) -> CommandCursor:
        """A cursor over the index specifications (nothing for a missing collection).

        https://www.mongodb.com/docs/manual/reference/command/listIndexes/"""
        cmd = command_doc({"listIndexes": self._name, "cursor": {}}, comment=comment)
        try:
            reply, held = self.database.client._open_cursor(
                self.database.name, cmd, session, read_preference=None, kind="read"
            )
        except OperationFailure as exc:
            if exc.code != 26:  # pymongo yields nothing for a missing collection
                raise
            reply, held = {"cursor": {"id": 0, "firstBatch": [], "ns": self.full_name}, "ok": 1.0}, None
        return CommandCursor(cast("Collection", self), reply, session=held)

    def index_information(self, session: Any = None, comment: Any = None) -> dict[str, Any]:
        """The indexes as a dict of name to spec, keys as lists of (field, direction).

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        info = {}
        for index in self.list_indexes(session, comment=comment):
            index = dict(index)
            index["key"] = list(index["key"].items())
            info[index.pop("name")] = index
        return info

    # MongoDB Search indexes (foliodb.commands.search_indexes).

    def create_search_index(self, model: Any, session: Any = None, comment: Any = None, **kwargs: Any) -> str:
        """Create one search index (a ``SearchIndexModel`` or its document); its name.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        return self.create_search_indexes([model], session=session, comment=comment, **kwargs)[0]

    def create_search_indexes(
        self, models: Sequence[Any], session: Any = None, comment: Any = None, **kwargs: Any
    ) -> list[str]:
        """Create search indexes (``createSearchIndexes``); their names, in order.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        indexes = [getattr(model, "document", model) for model in models]
        cmd = command_doc({"createSearchIndexes": self._name, "indexes": indexes}, kwargs, comment=comment)
        return [index["name"] for index in _reply.check(self._run_command(cmd, session))["indexesCreated"]]

    def drop_search_index(self, name: str, session: Any = None, comment: Any = None, **kwargs: Any) -> None:
        """Drop a search index (``dropSearchIndex``); a missing collection is no error, as in pymongo.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        cmd = command_doc({"dropSearchIndex": self._name, "name": name}, kwargs, comment=comment)
        self._check_unless_missing(self._run_command(cmd, session))

    def update_search_index(
        self, name: str, definition: Mapping[str, Any], session: Any = None, comment: Any = None, **kwargs: Any
    ) -> None:
        """Replace a search index's definition (``updateSearchIndex``); a missing collection is no error.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        cmd = {"updateSearchIndex": self._name, "name": name, "definition": definition}
        self._check_unless_missing(self._run_command(command_doc(cmd, kwargs, comment=comment), session))

    @staticmethod
    def _check_unless_missing(reply: Mapping[str, Any]) -> None:
        """pymongo's ``allowable_errors=["ns not found", 26]``."""
        if reply.get("code") != 26 and reply.get("errmsg") != "ns not found":
            _reply.check(reply)

    def list_search_indexes(
        self, name: str | None = None, session: Any = None, comment: Any = None, **kwargs: Any
    ) -> CommandCursor:
        """The ``$listSearchIndexes`` stage's cursor.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        stage = {"$listSearchIndexes": {"name": name} if name is not None else {}}
        return cast("Collection", self).aggregate([stage], session, comment=comment, **kwargs)
