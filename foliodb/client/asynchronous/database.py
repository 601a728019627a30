"""pymongo's AsyncDatabase over the sync facade's Database.

Every method is the sync facade's (:mod:`foliodb.client.database`), run on a
worker thread, or on the loop for handles (``get_collection``,
``with_options``); see :mod:`foliodb.client.asynchronous.bridge`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pymongo.asynchronous.database as pymongo_database

from foliodb.client.asynchronous.bridge import Bridged, copy_settings, inline, offloaded, register
from foliodb.client.database import Database

if TYPE_CHECKING:
    from foliodb.client.asynchronous.mongo_client import AsyncMongoClient

_Base = pymongo_database.AsyncDatabase


class AsyncDatabase(Bridged, _Base[Any]):
    """pymongo's ``AsyncDatabase`` (an instance of it) over the embedded engine.

    https://pymongo.readthedocs.io/en/stable/api/pymongo/asynchronous/database.html"""

    _delegate: Database

    def __init__(self, delegate: Database, client: AsyncMongoClient) -> None:
        # pymongo's __init__ does not run: the sync database holds the state.
        self._delegate = delegate
        self._owner = client
        self._name = delegate.name
        copy_settings(self, delegate)

    @property
    def client(self) -> AsyncMongoClient:
        """The AsyncMongoClient this database belongs to."""
        return self._owner

    @property
    def name(self) -> str:
        """The name of this database."""
        return self._name

    __getitem__ = inline(_Base.__getitem__)
    get_collection = inline(_Base.get_collection)
    with_options = inline(_Base.with_options)

    aggregate = offloaded(_Base.aggregate)
    command = offloaded(_Base.command)
    create_collection = offloaded(_Base.create_collection)
    cursor_command = offloaded(_Base.cursor_command)
    dereference = offloaded(_Base.dereference)
    drop_collection = offloaded(_Base.drop_collection)
    list_collection_names = offloaded(_Base.list_collection_names)
    list_collections = offloaded(_Base.list_collections)
    validate_collection = offloaded(_Base.validate_collection)
    watch = offloaded(_Base.watch)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AsyncDatabase):
            return self._delegate == other._delegate
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._delegate)

    def __repr__(self) -> str:
        return f"AsyncDatabase({self._owner!r}, {self._name!r})"


register(Database, AsyncDatabase)
