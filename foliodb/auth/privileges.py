"""Privileges as mongod models them: a resource pattern and the actions allowed
on it, the built-in roles as data, and the rule deciding whether a set of
privileges authorizes an action on a resource.

Resource patterns (the ``resource`` document of a privilege)::

    {cluster: true}                 the cluster                      Resource("cluster")
    {anyResource: true}             everything, system collections   Resource("any")
    {db: "", collection: ""}        every non-system collection of   Resource("anyNormal")
                                    every database but local/config
    {db: "d", collection: ""}       database d and its non-system    Resource("database", "d")
                                    collections
    {db: "", collection: "c"}       collection c of every database   Resource("collection", "", "c")
    {db: "d", collection: "c"}      exactly d.c                      Resource("exact", "d", "c")

Invariant (mongod's ``buildResourceSearchList``): an action on a target is
authorized when the union of the actions granted on the patterns that can
match the target holds it. A system collection (``system.*``, and
``local.replset.*``) is matched only by its exact pattern, its collection
pattern and ``anyResource``: a database-wide grant never reaches
``admin.system.users``. ``local`` and ``config`` are not "normal" databases,
so ``{db: "", collection: ""}`` never reaches them.

The role table below is ``src/mongo/db/auth/builtin_roles.yml`` of MongoDB
8.0 (the data ``rolesInfo`` with ``showBuiltinRoles`` prints), minus what
FolioDB cannot have (system buckets of time-series collections, multitenancy).

Manual: https://www.mongodb.com/docs/manual/reference/built-in-roles/,
https://www.mongodb.com/docs/manual/reference/privilege-actions/,
https://www.mongodb.com/docs/manual/reference/resource-document/
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from foliodb.query.bsontypes import is_string


# Every privilege action the manual documents (and those built-in roles use).
def _words(text: str) -> list[str]:
    return text.split()


ACTIONS = frozenset(
    _words(
        """
    addShard allCollectionStats analyze analyzeShardKey anyAction appendOplogNote applicationMessage applyOps
    auditConfigure authSchemaUpgrade bypassDefaultMaxTimeMS bypassDocumentValidation bypassWriteBlockingMode
    changeCustomData changeOwnCustomData changeOwnPassword changePassword changeStream checkMetadataConsistency
    cleanupOrphaned cleanupStructuredEncryptionData clearJumboFlag closeAllDatabases collMod collStats compact
    compactStructuredEncryptionData configureQueryAnalyzer connPoolStats connPoolSync convertToCapped cpuProfiler
    createCollection createIndex createRole createSearchIndexes createUser dbCheck dbHash dbStats dropCollection
    dropConnections dropDatabase dropIndex dropRole dropSearchIndex dropUser enableProfiler enableSharding
    exportCollection find flushRouterConfig forceUUID fsync getChangeStreamState getClusterParameter getCmdLineOpts
    getDatabaseVersion getDefaultRWConcern getLog getParameter getShardMap getShardVersion grantRole hostInfo
    importCollection impersonate indexStats inprog insert internal invalidateUserCache issueDirectShardOperations
    killAnyCursor killAnySession killCursors killop listCachedAndActiveUsers listClusterCatalog listCollections
    listDatabases listIndexes listSampledQueries listSearchIndexes listSessions listShards logRotate moveChunk
    moveCollection netstat oidReset oidcListKeys oidcRefreshKeys operationMetrics planCacheIndexFilter planCacheRead
    planCacheWrite queryStatsRead queryStatsReadTransformed querySettings reIndex refineCollectionShardKey remove
    removeShard renameCollectionSameDB replSetConfigure replSetGetConfig replSetGetStatus replSetHeartbeat
    replSetResizeOplog replSetStateChange reshardCollection resync revokeRole rotateCertificates runTenantMigration
    serverStatus setAuthenticationRestriction setChangeStreamState setClusterParameter setDefaultRWConcern
    setFeatureCompatibilityVersion setParameter setUserWriteBlockMode shardedDataDistribution shardingState shutdown
    splitChunk splitVector storageDetails top touch trafficRecord transitionFromDedicatedConfigServer
    transitionToDedicatedConfigServer unlock unshardCollection update updateSearchIndex useTenant useUUID validate
    viewRole viewUser
    """
    )
)
ANY_ACTION = "anyAction"
SPECIAL_DATABASES = frozenset({"local", "config"})  # not reached by {db: "", collection: ""}


@dataclass(frozen=True, order=True)
class Resource:
    """A resource pattern (see the module docstring for the kinds)."""

    kind: str
    db: str = ""
    collection: str = ""

    def document(self) -> dict[str, Any]:
        """The pattern as a privilege's ``resource`` document."""
        if self.kind == "cluster":
            return {"cluster": True}
        if self.kind == "any":
            return {"anyResource": True}
        return {"db": self.db, "collection": self.collection}

    def __str__(self) -> str:
        if self.kind == "cluster":
            return "the cluster"
        if self.kind == "any":
            return "any resource"
        if self.kind == "anyNormal":
            return "every database"
        if self.kind == "database":
            return f"database {self.db}"
        if self.kind == "collection":
            return f"collection {self.collection} of every database"
        return f"{self.db}.{self.collection}"


CLUSTER = Resource("cluster")
ANY_RESOURCE = Resource("any")
ANY_NORMAL = Resource("anyNormal")


def database(db: str) -> Resource:
    return Resource("database", db)


def namespace(db: str, collection: str) -> Resource:
    return Resource("exact", db, collection)


def parse_resource(value: Any) -> Resource:
    """A ``resource`` document as a :class:`Resource`; ValueError when it is not one."""
    if not isinstance(value, Mapping):
        raise ValueError("resource must be an object")
    keys = set(value)
    if keys == {"cluster"}:
        if value["cluster"] is not True:
            raise ValueError("resource.cluster must be true")
        return CLUSTER
    if keys == {"anyResource"}:
        if value["anyResource"] is not True:
            raise ValueError("resource.anyResource must be true")
        return ANY_RESOURCE
    if keys == {"db", "collection"} and is_string(value["db"]) and is_string(value["collection"]):
        db, coll = value["db"], value["collection"]
        if not db and not coll:
            return ANY_NORMAL
        if not coll:
            return database(db)
        if not db:
            return Resource("collection", "", coll)
        return namespace(db, coll)
    raise ValueError("resource must be {cluster: true}, {anyResource: true} or {db: <string>, collection: <string>}")


def is_normal_collection(db: str, collection: str) -> bool:
    """Not a system collection: ``system.*`` anywhere, ``replset.*`` in ``local``."""
    return not collection.startswith("system.") and not (db == "local" and collection.startswith("replset."))


def search_list(target: Resource) -> tuple[Resource, ...]:
    """The patterns that can match ``target`` (mongod's ``buildResourceSearchList``)."""
    if target.kind == "exact":
        found: list[Resource] = []
        if is_normal_collection(target.db, target.collection):
            if target.db not in SPECIAL_DATABASES:
                found.append(ANY_NORMAL)
            found.append(database(target.db))
        found.append(Resource("collection", "", target.collection))
        return (*found, target, ANY_RESOURCE)
    if target.kind == "database":
        normal = (ANY_NORMAL,) if target.db not in SPECIAL_DATABASES else ()
        return (*normal, target, ANY_RESOURCE)
    return (target, ANY_RESOURCE)


@dataclass(frozen=True)
class Privilege:
    """What a command needs: these actions on this resource."""

    resource: Resource
    actions: frozenset[str]


def privilege(resource: Resource, *actions: str) -> Privilege:
    return Privilege(resource, frozenset(actions))


class PrivilegeSet:
    """The union of privileges a user holds: resource pattern -> actions."""

    def __init__(self, grants: Mapping[Resource, Iterable[str]] | None = None) -> None:
        self.grants: dict[Resource, set[str]] = {}
        for resource, actions in (grants or {}).items():
            self.add(resource, actions)

    def add(self, resource: Resource, actions: Iterable[str]) -> None:
        self.grants.setdefault(resource, set()).update(actions)

    def update(self, other: PrivilegeSet) -> None:
        for resource, actions in other.grants.items():
            self.add(resource, actions)

    def actions_on(self, target: Resource) -> set[str]:
        out: set[str] = set()
        for pattern in search_list(target):
            out |= self.grants.get(pattern, set())
        return out

    def allows(self, target: Resource, actions: Iterable[str]) -> bool:
        held = self.actions_on(target)
        return ANY_ACTION in held or all(action in held for action in actions)

    def allows_all(self, needed: Iterable[Privilege]) -> bool:
        return all(self.allows(p.resource, p.actions) for p in needed)

    def allows_any_action_in_database(self, db: str) -> bool:
        """Whether any privilege reaches ``db`` or a collection in it (what
        ``listDatabases`` shows a user without the listDatabases action)."""
        for pattern, actions in self.grants.items():
            if not actions:
                continue
            if pattern.kind in ("any", "collection") or (pattern.kind == "anyNormal" and db not in SPECIAL_DATABASES):
                return True
            if pattern.kind in ("database", "exact") and pattern.db == db:
                return True
        return False

    def allows_any_action_on(self, target: Resource) -> bool:
        return bool(self.actions_on(target))

    def documents(self) -> list[dict[str, Any]]:
        """As ``[{resource, actions}]``, in a stable order."""
        return [
            {"resource": resource.document(), "actions": sorted(actions)}
            for resource, actions in sorted(self.grants.items())
            if actions
        ]


# -- the built-in roles ------------------------------------------------------------------
#
# A resource template's db of None is the role's own database.

_Template = tuple[str, str | None, str]  # (kind, db, collection)


def _t(kind: str, db: str | None = None, collection: str = "") -> _Template:
    return (kind, db, collection)


_THIS_DB = _t("database")
_ANY_NORMAL = _t("anyNormal", "")
_CLUSTER = _t("cluster", "")
_ANY = _t("any", "")


def _actions(*groups: str | Iterable[str]) -> frozenset[str]:
    """The actions of ``groups``; a string group is space-separated names."""
    return frozenset(action for group in groups for action in (group.split() if is_string(group) else group))


READ_ACTIONS = _actions(
    "changeStream collStats dbHash dbStats find killCursors listCollections listIndexes listSearchIndexes planCacheRead"
)
READ_WRITE_ACTIONS = _actions(
    READ_ACTIONS,
    "cleanupStructuredEncryptionData compactStructuredEncryptionData convertToCapped createCollection createIndex "
    "createSearchIndexes dropCollection dropIndex dropSearchIndex insert remove renameCollectionSameDB update "
    "updateSearchIndex",
)
USER_ADMIN_ACTIONS = _actions(
    "changeCustomData changePassword createUser createRole dropUser dropRole grantRole revokeRole "
    "setAuthenticationRestriction viewUser viewRole"
)
DB_ADMIN_ACTIONS = _actions(
    "analyze bypassDocumentValidation collMod collStats compact convertToCapped createCollection dbStats "
    "dropCollection dropDatabase dropIndex dropSearchIndex createIndex createSearchIndexes enableProfiler "
    "listCollections listIndexes listSearchIndexes updateSearchIndex planCacheIndexFilter planCacheRead "
    "planCacheWrite reIndex renameCollectionSameDB storageDetails validate configureQueryAnalyzer"
)
_PROFILE_ACTIONS = _actions(READ_ACTIONS, ("convertToCapped", "createCollection", "dropCollection"))
_CLUSTER_MONITOR_CLUSTER = _actions(
    "connPoolStats getCmdLineOpts getDefaultRWConcern getLog getParameter getShardMap hostInfo listDatabases "
    "listSampledQueries listSessions listShards netstat operationMetrics replSetGetConfig replSetGetStatus "
    "serverStatus top useUUID inprog shardingState allCollectionStats shardedDataDistribution"
)
_CLUSTER_MONITOR_DB = _actions("collStats dbStats getDatabaseVersion getShardVersion indexStats")
_HOST_MANAGER_CLUSTER = _actions(
    "applicationMessage auditConfigure connPoolSync dropConnections logRotate oidReset setParameter shutdown touch "
    "unlock flushRouterConfig fsync invalidateUserCache killAnyCursor killAnySession killop replSetResizeOplog "
    "resync trafficRecord rotateCertificates oidcListKeys oidcRefreshKeys"
)
_CLUSTER_MANAGER_CLUSTER = _actions(
    "appendOplogNote applicationMessage replSetConfigure replSetGetConfig replSetGetStatus replSetStateChange "
    "resync addShard removeShard listSessions listShards flushRouterConfig cleanupOrphaned getDefaultRWConcern "
    "runTenantMigration setDefaultRWConcern setFeatureCompatibilityVersion setClusterParameter getClusterParameter "
    "setChangeStreamState getChangeStreamState querySettings queryStatsRead queryStatsReadTransformed "
    "checkMetadataConsistency transitionFromDedicatedConfigServer transitionToDedicatedConfigServer"
)
_CLUSTER_MANAGER_DB = _actions(
    "analyzeShardKey configureQueryAnalyzer clearJumboFlag splitChunk moveChunk moveCollection enableSharding "
    "splitVector refineCollectionShardKey reshardCollection"
)
_CLUSTER_MANAGER_WRITE = _actions(("insert", "update", "remove"))
_RESTORE_WRITE = _actions(
    "bypassDocumentValidation collMod convertToCapped createCollection createIndex createSearchIndexes "
    "dropCollection insert updateSearchIndex"
)
_READ_AND_INDEX = _actions(READ_ACTIONS, ("createIndex", "createSearchIndexes", "dropIndex", "dropSearchIndex"))
_FIND = frozenset({"find"})


@dataclass(frozen=True)
class BuiltInRole:
    """A built-in role: the roles it inherits and the privileges it adds."""

    summary: str
    privileges: tuple[tuple[_Template, frozenset[str]], ...] = ()
    roles: tuple[tuple[str, str | None], ...] = ()  # (role, db); None: the role's own database
    admin_only: bool = True


BUILT_IN_ROLES: dict[str, BuiltInRole] = {
    "read": BuiltInRole(
        "reads every non-system collection of its database, and system.js",
        ((_THIS_DB, READ_ACTIONS), (_t("exact", None, "system.js"), READ_ACTIONS)),
        admin_only=False,
    ),
    "readWrite": BuiltInRole(
        "read, plus writes and collection/index management on its database",
        ((_THIS_DB, READ_WRITE_ACTIONS), (_t("exact", None, "system.js"), READ_WRITE_ACTIONS)),
        admin_only=False,
    ),
    "userAdmin": BuiltInRole(
        "creates and modifies users and roles of its database",
        ((_THIS_DB, USER_ADMIN_ACTIONS),),
        admin_only=False,
    ),
    "dbAdmin": BuiltInRole(
        "schema, index, statistics and profiler administration of its database; reads no user data",
        ((_THIS_DB, DB_ADMIN_ACTIONS), (_t("exact", None, "system.profile"), _PROFILE_ACTIONS)),
        admin_only=False,
    ),
    "dbOwner": BuiltInRole(
        "readWrite, dbAdmin and userAdmin of its database",
        roles=(("readWrite", None), ("dbAdmin", None), ("userAdmin", None)),
        admin_only=False,
    ),
    "enableSharding": BuiltInRole(
        "sharding administration of every database",
        (
            (
                _ANY_NORMAL,
                _actions("analyzeShardKey enableSharding moveCollection refineCollectionShardKey reshardCollection"),
            ),
        ),
    ),
    "readAnyDatabase": BuiltInRole(
        "read on every database but local and config, and listDatabases",
        (
            (_ANY_NORMAL, READ_ACTIONS),
            (_CLUSTER, frozenset({"listDatabases"})),
            (_t("collection", "", "system.js"), READ_ACTIONS),
        ),
    ),
    "readWriteAnyDatabase": BuiltInRole(
        "readWrite on every database but local and config, and listDatabases",
        ((_ANY_NORMAL, READ_WRITE_ACTIONS), (_t("collection", "", "system.js"), READ_WRITE_ACTIONS)),
        roles=(("readAnyDatabase", "admin"),),
    ),
    "userAdminAnyDatabase": BuiltInRole(
        "userAdmin on every database; can grant itself anything",
        (
            (_ANY_NORMAL, _actions(USER_ADMIN_ACTIONS, ("listCachedAndActiveUsers",))),
            (_t("database", "local"), USER_ADMIN_ACTIONS),
            (_t("database", "config"), USER_ADMIN_ACTIONS),
            (_CLUSTER, _actions("listDatabases authSchemaUpgrade invalidateUserCache viewUser")),
            (_t("exact", "admin", "system.users"), _READ_AND_INDEX),
            (_t("exact", "admin", "system.roles"), _READ_AND_INDEX),
            (_t("collection", "", "system.users"), READ_ACTIONS),
            (_t("exact", "admin", "system.version"), READ_ACTIONS),
            (_t("exact", "admin", "system.backup_users"), READ_ACTIONS),
        ),
    ),
    "dbAdminAnyDatabase": BuiltInRole(
        "dbAdmin on every database but local and config, and listDatabases",
        (
            (_CLUSTER, frozenset({"listDatabases", "applyOps"})),
            (_ANY_NORMAL, DB_ADMIN_ACTIONS),
            (_t("collection", "", "system.profile"), _PROFILE_ACTIONS),
        ),
    ),
    "clusterMonitor": BuiltInRole(
        "read-only monitoring: serverStatus, getLog, currentOp, statistics",
        (
            (_CLUSTER, _CLUSTER_MONITOR_CLUSTER),
            (_ANY_NORMAL, _CLUSTER_MONITOR_DB),
            (_t("database", "config"), _CLUSTER_MONITOR_DB),
            (_t("exact", "config", "system.sessions"), _CLUSTER_MONITOR_DB),
            (_t("database", "local"), _CLUSTER_MONITOR_DB),
            (_t("exact", "local", "system.replset"), _FIND),
            (_t("exact", "local", "replset.election"), _FIND),
            (_t("exact", "local", "replset.minvalid"), _FIND),
            (_t("collection", "", "system.profile"), _FIND),
        ),
        roles=(("read", "config"), ("read", "local")),
    ),
    "hostManager": BuiltInRole(
        "server administration: setParameter, shutdown, killOp, killAnyCursor...",
        ((_CLUSTER, _HOST_MANAGER_CLUSTER), (_ANY_NORMAL, frozenset({"killCursors"}))),
    ),
    "clusterManager": BuiltInRole(
        "replication and sharding management",
        (
            (_CLUSTER, _CLUSTER_MANAGER_CLUSTER),
            (_ANY_NORMAL, _CLUSTER_MANAGER_DB),
            (_t("database", "config"), _CLUSTER_MANAGER_DB),
            (_t("database", "local"), _CLUSTER_MANAGER_DB),
            (_t("exact", "local", "system.replset"), READ_ACTIONS),
            (_ANY, frozenset({"dbCheck"})),
            (_t("exact", "local", "system.healthlog"), READ_ACTIONS),
            (_t("database", "config"), _CLUSTER_MANAGER_WRITE),
            (_t("database", "local"), _CLUSTER_MANAGER_WRITE),
            (_t("exact", "local", "replset.election"), _CLUSTER_MANAGER_WRITE),
            (_t("exact", "local", "replset.minvalid"), _CLUSTER_MANAGER_WRITE),
        ),
        roles=(("read", "config"),),
    ),
    "clusterAdmin": BuiltInRole(
        "clusterMonitor, hostManager and clusterManager, and dropDatabase",
        ((_ANY_NORMAL, frozenset({"dropDatabase"})), (_ANY, frozenset({"importCollection", "exportCollection"}))),
        roles=(("clusterMonitor", "admin"), ("hostManager", "admin"), ("clusterManager", "admin")),
    ),
    "__queryableBackup": BuiltInRole(
        "the reads of backup (internal)",
        (
            (_ANY, _actions(("collStats", "listCollections", "listIndexes", "listSearchIndexes"))),
            (_ANY_NORMAL, _FIND),
            (_CLUSTER, _actions(("getParameter", "listDatabases", "useUUID"))),
            (_t("database", "config"), _FIND),
            (_t("database", "local"), _FIND),
            (_t("exact", "local", "replset.election"), _FIND),
            (_t("exact", "local", "replset.minvalid"), _FIND),
            (_t("collection", "", "system.js"), _FIND),
            (_t("collection", "", "system.users"), _FIND),
            (_t("collection", "", "system.profile"), _FIND),
            (_t("exact", "admin", "system.backup_users"), _FIND),
            (_t("exact", "admin", "system.roles"), _FIND),
            (_t("exact", "admin", "system.version"), _FIND),
            (_t("exact", "config", "settings"), _FIND),
        ),
    ),
    "backup": BuiltInRole(
        "what mongodump needs: find everywhere, including admin.system.users",
        (
            (_CLUSTER, _actions(("appendOplogNote", "serverStatus", "setUserWriteBlockMode"))),
            (_t("exact", "config", "settings"), _actions(("insert", "update"))),
        ),
        roles=(("__queryableBackup", "admin"),),
    ),
    "restore": BuiltInRole(
        "what mongorestore needs: writes everywhere, including users and roles",
        (
            (
                _CLUSTER,
                _actions("getParameter forceUUID useUUID bypassWriteBlockingMode setUserWriteBlockMode applyOps"),
            ),
            (_t("database", "local"), _RESTORE_WRITE),
            (_t("database", "config"), _RESTORE_WRITE),
            (_t("exact", "local", "system.replset"), _RESTORE_WRITE),
            (_t("exact", "local", "replset.election"), _RESTORE_WRITE),
            (_t("exact", "local", "replset.minvalid"), _RESTORE_WRITE),
            (_ANY, frozenset({"listCollections"})),
            (_ANY_NORMAL, _actions(_RESTORE_WRITE, USER_ADMIN_ACTIONS)),
            (_t("collection", "", "system.js"), _RESTORE_WRITE),
            (_t("exact", "admin", "tempusers"), _FIND),
            (_t("exact", "admin", "temproles"), _FIND),
            (_t("exact", "admin", "system.backup_users"), _RESTORE_WRITE),
            (_t("exact", "admin", "system.version"), _actions(_RESTORE_WRITE, ("find",))),
            (_t("collection", "", "system.users"), _actions(_RESTORE_WRITE, ("find", "update", "remove"))),
            (_t("exact", "admin", "system.roles"), frozenset({"createIndex"})),
        ),
    ),
    "root": BuiltInRole(
        "every built-in administrative role combined",
        (
            (_ANY, frozenset({"validate"})),
            (_CLUSTER, frozenset({"useTenant"})),
            (_t("exact", "config", "system.preimages"), _actions(("find", "remove"))),
            (_t("exact", "config", "system.change_collection"), _actions(("find", "insert", "remove", "update"))),
        ),
        roles=(
            ("clusterAdmin", "admin"),
            ("userAdminAnyDatabase", "admin"),
            ("dbAdminAnyDatabase", "admin"),
            ("readWriteAnyDatabase", "admin"),
            ("backup", "admin"),
            ("restore", "admin"),
            ("directShardOperations", "admin"),
        ),
    ),
    "directShardOperations": BuiltInRole(
        "direct operations on a shard (a placeholder on a standalone)",
        ((_CLUSTER, frozenset({"issueDirectShardOperations"})),),
    ),
    "__system": BuiltInRole("every action on every resource (internal)", ((_ANY, frozenset({ANY_ACTION})),)),
}


def is_built_in(role: str, db: str) -> bool:
    spec = BUILT_IN_ROLES.get(role)
    return spec is not None and (db == "admin" or not spec.admin_only)


def _resource(template: _Template, role_db: str) -> Resource:
    kind, db, collection = template
    return Resource(kind, role_db if db is None else db, collection)


@functools.cache
def built_in_direct(role: str, db: str) -> tuple[tuple[Resource, frozenset[str]], ...]:
    """The privileges a built-in role names itself (not those it inherits)."""
    return tuple((_resource(template, db), actions) for template, actions in BUILT_IN_ROLES[role].privileges)


def built_in_parents(role: str, db: str) -> tuple[tuple[str, str], ...]:
    """The roles a built-in role inherits directly, as (role, db)."""
    return tuple((name, db if parent_db is None else parent_db) for name, parent_db in BUILT_IN_ROLES[role].roles)
