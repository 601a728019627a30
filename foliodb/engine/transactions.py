"""Multi-document transactions: snapshot isolation and first-writer-wins conflicts.

A :class:`Transaction` is logical, not a SQLite transaction: it pins one
reader connection inside one SQLite read transaction for its whole life (its
snapshot), and keeps its writes in an overlay (:mod:`foliodb.engine.overlay`)
that its own reads see and nobody else's do. Commit replays the overlay
through the writer in one SQLite transaction - the normal write path, index
maintenance included - so a crash keeps all of it or none; abort drops it.

Conflicts, as MongoDB's (first writer wins):

* A transaction that writes a document another open transaction has
  written, or one committed by anyone after its snapshot, gets WriteConflict
  (112, TransientTransactionError) at once and is aborted. The table of
  *intents* says which open transaction holds which document (collection id,
  record id) and which unique key (index id, key); commits made while any
  transaction is open stamp the documents they wrote with their commit
  number (``recent``), which is how a write after the snapshot is seen.
* A write outside any transaction that meets a document or unique key an
  open transaction holds does not conflict: it waits until that transaction
  ends (:class:`HeldByTransactionError` unwinds the write, the executor waits, then
  runs the command again), bounded by its ``maxTimeMS``.

Invariants: an intent belongs to a transaction in progress (ending releases
them all); ``recent`` only grows while a transaction is open or opening (its
snapshot being pinned: a commit landing then must be stamped for it) and is
emptied when none is; the overlay only ever holds writes its transaction claimed.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from foliodb.engine.catalog import CollectionInfo
from foliodb.engine.overlay import CollectionOverlay
from foliodb.errors import CommandError, ErrorCode

if TYPE_CHECKING:
    from foliodb.engine.snapshot_reads import Reader

TRANSIENT = "TransientTransactionError"


class State(enum.Enum):
    IN_PROGRESS = "inProgress"
    COMMITTING = "committing"  # replaying its writes through the writer
    COMMITTED = "committed"
    ABORTED = "aborted"


_HOLDING = (State.IN_PROGRESS, State.COMMITTING)


def write_conflict() -> CommandError:
    error = CommandError(
        ErrorCode.WriteConflict,
        "Write conflict during plan execution and yielding is disabled. :: Please retry your operation or "
        "multi-document transaction.",
    )
    error.labels.append(TRANSIENT)
    return error


class WriteConflictError(Exception):
    """A transaction's write lost to another's: the whole command fails with
    ``error`` (not one write error among others) and the transaction aborts."""

    def __init__(self, error: CommandError) -> None:
        super().__init__(error.errmsg)
        self.error = error


class HeldByTransactionError(Exception):
    """A write outside a transaction met what ``txn`` holds: run it again once ``txn`` ends."""

    def __init__(self, txn: Transaction) -> None:
        super().__init__("waiting for a transaction")
        self.txn = txn


class Transaction:
    """One multi-document transaction: its snapshot, its writes, its claims."""

    def __init__(self, table: TransactionTable, view: Reader, snapshot_seq: int, options: dict[str, Any]) -> None:
        self.table = table
        self.view = view  # the pinned snapshot; its overlay is this transaction
        self.snapshot_seq = snapshot_seq  # the storage's commit count its snapshot saw (or less)
        self.options = options  # readConcern and writeConcern of the transaction
        self.state = State.IN_PROGRESS
        self.started = time.monotonic()
        self.collections: dict[int, CollectionOverlay] = {}  # by collection id
        # Collections this transaction created (negative ids until commit): (db, name) -> info.
        self.pending: dict[tuple[str, str], CollectionInfo] = {}
        self.next_pending_id = -1
        self.ended = threading.Event()
        self.lsid: Any = None  # the session's lsid and the txnNumber, recorded with the commit's oplog entry
        self.number: Any = None
        # Each write as it happened, for the commit's applyOps entry (change streams see every
        # step, not the net effect): (op, collection id, _id, BSON before, BSON after, replace).
        self.writes: list[tuple[str, int, Any, bytes | None, bytes | None, bool]] = []
        self._docs: set[tuple[int, int]] = set()
        self._keys: set[tuple[int, bytes]] = set()

    # -- what records.py asks ---------------------------------------------------------

    def overlay_of(self, collection_id: int) -> CollectionOverlay | None:
        return self.collections.get(collection_id)

    def writable(self, info: CollectionInfo) -> CollectionOverlay:
        overlay = self.collections.get(info.id)
        if overlay is None:
            overlay = self.collections[info.id] = CollectionOverlay(info, pending=info.id < 0)
        return overlay

    def claim_document(self, collection_id: int, rid: int) -> None:
        """Take the right to write a snapshot record; WriteConflict if someone else has it or changed it since."""
        if collection_id < 0:
            return  # a collection only this transaction can see
        self.table.claim(self, (collection_id, rid), self._docs, self.table.doc_intents)
        if self.table.recent.get((collection_id, rid), -1) > self.snapshot_seq:
            raise WriteConflictError(write_conflict())

    def claim_key(self, index_id: int, key: bytes) -> None:
        """Take a unique key this transaction is about to add."""
        if index_id < 0:
            return
        self.table.claim(self, (index_id, key), self._keys, self.table.key_intents)

    def changed_since_snapshot(self) -> bool:
        """At commit, under the writer: was any record it claimed committed by another since its snapshot?"""
        recent = self.table.recent
        return any(recent.get(doc, -1) > self.snapshot_seq for doc in self._docs)

    def end(self, state: State) -> None:
        self.state = state
        self.table.release(self, self._docs, self._keys)
        self.ended.set()


class TransactionTable:
    """The engine's open transactions, their intents, and recent commits."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open: set[Transaction] = set()
        self.doc_intents: dict[tuple[int, int], Transaction] = {}
        self.key_intents: dict[tuple[int, bytes], Transaction] = {}
        self.recent: dict[tuple[int, int], int] = {}  # (collection id, rid) -> commit number
        self._pending: list[tuple[int, int]] = []  # written by the writer's transaction in progress
        # Transactions pinning their snapshot, not yet in ``open``: commits landing meanwhile must be
        # stamped for them too (or one could write over a change its snapshot does not hold).
        self.opening = 0

    def opening_snapshot(self) -> None:
        """A transaction is about to pin its snapshot: keep stamping commits until :meth:`begin`."""
        with self.lock:
            self.opening += 1

    def begin(self, txn: Transaction | None) -> None:
        """The transaction that :meth:`opening_snapshot` announced is open (None: it never opened)."""
        with self.lock:
            self.opening -= 1
            if txn is not None:
                self.open.add(txn)

    def claim(self, txn: Transaction, key: Any, mine: set[Any], intents: dict[Any, Transaction]) -> None:
        with self.lock:
            holder = intents.get(key)
            if holder is not None and holder is not txn and holder.state in _HOLDING:
                raise WriteConflictError(write_conflict())
            intents[key] = txn
            mine.add(key)

    def release(self, txn: Transaction, docs: Iterable[tuple[int, int]], keys: Iterable[tuple[int, bytes]]) -> None:
        with self.lock:
            for doc in docs:
                if self.doc_intents.get(doc) is txn:
                    del self.doc_intents[doc]
            for key in keys:
                if self.key_intents.get(key) is txn:
                    del self.key_intents[key]
            self.open.discard(txn)
            if not self.open and not self.opening:
                self.recent.clear()

    # -- the writer's side (it holds the writer lock) ---------------------------------

    def written(self, collection_id: int, rid: int) -> None:
        """The writer is changing a record outside any transaction: wait if an
        open transaction holds it; remember it, to stamp at commit. (Always
        remembered: a transaction that begins before this commit lands must
        see it as written after its snapshot.)"""
        if self.doc_intents:
            holder = self.doc_intents.get((collection_id, rid))
            if holder is not None and holder.state is State.IN_PROGRESS:
                raise HeldByTransactionError(holder)
        self._pending.append((collection_id, rid))

    def check_key(self, index_id: int, key: bytes) -> None:
        holder = self.key_intents.get((index_id, key))
        if holder is not None and holder.state is State.IN_PROGRESS:
            raise HeldByTransactionError(holder)

    def committed(self, seq: int) -> None:
        """The writer committed transaction number ``seq``: stamp what it wrote, for open snapshots."""
        if self._pending:
            if self.open or self.opening:
                with self.lock:
                    for doc in self._pending:
                        self.recent[doc] = seq
            self._pending.clear()

    def rolled_back(self) -> None:
        self._pending.clear()
