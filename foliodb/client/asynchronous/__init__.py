"""pymongo's asynchronous API (``pymongo.asynchronous``) over the embedded engine."""

from foliodb.client.asynchronous.change_stream import (
    AsyncClusterChangeStream,
    AsyncCollectionChangeStream,
    AsyncDatabaseChangeStream,
)
from foliodb.client.asynchronous.collection import AsyncCollection
from foliodb.client.asynchronous.cursor import AsyncCommandCursor, AsyncCursor
from foliodb.client.asynchronous.database import AsyncDatabase
from foliodb.client.asynchronous.mongo_client import AsyncMongoClient
from foliodb.client.asynchronous.session import AsyncClientSession

__all__ = [
    "AsyncClientSession",
    "AsyncClusterChangeStream",
    "AsyncCollection",
    "AsyncCollectionChangeStream",
    "AsyncCommandCursor",
    "AsyncCursor",
    "AsyncDatabase",
    "AsyncDatabaseChangeStream",
    "AsyncMongoClient",
]
