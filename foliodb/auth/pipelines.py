"""The privileges an aggregation pipeline needs, read from its stage documents.

mongod's rule (``LiteParsedPipeline::requiredPrivileges``, and
``getPrivilegesForAggregate`` for the source): ``find`` on the aggregated
collection unless the pipeline starts with a stage that is its own source,
then each stage's own needs, sub-pipelines included at any depth:

    $lookup, $graphLookup    find on ``from``; $lookup's sub-pipeline runs over ``from``
    $unionWith               find on ``coll``, and its sub-pipeline over it
    $facet                   the needs of each sub-pipeline (over the same input)
    $out                     insert and remove on the target
    $merge                   insert and/or update on the target, by whenMatched/whenNotMatched
    $collStats / $indexStats collStats / indexStats on the aggregated collection (instead of find)
    $planCacheStats          planCacheRead on the aggregated collection (instead of find)
    $currentOp               inprog on the cluster with allUsers: true (else one's own operations)
    $listLocalSessions,      listSessions on the cluster for ``allUsers`` or users other than the
    $listSessions            caller (instead of find); nothing for the caller's own sessions
    $changeStream            changeStream and find on the collection (instead of find), on the
                             database for ``aggregate: 1``, on every database for the cluster
    (bypassDocumentValidation: true adds that action to $out and $merge targets)

A collection named without a database (``from: "c"``) is the command's
database: that is where FolioDB's pipelines resolve it, in sub-pipelines and
in view pipelines too.

Views: reading a view needs ``find`` on the view, not on what it reads, as
with mongod (a view can expose part of a collection to users who cannot
read the collection). FolioDB's ``from: {db, coll}`` reaches other
databases, which mongod's views cannot; so reading a view also needs
``find`` on every namespace of *another* database that its definition reads,
resolved through the catalog (views of views included). Without that, a
user who may create views in one database could publish another database's
data to that database's readers.

The walker is iterative (a nested pipeline cannot exhaust the stack) and
over-approximates: a namespace-bearing field it cannot read names nothing
here, and the stage's compiler then refuses the command with MongoDB's
error before anything runs.

Manual: https://www.mongodb.com/docs/manual/reference/privilege-actions/,
https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/#access-control
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from foliodb.auth.privileges import ANY_NORMAL, CLUSTER, Privilege, database, namespace, privilege
from foliodb.query.bsontypes import is_string

# (the database, a view's name) -> (the name it is defined on, its pipeline), or None for a non-view.
ViewLookup = Callable[[str, str], tuple[str, list[Any]] | None]

# The stages that read or write namespaces, or need privileges of their own, and what each needs
# (the walker below implements these; docs/security.md prints them).
STAGE_NEEDS = {
    "$lookup": "find on `from` (another database with `{db, coll}`); its sub-pipeline's needs",
    "$graphLookup": "find on `from`",
    "$unionWith": "find on `coll`; its sub-pipeline's needs",
    "$facet": "the needs of each sub-pipeline",
    "$out": "insert, remove on the target",
    "$merge": "insert and/or update on the target, by whenMatched/whenNotMatched",
    "$collStats": "collStats on the aggregated collection (instead of find)",
    "$indexStats": "indexStats on the aggregated collection (instead of find)",
    "$planCacheStats": "planCacheRead on the aggregated collection (instead of find)",
    "$listSearchIndexes": "listSearchIndexes on the aggregated collection (instead of find)",
    "$currentOp": "inprog on the cluster for `allUsers: true`; nothing for one's own operations",
    "$listLocalSessions": "listSessions on the cluster for `allUsers` or other users' sessions; nothing for one's own",
    "$listSessions": "as `$listLocalSessions` (instead of find on `config.system.sessions`)",
    "$changeStream": "changeStream, find on the collection; on the database (`aggregate: 1`); "
    "on every database (`allChangesForCluster`)",
}
NAMESPACE_STAGES = frozenset(STAGE_NEEDS)
# Stages that are their own source: no find on the aggregated collection.
INITIAL_SOURCES = frozenset(
    {
        "$collStats",
        "$indexStats",
        "$planCacheStats",
        "$listSearchIndexes",
        "$currentOp",
        "$documents",
        "$changeStream",
        "$listLocalSessions",
        "$listSessions",
    }
)

# $merge: (whenMatched, whenNotMatched) -> actions on the target; a pipeline whenMatched is "pipeline".
_MERGE_ACTIONS = {
    ("replace", "insert"): ("insert", "update"),
    ("replace", "fail"): ("update",),
    ("replace", "discard"): ("update",),
    ("merge", "insert"): ("insert", "update"),
    ("merge", "fail"): ("update",),
    ("merge", "discard"): ("update",),
    ("keepExisting", "insert"): ("insert", "update"),
    ("fail", "insert"): ("insert",),
    ("pipeline", "insert"): ("insert", "update"),
    ("pipeline", "fail"): ("update",),
    ("pipeline", "discard"): ("update",),
}


def _named(value: Any, db: str) -> tuple[str, str] | None:
    """A stage's ``from``/``coll``/``into``: a name in ``db``, or ``{db, coll}``."""
    if is_string(value):
        return db, value
    if isinstance(value, Mapping):
        coll, other = value.get("coll"), value.get("db", db)
        if other is None:
            other = db
        if is_string(coll) and is_string(other):
            return other, coll
    return None


class _Walk:
    def __init__(
        self, db: str, bypass: bool, views: ViewLookup | None, users: frozenset[tuple[str, str]] = frozenset()
    ) -> None:
        self.db = db
        self.users = users  # the caller's (db, user): whose sessions it may list without listSessions
        self.bypass = bypass
        self.views = views  # None: name what is read, without looking into views
        self.needed: list[Privilege] = []
        # (pipeline, the namespace it runs over or None); a stack, so nesting costs no recursion.
        self.pending: list[tuple[list[Any], tuple[str, str] | None]] = []

    def read(self, db: str, coll: str) -> None:
        """``find`` on ``db.coll``, and for a view what its definition reads in other databases."""
        self.needed.append(privilege(namespace(db, coll), "find"))
        if self.views is not None:
            self.view_reads(db, coll, self.views)

    def view_reads(self, db: str, coll: str, views: ViewLookup) -> None:
        chain = [(db, coll)]
        seen: set[tuple[str, str]] = set()
        while chain:
            view_db, name = chain.pop()
            if (view_db, name) in seen:
                continue
            seen.add((view_db, name))
            definition = views(view_db, name)
            if definition is None:
                continue
            source, pipeline = definition
            chain.append((view_db, source))
            inner = _Walk(self.db, False, None)
            inner.pipeline(pipeline, (view_db, source))
            for needed in inner.run():
                target = needed.resource
                if target.kind != "exact" or target.db != view_db:
                    self.needed.append(needed)
                if target.kind == "exact":
                    chain.append((target.db, target.collection))

    def pipeline(self, stages: Any, source: tuple[str, str] | None) -> None:
        if isinstance(stages, list):
            self.pending.append((stages, source))

    def run(self) -> list[Privilege]:
        while self.pending:
            self.stages(*self.pending.pop())
        return self.needed

    def stages(self, stages: Iterable[Any], source: tuple[str, str] | None) -> None:
        for stage in stages:
            if not isinstance(stage, Mapping):
                continue
            for name, spec in stage.items():
                self.stage(name, spec, source)

    def stage(self, name: Any, spec: Any, source: tuple[str, str] | None) -> None:
        if name in ("$lookup", "$graphLookup"):
            target = _named(spec.get("from"), self.db) if isinstance(spec, Mapping) else None
            if target is not None:
                self.read(*target)
            if name == "$lookup" and isinstance(spec, Mapping):
                self.pipeline(spec.get("pipeline"), target)
        elif name == "$unionWith":
            target = _named(spec.get("coll") if isinstance(spec, Mapping) else spec, self.db)
            if target is not None:
                self.read(*target)
            if isinstance(spec, Mapping):
                self.pipeline(spec.get("pipeline"), target)
        elif name == "$facet" and isinstance(spec, Mapping):
            for sub in spec.values():
                self.pipeline(sub, source)
        elif name == "$out":
            target = _named(spec, self.db)
            if target is not None:
                self.write(target, ("insert", "remove"))
        elif name == "$merge":
            self.merge(spec)
        elif name in ("$collStats", "$indexStats") and source is not None:
            self.needed.append(privilege(namespace(*source), name[1:]))
        elif name == "$planCacheStats" and source is not None:
            self.needed.append(privilege(namespace(*source), "planCacheRead"))
        elif name == "$listSearchIndexes" and source is not None:
            self.needed.append(privilege(namespace(*source), "listSearchIndexes"))
        elif name == "$currentOp":
            if isinstance(spec, Mapping) and spec.get("allUsers") is True:
                self.needed.append(privilege(CLUSTER, "inprog"))  # without it: one's own operations only
        elif name in ("$listLocalSessions", "$listSessions") and isinstance(spec, Mapping):
            named = spec.get("users")
            others = isinstance(named, list) and any(
                not isinstance(user, Mapping) or (user.get("db"), user.get("user")) not in self.users for user in named
            )
            if spec.get("allUsers") is True or others:
                self.needed.append(privilege(CLUSTER, "listSessions"))
        elif name == "$changeStream":
            cluster = isinstance(spec, Mapping) and spec.get("allChangesForCluster") is True
            watched = ANY_NORMAL if cluster else namespace(*source) if source is not None else database(self.db)
            self.needed.append(privilege(watched, "changeStream", "find"))

    def merge(self, spec: Any) -> None:
        if not isinstance(spec, Mapping):
            spec = {"into": spec}
        target = _named(spec.get("into"), self.db)
        if target is None:
            return
        matched = spec.get("whenMatched", "merge")
        matched = "pipeline" if isinstance(matched, list) else matched
        not_matched = spec.get("whenNotMatched", "insert")
        modes = (matched, not_matched) if is_string(matched) and is_string(not_matched) else None
        # An unknown mode fails in the stage's compiler; until then it may need anything a mode needs.
        actions = _MERGE_ACTIONS.get(modes, ("insert", "update")) if modes is not None else ("insert", "update")
        self.write(target, actions)

    def write(self, target: tuple[str, str], actions: Iterable[str]) -> None:
        wanted = (*actions, "bypassDocumentValidation") if self.bypass else tuple(actions)
        self.needed.append(privilege(namespace(*target), *wanted))


def pipeline_privileges(
    db: str,
    coll: str | None,
    stages: list[Any],
    views: ViewLookup,
    bypass_validation: bool = False,
    users: frozenset[tuple[str, str]] = frozenset(),
) -> list[Privilege]:
    """What ``aggregate`` of ``stages`` over ``db.coll`` (None: ``aggregate: 1``) needs, run by
    ``users`` ((db, user) pairs)."""
    walk = _Walk(db, bypass_validation, views, users)
    source = (db, coll) if coll is not None else None
    first = next(iter(stages[0]), None) if stages and isinstance(stages[0], Mapping) else None
    if source is not None and first not in INITIAL_SOURCES:
        walk.read(*source)
    walk.pipeline(stages, source)
    return walk.run()


def namespace_reads(db: str, coll: str, views: ViewLookup) -> list[Privilege]:
    """What reading ``db.coll`` with find, count or distinct needs (``find``, and for a view its
    definition's reads in other databases)."""
    walk = _Walk(db, False, views)
    walk.read(db, coll)
    return walk.run()


def view_definition_reads(db: str, view_on: str, stages: list[Any], views: ViewLookup) -> list[Privilege]:
    """The ``find`` privileges on everything a view definition reads: mongod's check when a user
    who may read the new view creates or changes it."""
    return [p for p in pipeline_privileges(db, view_on, stages, views) if "find" in p.actions]
