"""FolioDB: MongoDB's data model and languages, embedded like SQLite.

``foliodb.MongoClient("./data")`` opens a dbpath in this process and answers
pymongo's API, ``foliodb.AsyncMongoClient("./data")`` its asynchronous API;
``foliodb.connect(uri)`` hands a ``mongodb://`` URI to pymongo, so the same
code runs against a MongoDB server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["AsyncMongoClient", "MongoClient", "__version__", "connect"]

if TYPE_CHECKING:
    from foliodb.client import MongoClient
    from foliodb.client.asynchronous import AsyncMongoClient
    from foliodb.client.mongo_client import connect


def __getattr__(name: str) -> Any:
    # Imported on first use, so `import foliodb.query...` stays light.
    if name == "MongoClient":
        from foliodb.client import MongoClient

        return MongoClient
    if name == "AsyncMongoClient":
        from foliodb.client.asynchronous import AsyncMongoClient

        return AsyncMongoClient
    if name == "connect":
        from foliodb.client.mongo_client import connect

        return connect
    raise AttributeError(f"module 'foliodb' has no attribute {name!r}")
