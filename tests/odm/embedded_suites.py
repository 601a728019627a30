"""A pytest plugin that runs an ODM's own test suite on FolioDB's embedded clients.

The suites (beanie's, odmantic's) are written for a MongoDB server at a
``mongodb://`` URI and make their clients themselves, in fixtures and in
tests: ``pymongo.AsyncMongoClient(uri)`` (beanie 2), ``AsyncIOMotorClient(uri)``
and ``pymongo.MongoClient(uri)`` (odmantic). Loaded with ``-p`` before the
suite is imported, this plugin makes those names FolioDB's embedded clients
of one dbpath (``FOLIODB_SUITE_DBPATH``, else a temporary directory), so the
suite runs unchanged in process, with no server. A URI's database stays its
default database, as pymongo's ``get_default_database`` gives it.

``scripts/odm_suites.py`` runs a suite this way and over the wire, and
compares the two.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any
from urllib.parse import urlsplit

import pymongo

import foliodb
from foliodb.client.asynchronous import motor

_DBPATH = os.environ.get("FOLIODB_SUITE_DBPATH") or tempfile.mkdtemp(prefix="foliodb-suite-")


def _embedded(host: Any) -> tuple[str, str | None]:
    """The dbpath a suite's host argument stands for, and the default database its URI names."""
    if isinstance(host, str) and host.startswith("mongodb://"):
        database = urlsplit(host).path.lstrip("/") or None
        return _DBPATH, database
    return (host if host is not None else _DBPATH), None


class _FromURI:
    """A client made with a suite's server URI: the embedded dbpath, the URI's default database."""

    _default_name: str | None

    def __init__(self, host: Any = None, *args: Any, **kwargs: Any) -> None:
        path, self._default_name = _embedded(host)
        super().__init__(path, *args, **kwargs)  # type: ignore[call-arg]

    def get_default_database(self, default: str | None = None, *args: Any, **kwargs: Any) -> Any:
        return super().get_default_database(self._default_name or default, *args, **kwargs)  # type: ignore[misc]


class SuiteAsyncMongoClient(_FromURI, foliodb.AsyncMongoClient):
    """pymongo's ``AsyncMongoClient(uri)`` as the suite calls it."""


class SuiteMongoClient(_FromURI, foliodb.MongoClient):
    """pymongo's ``MongoClient(uri)`` as the suite calls it."""


class SuiteMotorClient(_FromURI, motor.AsyncIOMotorClient):
    """motor's ``AsyncIOMotorClient(uri)`` as the suite calls it."""


pymongo.AsyncMongoClient = SuiteAsyncMongoClient  # type: ignore[misc]
pymongo.MongoClient = SuiteMongoClient  # type: ignore[misc]
try:
    import motor.motor_asyncio as motor_asyncio
except ImportError:  # a suite without motor
    pass
else:
    motor_asyncio.AsyncIOMotorClient = SuiteMotorClient  # type: ignore[misc]
