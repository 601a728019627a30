"""First, do no harm: every change is tried before it is proposed.

For a finding whose change has commands to run (templates of what the
application writes are not run), the proof:

1. copies into a scratch database (FolioDB in memory) the collections the
   commands and the replayed queries name: a sample of each (the profile's),
   the documents each replayed query returns on the real database, and the
   documents their ``$lookup``s join, with the collection's indexes;
2. replays the profiled reads of the collections the commands change (and
   the pipelines that join them): finds, counts and aggregations, each
   distinct shape up to :data:`EXAMPLES` times;
3. runs the commands, in order (a TTL index also deletes what it would
   expire now: the monitor would);
4. replays the reads again and compares: every document a read returned
   before must come back with every field it had, equal (fields may be
   added), unless the finding says which answers it alters and why
   (:class:`foliodb.advisor.report.Affected`: values of named fields, and
   with ``gains`` documents the query missed).

A command that fails, or an answer that changes otherwise, refuses the
change: the finding becomes a question for the user, with the reason, and
its commands are kept only in the proof. The scratch database is the one
place the advisor uses FolioDB itself; everything else is pymongo's API.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator, Mapping
from typing import Any

from bson import SON, json_util
from pymongo.errors import BulkWriteError, PyMongoError

from foliodb.advisor.context import Context
from foliodb.advisor.costs import render
from foliodb.advisor.pipelines import writes
from foliodb.advisor.report import Affected, Finding, Proof
from foliodb.advisor.sampling import type_name
from foliodb.advisor.shell import Command
from foliodb.advisor.workload import Operation

EXAMPLES = 3  # concrete runs replayed per query shape
REPLAYED = 60  # queries replayed per finding
COPIED = 300  # sampled documents copied per collection
RETURNED = 50  # documents copied per replayed query (what it returns on the real database)
RETURNED_MS = 2_000  # the longest a replayed query may read the real database for them
JOINED = 500  # documents copied per $lookup (what the copied documents join)
MAX_BYTES = 8 << 20  # copied per collection
_INDEX_OPTIONS = (
    "unique",
    "sparse",
    "partialFilterExpression",
    "collation",
    "weights",
    "default_language",
    "language_override",
    "wildcardProjection",
    "2dsphereIndexVersion",
    "bits",
    "min",
    "max",
)
_NOT_REPLAYED = frozenset({"$sample", "$currentOp", "$collStats", "$indexStats", "$listSessions", "$planCacheStats"})


class Scratch:
    """A FolioDB database in memory, one per advice, a fresh database per proof."""

    def __init__(self) -> None:
        self._client: Any = None
        self._n = 0

    def database(self) -> Any:
        if self._client is None:
            import foliodb  # the scratch copy only: the advisor reads the advised database by pymongo's API

            self._client = foliodb.MongoClient(":memory:")
        self._n += 1
        return self._client[f"proof{self._n}"]

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def prove(ctx: Context, finding: Finding, scratch: Scratch) -> None:
    """Try ``finding``'s change (see the module docstring); set its proof, or turn it into a question."""
    steps = [step for step in finding.change.steps if not step.template]
    if not steps:
        finding.proof = Proof("nothing-to-run")
        return
    changed = {name for step in steps for name in _changes(step)}
    replayed = _replayed(ctx, changed)
    db = scratch.database()
    try:
        proof = Proof("proven", queries_replayed=len(replayed))
        try:
            proof.documents = _copy(ctx, db, replayed, steps)
        except PyMongoError as exc:  # what cannot be copied cannot be tried: nothing is proposed untried
            _refuse(finding, proof, f"the data could not be copied to try the change: {_error(exc)}")
            return
        before = [_answers(db, op) for op in replayed]
        for step in steps:
            try:
                run(db, step)
            except (PyMongoError, TypeError, ValueError) as exc:
                _refuse(finding, proof, f"{step.shell()} fails on a copy of the data: {_error(exc)}")
                return
            proof.commands_run += 1
        for op, answer in zip(replayed, before, strict=True):
            verdict = _verdict(answer, _answers(db, op), op, finding.change.affects)
            if verdict is None:
                proof.unchanged += 1
            elif verdict == "altered":
                proof.altered += 1
            else:
                _refuse(finding, proof, f"{render(op)} on {op.collection} would answer differently: {verdict}")
                return
        finding.proof = proof
    finally:
        db.client.drop_database(db.name)


def _refuse(finding: Finding, proof: Proof, reason: str) -> None:
    proof.status = "refused"
    proof.reason = reason
    proof.refused = finding.change.commands
    finding.proof = proof
    finding.question = (
        f"{finding.change.description} This was not proposed as a change: {reason}. Is that what you want?"
    )
    finding.change.steps = []


def _error(exc: Exception) -> str:
    details = getattr(exc, "details", None)
    if isinstance(details, Mapping) and "codeName" in details:
        return f"{details.get('errmsg', exc)} ({details['codeName']}, {details.get('code')})"
    return str(exc).split(", full error")[0]


# -- what the commands change, and the reads to replay ------------------------------------------


def _changes(step: Command) -> Iterator[str]:
    if step.collection:
        yield step.collection
    for stage in _stages(step):
        for name in ("$merge", "$out"):
            spec = stage.get(name)
            if isinstance(spec, str):
                yield spec
            elif isinstance(spec, Mapping):
                into = spec.get("into", spec.get("coll"))
                if isinstance(into, str):
                    yield into
    if step.method == "runCommand" and isinstance(step.args[0], Mapping):
        target = step.args[0].get("collMod")
        if isinstance(target, str):
            yield target


def _stages(step: Command) -> list[Mapping[str, Any]]:
    if step.method == "aggregate" and step.args and isinstance(step.args[0], list):
        return [s for s in step.args[0] if isinstance(s, Mapping)]
    return []


def _replayed(ctx: Context, changed: set[str]) -> list[Operation]:
    seen: dict[tuple[str, str], int] = {}
    out: list[Operation] = []
    for op in ctx.workload.operations:
        if not _replayable(op):
            continue
        joined = {str(s["$lookup"].get("from")) for s in op.pipeline if isinstance(s.get("$lookup"), Mapping)}
        if op.collection not in changed and not joined & changed:
            continue
        key = (op.collection, render(op))
        if seen.get(key, 0) >= EXAMPLES:
            continue
        seen[key] = seen.get(key, 0) + 1
        out.append(op)
        if len(out) >= REPLAYED:
            break
    return out


def _replayable(op: Operation) -> bool:
    if op.kind == "find" or (op.kind == "count" and not op.pipeline):
        return True
    if op.kind in ("aggregate", "count") and op.pipeline:
        return not writes(op) and not any(name in _NOT_REPLAYED for stage in op.pipeline for name in stage)
    return False


# -- the scratch copy ------------------------------------------------------------------------


def _copy(ctx: Context, db: Any, replayed: list[Operation], steps: list[Command]) -> int:
    wanted: dict[str, dict[str, Any]] = {}  # collection -> repr(_id) -> document
    named = {op.collection for op in replayed} | {step.collection for step in steps if step.collection}
    lookups = [s["$lookup"] for op in replayed for s in op.pipeline if isinstance(s.get("$lookup"), Mapping)]
    lookups += [s["$lookup"] for step in steps for s in _stages(step) if isinstance(s.get("$lookup"), Mapping)]
    named |= {str(spec.get("from")) for spec in lookups}
    for name in named:
        profile = ctx.profiles.get(name)
        if profile is not None:
            _add(wanted.setdefault(name, {}), profile.documents[:COPIED])
    for op in replayed:
        _add(wanted.setdefault(op.collection, {}), _returned(ctx.database, op))
    for spec in lookups:
        local, foreign, target = spec.get("localField"), spec.get("foreignField"), spec.get("from")
        if not (isinstance(local, str) and isinstance(foreign, str) and isinstance(target, str)):
            continue
        values = list(
            {repr(v): v for docs in wanted.values() for d in docs.values() for v in _values(d, local)}.values()
        )
        if values:
            found = ctx.database[target].find({foreign: {"$in": values[:JOINED]}}).limit(JOINED)
            _add(wanted.setdefault(target, {}), list(found))
    copied = 0
    for name, docs in wanted.items():
        batch, used = [], 0
        for doc in docs.values():
            size = len(json_util.dumps(doc))
            if used + size > MAX_BYTES:
                break
            batch.append(doc)
            used += size
        if batch:
            try:
                db[name].insert_many(batch, ordered=False)
                copied += len(batch)
            except BulkWriteError as exc:  # documents the scratch database refuses: the others are copied
                copied += int(exc.details.get("nInserted", 0))
        profile = ctx.profiles.get(name)
        for index in profile.indexes if profile else []:
            _copy_index(db[name], index)
    return copied


def _add(into: dict[str, Any], documents: list[Any]) -> None:
    for doc in documents:
        if isinstance(doc, Mapping) and "_id" in doc:
            into.setdefault(json_util.dumps(doc["_id"]), dict(doc))


def _returned(database: Any, op: Operation) -> list[Any]:
    """What ``op`` reads on the real database (the documents its filter, an aggregation's leading $match,
    selects)."""
    try:
        cursor = database[op.collection].find(op.filter, max_time_ms=RETURNED_MS)
        if op.sort:
            cursor = cursor.sort(list(op.sort.items()))
        return list(cursor.limit(RETURNED))
    except PyMongoError:  # too slow, or a filter only the pipeline's context gives meaning to: the sample must do
        return []


def _values(doc: Any, path: str) -> Iterator[Any]:
    value: Any = doc
    parts = path.split(".")
    for i, part in enumerate(parts):
        if isinstance(value, list):
            for item in value:
                yield from _values(item, ".".join(parts[i:]))
            return
        value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, list):
        yield from (v for v in value if not isinstance(v, (list, Mapping)))
    elif value is not None:
        yield value


def _copy_index(coll: Any, index: Mapping[str, Any]) -> None:
    if index.get("name") == "_id_":
        return
    options = {k: index[k] for k in _INDEX_OPTIONS if k in index}
    # A TTL index is copied without its expiry: the scratch monitor must not delete during a proof.
    try:
        coll.create_index(list(index["key"].items()), name=index["name"], **options)
    except PyMongoError:  # an index kind the scratch database lacks: the proof runs without it
        return


# -- running a command -------------------------------------------------------------------------


def run(db: Any, step: Command) -> None:
    """Run ``step`` (a mongosh command) with pymongo's API on ``db``."""
    args = list(step.args)
    if step.method == "runCommand":
        db.command(SON(args[0]))
        return
    coll = db[step.collection]
    method = step.method
    if method == "createIndex":
        options = dict(args[1]) if len(args) > 1 else {}
        coll.create_index(list(args[0].items()), **options)
        if "expireAfterSeconds" in options:
            _expire(coll, args[0], options["expireAfterSeconds"])
    elif method == "dropIndex":
        coll.drop_index(args[0])
    elif method == "hideIndex":
        db.command("collMod", step.collection, index={"name": args[0], "hidden": True})
    elif method in ("updateMany", "updateOne"):
        options = dict(args[2]) if len(args) > 2 else {}
        call = coll.update_many if method == "updateMany" else coll.update_one
        call(args[0], args[1], **options)
    elif method == "deleteMany":
        coll.delete_many(args[0])
    elif method == "insertOne":
        coll.insert_one(dict(args[0]))
    elif method == "insertMany":
        coll.insert_many([dict(d) for d in args[0]])
    elif method == "aggregate":
        list(coll.aggregate(args[0]))
    elif method == "createCollection":
        db.create_collection(args[0], **(dict(args[1]) if len(args) > 1 else {}))
    elif method == "find":
        list(coll.find(*args))  # a read: shown as the new query, changes nothing
    else:
        raise ValueError(f"the advisor cannot try {method}")


def _expire(coll: Any, key: Mapping[str, Any], seconds: Any) -> None:
    """What the TTL monitor would delete at once (the earliest date of an array counts)."""
    field = next(iter(key))
    cutoff = datetime.datetime.now(datetime.UTC).replace(tzinfo=None) - datetime.timedelta(seconds=float(seconds))
    coll.delete_many({field: {"$lt": cutoff}})


# -- answers and how they compare -----------------------------------------------------------------


def _answers(db: Any, op: Operation) -> Any:
    coll = db[op.collection]
    try:
        if op.kind == "find":
            cursor = coll.find(op.filter, op.projection or None)
            if op.sort:
                cursor = cursor.sort(list(op.sort.items()))
                if op.skip:
                    cursor = cursor.skip(op.skip)
                if op.limit:
                    cursor = cursor.limit(abs(op.limit))
            # Without a sort, which documents a limit keeps is the natural order's choice: all are compared.
            return list(cursor)
        if op.kind == "count" and not op.pipeline:
            return coll.count_documents(op.filter)
        return list(coll.aggregate(op.pipeline))
    except PyMongoError as exc:
        return {"error": _error(exc)}


def _verdict(before: Any, after: Any, op: Operation, affects: list[Affected]) -> str | None:
    """None when the answers agree; "altered" when they differ as ``affects`` says; else what differs."""
    declared = [a for a in affects if a.collection == op.collection]
    if isinstance(before, dict) or isinstance(after, dict):  # an error on one side
        return None if before == after else f"{before} before, {after} after"
    if isinstance(before, int):
        if before == after:
            return None
        gains = any(a.gains for a in declared)
        return "altered" if gains and after > before else f"{before} documents counted before, {after} after"
    missing, extra, fields = _compare(before, after, ordered=bool(op.sort) or _sorts(op))
    if not (missing or extra or fields):
        return None
    allowed = {f for a in declared for f in a.fields}
    stray = {f for f in fields if not any(f == a or f.startswith(a + ".") for a in allowed)}
    if not missing and not stray and (not extra or any(a.gains for a in declared)):
        return "altered"
    parts = []
    if missing:
        parts.append(f"{missing} of {len(before)} documents no longer returned")
    if extra:
        parts.append(f"{extra} more documents returned")
    if stray:
        parts.append(f"{', '.join(sorted(stray))} changed in the documents returned")
    return "; ".join(parts)


def _sorts(op: Operation) -> bool:
    return any("$sort" in stage for stage in op.pipeline)


def _compare(before: list[Any], after: list[Any], ordered: bool) -> tuple[int, int, set[str]]:
    """(documents missing after, documents added, fields whose values differ)."""
    if all(isinstance(d, Mapping) and "_id" in d for d in before + after) and not ordered:
        old = {json_util.dumps(d["_id"]): d for d in before}
        new = {json_util.dumps(d["_id"]): d for d in after}
        fields: set[str] = set()
        for key in old.keys() & new.keys():
            fields |= _diff(old[key], new[key], "")
        return len(old.keys() - new.keys()), len(new.keys() - old.keys()), fields
    if not ordered:
        before, after = sorted(before, key=_canonical), sorted(after, key=_canonical)
    fields = set()
    for old_doc, new_doc in zip(before, after, strict=False):
        fields |= _diff(old_doc, new_doc, "")
    return max(len(before) - len(after), 0), max(len(after) - len(before), 0), fields


def _canonical(doc: Any) -> str:
    return json.dumps(json.loads(json_util.dumps(doc)), sort_keys=True)


def _diff(before: Any, after: Any, path: str) -> set[str]:
    """The paths where ``after`` lacks or changed what ``before`` holds (added fields do not count)."""
    if isinstance(before, Mapping):
        if not isinstance(after, Mapping):
            return {path or "(document)"}
        out: set[str] = set()
        for key, value in before.items():
            where = f"{path}.{key}" if path else str(key)
            out |= _diff(value, after[key], where) if key in after else {where}
        return out
    if isinstance(before, list):
        if not isinstance(after, list) or len(before) != len(after):
            return {path}
        out = set()
        for old, new in zip(before, after, strict=True):
            out |= _diff(old, new, path)
        return out
    same = type_name(before) == type_name(after) and before == after
    return set() if same else {path}
