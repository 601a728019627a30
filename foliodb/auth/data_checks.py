"""The special rules of data commands: privileges computed from the command document.

Each ``check_*`` is a :data:`~foliodb.auth.decision.Check` for
:data:`~foliodb.auth.command_table.RULES`: reads that may go through views
(whose definitions read other namespaces), writes whose actions depend on
upserts and ``bypassDocumentValidation``, ``create``/``collMod`` of views,
renames across databases, pipelines, mapReduce outputs, bulkWrite's
namespaces, and the listing commands whose handler limits what an
unprivileged caller sees. A malformed document is over-approximated (the
handler's parse error then reaches only users who hold the privileges).
Manual: each command's "Access Control" section.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.auth.decision import Decision, Subject, bypass_actions, decide, named_resource, unauthorized
from foliodb.auth.pipelines import ViewLookup, namespace_reads, pipeline_privileges, view_definition_reads
from foliodb.auth.privileges import (
    CLUSTER,
    Privilege,
    Resource,
    database,
    namespace,
    privilege,
)
from foliodb.query.bsontypes import is_string


def check_reads(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    target = named_resource(db, cmd)
    if target.kind != "exact":
        return decide(subject, db, cmd, [privilege(target, "find")])
    return decide(subject, db, cmd, namespace_reads(db, target.collection, views))


def check_update(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    statements = cmd.get("updates")
    upsert = isinstance(statements, list) and any(isinstance(s, Mapping) and s.get("upsert") for s in statements)
    actions = ("update", *(("insert",) if upsert else ()), *bypass_actions(cmd))
    return decide(subject, db, cmd, [privilege(named_resource(db, cmd), *actions)])


def check_find_and_modify(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    actions = ["find", "remove" if cmd.get("remove") else "update", *bypass_actions(cmd)]
    if cmd.get("upsert"):
        actions.append("insert")
    return decide(subject, db, cmd, [privilege(named_resource(db, cmd), *actions)])


def check_create(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    """mongod's ``checkAuthForCreate``: a collection needs createCollection or insert (and
    convertToCapped when capped); a view needs createCollection, and a creator who may read the
    view must also be able to read everything its definition reads."""
    target = named_resource(db, cmd)
    view_on = cmd.get("viewOn")
    if cmd.get("capped") and not subject.allows([privilege(target, "convertToCapped")]):
        return Decision([privilege(target, "convertToCapped")], unauthorized(db, cmd))
    if view_on is not None:
        needed = [privilege(target, "createCollection")]
        if is_string(view_on) and subject.allows([privilege(target, "find")]):
            stages = cmd.get("pipeline")
            needed += view_definition_reads(db, view_on, stages if isinstance(stages, list) else [], views)
        return decide(subject, db, cmd, needed)
    for action in ("createCollection", "insert"):
        if subject.allows([privilege(target, action)]):
            return Decision([privilege(target, action)])
    return Decision([privilege(target, "createCollection")], unauthorized(db, cmd))


def check_coll_mod(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    target = named_resource(db, cmd)
    needed = [privilege(target, "collMod")]
    if ("viewOn" in cmd or "pipeline" in cmd) and target.kind == "exact":
        current = views(db, target.collection)
        view_on = cmd.get("viewOn", current[0] if current else None)
        stages = cmd.get("pipeline", current[1] if current else [])
        if is_string(view_on) and subject.allows([privilege(target, "find")]):
            needed += view_definition_reads(db, view_on, stages if isinstance(stages, list) else [], views)
    return decide(subject, db, cmd, needed)


def _split(ns: Any) -> Resource | None:
    if not is_string(ns) or "." not in ns:
        return None
    db, _, coll = ns.partition(".")
    return namespace(db, coll)


def check_rename(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    """mongod's ``rename_collection_common``: within a database, renameCollectionSameDB (and no
    gain in read access: find on the source, or no find on the target); otherwise find and
    dropCollection on the source, insert and createIndex on the target; dropTarget adds
    dropCollection on the target."""
    source, target = _split(cmd.get("renameCollection")), _split(cmd.get("to"))
    if source is None or target is None:
        return decide(subject, db, cmd, [privilege(database(db), "renameCollectionSameDB")])
    drop = [privilege(target, "dropCollection")] if cmd.get("dropTarget") else []
    same_db = [privilege(database(source.db), "renameCollectionSameDB")]
    if source.db == target.db and subject.allows(same_db):
        refused = not subject.allows([privilege(source, "find")]) and subject.allows([privilege(target, "find")])
        needed = same_db + drop
        return Decision(needed, unauthorized(db, cmd) if refused or not subject.allows(drop) else None)
    needed = [privilege(source, "find", "dropCollection"), privilege(target, "insert", "createIndex"), *drop]
    return decide(subject, db, cmd, needed)


def check_aggregate(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    stages = cmd.get("pipeline")
    stages = stages if isinstance(stages, list) else []
    coll = cmd["aggregate"]
    bypass = cmd.get("bypassDocumentValidation") is True
    if is_string(coll) and coll:
        return decide(subject, db, cmd, pipeline_privileges(db, coll, stages, views, bypass, subject.users))
    if coll == 1:
        return decide(subject, db, cmd, pipeline_privileges(db, None, stages, views, bypass, subject.users))
    return decide(subject, db, cmd, [privilege(database(db), "find")])


def check_map_reduce(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    # Manual, mapReduce "Access Control": find on the input; with a collection out, replace needs
    # insert and remove on it, merge and reduce insert and update.
    needed = [privilege(named_resource(db, cmd), "find")]
    out = cmd.get("out")
    target: tuple[str, Any, str] | None = None
    if is_string(out):
        target = ("replace", out, db)
    elif isinstance(out, Mapping) and out:
        mode = next(iter(out))
        out_db = out.get("db", db)
        if mode != "inline":
            target = (mode, out.get(mode), out_db if is_string(out_db) else db)
    if target is not None:
        mode, coll, out_db = target
        actions: tuple[str, ...] = ("insert", "remove") if mode == "replace" else ("insert", "update")
        if cmd.get("bypassDocumentValidation") is True:
            actions = (*actions, "bypassDocumentValidation")
        resource = namespace(out_db, coll) if is_string(coll) and coll else database(out_db)
        needed.append(privilege(resource, *actions))
    return decide(subject, db, cmd, needed)


def check_bulk_write(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    ns_info, ops = cmd.get("nsInfo"), cmd.get("ops")
    entries = ns_info if isinstance(ns_info, list) else []
    namespaces = [_split(entry.get("ns")) if isinstance(entry, Mapping) else None for entry in entries]
    wanted: dict[Resource, set[str]] = {}
    for op in ops if isinstance(ops, list) else []:
        if not isinstance(op, Mapping) or not op:
            continue
        kind = next(iter(op))
        index = op[kind]
        if not isinstance(index, int) or not 0 <= index < len(namespaces) or namespaces[index] is None:
            continue
        target = namespaces[index]
        assert target is not None
        actions = wanted.setdefault(target, set(bypass_actions(cmd)))
        if kind == "insert":
            actions.add("insert")
        elif kind == "delete":
            actions.add("remove")
        else:
            actions.update(("update", "insert") if op.get("upsert") else ("update",))
    needed = [Privilege(resource, frozenset(actions)) for resource, actions in wanted.items()]
    return decide(subject, db, cmd, needed)


def check_list_collections(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if cmd.get("authorizedCollections") is True and cmd.get("nameOnly") is True:
        return Decision()  # the handler lists only collections the user has a privilege on
    return decide(subject, db, cmd, [privilege(database(db), "listCollections")])


def check_current_op(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if cmd.get("$ownOps") is True:
        return Decision()  # the handler shows only the caller's users' operations
    return decide(subject, db, cmd, [privilege(CLUSTER, "inprog")])


def check_list_databases(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    if cmd.get("authorizedDatabases") is False:
        return decide(subject, db, cmd, [privilege(CLUSTER, "listDatabases")])
    return Decision()  # the handler lists only the databases the user may see


def check_clone_capped(subject: Subject, db: str, cmd: Mapping[str, Any], views: ViewLookup) -> Decision:
    target = cmd.get("toCollection")
    to = namespace(db, target) if is_string(target) and target else database(db)
    return decide(
        subject, db, cmd, [privilege(named_resource(db, cmd), "find"), privilege(to, "insert", "createCollection")]
    )
