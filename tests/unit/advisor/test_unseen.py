"""The advisor on systems its first fixture set does not have (systems2.py:
the attribute, polymorphic, schema-versioning, extended-reference,
computed, subset and archive patterns, repeated sub-documents, a healthy
application with TTL and partial indexes), each recorded embedded and over
the wire by FolioDB's own profiler from concurrent requests; precision and
recall over both sets together, printed at the end of the run; and no
harmful finding: every proposed command of every report, applied to a copy
of its database, leaves every profiled query's answers as they were (or as
the finding says they change, and why).

The replay here is written apart from the advisor's own proof
(foliodb/advisor/proof.py), from MongoDB's documented semantics: a TTL
index deletes the documents whose indexed date plus expireAfterSeconds is
past (https://www.mongodb.com/docs/manual/core/index-ttl/); a find without
a sort returns its documents in no particular order.
"""

from __future__ import annotations

import datetime
import json
import threading
from collections.abc import Mapping
from typing import Any

import pytest
from bson import SON, ObjectId, json_util
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import foliodb
from foliodb.advisor import Finding, Report, advise
from foliodb.advisor.text import render_text

from . import systems, systems2
from .conftest import FIRST, SECOND, Built, score

SECOND_IDS = [f"{n}-{'good' if g else 'bad'}-{m}" for n, g, m in SECOND]


def expected(name: str, good: bool) -> set[systems2.Key]:
    return set() if good else systems2.EXPECTED2[name]


@pytest.mark.parametrize(("name", "good", "mode"), SECOND, ids=SECOND_IDS)
def test_findings_match_the_design(second_set: Any, name: str, good: bool, mode: str) -> None:
    report = second_set[(name, good, mode)].report
    assert {f.key for f in report.findings} == expected(name, good), [f.summary for f in report.findings]


def test_precision_and_recall_over_both_sets(first_set: Any, second_set: Any, request: pytest.FixtureRequest) -> None:
    wanted: set[tuple[Any, ...]] = set()
    found: set[tuple[Any, ...]] = set()
    for (name, good), built in first_set[1].items():
        wanted |= {("first", name, good, "embedded", key) for key in (set() if good else systems.EXPECTED[name])}
        found |= {("first", name, good, "embedded", f.key) for f in built.report.findings}
    for (name, good, mode), built in second_set.items():
        wanted |= {("second", name, good, mode, key) for key in expected(name, good)}
        found |= {("second", name, good, mode, f.key) for f in built.report.findings}
    hits = len(wanted & found)
    precision, recall = hits / max(len(found), 1), hits / max(len(wanted), 1)
    line = (
        f"advisor, both sets: precision {precision:.1%} ({hits}/{len(found)} findings right), recall {recall:.1%} "
        f"({hits}/{len(wanted)} anti-patterns found) over {len(FIRST) + len(SECOND)} designs"
    )
    score(request.config, line)
    assert precision >= 0.95 and recall >= 0.95, line


# -- no harmful finding -------------------------------------------------------------------------

_NOT_REPLAYED = ("$out", "$merge", "$sample", "$currentOp", "$collStats", "$indexStats")


EXAMPLES = 5  # runs replayed per query shape


def _reads(db: Any) -> list[dict[str, Any]]:
    """The profiled reads, as (collection, how to run it): up to :data:`EXAMPLES` runs of each query
    shape (the command with its values replaced by their types)."""
    out: dict[str, dict[str, Any]] = {}
    shapes: dict[str, int] = {}
    for entry in db["system.profile"].find():
        command = entry.get("command", {})
        collection = str(entry.get("ns", "")).partition(".")[2]
        if "find" in command:
            read = {"collection": collection, "find": command}
        elif "aggregate" in command and not any(n in s for s in command.get("pipeline", []) for n in _NOT_REPLAYED):
            read = {"collection": collection, "aggregate": command["pipeline"]}
        else:
            continue
        shape = json.dumps(_shape(read), sort_keys=True)
        if shapes.get(shape, 0) < EXAMPLES and json_util.dumps(read, sort_keys=True) not in out:
            shapes[shape] = shapes.get(shape, 0) + 1
            out[json_util.dumps(read, sort_keys=True)] = read
    return list(out.values())


def _shape(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _shape(v) for k, v in value.items() if k not in ("lsid", "$db", "$clusterTime")}
    if isinstance(value, list):
        return [_shape(v) for v in value[:1]]
    return type(value).__name__


def _answer(db: Any, read: dict[str, Any]) -> Any:
    coll = db[read["collection"]]
    if "find" in read:
        command = read["find"]
        cursor = coll.find(command.get("filter", {}), command.get("projection"))
        if command.get("sort"):
            cursor = cursor.sort(list(command["sort"].items())).skip(command.get("skip", 0))
            cursor = cursor.limit(abs(command.get("limit", 0)))
        return list(cursor)
    return list(coll.aggregate(read["aggregate"]))


def _ordered(read: dict[str, Any]) -> bool:
    if "find" in read:
        return bool(read["find"].get("sort"))
    return any("$sort" in stage for stage in read["aggregate"])


def _lost(before: Any, after: Any, path: str = "") -> set[str]:
    """The paths whose values ``after`` lost or changed (fields it added do not count)."""
    if isinstance(before, Mapping):
        if not isinstance(after, Mapping):
            return {path}
        lost: set[str] = set()
        for key, value in before.items():
            where = f"{path}.{key}" if path else key
            lost |= _lost(value, after[key], where) if key in after else {where}
        return lost
    if isinstance(before, list):
        if not isinstance(after, list) or len(before) != len(after):
            return {path}
        return set().union(*(_lost(b, a, path) for b, a in zip(before, after, strict=True)))
    return set() if (type(before) is type(after) or _numbers(before, after)) and before == after else {path}


def _numbers(a: Any, b: Any) -> bool:
    return all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))


def _differences(before: list[Any], after: list[Any], ordered: bool) -> tuple[int, int, set[str]]:
    if not ordered and all("_id" in d for d in before + after):
        old = {json_util.dumps(d["_id"]): d for d in before}
        new = {json_util.dumps(d["_id"]): d for d in after}
        fields = set().union(*(_lost(old[k], new[k]) for k in old.keys() & new.keys()))
        return len(old.keys() - new.keys()), len(new.keys() - old.keys()), fields
    if not ordered:
        key = lambda d: json.dumps(json.loads(json_util.dumps(d)), sort_keys=True)  # noqa: E731
        before, after = sorted(before, key=key), sorted(after, key=key)
    fields = set().union(set(), *(_lost(b, a) for b, a in zip(before, after, strict=False)))
    return max(len(before) - len(after), 0), max(len(after) - len(before), 0), fields


def _apply(db: Any, command: dict[str, Any]) -> None:
    """Run one ``change.run`` command with pymongo's API, as a user pasting it into mongosh would."""
    method, args = command["method"], command["args"]
    if method == "runCommand":
        db.command(SON(args[0]))
        return
    coll = db[command["collection"]]
    if method == "createIndex":
        options = args[1] if len(args) > 1 else {}
        coll.create_index(list(args[0].items()), **options)
        if "expireAfterSeconds" in options:  # what the TTL monitor deletes on its next pass
            now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
            cutoff = now - datetime.timedelta(seconds=options["expireAfterSeconds"])
            coll.delete_many({next(iter(args[0])): {"$lt": cutoff}})
    elif method == "dropIndex":
        coll.drop_index(args[0])
    elif method == "hideIndex":
        db.command("collMod", command["collection"], index={"name": args[0], "hidden": True})
    elif method == "updateMany":
        coll.update_many(args[0], args[1], **(args[2] if len(args) > 2 else {}))
    elif method == "updateOne":
        coll.update_one(args[0], args[1], **(args[2] if len(args) > 2 else {}))
    elif method == "deleteMany":
        coll.delete_many(args[0])
    elif method == "aggregate":
        list(coll.aggregate(args[0]))
    elif method == "find":
        list(coll.find(*args))
    else:
        raise AssertionError(f"a proposed command this test cannot run: {method}")


def _named(value: Any) -> set[str]:
    """Every string in a command or read: the collections it can touch are among them."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, Mapping):
        return set().union(set(), *(_named(k) | _named(v) for k, v in value.items()))
    if isinstance(value, list):
        return set().union(set(), *(_named(v) for v in value))
    return set()


def _copy(source: Any, target: Any, names: set[str]) -> None:
    for name in sorted(names & set(source.list_collection_names())):
        if name.startswith("system."):
            continue
        docs = list(source[name].find())
        if docs:
            target[name].insert_many(docs)
        for index in source[name].list_indexes():
            if index["name"] != "_id_":
                options = {k: v for k, v in index.items() if k not in ("v", "key", "ns", "expireAfterSeconds")}
                target[name].create_index(list(index["key"].items()), **options)


def _changes(report: Report) -> list[tuple[str, Finding, dict[str, Any]]]:
    return [(report.database, f, f.as_json()) for f in report.findings if f.as_json()["change"]["run"]]


def _harm(built: Built, scratch: Any) -> list[str]:
    """Apply every proposed command of ``built``'s report, a finding at a time, to a copy of its database;
    the profiled reads whose answers changed in a way the finding does not declare."""
    harms = []
    all_reads = _reads(built.database)
    for database, finding, data in _changes(built.report):
        touched = _named(data["change"]["run"])
        # The reads of the collections the commands name, or that join them ($lookup): all others are untouched.
        reads = [r for r in all_reads if r["collection"] in touched or _named(r.get("aggregate", [])) & touched]
        copy = scratch[f"copy_{ObjectId()}"]
        _copy(
            built.database,
            copy,
            touched | {r["collection"] for r in reads} | _named([r.get("aggregate") for r in reads]),
        )
        before = [_answer(copy, read) for read in reads]
        for command in data["change"]["run"]:
            _apply(copy, json_util.loads(json.dumps(command)))
        declared = list(data["change"]["affects"])
        for read, old in zip(reads, before, strict=True):
            missing, extra, fields = _differences(old, _answer(copy, read), _ordered(read))
            mine = [a for a in declared if a["collection"] == read["collection"]]
            allowed = {f for a in mine for f in a["fields"]}
            stray = {f for f in fields if not any(f == a or f.startswith(a + ".") for a in allowed)}
            gains = any(a["gains"] for a in mine)
            if missing or stray or (extra and not gains):
                harms.append(f"{database} {finding.key}: {read} lost {missing}, gained {extra}, changed {stray}")
        scratch.drop_database(copy.name)
    return harms


def test_no_proposed_command_changes_what_the_queries_answer(first_set: Any, second_set: Any) -> None:
    scratch = foliodb.MongoClient(":memory:")
    try:
        harms = []
        tried = 0
        designs = list(first_set[1].values()) + [b for (n, g, mode), b in second_set.items() if mode == "embedded"]
        for built in designs:
            tried += len(_changes(built.report))
            harms += _harm(built, scratch)
        assert not harms, harms
        assert tried >= 20  # the sets propose that many changes with commands to run
    finally:
        scratch.close()


# -- first, do no harm: the cases the advisor used to get wrong ---------------------------------


def test_a_conversion_that_would_change_answers_becomes_a_question() -> None:
    # Sizes as numbers, some as strings ("10", "12"): nothing says which, so normalize-type is proposed,
    # but the shop queries {size: "10"}: converting the strings would make those queries miss them.
    client = foliodb.MongoClient(":memory:")
    db = client.shop
    db.shoes.insert_many([{"model": f"m{i}", "size": 8 + i % 6 if i % 4 else str(8 + i % 6)} for i in range(2000)])
    db.command("profile", 2)
    for i in range(20):
        list(db.shoes.find({"size": str(8 + i % 6), "model": {"$exists": True}}))
    db.command("profile", 0)
    found = [f for f in advise(db).findings if f.problem == "mixed-types"]
    assert len(found) == 1 and found[0].question is not None and found[0].change.commands == []
    assert found[0].proof is not None and found[0].proof.status == "refused"
    assert "would answer differently" in (found[0].proof.reason or "")
    client.close()


def test_a_conversion_that_fails_becomes_a_question() -> None:
    # Prices as numbers, a few as "n/a": $toDouble of "n/a" fails (ConversionFailure), so nothing runs.
    client = foliodb.MongoClient(":memory:")
    db = client.shop
    db.items.insert_many([{"price": 10.0 + i if i % 10 else "n/a"} for i in range(1500)])
    found = [f for f in advise(db).findings if f.problem == "mixed-types"]
    assert len(found) == 1 and found[0].proof is not None and found[0].proof.status == "refused"
    assert "ConversionFailure" in (found[0].proof.reason or "") and found[0].change.commands == []
    client.close()


def test_a_ttl_index_expiring_at_its_date_is_never_unused() -> None:
    # expireAfterSeconds: 0 expires each document at the date it holds: a TTL index like any other.
    client = foliodb.MongoClient(":memory:")
    db = client.app
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    db.sessions.insert_many([{"_id": f"s{i}", "expires_at": now + datetime.timedelta(hours=1)} for i in range(1000)])
    db.sessions.create_index("expires_at", expireAfterSeconds=0)
    db.sessions.create_index("unused_field")
    db.command("profile", 2)
    for i in range(60):
        db.sessions.find_one({"_id": f"s{i}"})
    db.command("profile", 0)
    unused = [f.evidence["index"] for f in advise(db).findings if f.problem == "unused-index"]
    assert unused == [{"unused_field": 1}]
    client.close()


def test_an_index_is_unused_only_when_index_stats_counted_the_whole_window(tmp_path: Any) -> None:
    # $indexStats counts from when the server started (or the index was built): reopened after the
    # workload, FolioDB's counters begin after the profile window, so they cannot confirm the index is unused.
    path = str(tmp_path / "data")
    with foliodb.MongoClient(path) as client:
        db = client.app
        db.orders.insert_many([{"user_id": i % 50, "city": f"c{i % 7}"} for i in range(1000)])
        db.orders.create_index("user_id")
        db.orders.create_index("city")
        db.command("profile", 2)
        for i in range(60):
            list(db.orders.find({"user_id": i % 50}))
        db.command("profile", 0)
        assert [f.path for f in advise(db).findings if f.problem == "unused-index"] == ["city"]
    with foliodb.MongoClient(path) as client:
        assert [f.path for f in advise(client.app).findings if f.problem == "unused-index"] == []


def test_requests_are_told_apart_by_thread() -> None:
    # Two threads serve the same page in lock step: each reads an order, then its product. Under one
    # identity their operations interleave (order, order, product, product) and look like one read
    # followed by two lookups, one id at a time: N+1. They are two requests of one lookup each.
    client = foliodb.MongoClient(":memory:")
    db = client.shop
    products = [ObjectId() for _ in range(20)]
    db.products.insert_many([{"_id": p, "name": f"product {i}"} for i, p in enumerate(products)])
    db.orders.insert_many([{"_id": i, "product_id": products[i % 20], "n": i} for i in range(200)])
    turn = threading.Barrier(2)

    def page(offset: int) -> None:
        for i in range(offset, 200, 2):
            turn.wait()
            order = db.orders.find_one({"_id": i})
            turn.wait()
            db.products.find_one({"_id": order["product_id"]})

    db.command("profile", 2)
    threads = [threading.Thread(target=page, args=(n,)) for n in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    db.command("profile", 0)
    entries = list(db["system.profile"].find({"ns": {"$in": ["shop.orders", "shop.products"]}}))
    assert len({e["connectionId"] for e in entries}) == 2 and {e["client"] for e in entries} == {"embedded"}
    assert [f for f in advise(db).findings if f.problem == "join-on-read"] == []
    client.close()


def test_every_report_shows_the_costliest_queries(first_set: Any, second_set: Any) -> None:
    # "Nothing to change" never hides a slow query: the good top-rated design draws no finding, yet its
    # report lists its queries, the costliest first, with their runs, time and examined/returned.
    good = second_set[("top_rated", True, "embedded")].report
    assert good.findings == [] and good.costliest
    assert [c.millis for c in good.costliest] == sorted((c.millis for c in good.costliest), reverse=True)
    text = render_text(good)
    assert "nothing to change" in text and "costliest query shapes" in text and good.costliest[0].shape in text
    bad = second_set[("top_rated", False, "embedded")].report
    top = bad.costliest[0]
    assert top.collection == "reviews" and top.kind == "aggregate" and top.runs >= 10
    assert top.docs_examined / top.runs >= 5000 and "$group" in top.shape


# -- the property: a mix of types that something explains draws no normalize-type -----------------

_VALUES = {
    "int": st.integers(-1000, 1000),
    "string": st.text("abcdefgh", min_size=1, max_size=8),
    "bool": st.booleans(),
    "double": st.floats(-1e6, 1e6, allow_nan=False).filter(lambda f: not f.is_integer()),
    "date": st.datetimes(datetime.datetime(2000, 1, 1), datetime.datetime(2030, 1, 1)).map(
        lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)
    ),
    "object": st.fixed_dictionaries({"street": st.text("abc", min_size=1, max_size=4), "n": st.integers(0, 99)}),
}
_KINDS = list(_VALUES)


@st.composite
def explained_collections(draw: Any) -> tuple[str, list[dict[str, Any]]]:
    """Documents whose ``v`` (beside a key, in an array of pairs) or ``value`` (with a version field, absent
    for the first version) takes one type per key or version, two types at least."""
    keys = draw(st.lists(st.text("klmnopq", min_size=1, max_size=5), min_size=2, max_size=6, unique=True))
    kinds = draw(st.lists(st.sampled_from(_KINDS), min_size=len(keys), max_size=len(keys)))
    if len(set(kinds)) < 2:
        kinds[0], kinds[1] = "int", "string"
    by = dict(zip(keys, kinds, strict=True))
    layout = draw(st.sampled_from(["attribute", "version"]))
    docs = []
    for n in range(draw(st.integers(60, 160))):
        if layout == "attribute":
            chosen = draw(st.lists(st.sampled_from(keys), min_size=1, max_size=len(keys), unique=True))
            docs.append({"n": n, "attrs": [{"k": k, "v": draw(_VALUES[by[k]])} for k in chosen]})
        else:
            version = keys[n % len(keys)]
            doc: dict[str, Any] = {"n": n, "value": draw(_VALUES[by[version]])}
            if version != keys[0]:  # the first version was written before the field existed
                doc["schema_version"] = version
            docs.append(doc)
    return layout, docs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(explained_collections())
def test_a_mix_explained_by_a_key_or_a_version_draws_no_normalize_type(case: tuple[str, list[dict[str, Any]]]) -> None:
    layout, docs = case
    client = foliodb.MongoClient(":memory:")
    try:
        db = client.prop
        db.things.insert_many(docs)
        found = [f for f in advise(db).findings if f.problem == "mixed-types" and f.path in ("attrs.v", "value")]
        assert found == [], (layout, [f.summary for f in found])
    finally:
        client.close()
