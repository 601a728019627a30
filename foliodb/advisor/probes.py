"""A sample of a large collection read along its ``_id`` index, a few
index seeks a probe, instead of ``$sample`` (which some servers, FolioDB
among them, answer by reading every document).

Each probe picks a random point of the ``_id`` order and reads the
:data:`RUN` documents from there:

* numbers: a point uniform between the smallest and the largest ``_id``;
* strings: a string uniform between the smallest and the largest ``_id``,
  read as numbers in the base of the characters they use (``"s0"`` to
  ``"s99999"``: keys, slugs, UUIDs);
* ObjectIds (``[4-byte seconds][5-byte process][3-byte counter]``): a
  second uniform between the oldest and the newest ``_id``'s, then a point
  uniform between the first and last ``_id`` of the first second at or
  after it that holds documents (so a second with 25,000 inserts is not
  reduced to its first document).

So the sample is uniform over the ``_id`` range (over time, for
ObjectIds), not over the documents: a stretch written faster weighs less
than its share. The rules treat it as a sample (shares, types, lengths)
and check what matters exactly where it is cheap. Any other ``_id`` type
(or a mix) gets ``$sample``.
"""

from __future__ import annotations

import random
import struct
from typing import Any

from bson import ObjectId

RUN = 8  # documents read from each probe's point
ATTEMPTS = 3  # probes tried per RUN documents wanted, at most (duplicates and empty ends)


def probe_sample(coll: Any, raw: Any, size: int, rnd: random.Random) -> list[bytes] | None:
    """About ``size`` documents' BSON, read at random points of the ``_id`` order; None when the
    ``_id``s are neither ObjectIds nor numbers."""
    lowest = coll.find_one({}, {"_id": 1}, sort=[("_id", 1)])
    highest = coll.find_one({}, {"_id": 1}, sort=[("_id", -1)])
    if lowest is None or highest is None:
        return []
    lo, hi = lowest["_id"], highest["_id"]
    if isinstance(lo, ObjectId) and isinstance(hi, ObjectId):
        seconds: dict[int, tuple[int, int]] = {}  # a second -> its first and last _id (bulk loads share a few)

        def point() -> Any:
            return _object_id_point(coll, lo, hi, rnd, seconds)

    elif _number(lo) and _number(hi):

        def point() -> Any:
            return rnd.randint(lo, hi) if isinstance(lo, int) and isinstance(hi, int) else rnd.uniform(lo, hi)

    elif isinstance(lo, str) and isinstance(hi, str) and lo:

        def point() -> Any:
            return _string_point(lo, hi, rnd)

    else:
        return None
    found: dict[str, bytes] = {}
    for _ in range(ATTEMPTS * max(size // RUN, 1)):
        if len(found) >= size:
            break
        for doc in raw.find({"_id": {"$gte": point()}}).sort("_id", 1).limit(RUN):
            found.setdefault(repr(doc["_id"]), doc.raw)
    return list(found.values())[:size]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _object_id_point(
    coll: Any, lo: ObjectId, hi: ObjectId, rnd: random.Random, seconds: dict[int, tuple[int, int]]
) -> ObjectId:
    second = rnd.randint(_seconds(lo), _seconds(hi))
    span = seconds.get(second)
    if span is None:
        # The first second's first _id is the lowest, known already (and maybe a huge document: not read twice).
        first = (
            {"_id": lo}
            if second == _seconds(lo)
            else coll.find_one({"_id": {"$gte": _at(second)}}, {"_id": 1}, sort=[("_id", 1)])
        )
        if first is None:
            return hi
        start = first["_id"]
        last = coll.find_one({"_id": {"$lt": _at(_seconds(start) + 1)}}, {"_id": 1}, sort=[("_id", -1)])
        end = last["_id"] if last is not None else start
        span = seconds[second] = (int.from_bytes(start.binary, "big"), int.from_bytes(end.binary, "big"))
    a, b = span
    return ObjectId(rnd.randint(a, max(a, b)).to_bytes(12, "big"))


def _string_point(lo: str, hi: str, rnd: random.Random) -> str:
    """A string between ``lo`` and ``hi`` (inclusive), uniform when both are read as numbers whose digits
    are the characters between their smallest and largest character."""
    low, high = min(lo + hi), max(lo + hi)
    base = ord(high) - ord(low) + 1
    width = max(len(lo), len(hi))

    def number(text: str) -> int:
        digits = [ord(c) - ord(low) for c in text] + [0] * (width - len(text))
        return sum(d * base ** (width - 1 - i) for i, d in enumerate(digits))

    value = rnd.randint(number(lo), number(hi))
    digits = []
    for _ in range(width):
        value, digit = divmod(value, base)
        digits.append(chr(ord(low) + digit))
    return "".join(reversed(digits)).rstrip(low) or lo


def _seconds(oid: ObjectId) -> int:
    return int(struct.unpack(">I", oid.binary[:4])[0])


def _at(second: int) -> ObjectId:
    return ObjectId(struct.pack(">I", min(second, 0xFFFFFFFF)) + bytes(8))
