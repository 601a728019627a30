"""$lookup's hash join: the foreign collection read once and keyed by ``foreignField``.

A ``localField``/``foreignField`` ``$lookup`` runs, for each input document, a
find of ``{foreignField: {$in: <its local values>}}`` on the foreign
collection. With an index on ``foreignField`` that is an index lookup; without
one it is a scan of the whole foreign collection per input document (200
orders joined to 20,000: a second). As mongod 6.0's hash join
(``internalQueryCollectionMaxDataSizeBytesToChooseHashJoin``, 100 MB), the
foreign documents are then read once, in the find's order, into a table from
each value ``foreignField`` reaches (array elements too, as an equality
matches them) to the documents holding it; each input document then takes the
documents under its local values.

Equal keys are equal values: a key is the value's keystring under the
pipeline's collation, the encoding indexes use, which makes 1, 1.0 and
``Decimal128("1")`` one key as equality does. Only plain scalar local values
are looked up so: an input document with a null or missing local value, an
array or document value, or a regex (matched differently) is answered by the
find, as are all of them when the foreign side has such an index, when it
passes the memory bound while being read, or when ``foreignField`` has a
numeric component (which names an array element and a field alike).
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable
from typing import Any

from bson import Binary, Decimal128, Int64, ObjectId, Timestamp
from bson.datetime_ms import DatetimeMS

from foliodb import interrupt
from foliodb.aggregation.env import PipelineEnv
from foliodb.aggregation.pipeline import approx_size
from foliodb.query import collation
from foliodb.query.paths import is_index, leaf_values

HASH_JOIN_BYTES = 100 * 1024 * 1024  # mongod's internalQueryCollectionMaxDataSizeBytesToChooseHashJoin
# Values whose equality is their keystring's: no null (it also matches a missing field), no array
# or document (equal as a whole or by elements), no regex (a pattern to match).
_SCALARS = frozenset(
    {str, int, float, bool, Int64, Decimal128, ObjectId, datetime.datetime, DatetimeMS, Timestamp}
    | {Binary, bytes, uuid.UUID}
)


class HashJoin:
    """The foreign side of one ``$lookup`` stage (built at its first use; see the module docstring)."""

    def __init__(self, env: PipelineEnv, coll: str, db: str | None, foreign: tuple[str, ...]) -> None:
        self._env = env
        self._coll = coll
        self._db = db
        self._foreign = foreign
        self._key: Callable[[Any], bytes] = collation.key_encoder(env.ctx.collator)
        # None: not built yet; False: the find answers every document; else (documents, key -> positions).
        self._table: tuple[list[dict[str, Any]], dict[bytes, list[int]]] | bool | None = None
        if any(is_index(part) for part in foreign) or env.indexed(coll, ".".join(foreign), db):
            self._table = False

    def matches(self, values: list[Any]) -> list[dict[str, Any]] | None:
        """The foreign documents equal to one of ``values`` on ``foreignField``, in the find's
        order, each a copy; None when the find must answer (see the module docstring)."""
        if self._table is False or any(type(value) not in _SCALARS for value in values):
            return None
        if self._table is None:
            self._table = self._build()
            if self._table is False:
                return None
        assert isinstance(self._table, tuple)
        docs, table = self._table
        key = self._key
        if len(values) == 1:
            return [dict(docs[i]) for i in table.get(key(values[0]), ())]
        positions = {i for value in values for i in table.get(key(value), ())}
        return [dict(docs[i]) for i in sorted(positions)]

    def _build(self) -> tuple[list[dict[str, Any]], dict[bytes, list[int]]] | bool:
        docs: list[dict[str, Any]] = []
        table: dict[bytes, list[int]] = {}
        key, foreign = self._key, self._foreign
        size = 0
        for i, doc in enumerate(self._env.aggregate(self._coll, [], self._db)):
            if not i & 15:  # one document in 16 measured: the bound is a choice of strategy, not a limit
                interrupt.check()
                size += approx_size(doc) * 16
                if size > HASH_JOIN_BYTES:
                    return False
            docs.append(doc)
            for value in leaf_values(doc, foreign):
                if type(value) in _SCALARS:
                    positions = table.setdefault(key(value), [])
                    if not positions or positions[-1] != i:  # a document once under a key
                        positions.append(i)
        return docs, table
