"""Regression tests for the differences MongoDB's own jstests (r4.2, run by scripts/jstests.py)
found between FolioDB and MongoDB 8: each case checks mongod 8's documented or coded behaviour,
cited beside it.

Sources: the manual pages named in each test, and mongod's source where the manual is silent
(file names given; mongodb/mongo on GitHub)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from bson import Code, Decimal128, Int64
from pymongo import WriteConcern
from pymongo.errors import OperationFailure, WriteConcernError

from foliodb.commands import Executor


def code_of(fn: Any) -> tuple[int, str]:
    with pytest.raises(OperationFailure) as info:
        fn()
    return info.value.code, info.value.details["errmsg"]


# -- command aliases -------------------------------------------------------------------------


def test_lowercase_aliases_run_their_commands(db: Any) -> None:
    # mongod registers mapReduce/mapreduce, dbStats/dbstats, collStats/collstats (mr.cpp, dbcommands.cpp).
    db.c.insert_many([{"k": "a"}, {"k": "a"}, {"k": "b"}])
    reply = db.command(
        {
            "mapreduce": "c",
            "map": Code("function() { emit(this.k, 1) }"),
            "reduce": Code("function(k, v) { return Array.sum(v) }"),
            "out": {"inline": 1},
        }
    )
    assert sorted((r["_id"], r["value"]) for r in reply["results"]) == [("a", 2.0), ("b", 1)]
    assert db.command("dbstats")["objects"] == 3
    assert db.command("collstats", "c")["count"] == 3


# -- validation ------------------------------------------------------------------------------


def test_two_near_queries_or_one_inside_or_are_refused(db: Any) -> None:
    # canonical_query.cpp, CanonicalQuery::isValid: one GEO_NEAR at most, at the top level (or in a top-level $and).
    db.c.create_index([("loc", "2d")])
    db.c.insert_one({"loc": [0, 0], "a": 1})
    near_a, near_b = {"loc": {"$near": [0, 0]}}, {"loc": {"$near": [1, 1]}}
    assert code_of(lambda: list(db.c.find({"$or": [near_a, near_b]}))) == (2, "Too many geoNear expressions")
    assert code_of(lambda: list(db.c.find({"$or": [near_a, {"a": 1}]}))) == (2, "geoNear must be top-level expr")
    assert code_of(lambda: list(db.c.find({"$and": [near_a, near_b]}))) == (2, "Too many geoNear expressions")


def test_geo_near_query_operator_is_near(db: Any) -> None:
    # expression_geo.cpp, GeoNearExpression::parseLegacyQuery: "$geoNear" reads as "$near".
    db.c.create_index([("loc", "2d")])
    db.c.insert_many([{"_id": 1, "loc": [5, 5]}, {"_id": 2, "loc": [1, 1]}, {"_id": 3, "loc": [3, 3]}])
    assert [d["_id"] for d in db.c.find({"loc": {"$geoNear": [0, 0]}})] == [2, 3, 1]
    assert [d["_id"] for d in db.c.find({"loc": {"$geoNear": [0, 0], "$maxDistance": 5}})] == [2, 3]


def test_validate_refuses_full_with_background(db: Any) -> None:
    # validate.cpp: a full validation cannot run in the background (InvalidOptions).
    db.c.insert_one({})
    assert code_of(lambda: db.command("validate", "c", full=True, background=True)) == (
        72,
        "Running the validate command with both { background: true } and { full: true } is not supported.",
    )
    assert db.command("validate", "c", full=True)["valid"] is True


def test_index_name_with_nul_is_refused(db: Any) -> None:
    # index_catalog_impl.cpp, IndexCatalogImpl::_isSpecOk.
    assert code_of(lambda: db.c.create_index("a", name="a\x00b")) == (67, "index name cannot contain NUL bytes")


def test_create_takes_auto_index_id(db: Any) -> None:
    # create (manual: autoIndexId, deprecated): true is accepted with a deprecation note; false only in local,
    # as DatabaseImpl::createCollection refuses it for a collection that can be replicated (50001).
    reply = db.command("create", "c", autoIndexId=True)
    assert reply["note"] == "the autoIndexId option is deprecated and will be removed in a future release"
    assert db.command("listCollections", filter={"name": "c"})["cursor"]["firstBatch"][0]["options"] == {
        "autoIndexId": True
    }
    assert code_of(lambda: db.command("create", "d", autoIndexId=False)) == (
        50001,
        "autoIndexId:false is not allowed for collection test.d because it can be replicated",
    )


def test_set_parameter_log_component_verbosity(client: Any) -> None:
    # setParameter (manual: logComponentVerbosity): a document of verbosities, merged into the current one.
    assert client.admin.command("setParameter", 1, logComponentVerbosity={"query": {"verbosity": 2}})["ok"] == 1
    got = client.admin.command("getParameter", 1, logComponentVerbosity=1)["logComponentVerbosity"]
    assert got == {"verbosity": 0, "query": {"verbosity": 2}}
    assert client.admin.command("setParameter", 1, logComponentVerbosity={"verbosity": 0})["was"] == got
    assert code_of(lambda: client.admin.command("setParameter", 1, logComponentVerbosity={"verbosity": 9}))[0] == 2


def test_drop_database_of_a_missing_database_names_none(client: Any) -> None:
    # dropDatabase: a database that does not exist is no error, and the reply names no "dropped" database.
    assert client.nothing_here.command("dropDatabase") == {"ok": 1.0}
    client.here.c.insert_one({})
    assert client.here.command("dropDatabase") == {"dropped": "here", "ok": 1.0}


def test_where_refuses_code_with_scope(db: Any) -> None:
    # expression_where.cpp, parseWhereParams (4.4+).
    db.c.insert_one({"a": 2})
    assert code_of(lambda: db.c.find_one({"$where": Code("this.a > n", {"n": 1})})) == (
        4649201,
        "$where no longer supports deprecated BSON type CodeWScope",
    )


def test_create_of_an_existing_collection_in_a_transaction_is_namespace_exists(client: Any) -> None:
    # create (manual, "Transactions"): outside a transaction, creating an existing collection with the same
    # options is a no-op; inside one it is NamespaceExists.
    client.test.create_collection("c")
    assert client.test.command("create", "c") == {"ok": 1.0}
    with client.start_session() as session:
        session.start_transaction()
        assert code_of(lambda: client.test.command("create", "c", session=session))[0] == 48
        session.abort_transaction()


def test_empty_collation_is_no_collation(db: Any) -> None:
    # mongod parses a collation only when the document is not empty (getCollation().isEmpty()).
    db.c.insert_many([{"a": "x"}, {"a": "X"}])
    reply = db.command("delete", "c", deletes=[{"q": {"a": "x"}, "limit": 0, "collation": {}}])
    assert (reply["n"], "writeErrors" in reply) == (1, False)
    assert [d["a"] for d in db.c.find({}, {"_id": 0}).collation({})] == ["X"]


def test_an_unknown_update_pipeline_stage_fails_the_command(db: Any) -> None:
    # LiteParsedPipeline (authorization, before any statement runs) rejects the unknown stage: a command error.
    db.c.insert_one({"a": 1})
    assert code_of(lambda: db.command("update", "c", updates=[{"q": {}, "u": [{"$bogus": {}}]}])) == (
        40324,
        "Unrecognized pipeline stage name: '$bogus'",
    )


@pytest.mark.parametrize("stage", ["$currentOp", "$listLocalSessions"])
def test_api_strict_refuses_stages_outside_v1_in_database_aggregates(client: Any, stage: str) -> None:
    # Stable API: these stages are registered kNeverInVersion1 (APIStrictError, 323).
    cmd = {"aggregate": 1, "pipeline": [{stage: {}}], "cursor": {}, "apiVersion": "1", "apiStrict": True}
    assert code_of(lambda: client.admin.command(cmd)) == (
        323,
        f"{stage} is not allowed with 'apiStrict: true' in API Version 1",
    )


def test_api_strict_looks_inside_sub_pipelines(db: Any) -> None:
    pipeline = [{"$lookup": {"from": "d", "pipeline": [{"$indexStats": {}}], "as": "x"}}]
    cmd = {"aggregate": "c", "pipeline": pipeline, "cursor": {}, "apiVersion": "1", "apiStrict": True}
    assert code_of(lambda: db.command(cmd))[0] == 323
    cmd["apiStrict"] = False
    assert db.command(cmd)["ok"] == 1


# -- write concern on the one-member replica set ---------------------------------------------


def _unsatisfiable(executor: Executor, cmd: dict[str, Any], db: str = "test") -> dict[str, Any]:
    return executor.execute(db, {**cmd, "writeConcern": {"w": 3}})


def test_an_unsatisfiable_write_concern_runs_the_command_and_reports_it(executor: Executor) -> None:
    # Write concern for replica sets (manual): w cannot exceed the data-bearing members; mongod runs the
    # command, then its wait reports writeConcernError UnsatisfiableWriteConcern (100).
    expected = {"code": 100, "codeName": "UnsatisfiableWriteConcern", "errmsg": "Not enough data-bearing nodes"}
    executor.execute("test", {"insert": "c", "documents": [{"_id": 1, "a": 1}]})
    commands = [
        {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]},
        {"findAndModify": "c", "query": {"_id": 1}, "update": {"$set": {"b": 1}}},
        {"dropIndexes": "c", "index": "a_1"},
        {"aggregate": "c", "pipeline": [{"$out": "out"}], "cursor": {}},
        {"aggregate": "c", "pipeline": [{"$merge": "merged"}], "cursor": {}},
        {"renameCollection": "test.out", "to": "test.renamed"},
        {"create": "made"},
        {"drop": "renamed"},
    ]
    for cmd in commands:
        reply = _unsatisfiable(executor, cmd, "admin" if "renameCollection" in cmd else "test")
        assert (reply["ok"], reply["writeConcernError"]) == (1.0, expected), cmd
    names = executor.execute("test", {"listCollections": 1, "nameOnly": True})["cursor"]["firstBatch"]
    assert sorted(n["name"] for n in names) == ["c", "made", "merged"]  # each command ran
    assert executor.execute("test", {"find": "c"})["cursor"]["firstBatch"] == [{"_id": 1, "a": 1, "b": 1}]
    reply = _unsatisfiable(executor, {"dropDatabase": 1})
    assert (reply["ok"], reply["writeConcernError"]["code"]) == (1.0, 100)
    # A read takes no write concern: nothing to report.
    assert "writeConcernError" not in _unsatisfiable(executor, {"find": "c"})


def test_pymongo_raises_write_concern_error_after_the_write(db: Any) -> None:
    coll = db.get_collection("c", write_concern=WriteConcern(w=2))
    with pytest.raises(WriteConcernError):
        coll.create_index("a")
    assert "a_1" in db.c.index_information()  # the index was built


# -- aggregation -----------------------------------------------------------------------------


def test_meta_inside_a_projection_expression(db: Any) -> None:
    # $meta (manual): usable inside expressions of $project.
    db.c.create_index([("t", "text")])
    db.c.insert_one({"_id": 1, "t": "apple", "w": 2})
    out = list(
        db.c.aggregate(
            [
                {"$match": {"$text": {"$search": "apple"}}},
                {"$project": {"s": {"$meta": "textScore"}, "ws": {"$multiply": ["$w", {"$meta": "textScore"}]}}},
            ]
        )
    )
    assert out[0]["ws"] == 2 * out[0]["s"] and out[0]["s"] > 0


def test_logarithms_of_nan_with_decimals(db: Any) -> None:
    # expression.cpp, ExpressionLog: a decimal NaN falls through to the double computation (NaN), no error.
    db.c.insert_one({})
    nan = float("nan")
    for expr in ({"$log": [nan, Decimal128("10")]}, {"$log": [Decimal128("NaN"), 10]}, {"$ln": [Decimal128("NaN")]}):
        (out,) = db.c.aggregate([{"$project": {"_id": 0, "r": expr}}])
        value = out["r"].to_decimal() if isinstance(out["r"], Decimal128) else out["r"]
        assert value != value, expr  # NaN


def test_group_by_an_object_of_one_field_groups_missing_as_null(db: Any) -> None:
    # group_processor_base.cpp: an object _id is split into its fields' expressions, and a lone one's missing
    # value groups (and shows) as null.
    db.c.insert_many([{"a": None}, {}])
    assert list(db.c.aggregate([{"$group": {"_id": {"a": "$a"}}}])) == [{"_id": {"a": None}}]
    db.c.insert_one({"b": 1})
    two = list(db.c.aggregate([{"$group": {"_id": {"a": "$a", "b": "$b"}}}, {"$sort": {"_id": 1}}]))
    assert two == [{"_id": {}}, {"_id": {"a": None}}, {"_id": {"b": 1}}]


def test_a_2d_index_passes_over_scalars(db: Any) -> None:
    # expression_keys_private.cpp, get2DKeys: a value that is not an object or array has no key.
    db.c.create_index([("b", "2d")])
    db.c.insert_many([{"_id": 1, "b": 1}, {"_id": 2, "b": "x"}, {"_id": 3, "b": [1, 1]}])
    assert [d["_id"] for d in db.c.find({"b": {"$geoWithin": {"$center": [[0, 0], 2]}}})] == [3]


def test_merge_on_fields_and_partial_batches(db: Any) -> None:
    # merge (manual): whenNotMatched "fail" stops the aggregation, "Any changes to the output collection from
    # previous documents are not reverted"; mongod writes a batch as one unordered write, so the batch's other
    # documents are merged. An 'on' value that is an array is 51185, and _id is generated when 'on' holds it.
    db.target.insert_many([{"_id": 1, "b": 1}, {"_id": 3, "b": 3}])
    db.source.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 2}, {"_id": 3, "a": 3}])
    merge = {"$merge": {"into": "target", "whenMatched": "merge", "whenNotMatched": "fail"}}
    assert code_of(lambda: list(db.source.aggregate([merge])))[0] == 13113
    assert list(db.target.find().sort("_id", 1)) == [{"_id": 1, "a": 1, "b": 1}, {"_id": 3, "a": 3, "b": 3}]
    db.target.create_index([("_id", 1), ("k", 1)], unique=True)
    db.source.update_one({"_id": 1}, {"$set": {"k": [1, 2]}})
    on = {"$merge": {"into": "target", "on": ["_id", "k"]}}
    assert code_of(lambda: list(db.source.aggregate([{"$match": {"_id": 1}}, on]))) == (
        51185,
        "$merge write error: 'on' field 'k' is an array",
    )
    db.source.update_one({"_id": 1}, {"$set": {"k": 7}})
    list(db.source.aggregate([{"$match": {"_id": 1}}, {"$project": {"_id": 0}}, on]))
    assert db.target.count_documents({"k": 7}) == 1  # inserted under a new ObjectId


def test_merge_on_validation(db: Any) -> None:
    # document_source_merge_spec.cpp, mergeOnFieldsParseFromBSON.
    db.c.insert_one({})
    assert code_of(lambda: list(db.c.aggregate([{"$merge": {"into": "t", "on": []}}]))) == (
        51187,
        "If explicitly specifying $merge 'on', must include at least one field",
    )
    assert code_of(lambda: list(db.c.aggregate([{"$merge": {"into": "t", "on": ["a", 1]}}]))) == (
        51134,
        "$merge 'on' array elements must be strings, but found int",
    )


def test_merge_checks_the_target_validator(db: Any) -> None:
    # merge (manual): bypassDocumentValidation applies to $merge's writes; without it the target's
    # validator checks them (DocumentValidationFailure, 121).
    db.create_collection("t", validator={"a": {"$gt": 0}})
    db.c.insert_one({"_id": 1, "a": -1})
    assert code_of(lambda: list(db.c.aggregate([{"$merge": "t"}])))[0] == 121
    assert code_of(lambda: list(db.c.aggregate([{"$out": "t"}])))[0] == 121
    list(db.c.aggregate([{"$merge": "t"}], bypassDocumentValidation=True))
    assert db.t.count_documents({}) == 1


def test_date_from_string_reads_milliseconds_as_a_fraction(db: Any) -> None:
    # $dateFromString's %L (timelib): ".81" is 810 milliseconds.
    db.c.insert_one({})
    spec = {"dateString": "2017-07-04T11:56:02.81Z", "format": "%Y-%m-%dT%H:%M:%S.%LZ"}
    (out,) = db.c.aggregate([{"$project": {"_id": 0, "d": {"$dateFromString": spec}}}])
    assert out["d"] == datetime.datetime(2017, 7, 4, 11, 56, 2, 810000)


def test_map_and_filter_may_bind_current(db: Any) -> None:
    # variable_validation.cpp, validateNameForUserWrite: CURRENT is the one system variable a user may bind.
    db.c.insert_one({"_id": 0, "a": 9, "n": [{"a": 1}, {"a": 2}]})
    (out,) = db.c.aggregate(
        [
            {
                "$project": {
                    "m": {"$map": {"input": "$n", "as": "CURRENT", "in": "$a"}},
                    "f": {"$filter": {"input": "$n", "as": "CURRENT", "cond": {"$eq": ["$a", 2]}}},
                }
            }
        ]
    )
    assert (out["m"], out["f"]) == ([1, 2], [{"a": 2}])


def test_aggregate_pipeline_elements_are_objects(db: Any) -> None:
    # aggregate.idl types the pipeline array<object>: checked while parsing, before the cursor option.
    assert code_of(lambda: db.command({"aggregate": "c", "pipeline": [1, 2]})) == (
        14,
        "BSON field 'aggregate.pipeline.0' is the wrong type 'int', expected type 'object'",
    )


def test_generic_arguments_of_a_cluster_are_accepted(db: Any) -> None:
    # generic_argument.idl: $queryOptions and the other internal arguments are never unknown fields.
    reply = db.command({"aggregate": "c", "pipeline": [], "cursor": {}, "$queryOptions": {"$readPreference": {}}})
    assert reply["ok"] == 1


def test_round_and_trunc_past_34_digits_keep_the_value(db: Any) -> None:
    # decimal128.cpp, Decimal128::quantize: a quantum needing more than 34 digits leaves the value,
    # widened to 34 digits (its normalize()); a double comes back unchanged.
    db.c.insert_one({})
    cases = [
        ({"$trunc": [1.298, 100]}, 1.298),
        ({"$round": [1.298, 100]}, 1.298),
        ({"$trunc": [Decimal128("1.298"), 100]}, Decimal128("1.298000000000000000000000000000000")),
        ({"$round": [Decimal128("1.298912343250054252245154325"), 20]}, Decimal128("1.29891234325005425225")),
    ]
    for expr, want in cases:
        (out,) = db.c.aggregate([{"$project": {"_id": 0, "r": expr}}])
        assert out["r"] == want and type(out["r"]) is type(want), expr


def test_mod_by_an_integral_double_divides_as_an_integer(db: Any) -> None:
    # expression.cpp, ExpressionMod: fmod only when the divisor is a double that is not an int32.
    db.c.insert_one({})
    (out,) = db.c.aggregate(
        [{"$project": {"_id": 0, "i": {"$mod": [8, 3.0]}, "l": {"$mod": [Int64(8), 3.0]}, "d": {"$mod": [8, 3.5]}}}]
    )
    assert (out["i"], type(out["i"]), out["l"], type(out["l"]), out["d"]) == (2, int, 2, Int64, 1.0)


def test_bucket_and_bucket_auto_follow_the_collation(db: Any) -> None:
    # $bucket / $bucketAuto (manual): boundaries, the default and the buckets' order follow the collation.
    db.create_collection("c", collation={"locale": "en_US", "numericOrdering": True})
    db.c.insert_many([{"n": n} for n in ["1", "2", "5", "10", "20", "50", "100", "200", "500"]])
    auto = list(db.c.aggregate([{"$bucketAuto": {"groupBy": "$n", "buckets": 3}}]))
    assert [b["_id"] for b in auto] == [
        {"min": "1", "max": "10"},
        {"min": "10", "max": "100"},
        {"min": "100", "max": "500"},
    ]
    unsorted = {"$bucket": {"groupBy": "$n", "boundaries": ["100", "20", "4"]}}
    assert code_of(lambda: list(db.c.aggregate([unsorted])))[0] == 40194
    inside = {"$bucket": {"groupBy": "$n", "boundaries": ["1", "10", "100"], "default": "40"}}
    assert code_of(lambda: list(db.c.aggregate([inside])))[0] == 40199


def test_graph_lookup_spec_errors_are_failed_to_parse(db: Any) -> None:
    # document_source_graph_lookup.cpp, LiteParsed::parse.
    db.c.insert_one({})
    assert code_of(lambda: list(db.c.aggregate([{"$graphLookup": 4}]))) == (
        9,
        "the $graphLookup stage specification must be an object, but found int",
    )
    spec = {"startWith": 1, "connectFromField": "a", "connectToField": "b", "as": "x"}
    assert code_of(lambda: list(db.c.aggregate([{"$graphLookup": spec}])))[0] == 9
    # An empty 'from' is present, so mongod gets past the missing-argument check (40105) and
    # refuses the namespace '<db>.' as invalid.
    empty = {"from": "", **spec}
    assert code_of(lambda: list(db.c.aggregate([{"$graphLookup": empty}])))[0] == 73
    del spec["as"]
    assert code_of(lambda: list(db.c.aggregate([{"$graphLookup": {"from": "f", **spec}}])))[0] == 40105


def test_out_refuses_a_capped_target(db: Any) -> None:
    # $out (manual): it cannot write results to a capped collection (17152).
    db.create_collection("capped", capped=True, size=4096)
    db.c.insert_one({})
    assert code_of(lambda: list(db.c.aggregate([{"$out": "capped"}]))) == (
        17152,
        "namespace 'test.capped' is capped so it can't be used for $out",
    )


def test_decimal_pow_keeps_34_digits(db: Any) -> None:
    # bid128_pow answers with 34 digits (MongoDB's jstests, server18427.js).
    db.c.insert_one({})
    (out,) = db.c.aggregate([{"$project": {"_id": 0, "r": {"$pow": [Decimal128("10.0"), -2]}}}])
    assert str(out["r"]) == "0.01000000000000000000000000000000000"


def test_a_backward_index_scan_shows_its_bounds_reversed(db: Any) -> None:
    # explain (mongod's IndexBoundsBuilder::reverse): a backward IXSCAN lists each field's intervals from
    # its end: {a: 1} sorted by {a: -1} over a >= 2 shows "[inf.0, 2]", the whole _id index "[MaxKey, MinKey]".
    db.c.create_index("a")
    db.c.insert_many([{"_id": i, "a": i} for i in range(5)])
    plan = db.c.find({"a": {"$gte": 2}}).sort("a", -1).explain()["queryPlanner"]["winningPlan"]["inputStage"]
    assert (plan["direction"], plan["indexBounds"]) == ("backward", {"a": ["[inf.0, 2]"]})
    plan = db.c.find().sort("_id", -1).explain()["queryPlanner"]["winningPlan"]["inputStage"]
    assert (plan["direction"], plan["indexBounds"]) == ("backward", {"_id": ["[MaxKey, MinKey]"]})


# -- commands that were "not yet" --------------------------------------------------------------


def test_reindex_on_a_standalone_and_refused_by_a_replica_set(tmp_path: Any, executor: Executor) -> None:
    # reIndex (manual, 6.0+): "only allowed on a standalone mongod instance".
    reply = executor.execute("test", {"reIndex": "c"})
    assert (reply["code"], reply["errmsg"]) == (20, "reIndex is only allowed on a standalone mongod instance.")
    standalone = Executor.open(str(tmp_path / "standalone"))
    try:
        standalone.execute("test", {"insert": "c", "documents": [{"_id": i, "a": i % 3} for i in range(30)]})
        standalone.execute("test", {"createIndexes": "c", "indexes": [{"key": {"a": 1}, "name": "a_1"}]})
        reply = standalone.execute("test", {"reIndex": "c"})
        assert (reply["nIndexesWas"], reply["nIndexes"], [i["name"] for i in reply["indexes"]]) == (
            2,
            2,
            ["_id_", "a_1"],
        )
        found = standalone.execute("test", {"find": "c", "filter": {"a": 1}, "hint": "a_1"})["cursor"]["firstBatch"]
        assert [d["_id"] for d in found] == list(range(1, 30, 3))
        assert standalone.execute("test", {"validate": "c"})["valid"] is True
    finally:
        standalone.close()


def test_clone_collection_as_capped_keeps_the_newest_documents(db: Any) -> None:
    # cloneCollectionAsCapped (manual): a capped copy of `size` bytes; documents in natural order, so the
    # capped collection keeps the newest that fit. Each document is 31 + 500 bytes of BSON.
    db.c.insert_many([{"_id": i, "s": "x" * 500} for i in range(100)])
    db.c.create_index("s")
    assert db.command("cloneCollectionAsCapped", "c", toCollection="cc", size=5000) == {"ok": 1.0}
    kept = [d["_id"] for d in db.cc.find({}, {"s": 0})]
    assert kept == list(range(100 - 5120 // 531, 100))  # 5000 rounds up to 5120 bytes: 9 documents fit
    assert db.cc.options() == {"capped": True, "size": 5120}
    assert [i["name"] for i in db.cc.list_indexes()] == ["_id_"]
    assert db.c.count_documents({}) == 100  # the source is unchanged
    assert code_of(lambda: db.command("cloneCollectionAsCapped", "c", toCollection="cc", size=5000))[0] == 48
    assert code_of(lambda: db.command("cloneCollectionAsCapped", "none", toCollection="x", size=5000))[0] == 26


def test_convert_to_capped_replaces_the_collection(db: Any) -> None:
    # convertToCapped (manual): the collection becomes capped, its indexes other than _id are dropped.
    db.c.insert_many([{"_id": i, "s": "x" * 500} for i in range(100)])
    db.c.create_index("s")
    assert db.command("convertToCapped", "c", size=5000) == {"ok": 1.0}
    assert [d["_id"] for d in db.c.find({}, {"s": 0})] == list(range(91, 100))
    assert db.c.options() == {"capped": True, "size": 5120}
    assert [i["name"] for i in db.c.list_indexes()] == ["_id_"]
    db.c.insert_one({"_id": 100, "s": "x" * 500})  # and it evicts its oldest from now on
    assert [d["_id"] for d in db.c.find({}, {"s": 0})] == list(range(92, 101))


def test_profiler_counts_the_index_entries_writes_change(db: Any) -> None:
    # Database profiler output (manual): keysInserted, keysDeleted, ndeleted, nMatched, nModified. With
    # indexes _id and a, an insert writes 2 entries per document, moving a changes 1 in and 1 out.
    db.c.create_index("a")
    db.command("profile", 2)
    db.c.insert_many([{"_id": i, "a": i} for i in range(3)])
    db.c.update_one({"_id": 1}, {"$set": {"a": 10}})
    db.c.delete_one({"_id": 0})
    db.c.find_one_and_update({"_id": 2}, {"$set": {"a": 20}})
    db.c.find_one_and_delete({"_id": 2})
    db.command("profile", 0)
    fields = ("ninserted", "keysInserted", "keysDeleted", "ndeleted", "nMatched", "nModified", "docsExamined")
    entries = [{k: e[k] for k in fields if k in e} for e in db.system.profile.find({"ns": "test.c"}).sort("ts", 1)]
    assert entries == [
        {"ninserted": 3, "keysInserted": 6},
        {"nMatched": 1, "nModified": 1, "keysInserted": 1, "keysDeleted": 1, "docsExamined": 1},
        {"ndeleted": 1, "keysDeleted": 2, "docsExamined": 1},
        {"nMatched": 1, "nModified": 1, "keysInserted": 1, "keysDeleted": 1, "docsExamined": 1},
        {"ndeleted": 1, "keysDeleted": 2, "docsExamined": 1},
    ]


def test_a_wildcard_index_scan_shows_the_path_key_pattern(db: Any) -> None:
    # Wildcard indexes (manual, explain output): the IXSCAN's keyPattern is {$_path: 1, <path>: 1}.
    db.c.create_index([("$**", 1)])
    db.c.insert_many([{"a": i, "b": {"c": i}} for i in range(5)])
    scan = db.c.find({"b.c": {"$gte": 3}}).explain()["queryPlanner"]["winningPlan"]["inputStage"]
    assert (scan["stage"], scan["indexName"], scan["keyPattern"]) == ("IXSCAN", "$**_1", {"$_path": 1, "b.c": 1})
    assert scan["indexBounds"] == {"$_path": ['["b.c", "b.c"]'], "b.c": ["[3, inf.0]"]}


def test_internal_split_pipeline_passes_documents_through(db: Any) -> None:
    # DocumentSourceInternalSplitPipeline: a split point for a cluster; on one node, nothing changes.
    db.c.insert_many([{"_id": 2}, {"_id": 1}])
    out = list(db.c.aggregate([{"$_internalSplitPipeline": {"mergeType": "anyShard"}}, {"$sort": {"_id": 1}}]))
    assert out == [{"_id": 1}, {"_id": 2}]
    assert code_of(lambda: list(db.c.aggregate([{"$_internalSplitPipeline": 1}])))[0] == 14
    assert code_of(lambda: list(db.c.aggregate([{"$_internalSplitPipeline": {"x": 1}}])))[0] == 2


def test_a_pipeline_that_needs_no_fields_counts_keys(db: Any) -> None:
    # mongod's dependency analysis: when nothing after the $match reads a field, the plan is a COUNT_SCAN
    # (a single interval of the index) that returns no documents' contents; a $in of two points is no
    # single interval (IXSCAN).
    for i in range(3):
        db.c.insert_many([{"foo": i, "bar": j} for j in range(0, 10, 2)])
    db.c.create_index("foo")
    counting = [
        [{"$match": {"foo": {"$gt": 0}}}, {"$group": {"_id": None, "count": {"$sum": 1}}}],
        [{"$match": {"foo": {"$gt": 0}}}, {"$project": {"_id": 0, "a": {"$literal": None}}}, {"$count": "n"}],
        [{"$match": {"foo": {"$gt": 0}}}, {"$count": "n"}],
    ]
    for pipeline in counting:
        explain = db.command({"explain": {"aggregate": "c", "pipeline": pipeline, "cursor": {}}})
        plan = explain["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]
        assert plan["stage"] == "COUNT_SCAN", pipeline
        assert plan["indexBounds"] == {
            "startKey": {"foo": 0},
            "startKeyInclusive": False,
            "endKey": {"foo": float("inf")},
            "endKeyInclusive": True,
        }
        assert next(iter(db.c.aggregate(pipeline))) in ({"_id": None, "count": 10}, {"n": 10})
    two_points = [{"$match": {"foo": {"$in": [0, 1]}}}, {"$count": "n"}]
    explain = db.command({"explain": {"aggregate": "c", "pipeline": two_points, "cursor": {}}})
    assert explain["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["stage"] == "IXSCAN"
    assert list(db.c.aggregate(two_points)) == [{"n": 10}]
    reads = [{"$match": {"foo": {"$gt": 0}}}, {"$group": {"_id": "$bar", "n": {"$sum": 1}}}]
    explain = db.command({"explain": {"aggregate": "c", "pipeline": reads, "cursor": {}}})
    assert explain["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]["stage"] == "FETCH"


def test_out_and_merge_refuse_special_collections(db: Any) -> None:
    # NamespaceString::isSpecial (system.* or a '$'): $out answers 17385, $merge 51180.
    db.c.insert_one({})
    assert code_of(lambda: list(db.c.aggregate([{"$out": "system.x"}]))) == (
        17385,
        "Can't $out to special collection: system.x",
    )
    assert code_of(lambda: list(db.c.aggregate([{"$merge": {"into": "a$b"}}])))[0] == 51180


def test_date_from_string_takes_dots_between_time_parts(db: Any) -> None:
    # timelib's timelong24 and iso8601long: hour24 [:.] minute [:.] second frac.
    db.c.insert_one({"_id": 0})
    for text, want in (
        ("2017-07-04T11:56.02", datetime.datetime(2017, 7, 4, 11, 56, 2)),
        ("2017-07-04T11:56.02.81", datetime.datetime(2017, 7, 4, 11, 56, 2, 810000)),
    ):
        got = list(db.c.aggregate([{"$project": {"_id": 0, "d": {"$dateFromString": {"dateString": text}}}}]))
        assert got == [{"d": want}]


def test_date_from_string_knows_zone_abbreviations(db: Any) -> None:
    # timelib's abbreviations and military letters; %z skips the spaces before the zone.
    db.c.insert_one({"_id": 0})
    for text, hour in (
        ("12:02:44.771 CEST", 10),
        ("12:02:44.771 EST", 17),
        ("12:02:44.771 A", 11),
        ("12:02:44.771 P", 15),
    ):
        for fmt in (None, "%Y-%m-%dT%H:%M:%S.%L%z"):
            spec: dict[str, Any] = {"dateString": "2017-07-14T" + text}
            if fmt:
                spec["format"] = fmt
            got = list(db.c.aggregate([{"$project": {"_id": 0, "d": {"$dateFromString": spec}}}]))
            assert got == [{"d": datetime.datetime(2017, 7, 14, hour, 2, 44, 771000)}], (text, fmt)


def test_date_from_string_takes_more_of_timelibs_forms(db: Any) -> None:
    db.c.insert_one({"_id": 0})

    def parse(spec: dict[str, Any]) -> Any:
        return next(iter(db.c.aggregate([{"$project": {"_id": 0, "d": {"$dateFromString": spec}}}])))["d"]

    july4 = datetime.datetime(2017, 7, 4)
    assert parse({"dateString": "July 4th, 2017 11am"}) == july4.replace(hour=11)
    assert parse({"dateString": "7/4/17"}) == july4
    assert parse({"dateString": "04-07-2017"}) == july4
    assert parse({"dateString": "2017-Jul-04 noon"}) == july4.replace(hour=12)
    assert "an incomplete date/time string" in str(code_of(lambda: parse({"dateString": "July 4th"}))[1])
    # parse_from_format stops when either string runs out (a NUL ends it, as a C string).
    assert "Data missing" in code_of(lambda: parse({"dateString": "2018-01", "format": "%Y-%m-%d"}))[1]
    assert "Trailing data" in code_of(lambda: parse({"dateString": "2018-01", "format": "%Y"}))[1]
    assert "Data missing" in code_of(lambda: parse({"dateString": "12/31\x00/2018", "format": "%m/%d/%Y"}))[1]
    assert "Format literal not found" in code_of(lambda: parse({"dateString": "1992-26-04", "format": "Y-d-m"}))[1]
