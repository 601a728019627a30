"""pymongo's Cursor over FolioDB's find/getMore commands.

A :class:`Cursor` is lazy: building and chaining it (``sort``, ``skip``,
``limit``...) sends nothing; the first iteration runs ``find`` and later
batches come from ``getMore`` (:class:`~foliodb.client.batch_cursor.BatchCursor`),
as with a server. :class:`RawBatchCursor` is ``find_raw_batches``' Cursor.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pymongo.cursor
from pymongo import CursorType
from pymongo.collation import Collation, validate_collation_or_none
from pymongo.cursor_shared import _QUERY_OPTIONS
from pymongo.errors import InvalidOperation
from pymongo.message import _OPTIONS

from foliodb.client.arguments import index_spec, projection_doc, sort_spec
from foliodb.client.batch_cursor import BatchCursor

if TYPE_CHECKING:
    from foliodb.client.collection import Collection

# The options a clone must not share with its original.
_SPEC_ATTRS = ("_filter", "_sort", "_projection", "_hint", "_max", "_min", "_let", "_collation", "_comment")


class Cursor(BatchCursor, pymongo.cursor.Cursor[Any]):
    """pymongo's ``Cursor`` (an instance of ``pymongo.cursor.Cursor``): a lazy ``find``, getMore by getMore.

    https://pymongo.readthedocs.io/en/stable/api/pymongo/cursor.html"""

    def __init__(
        self,
        collection: Collection,
        filter: Mapping[str, Any] | None = None,
        projection: Any = None,
        skip: int = 0,
        limit: int = 0,
        no_cursor_timeout: bool = False,
        cursor_type: int = 0,
        sort: Any = None,
        allow_partial_results: bool = False,
        oplog_replay: bool = False,
        batch_size: int = 0,
        collation: Mapping[str, Any] | Collation | None = None,
        hint: Any = None,
        max_scan: Any = None,
        max_time_ms: int | None = None,
        max: Any = None,
        min: Any = None,
        return_key: bool | None = None,
        show_record_id: bool | None = None,
        snapshot: bool | None = None,
        comment: Any = None,
        session: Any = None,
        allow_disk_use: bool | None = None,
        let: Mapping[str, Any] | None = None,
    ) -> None:
        self._collection = collection
        if filter is not None and not isinstance(filter, Mapping):
            raise TypeError(
                "filter must be an instance of dict, bson.son.SON, or any other type that inherits from "
                f"collections.Mapping, not {type(filter)}"
            )
        if not isinstance(skip, int) or isinstance(skip, bool):
            raise TypeError("skip must be an instance of int")
        if not isinstance(limit, int) or isinstance(limit, bool):
            raise TypeError("limit must be an instance of int")
        if skip < 0:
            raise ValueError("skip must be >= 0")
        if not isinstance(batch_size, int) or batch_size < 0:
            raise ValueError("batch_size must be >= 0")
        self._filter = collection._codec.encode(dict(filter)) if filter else {}
        self._projection = projection_doc(projection)
        self._skip = skip
        self._limit = limit
        self._batch_size = batch_size
        self._sort = sort_spec(sort) if sort is not None else None
        self._hint = index_spec(hint)
        self._max_time_ms = max_time_ms
        self._comment = comment
        self._collation = validate_collation_or_none(collation)
        self._allow_disk_use = allow_disk_use
        self._let = let
        if cursor_type not in (
            CursorType.NON_TAILABLE,
            CursorType.TAILABLE,
            CursorType.TAILABLE_AWAIT,
            CursorType.EXHAUST,
        ):
            raise ValueError("not a valid value for cursor_type")
        # pymongo's query flags: the cursor type's bits and the boolean options'.
        flags = cursor_type
        if no_cursor_timeout:
            flags |= _QUERY_OPTIONS["no_timeout"]
        if allow_partial_results:
            flags |= _QUERY_OPTIONS["partial"]
        if oplog_replay:
            flags |= _QUERY_OPTIONS["oplog_replay"]
        self._set_flags(flags)
        self._max_scan = max_scan
        self._max = max
        self._min = min
        self._return_key = return_key
        self._show_record_id = show_record_id
        self._session = session
        self._started = False
        self._killed = False
        self._empty = False  # a [n:n] slice: nothing to fetch
        self._cursor_id = None
        self._buffer = deque()
        self._retrieved = 0

    # -- building -------------------------------------------------------------------

    def _check_unstarted(self) -> None:
        if self._started:
            raise InvalidOperation("cannot set options after executing query")

    def _set_flags(self, flags: int) -> None:
        self._query_flags = flags
        # Exhaust is a wire-protocol streaming mode; in process the batches come by getMore.
        self._exhaust = bool(flags & _QUERY_OPTIONS["exhaust"])

    def add_option(self, mask: int) -> Cursor:
        """Set query flags by bitmask (``pymongo.cursor.Cursor.add_option``)."""
        if not isinstance(mask, int):
            raise TypeError(f"mask must be an int, not {type(mask)}")
        self._check_unstarted()
        if mask & _QUERY_OPTIONS["exhaust"] and self._limit:
            raise InvalidOperation("Can't use limit and exhaust together.")
        self._set_flags(self._query_flags | mask)
        return self

    def remove_option(self, mask: int) -> Cursor:
        """Unset query flags by bitmask (``pymongo.cursor.Cursor.remove_option``)."""
        if not isinstance(mask, int):
            raise TypeError(f"mask must be an int, not {type(mask)}")
        self._check_unstarted()
        self._set_flags(self._query_flags & ~mask)
        return self

    def sort(self, key_or_list: Any, direction: Any = None) -> Cursor:
        """Sort by a key and direction, or a list of (key, direction) pairs.

        https://www.mongodb.com/docs/manual/reference/method/cursor.sort/"""
        self._check_unstarted()
        self._sort = sort_spec(key_or_list, direction)
        return self

    def skip(self, skip: int) -> Cursor:
        """Skip the first ``skip`` matching documents.

        https://www.mongodb.com/docs/manual/reference/method/cursor.skip/"""
        if not isinstance(skip, int) or isinstance(skip, bool):
            raise TypeError("skip must be an integer")
        if skip < 0:
            raise ValueError("skip must be >= 0")
        self._check_unstarted()
        self._skip = skip
        return self

    def limit(self, limit: int) -> Cursor:
        """Return at most ``abs(limit)`` documents (a negative limit: in one batch).

        https://www.mongodb.com/docs/manual/reference/method/cursor.limit/"""
        if not isinstance(limit, int) or isinstance(limit, bool):
            raise TypeError("limit must be an integer")
        if self._exhaust:
            raise InvalidOperation("Can't use limit and exhaust together.")
        self._check_unstarted()
        self._limit = limit
        return self

    def batch_size(self, batch_size: int) -> Cursor:
        """Documents per batch (0: the server's default).

        https://www.mongodb.com/docs/manual/reference/method/cursor.batchSize/"""
        if not isinstance(batch_size, int) or isinstance(batch_size, bool):
            raise TypeError("batch_size must be an integer")
        if batch_size < 0:
            raise ValueError("batch_size must be >= 0")
        self._check_unstarted()
        self._batch_size = batch_size
        return self

    def hint(self, index: Any) -> Cursor:
        """Use this index (a name or a key pattern).

        https://www.mongodb.com/docs/manual/reference/method/cursor.hint/"""
        self._check_unstarted()
        self._hint = index_spec(index)
        return self

    def max_time_ms(self, max_time_ms: int | None) -> Cursor:
        """A time limit for the query, in milliseconds (ExecutionTimeout past it).

        https://www.mongodb.com/docs/manual/reference/method/cursor.maxTimeMS/"""
        self._check_unstarted()
        self._max_time_ms = max_time_ms
        return self

    def max_await_time_ms(self, max_await_time_ms: int | None) -> Cursor:
        """Accepted for TAILABLE_AWAIT cursors; FolioDB's getMore answers at once (see commands/tailable.py)."""
        if max_await_time_ms is not None and (not isinstance(max_await_time_ms, int) or max_await_time_ms < 0):
            raise TypeError("max_await_time_ms must be an integer or None")
        self._check_unstarted()
        return self

    def comment(self, comment: Any) -> Cursor:
        """A comment that the profiler, currentOp and the logs show with the query.

        https://www.mongodb.com/docs/manual/reference/method/cursor.comment/"""
        self._check_unstarted()
        self._comment = comment
        return self

    def collation(self, collation: Mapping[str, Any] | Collation | None) -> Cursor:
        """The collation (locale rules) for matching and sorting.

        https://www.mongodb.com/docs/manual/reference/collation/"""
        self._check_unstarted()
        self._collation = validate_collation_or_none(collation)
        return self

    def max_scan(self, max_scan: int | None) -> Cursor:
        """Deprecated by pymongo; sent as ``maxScan``, which MongoDB 4.2+ no longer accepts."""
        self._check_unstarted()
        self._max_scan = max_scan
        return self

    def allow_disk_use(self, allow_disk_use: bool) -> Cursor:
        """Allow sorts larger than memory to spill to disk.

        https://www.mongodb.com/docs/manual/reference/method/cursor.allowDiskUse/"""
        self._check_unstarted()
        self._allow_disk_use = allow_disk_use
        return self

    def max(self, spec: Any) -> Cursor:
        """The exclusive upper index bound (use with ``hint``).

        https://www.mongodb.com/docs/manual/reference/method/cursor.max/"""
        self._check_unstarted()
        self._max = dict(sort_spec(spec))
        return self

    def min(self, spec: Any) -> Cursor:
        """The inclusive lower index bound (use with ``hint``).

        https://www.mongodb.com/docs/manual/reference/method/cursor.min/"""
        self._check_unstarted()
        self._min = dict(sort_spec(spec))
        return self

    def where(self, code: Any) -> Cursor:
        """Add a ``$where`` JavaScript predicate to the filter.

        https://www.mongodb.com/docs/manual/reference/operator/query/where/"""
        self._check_unstarted()
        self._filter = {"$and": [self._filter, {"$where": code}]} if self._filter else {"$where": code}
        return self

    def __getitem__(self, index: int | slice) -> Any:
        self._check_unstarted()
        if isinstance(index, slice):
            if index.step is not None:
                raise IndexError("Cursor instances do not support slice steps")
            start = index.start or 0
            if start < 0:
                raise IndexError("Cursor instances do not support negative indices")
            if index.stop is not None:
                limit = index.stop - start
                if limit < 0:
                    raise IndexError(f"stop index must be greater than start index for slice {index!r}")
                if limit == 0:
                    self._empty = True
            else:
                limit = 0
            self._skip = start
            self._limit = limit
            return self
        if not isinstance(index, int):
            raise TypeError(f"index {index!r} cannot be applied to Cursor instances")
        if index < 0:
            raise IndexError("Cursor instances do not support negative indices")
        clone = self.clone()
        clone.skip(index + self._skip)
        clone.limit(-1)
        for doc in clone:
            return doc
        raise IndexError("no such item for Cursor instance")

    # -- running ----------------------------------------------------------------------

    def _find_command(self) -> dict[str, Any]:
        cmd: dict[str, Any] = {"find": self._collection.name, "filter": self._filter}
        if self._sort:
            cmd["sort"] = self._sort
        if self._projection is not None:
            cmd["projection"] = self._projection
        if self._hint is not None:
            cmd["hint"] = self._hint
        if self._skip:
            cmd["skip"] = self._skip
        if self._limit:
            cmd["limit"] = abs(self._limit)
            if self._limit < 0:
                cmd["singleBatch"] = True
        if self._batch_size:
            # pymongo's rule: a batch as large as the limit asks for one more, to spare a getMore.
            cmd["batchSize"] = self._batch_size + 1 if self._limit == self._batch_size else self._batch_size
        if self._max_time_ms is not None:
            cmd["maxTimeMS"] = self._max_time_ms
        if self._comment is not None:
            cmd["comment"] = self._comment
        if self._collation is not None:
            cmd["collation"] = self._collation
        if self._allow_disk_use is not None:
            cmd["allowDiskUse"] = self._allow_disk_use
        if self._let is not None:
            cmd["let"] = self._let
        cmd.update((option, True) for option, bit in _OPTIONS.items() if self._query_flags & bit)
        if self._max_scan:
            cmd["maxScan"] = self._max_scan
        if self._max is not None:
            cmd["max"] = self._max
        if self._min is not None:
            cmd["min"] = self._min
        if self._return_key:
            cmd["returnKey"] = True
        if self._show_record_id:
            cmd["showRecordId"] = True
        return cmd

    def _get_more_batch_size(self) -> int:
        # pymongo's: what is left of the limit, at most a batch.
        if self._limit:
            left = abs(self._limit) - self._retrieved
            return min(left, self._batch_size) if self._batch_size else left
        return self._batch_size

    def _start(self) -> None:
        self._started = True
        if self._empty:
            self._killed = True
            return
        collection = self._collection
        database = collection.database
        reply, self._session = database.client._open_cursor(
            database.name,
            self._find_command(),
            self._session,
            read_concern=collection.read_concern,
            read_preference=None,
            kind="read",
        )
        cursor = reply["cursor"]
        self._cursor_id = int(cursor["id"])
        self._buffer.extend(collection._codec.decode(cursor["firstBatch"]))
        if not self._cursor_id:
            self._killed = True

    def __iter__(self) -> Cursor:
        return self

    def __next__(self) -> dict[str, Any]:
        """The next document; the first call runs ``find``, later batches come by ``getMore``.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/cursor.html"""
        if not self._started:
            self._start()
        return self._next_document()

    next = __next__

    @property
    def alive(self) -> bool:
        """Whether the cursor may still return documents.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/cursor.html"""
        return not self._started or bool(self._buffer) or not self._killed

    @property
    def collection(self) -> Collection:
        """The Collection this cursor reads.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/cursor.html"""
        return self._collection

    def close(self) -> None:
        """Close the cursor, killing its server cursor.

        https://www.mongodb.com/docs/manual/reference/command/killCursors/"""
        self._kill()

    def rewind(self) -> Cursor:
        """Reset to the unevaluated state: iterating again runs the query again.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/cursor.html"""
        self._kill()
        self._started = False
        self._killed = False
        self._cursor_id = None
        self._buffer = deque()
        self._retrieved = 0
        return self

    def clone(self) -> Cursor:
        """An unevaluated copy with the same options (its documents are
        copied too, so changing one cursor's filter leaves the other's)."""
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other._session = self.session  # the explicit one: an implicit session stays with its server cursor
        other._started = False
        other._killed = False
        other._cursor_id = None
        other._buffer = deque()
        other._retrieved = 0
        for attr in _SPEC_ATTRS:
            setattr(other, attr, copy.deepcopy(getattr(self, attr)))
        return other

    def __copy__(self) -> Cursor:
        return self.clone()

    def __deepcopy__(self, memo: Any) -> Cursor:
        return self.clone()

    def distinct(self, key: str) -> list[Any]:
        """The distinct values of a field among this cursor's matches.

        https://www.mongodb.com/docs/manual/reference/command/distinct/"""
        return self._collection.distinct(key, self._filter, session=self.session)

    def explain(self) -> dict[str, Any]:
        """The query plan and execution statistics (``explain``, allPlansExecution).

        https://www.mongodb.com/docs/manual/reference/command/explain/"""
        cmd = self._find_command()
        database = self._collection.database
        client = database.client
        session = self._session or client._get_bound_session()
        # pymongo's: the find keeps its read concern inside a transaction's explain, without afterClusterTime.
        read_concern = self._collection.read_concern
        if read_concern.level and not (session is not None and session.in_transaction):
            cmd["readConcern"] = read_concern.document
        explain = {"explain": cmd, "verbosity": "allPlansExecution"}
        reply, _ = client._open_cursor(database.name, explain, self._session, read_preference=None, kind="read")
        return dict(reply)


class RawBatchCursor(Cursor, pymongo.cursor.RawBatchCursor[Any]):
    """``find_raw_batches``: each item is one batch of BSON bytes, for decoding with ``bson.decode_all``."""

    def __next__(self) -> bytes:  # type: ignore[override]
        """The next batch, its documents' BSON concatenated.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/cursor.html"""
        if not self._started:
            self._start()
        return self._next_raw_batch()

    next = __next__  # type: ignore[assignment]

    def __getitem__(self, index: int | slice) -> Any:
        raise InvalidOperation("Cannot call __getitem__ on RawBatchCursor")
