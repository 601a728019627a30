"""Client sessions, as far as an embedded single-node engine has them.

A session exists so pymongo code that opens one keeps working: every
operation may take ``session=`` and, on one process with one engine, reads
already see every acknowledged write (causal consistency holds trivially).
Multi-document transactions are not built yet: starting one raises
OperationFailure with NotImplemented (238) rather than pretending to be
atomic.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from bson.binary import Binary, UuidRepresentation
from pymongo.errors import InvalidOperation, OperationFailure

if TYPE_CHECKING:
    from foliodb.client.mongo_client import MongoClient

NOT_IMPLEMENTED = 238


def _no_transactions() -> OperationFailure:
    return OperationFailure(
        "multi-document transactions are not implemented in FolioDB yet",
        NOT_IMPLEMENTED,
        {"ok": 0.0, "code": NOT_IMPLEMENTED, "codeName": "NotImplemented"},
    )


class ClientSession:
    # What pymongo's own cursor code (gridfs's GridOutCursor) reads of a session it is given:
    # an explicit session, never pymongo's implicit one, with no transaction's read preference.
    """pymongo's ``ClientSession`` as far as the embedded engine has sessions (see the module docstring).

    https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"""

    _implicit = False
    _attached_to_cursor = False

    def __init__(self, client: MongoClient, causal_consistency: bool | None = None) -> None:
        self._client = client
        self._id = {"id": Binary.from_uuid(uuid.uuid4(), UuidRepresentation.STANDARD)}
        self._ended = False
        self._causal = True if causal_consistency is None else causal_consistency

    @property
    def client(self) -> MongoClient:
        """The MongoClient that started this session.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"""
        return self._client

    @property
    def session_id(self) -> dict[str, Any]:
        """The session's id document (``{id: UUID}``); InvalidOperation once ended.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"""
        if self._ended:
            raise InvalidOperation("Cannot use ended session")
        return self._id

    @property
    def has_ended(self) -> bool:
        """Whether end_session was called.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"""
        return self._ended

    @property
    def in_transaction(self) -> bool:
        """False: transactions are not built yet.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"""
        return False

    @property
    def cluster_time(self) -> None:
        """None: a single embedded node gossips no cluster time.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"""
        return None

    @property
    def operation_time(self) -> None:
        """None: a single embedded node reports no operation time.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"""
        return None

    def advance_cluster_time(self, cluster_time: Any) -> None:
        """Nothing to advance: one node, no cluster time."""

    def advance_operation_time(self, operation_time: Any) -> None:
        """Nothing to advance: one node, no operation time."""

    def _txn_read_preference(self) -> None:
        """pymongo's read preference of the running transaction: none runs."""
        return None

    def start_transaction(self, *args: Any, **kwargs: Any) -> Any:
        """Transactions are not built yet: raises OperationFailure NotImplemented (238).

        https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"""
        raise _no_transactions()

    def with_transaction(self, callback: Any, *args: Any, **kwargs: Any) -> Any:
        """Transactions are not built yet: raises OperationFailure NotImplemented (238).

        https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"""
        raise _no_transactions()

    def commit_transaction(self) -> None:
        """No transaction can be running: raises InvalidOperation.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"""
        raise InvalidOperation("No transaction started")

    def abort_transaction(self) -> None:
        """No transaction can be running: raises InvalidOperation.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"""
        raise InvalidOperation("No transaction started")

    def end_session(self) -> None:
        """End the session; its id can no longer be used.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/client_session.html"""
        self._ended = True

    def __enter__(self) -> ClientSession:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.end_session()
