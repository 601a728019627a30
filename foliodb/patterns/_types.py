"""Type names the recipes share."""

from __future__ import annotations

from typing import Any

from pymongo.client_session import ClientSession
from pymongo.collection import Collection

Coll = Collection[Any]
Session = ClientSession | None
