"""The authorization data and rules, without a server: how resource patterns
match (the manual's resource document page), the built-in roles against the
manual's lists, the pipeline walker, the command table's completeness and
robustness, redaction, certificate subjects, and the generated docs.

Manual: https://www.mongodb.com/docs/manual/reference/resource-document/,
https://www.mongodb.com/docs/manual/reference/built-in-roles/
"""

from __future__ import annotations

import importlib.util
import logging
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from bson import Code, Int64, MaxKey, Regex

import foliodb.commands  # noqa: F401  (registers the commands)
from foliodb.aggregation.pipeline import STAGES
from foliodb.auth.command_table import RULES, authorize
from foliodb.auth.decision import Subject
from foliodb.auth.pipelines import INITIAL_SOURCES, NAMESPACE_STAGES, pipeline_privileges
from foliodb.auth.privileges import (
    ANY_NORMAL,
    ANY_RESOURCE,
    CLUSTER,
    PrivilegeSet,
    Resource,
    database,
    namespace,
    parse_resource,
)
from foliodb.auth.redaction import SecretFilter
from foliodb.auth.roles import privileges_of
from foliodb.commands.registry import COMMANDS
from foliodb.server.tls import subject_name

ROOT = Path(__file__).resolve().parents[3]


def holds(resource: Resource, target: Resource) -> bool:
    return PrivilegeSet({resource: ["find"]}).allows(target, ["find"])


@pytest.mark.parametrize(
    ("pattern", "target", "matches"),
    [
        # {db: "products", collection: "inventory"}: exactly that collection.
        (namespace("products", "inventory"), namespace("products", "inventory"), True),
        (namespace("products", "inventory"), namespace("products", "orders"), False),
        # {db: "test", collection: ""}: every collection of test but the system collections.
        (database("test"), namespace("test", "orders"), True),
        (database("test"), namespace("test", "system.profile"), False),
        (database("test"), database("test"), True),
        (database("test"), namespace("other", "orders"), False),
        # {db: "", collection: "accounts"}: accounts in every database.
        (Resource("collection", "", "accounts"), namespace("a", "accounts"), True),
        (Resource("collection", "", "system.js"), namespace("a", "system.js"), True),
        (Resource("collection", "", "accounts"), namespace("a", "other"), False),
        # {db: "", collection: ""}: every non-system collection of every database but local and config.
        (ANY_NORMAL, namespace("a", "b"), True),
        (ANY_NORMAL, namespace("admin", "system.users"), False),
        (ANY_NORMAL, namespace("local", "startup_log"), False),
        (ANY_NORMAL, namespace("config", "settings"), False),
        (ANY_NORMAL, namespace("local", "replset.minvalid"), False),
        (ANY_NORMAL, database("a"), True),
        (ANY_NORMAL, CLUSTER, False),
        # {cluster: true}, {anyResource: true}.
        (CLUSTER, CLUSTER, True),
        (CLUSTER, namespace("a", "b"), False),
        (ANY_RESOURCE, namespace("admin", "system.users"), True),
        (ANY_RESOURCE, CLUSTER, True),
    ],
)
def test_resource_patterns_match_as_the_manual_says(pattern: Resource, target: Resource, matches: bool) -> None:
    assert holds(pattern, target) is matches


def test_resource_documents_parse_into_patterns() -> None:
    assert parse_resource({"db": "", "collection": ""}) == ANY_NORMAL
    assert parse_resource({"db": "d", "collection": ""}) == database("d")
    assert parse_resource({"cluster": True}) == CLUSTER
    assert parse_resource({"anyResource": True}) == ANY_RESOURCE
    for bad in ({"cluster": False}, {"db": "d"}, {"db": 1, "collection": ""}, [], {"anyResource": True, "db": ""}):
        with pytest.raises(ValueError):
            parse_resource(bad)


def no_roles(role: str, db: str) -> None:
    return None


def role_privileges(role: str, db: str) -> PrivilegeSet:
    return privileges_of([(role, db)], no_roles)


def test_built_in_roles_grant_the_manuals_actions() -> None:
    # "The role provides read access by granting the following actions" (read), and readWrite's list.
    read = "changeStream collStats dbHash dbStats find killCursors listCollections listIndexes listSearchIndexes"
    assert role_privileges("read", "shop").allows(namespace("shop", "c"), read.split())
    assert role_privileges("read", "shop").allows(namespace("shop", "system.js"), read.split())
    read_write = (
        read + " convertToCapped createCollection createIndex createSearchIndexes dropCollection dropIndex "
        "dropSearchIndex insert remove renameCollectionSameDB update updateSearchIndex"
    )
    assert role_privileges("readWrite", "shop").allows(namespace("shop", "c"), read_write.split())
    # dbAdmin: "does not include full read access such as find" on non-system collections.
    assert not role_privileges("dbAdmin", "shop").allows(namespace("shop", "c"), ["find"])
    assert role_privileges("dbAdmin", "shop").allows(namespace("shop", "system.profile"), ["find"])
    # userAdmin's explicit actions, on its database only.
    user_admin = (
        "changeCustomData changePassword createRole createUser dropRole dropUser grantRole revokeRole "
        "setAuthenticationRestriction viewRole viewUser"
    )
    assert role_privileges("userAdmin", "shop").allows(database("shop"), user_admin.split())
    assert not role_privileges("userAdmin", "shop").allows(database("admin"), ["grantRole"])
    # dbOwner combines readWrite, dbAdmin and userAdmin.
    assert role_privileges("dbOwner", "shop").allows(database("shop"), ["find", "collMod", "grantRole"])
    # The AnyDatabase roles: "all databases except local and config", and listDatabases.
    any_reader = role_privileges("readAnyDatabase", "admin")
    assert any_reader.allows(namespace("x", "y"), ["find"]) and any_reader.allows(CLUSTER, ["listDatabases"])
    assert not any_reader.allows(namespace("local", "y"), ["find"])
    assert not any_reader.allows(namespace("admin", "system.users"), ["find"])
    # clusterAdmin: clusterManager, clusterMonitor and hostManager, and dropDatabase.
    cluster_admin = role_privileges("clusterAdmin", "admin")
    assert cluster_admin.allows(CLUSTER, ["serverStatus", "inprog", "shutdown", "setParameter", "addShard"])
    assert cluster_admin.allows(database("x"), ["dropDatabase"])
    # root: every role above, and validate on system collections.
    root = role_privileges("root", "admin")
    assert root.allows(namespace("admin", "system.users"), ["find", "insert", "update", "remove", "validate"])
    assert root.allows(namespace("x", "y"), ["find", "insert", "dropDatabase", "grantRole"])
    # Roles that exist only on admin are not roles of other databases.
    assert role_privileges("root", "shop").grants == {}


def test_role_inheritance_survives_a_cycle_written_into_storage() -> None:
    stored = {
        ("a", "shop"): {"roles": [{"role": "b", "db": "shop"}], "privileges": []},
        ("b", "shop"): {
            "roles": [{"role": "a", "db": "shop"}, {"role": "read", "db": "shop"}],
            "privileges": [{"resource": {"db": "shop", "collection": "c"}, "actions": ["insert", "nonsense"]}],
        },
    }
    granted = privileges_of([("a", "shop")], lambda role, db: stored.get((role, db)))
    assert granted.allows(namespace("shop", "c"), ["insert", "find"])
    assert not granted.allows(namespace("shop", "c"), ["remove"])


def test_every_registered_command_has_a_privilege_rule() -> None:
    assert sorted(name for name in COMMANDS.names() if name not in RULES) == []


# Stages that read and write nothing but their input; a new stage must be placed here or in the walker.
PASSIVE_STAGES = {
    "$_internalSplitPipeline",  # a cluster's split point: passes its input through on one node
    "$_internalInhibitOptimization",  # passes its input through; only stops reordering
    "$_internalUnpackBucket",
    "$addFields",
    "$bucket",
    "$bucketAuto",
    "$changeStreamSplitLargeEvent",  # fragments a change stream's events: reads nothing itself
    "$count",
    "$densify",
    "$documents",
    "$fill",
    "$geoNear",  # reads the aggregated collection only: find, as every aggregate
    "$group",
    "$limit",
    "$match",
    "$project",
    "$redact",
    "$replaceRoot",
    "$replaceWith",
    "$sample",
    "$set",
    "$setWindowFields",
    "$skip",
    "$sort",
    "$sortByCount",
    "$unset",
    "$unwind",
    "$vectorSearch",  # reads the aggregated collection only: find, as every aggregate
    "$search",  # likewise
    "$searchMeta",  # likewise
    "$rankFusion",  # its input pipelines hold only searches and selections of the same collection
    "$scoreFusion",  # likewise
}


def test_every_stage_is_known_to_the_pipeline_walker() -> None:
    assert set(STAGES.names()) == NAMESPACE_STAGES | PASSIVE_STAGES
    assert INITIAL_SOURCES.issubset(NAMESPACE_STAGES | {"$documents"})


def no_views(db: str, name: str) -> None:
    return None


def test_the_walker_reaches_any_depth_without_recursion() -> None:
    stage: dict[str, Any] = {"$lookup": {"from": {"db": "deep", "coll": "c"}, "pipeline": [], "as": "x"}}
    for i in range(3000):
        stage = {"$facet": {"f": [stage]}} if i % 2 else {"$unionWith": {"coll": "near", "pipeline": [stage]}}
    needed = pipeline_privileges("shop", "c", [stage], no_views)
    assert {(p.resource.db, p.resource.collection) for p in needed} == {("shop", "c"), ("shop", "near"), ("deep", "c")}


def test_change_streams_need_change_stream_and_find_on_what_they_watch() -> None:
    # https://www.mongodb.com/docs/manual/changeStreams/#access-control
    def needs(coll: str | None, spec: dict[str, Any], db: str = "shop") -> set[tuple[str, str, frozenset[str]]]:
        found = pipeline_privileges(db, coll, [{"$changeStream": spec}], no_views)
        return {(p.resource.kind, p.resource.db, frozenset(p.actions)) for p in found}

    both = frozenset({"changeStream", "find"})
    assert needs("c", {}) == {("exact", "shop", both)}  # no plain find on top
    assert needs(None, {}) == {("database", "shop", both)}
    assert needs(None, {"allChangesForCluster": True}, "admin") == {("anyNormal", "", both)}


def test_listing_sessions_needs_list_sessions_only_for_others() -> None:
    # https://www.mongodb.com/docs/manual/reference/operator/aggregation/listLocalSessions/
    me = frozenset({("shop", "app")})

    def needs(spec: Any, stage: str = "$listLocalSessions", coll: str | None = None) -> set[Any]:
        found = pipeline_privileges("admin", coll, [{stage: spec}], no_views, users=me)
        return {(p.resource.kind, frozenset(p.actions)) for p in found}

    cluster = {("cluster", frozenset({"listSessions"}))}
    assert needs({}) == set()
    assert needs({"users": [{"user": "app", "db": "shop"}]}) == set()
    assert needs({"users": [{"user": "app", "db": "shop"}, {"user": "app", "db": "other"}]}) == cluster
    assert needs({"allUsers": True}) == cluster
    assert needs({"allUsers": True}, "$listSessions", "system.sessions") == cluster  # no find on the collection
    assert needs({}, "$listSessions", "system.sessions") == set()


def test_views_need_their_cross_database_reads() -> None:
    views = {
        ("shop", "v"): ("w", []),
        ("shop", "w"): ("c", [{"$unionWith": {"coll": {"db": "hr", "coll": "pay"}}}]),
        ("hr", "pay"): ("raw", [{"$lookup": {"from": {"db": "admin", "coll": "system.users"}, "as": "u"}}]),
    }
    needed = pipeline_privileges("shop", "v", [], lambda db, name: views.get((db, name)))
    assert {(p.resource.db, p.resource.collection) for p in needed} == {
        ("shop", "v"),  # the view itself
        ("hr", "pay"),  # another database, two views down
        ("admin", "system.users"),  # and what that view reads outside hr
    }


STRANGE = (None, 1, Int64(5), -1.5, "", "x", [], [None], {}, {"db": 1}, Code("f"), Regex("a"), MaxKey(), True)


def _mutations(rng: random.Random, doc: Any, depth: int = 0) -> Any:
    if isinstance(doc, dict) and doc and depth < 6:
        out = dict(doc)
        key = rng.choice(list(out))
        out[key] = _mutations(rng, out[key], depth + 1) if rng.random() < 0.6 else rng.choice(STRANGE)
        return out
    if isinstance(doc, list) and doc and depth < 6:
        return [_mutations(rng, item, depth + 1) for item in doc]
    return rng.choice(STRANGE)


SAMPLES: list[dict[str, Any]] = [
    {"aggregate": "c", "pipeline": [{"$lookup": {"from": {"db": "a", "coll": "b"}, "pipeline": [], "as": "x"}}]},
    {"aggregate": 1, "pipeline": [{"$merge": {"into": {"db": "a", "coll": "b"}, "whenMatched": [{"$set": {}}]}}]},
    {"createUser": "u", "pwd": "p", "roles": [{"role": "root", "db": "admin"}, "read"]},
    {"updateUser": "u", "pwd": "p", "customData": {}, "roles": []},
    {"usersInfo": [{"user": "u", "db": "admin"}, "v"], "showCredentials": True},
    {"rolesInfo": {"role": "r", "db": "d"}},
    {"createRole": "r", "privileges": [{"resource": {"cluster": True}, "actions": ["find"]}], "roles": []},
    {"renameCollection": "a.b", "to": "c.d", "dropTarget": True},
    {"bulkWrite": 1, "ops": [{"update": 0, "upsert": True}], "nsInfo": [{"ns": "a.b"}]},
    {"explain": {"find": "c"}},
    {"create": "v", "viewOn": "c", "pipeline": [{"$unionWith": "x"}]},
    {"collMod": "v", "pipeline": []},
    {"update": "c", "updates": [{"q": {}, "u": {}, "upsert": True}]},
]


def test_authorization_never_raises_on_malformed_commands() -> None:
    rng = random.Random(12)
    nobody = Subject(frozenset(), frozenset(), PrivilegeSet())
    root = Subject(frozenset({("admin", "root")}), frozenset(), role_privileges("root", "admin"))
    for _ in range(5000):
        cmd = _mutations(rng, rng.choice(SAMPLES))
        if not isinstance(cmd, dict) or not cmd:
            continue
        for subject in (nobody, root):
            decision = authorize(subject, "shop", cmd, no_views)
            assert decision.refusal is None or decision.refusal.code == 13


def test_the_secret_filter_redacts_logged_commands() -> None:
    record = logging.LogRecord(
        "foliodb",
        logging.ERROR,
        __file__,
        1,
        "internal error running %r",
        ({"createUser": "u", "pwd": "hunter2"},),
        None,
    )
    SecretFilter().filter(record)
    assert record.getMessage() == "internal error running {'createUser': 'u', 'pwd': 'xxx'}"
    nested = logging.LogRecord(
        "foliodb", logging.INFO, __file__, 1, "%s %s", ("insert", [{"credentials": {"storedKey": "k"}}]), None
    )
    SecretFilter().filter(nested)
    assert "storedKey" not in nested.getMessage()


def test_certificate_subjects_are_rfc_4514_strings() -> None:
    # Most specific RDN first; special characters escaped (RFC 4514 section 2.4).
    cert = {
        "subject": (
            (("countryName", "US"),),
            (("organizationName", "Acme, Inc."),),
            (("organizationalUnitName", "a+b"), ("userId", "7")),
            (("commonName", " lead#"),),
        )
    }
    assert subject_name(cert) == "CN=\\ lead#,OU=a\\+b+UID=7,O=Acme\\, Inc.,C=US"
    assert subject_name({}) is None


def test_the_security_docs_tables_are_generated_from_the_data() -> None:
    spec = importlib.util.spec_from_file_location("gen_security_docs", ROOT / "scripts" / "gen_security_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    page = (ROOT / "docs" / "security.md").read_text()
    assert module.render(page) == page, "run python scripts/gen_security_docs.py"
