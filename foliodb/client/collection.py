"""pymongo's Collection over FolioDB's commands.

Every method builds the command a pymongo driver would send and checks the
reply as pymongo does; argument validation uses pymongo's own validators, so
mistakes raise the same TypeError/ValueError messages.

pymongo's ``Collection`` API is one class, :class:`Collection`, assembled from
its families: the state and bound command paths (collection_base), writes
(collection_writes), reads and aggregation (collection_reads), index and search
index management (collection_indexes). What stays here needs the class itself
(sub-collections by attribute or key) or is about the collection as a whole
(drop, rename, options, watch).
"""

from __future__ import annotations

from typing import Any

from pymongo.errors import InvalidName

from foliodb.client import _reply
from foliodb.client.arguments import command_doc
from foliodb.client.collection_indexes import CollectionIndexes
from foliodb.client.collection_reads import CollectionReads
from foliodb.client.collection_writes import CollectionWrites


class Collection(CollectionWrites, CollectionReads, CollectionIndexes):
    """pymongo's ``Collection`` (an instance of ``pymongo.collection.Collection``) over the embedded engine.

    https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""

    def __getattr__(self, name: str) -> Collection:
        if name.startswith("_"):
            raise AttributeError(
                f"Collection has no attribute {name!r}. To access the {self._name}.{name} collection, "
                f"use database['{self._name}.{name}']."
            )
        return self[name]

    def __getitem__(self, name: str) -> Collection:
        return Collection(
            self.database,
            f"{self._name}.{name}",
            self._codec_options,
            self._read_preference,
            self._write_concern,
            self._read_concern,
        )

    # -- collection ---------------------------------------------------------------------------

    def drop(self, session: Any = None, comment: Any = None, encrypted_fields: Any = None) -> None:
        """Drop this collection and its indexes.

        https://www.mongodb.com/docs/manual/reference/command/drop/"""
        self.database.drop_collection(self._name, session, comment=comment)

    def rename(self, new_name: str, session: Any = None, comment: Any = None, **kwargs: Any) -> dict[str, Any]:
        """Rename this collection within its database (``renameCollection``).

        https://www.mongodb.com/docs/manual/reference/command/renameCollection/"""
        if not isinstance(new_name, str):
            raise TypeError("new_name must be an instance of str")
        if not new_name or ".." in new_name:
            raise InvalidName("collection names cannot be empty")
        if new_name[0] == "." or new_name[-1] == ".":
            raise InvalidName("collection names must not start or end with '.'")
        if "$" in new_name and not new_name.startswith("oplog.$main"):
            raise InvalidName("collection names must not contain '$'")
        cmd = command_doc(
            {"renameCollection": self.full_name, "to": f"{self.database.name}.{new_name}"}, kwargs, comment=comment
        )
        concern = self._write_concern_doc(cmd, session)
        return dict(_reply.check(self.database.client.admin._run_command(cmd, session, write_concern=concern)))

    def options(self, session: Any = None, comment: Any = None) -> dict[str, Any]:
        """The options the collection was created with ({} for none, or a missing collection).

        https://pymongo.readthedocs.io/en/stable/api/pymongo/collection.html"""
        for info in self.database.list_collections(session, filter={"name": self._name}, comment=comment):
            options = dict(info.get("options", {}))
            return options
        return {}

    def watch(self, pipeline: Any = None, *args: Any, **kwargs: Any) -> Any:
        """A change stream of this collection's changes (pymongo's ``watch`` arguments).

        https://www.mongodb.com/docs/manual/changeStreams/"""
        from foliodb.client import change_stream  # it imports the cursor module, which imports this one

        return change_stream.watch(change_stream.CollectionChangeStream, self, pipeline, *args, **kwargs)
