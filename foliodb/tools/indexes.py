"""An index as ``listIndexes`` (or a dump's metadata, or an oplog entry) describes it,
to create elsewhere: the key pattern in its order, the options without the index
version and namespace the server adds (mongorestore's ``IndexDocument``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pymongo import IndexModel


def index_model(spec: Mapping[str, Any]) -> IndexModel:
    options = dict(spec)
    key = list(options.pop("key").items())
    options.pop("v", None)
    options.pop("ns", None)  # written by servers before 4.4
    return IndexModel(key, **options)
