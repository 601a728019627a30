"""pymongo's API over FolioDB's command executor."""

from foliodb.client.collection import Collection
from foliodb.client.command_cursor import CommandCursor
from foliodb.client.cursor import Cursor
from foliodb.client.database import Database
from foliodb.client.mongo_client import MongoClient

__all__ = ["Collection", "CommandCursor", "Cursor", "Database", "MongoClient"]
