"""``$listSearchIndexes``' synonym mapping status, as Atlas documents it and mongot computes it.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/listSearchIndexes/
(``synonymMappingStatus``: BUILDING, READY or FAILED, only for an index with synonyms;
``synonymMappingStatusDetail``: one ``{<mapping name>: {status, queryable, message}}`` per
mapping, ``message`` only when FAILED; each host's ``mainIndex`` the same, its
``synonymMappingStatusDetails`` keyed by mapping name), .../atlas-search/synonyms/ (a source
document that is not well formed makes the mapping unusable). mongot: a mapping with an invalid
document is INVALID, listed FAILED (the worst status wins the index's), its message
``failed to analyze string in synonym document[ with _id <ObjectId hex>]: <problem>`` with the
parser's ``"<field>" is required`` / ``must be a <type>`` / ``cannot be empty`` / ``cannot be
blank`` / ``must be one of [...]``, or Lucene's ``term: <text> analyzed to a zero-length token``;
mappings are listed sorted by name.
"""

from __future__ import annotations

from typing import Any

import pytest
from bson import Binary, ObjectId
from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from tests.unit.search.conftest import vector_index, wait_ready

OID = ObjectId("65240be420da840844a4d077")
UUID_BYTES = bytes(range(16))
UUID_TEXT = "00010203-0405-0607-0809-0a0b0c0d0e0f"
PREFIX = "failed to analyze string in synonym document"


def _setup(db: Any) -> Any:
    db.cars.insert_many([{"_id": 1, "t": "fast car"}, {"_id": 2, "t": "quick automobile"}])
    db.good.insert_one({"mappingType": "equivalent", "synonyms": ["car", "automobile"]})
    db.bad.insert_one({"mappingType": "explicit", "input": ["fast"], "synonyms": ["quick"]})
    definition = {
        "mappings": {"dynamic": True},
        "synonyms": [
            {"name": "zeta", "analyzer": "lucene.standard", "source": {"collection": "good"}},
            {"name": "alpha", "analyzer": "lucene.standard", "source": {"collection": "bad"}},
            {"name": "empty", "analyzer": "lucene.standard", "source": {"collection": "missing"}},
        ],
    }
    db.cars.create_search_index(SearchIndexModel(definition=definition))
    wait_ready(db.cars, "default")
    return db.cars


def _listed(coll: Any) -> dict[str, Any]:
    (found,) = list(coll.aggregate([{"$listSearchIndexes": {"name": "default"}}]))
    return dict(found)


def _ids(coll: Any, synonyms: str) -> set[Any]:
    operator = {"text": {"query": "car fast", "path": "t", "synonyms": synonyms, "matchCriteria": "any"}}
    return {d["_id"] for d in coll.aggregate([{"$search": operator}])}


def test_ready_mappings_are_listed_by_name(db: Any) -> None:
    coll = _setup(db)
    found = _listed(coll)
    ready = {"status": "READY", "queryable": True}
    assert found["synonymMappingStatus"] == "READY"
    assert found["synonymMappingStatusDetail"] == [{"alpha": ready}, {"empty": ready}, {"zeta": ready}]
    main = found["statusDetail"][0]["mainIndex"]
    assert main["synonymMappingStatus"] == "READY"
    assert main["synonymMappingStatusDetails"] == {"alpha": ready, "empty": ready, "zeta": ready}
    # pymongo's helper lists the same document.
    assert next(iter(coll.list_search_indexes()))["synonymMappingStatusDetail"] == found["synonymMappingStatusDetail"]


BAD_DOCUMENTS = [
    ({"_id": OID, "mappingType": "explicit", "synonyms": ["x"]}, f'{PREFIX} with _id {OID}: "input" is required'),
    ({"_id": 7, "synonyms": ["x"]}, f'{PREFIX}: "mappingType" is required'),
    ({"mappingType": None, "synonyms": ["x"]}, f'{PREFIX}: "mappingType" is required'),
    ({"mappingType": 1, "synonyms": ["x"]}, f'{PREFIX}: "mappingType" must be a string'),
    (
        {"mappingType": "Equivalent", "synonyms": ["x"]},
        f'{PREFIX}: "mappingType" must be one of [equivalent, explicit]',
    ),
    ({"mappingType": "equivalent"}, f'{PREFIX}: "synonyms" is required'),
    ({"mappingType": "equivalent", "synonyms": "x"}, f'{PREFIX}: "synonyms" must be a array'),
    ({"mappingType": "equivalent", "synonyms": []}, f'{PREFIX}: "synonyms" cannot be empty'),
    ({"mappingType": "equivalent", "synonyms": ["x", 3]}, f'{PREFIX}: "synonyms[1]" must be a string'),
    ({"mappingType": "equivalent", "synonyms": ["x", None]}, f'{PREFIX}: "synonyms[1]" is required'),
    ({"mappingType": "equivalent", "synonyms": ["x", " \t"]}, f'{PREFIX}: "synonyms[1]" cannot be blank'),
    (
        {"_id": Binary(UUID_BYTES, 4), "mappingType": "explicit", "input": [], "synonyms": ["x"]},
        f'{PREFIX} with _id {UUID_TEXT}: "input" cannot be empty',
    ),
    (
        {"_id": "named", "mappingType": "equivalent", "synonyms": ["car", "!?"]},
        f"{PREFIX}: term: !? analyzed to a zero-length token",
    ),
]


@pytest.mark.parametrize(("document", "message"), BAD_DOCUMENTS)
def test_an_invalid_source_document_fails_its_mapping(db: Any, document: dict[str, Any], message: str) -> None:
    coll = _setup(db)
    db.bad.insert_one({"_id": "d", **document})  # a string _id: not one mongot names
    found = _listed(coll)
    ready = {"status": "READY", "queryable": True}
    failed = {"status": "FAILED", "queryable": False, "message": message}
    assert found["synonymMappingStatus"] == "FAILED"  # the worst mapping's
    assert found["synonymMappingStatusDetail"] == [{"alpha": failed}, {"empty": ready}, {"zeta": ready}]
    main = found["statusDetail"][0]["mainIndex"]
    assert main["synonymMappingStatus"] == "FAILED"
    assert main["synonymMappingStatusDetails"]["alpha"] == failed
    # The index itself stays READY and queryable; only queries naming the mapping fail.
    assert (found["status"], found["queryable"]) == ("READY", True)
    assert _ids(coll, "zeta") == {1, 2}
    with pytest.raises(OperationFailure) as failure:
        _ids(coll, "alpha")
    assert failure.value.code == 8
    assert 'synonym mapping "alpha" is in state INVALID and is not ready to service queries' in str(failure.value)


def test_the_first_bad_document_names_the_problem_and_a_fix_makes_it_ready(db: Any) -> None:
    coll = _setup(db)
    db.bad.insert_many([{"_id": "a", "mappingType": "equivalent"}, {"_id": "b", "mappingType": "x"}])
    detail = _listed(coll)["synonymMappingStatusDetail"][0]["alpha"]
    assert detail["message"] == f'{PREFIX}: "synonyms" is required'
    db.bad.delete_many({"_id": {"$in": ["a", "b"]}})
    found = _listed(coll)
    assert found["synonymMappingStatus"] == "READY"
    assert found["synonymMappingStatusDetail"][0] == {"alpha": {"status": "READY", "queryable": True}}
    assert _ids(coll, "alpha") == {1, 2}  # fast -> quick


def test_indexes_without_synonyms_list_no_synonym_status(db: Any) -> None:
    db.c.insert_one({"_id": 1, "t": "a", "v": [1.0, 2.0, 3.0]})
    db.c.create_search_index(SearchIndexModel(definition={"mappings": {"dynamic": True}}, name="text"))
    db.c.create_search_index(SearchIndexModel(definition={"mappings": {"dynamic": True}, "synonyms": []}, name="none"))
    db.c.create_search_index(SearchIndexModel(definition=vector_index(), name="vec", type="vectorSearch"))
    for name in ("text", "none", "vec"):
        found = wait_ready(db.c, name)
        assert not {"synonymMappingStatus", "synonymMappingStatusDetail"} & set(found)
        assert "synonymMappingStatus" not in found["statusDetail"][0]["mainIndex"]
