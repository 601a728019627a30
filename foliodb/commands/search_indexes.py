"""MongoDB Search index commands: createSearchIndexes, updateSearchIndex, dropSearchIndex,
and what ``$listSearchIndexes`` lists.

Manual: https://www.mongodb.com/docs/manual/reference/command/createSearchIndexes/,
https://www.mongodb.com/docs/manual/reference/command/updateSearchIndex/,
https://www.mongodb.com/docs/manual/reference/command/dropSearchIndex/,
https://www.mongodb.com/docs/manual/reference/operator/aggregation/listSearchIndexes/

Definitions are checked (:mod:`foliodb.engine.search.definition`) and stored
in the catalog in one write transaction; a ``vectorSearch`` index is then
built in the background (``BUILDING``, then ``READY``), as mongot builds
one, but from then on it changes with every commit of its collection (see
:mod:`foliodb.engine.search`). Replies have mongod's shapes:
``{indexesCreated: [{id, name}]}`` and ``{ok: 1}``; errors are mongod's and
mongot's: NamespaceNotFound for a missing collection, IndexAlreadyExists
("Duplicate Index") for a name in use, IndexNotFound for an unknown one,
InvalidOptions for ``name`` and ``id`` together.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from bson import Int64, ObjectId

from foliodb.commands import params
from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.commands.write import collection_name
from foliodb.engine.catalog import CollectionInfo
from foliodb.engine.engine import Engine
from foliodb.engine.search.catalog import SearchIndexInfo
from foliodb.engine.search.definition import parse
from foliodb.engine.search.text.mapping import TextDefinition
from foliodb.engine.search.text.operators.synonym import mapping_problems
from foliodb.engine.search.text.search import Explained as TextExplained
from foliodb.engine.search.text.search import text_search
from foliodb.engine.search.vector_search import Explained, vector_search
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.bsontypes import is_string
from foliodb.query.idl import missing_field, unknown_field, wrong_type

TYPES = ("search", "vectorSearch")


def _collection(engine: Engine, db: str, name: str) -> CollectionInfo:
    """The collection, or mongod's NamespaceNotFound (a view has no search indexes of its own)."""
    info = engine.catalog.get(db, name)
    if info is None or info.is_view:
        raise CommandError(ErrorCode.NamespaceNotFound, f"Collection '{db}.{name}' does not exist.")
    return info


def _one_of(cmd: Mapping[str, Any], command: str, required: bool) -> tuple[str | None, str | None]:
    name, index_id = cmd.get("name"), cmd.get("id")
    if name is not None and not is_string(name):
        raise wrong_type(f"{command}.name", name, "string")
    if index_id is not None and not is_string(index_id):
        raise wrong_type(f"{command}.id", index_id, "string")
    if name is not None and index_id is not None:
        raise CommandError(ErrorCode.InvalidOptions, "Cannot set both 'name' and 'id'.")
    if required and name is None and index_id is None:
        raise CommandError(ErrorCode.InvalidOptions, "Must set either 'name' or 'id'.")
    return name, index_id


def find_search_index(info: CollectionInfo, name: str | None, index_id: str | None) -> SearchIndexInfo:
    for index in info.search_indexes.values():
        if (name is not None and index.name == name) or (index_id is not None and index.public_id == index_id):
            return index
    shown = name if name is not None else index_id
    raise CommandError(ErrorCode.IndexNotFound, f"Index '{shown}' not found")


def _model(raw: Any) -> tuple[str, str, dict[str, Any]]:
    """(name, type, definition) of one ``indexes`` entry, checked."""
    where = "createSearchIndexes.indexes"
    if not isinstance(raw, Mapping):
        raise wrong_type(where, raw, "object")
    for key in raw:
        if key not in ("name", "type", "definition"):
            raise unknown_field(where, key)
    name = raw.get("name", "default")
    if not is_string(name):
        raise wrong_type(f"{where}.name", name, "string")
    kind = raw.get("type", "search")
    if not is_string(kind):
        raise wrong_type(f"{where}.type", kind, "string")
    if kind not in TYPES:
        raise CommandError(ErrorCode.BadValue, f"Invalid index type '{kind}': must be one of 'search', 'vectorSearch'")
    if "definition" not in raw:
        raise missing_field(where, "definition")
    definition = raw["definition"]
    if not isinstance(definition, Mapping):
        raise wrong_type(f"{where}.definition", definition, "object")
    parse(kind, definition)
    return str(name), str(kind), dict(definition)


@COMMANDS.register("createSearchIndexes")
def cmd_createSearchIndexes(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "createSearchIndexes")
    raw = params.parse(cmd, "createSearchIndexes", {"indexes": "array"}).get("indexes")
    if raw is None:
        raise missing_field("createSearchIndexes", "indexes")
    models = [_model(entry) for entry in raw]
    names = [model[0] for model in models]
    if len(set(names)) != len(names):
        raise CommandError(ErrorCode.IndexAlreadyExists, "Duplicate Index")
    engine = request.engine
    created = []
    with engine.storage.write():
        info = _collection(engine, request.db, name)
        if any(model_name in info.search_indexes for model_name in names):
            raise CommandError(ErrorCode.IndexAlreadyExists, "Duplicate Index")
        for model_name, kind, definition in models:
            index = SearchIndexInfo(0, info.id, model_name, str(ObjectId()), kind, definition, 0, time.time())
            index = engine.draft().add_search_index(info, index)
            created.append({"id": index.public_id, "name": index.name})
    engine.search.wake()
    return {"indexesCreated": created, "ok": 1.0}


@COMMANDS.register("updateSearchIndex")
def cmd_updateSearchIndex(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "updateSearchIndex")
    params.parse(cmd, "updateSearchIndex", {"name": params.ANY, "id": params.ANY, "definition": params.ANY})
    index_name, index_id = _one_of(cmd, "updateSearchIndex", True)
    definition = cmd.get("definition")
    if definition is None:
        raise missing_field("updateSearchIndex", "definition")
    if not isinstance(definition, Mapping):
        raise wrong_type("updateSearchIndex.definition", definition, "object")
    engine = request.engine
    with engine.storage.write():
        info = _collection(engine, request.db, name)
        index = find_search_index(info, index_name, index_id)
        parse(index.type, definition)
        updated = dataclasses.replace(
            index, definition=dict(definition), version=index.version + 1, created=time.time()
        )
        engine.draft().replace_search_index(info, updated)
    engine.search.forget(index)  # the old version's structures; the new one builds in the background
    engine.search.wake()
    return {"ok": 1.0}


@COMMANDS.register("dropSearchIndex")
def cmd_dropSearchIndex(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "dropSearchIndex")
    params.parse(cmd, "dropSearchIndex", {"name": params.ANY, "id": params.ANY})
    index_name, index_id = _one_of(cmd, "dropSearchIndex", True)
    engine = request.engine
    with engine.storage.write():
        info = _collection(engine, request.db, name)
        index = find_search_index(info, index_name, index_id)
        engine.draft().remove_search_index(info, index)
    engine.search.forget(index)
    return {"ok": 1.0}


def listed(engine: Engine, db: str, name: str, index_name: str | None, index_id: str | None) -> list[dict[str, Any]]:
    """``$listSearchIndexes`` documents (none for a missing collection). Beside MongoDB's fields,
    each has ``$indexStats``' ``accesses`` (searches since the engine opened or the index
    changed) and, for a built vector index, ``numDocs`` (the documents it holds), as Atlas's
    index metrics report them."""
    info = engine.catalog.get(db, name)
    if info is None:
        return []
    out = []
    for index in info.search_indexes.values():
        if index_name is not None and index.name != index_name:
            continue
        if index_id is not None and index.public_id != index_id:
            continue
        status = engine.search.status(index)
        version = {"version": index.version, "createdAt": index.created_at}
        ops, since = engine.search.usage.get(index.id, (0, index.created_at))
        extra: dict[str, Any] = {"accesses": {"ops": Int64(ops), "since": since}}
        indexed = engine.search.indexed(index)
        if indexed is not None:
            extra["numDocs"] = Int64(indexed)
        synonyms = _synonym_status(engine, db, index)
        host_synonyms = {}
        if synonyms:
            host_synonyms = {
                "synonymMappingStatus": synonyms["synonymMappingStatus"],
                "synonymMappingStatusDetails": {
                    name: detail for item in synonyms["synonymMappingStatusDetail"] for name, detail in item.items()
                },
            }
        out.append(
            {
                "id": index.public_id,
                "name": index.name,
                "type": index.type,
                "status": status,
                "queryable": status == "READY",
                "latestDefinitionVersion": version,
                "latestDefinition": index.definition,
                **synonyms,
                "statusDetail": [
                    {
                        "hostname": "foliodb",
                        "status": status,
                        "queryable": status == "READY",
                        "mainIndex": {
                            "status": status,
                            "queryable": status == "READY",
                            **host_synonyms,
                            "definitionVersion": version,
                            "definition": index.definition,
                        },
                    }
                ],
                **extra,
            }
        )
    return out


def _synonym_status(engine: Engine, db: str, index: SearchIndexInfo) -> dict[str, Any]:
    """A search index's synonym mappings as Atlas lists them: ``synonymMappingStatus`` (the
    worst: FAILED over READY) and ``synonymMappingStatusDetail``, one ``{name: {status,
    queryable, message?}}`` per mapping; nothing for an index without synonyms. A mapping reads
    its source collection as it is now, so it is READY or FAILED (a bad source document), never
    BUILDING."""
    definition = index.parsed
    if not isinstance(definition, TextDefinition) or not definition.synonyms:
        return {}
    details = []
    for name, problem in mapping_problems(definition, lambda source: engine.store(db, source)).items():
        detail: dict[str, Any] = {"status": "READY" if problem is None else "FAILED", "queryable": problem is None}
        if problem is not None:
            detail["message"] = problem
        details.append({name: detail})
    worst = "FAILED" if any(not d["queryable"] for item in details for d in item.values()) else "READY"
    return {"synonymMappingStatus": worst, "synonymMappingStatusDetail": details}


def explain_vector_search(engine: Engine, db: str, coll: str, query: Any, spec: Any) -> dict[str, Any]:
    """A ``$vectorSearch`` stage as explain shows it: its specification, and what the engine did
    (the search is run: it reads one snapshot and writes nothing)."""
    explained = Explained(query.index)
    timer = time.perf_counter()
    vector_search(engine.search, engine.store(db, coll), query, explained)
    millis = int((time.perf_counter() - timer) * 1000)
    details = {
        "type": "vectorSearch",
        "index": query.index,
        "status": explained.status or "NOT_FOUND",
        "method": explained.method,
        "candidatesScored": explained.candidates,
        "pendingRows": explained.pending,
        "changedInSnapshot": explained.dirty,
        "nReturned": explained.returned,
        "executionTimeMillis": millis,
    }
    return {"$vectorSearch": {**dict(spec), "explain": details}}


def explain_text_search(engine: Engine, db: str, coll: str, query: Any, spec: Any) -> dict[str, Any]:
    """A ``$search`` / ``$searchMeta`` stage as explain shows it: its specification, and what
    the engine did (the search is run: it reads one snapshot and writes nothing)."""
    explained = TextExplained(query.index)
    timer = time.perf_counter()
    found = text_search(engine.search, engine.store(db, coll), query, explained, lambda name: engine.store(db, name))
    millis = int((time.perf_counter() - timer) * 1000)
    details = {
        "type": "search",
        "index": query.index,
        "status": explained.status or "NOT_FOUND",
        "method": explained.method,
        "operator": query.operator[0] if query.operator is not None else None,
        "segments": explained.segments,
        "changedInSnapshot": explained.changed,
        "nMatched": explained.matched,
        "count": found.meta["count"],
        "executionTimeMillis": millis,
    }
    name = "$searchMeta" if query.meta_only else "$search"
    return {name: {**dict(spec), "explain": details}}
