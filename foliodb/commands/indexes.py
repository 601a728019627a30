"""Index commands: createIndexes, dropIndexes, listIndexes, and collMod's
``index`` option.

Manual: https://www.mongodb.com/docs/manual/reference/command/createIndexes/
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.commands import collation, params
from foliodb.commands.cursors import cursor_reply
from foliodb.commands.executor import Request
from foliodb.commands.registry import COMMANDS
from foliodb.commands.timeseries import bucket_index_spec, bucket_key, buckets_name, listed_indexes
from foliodb.commands.write import collection_name
from foliodb.engine.catalog import CollectionInfo, IndexInfo
from foliodb.engine.text import language_of
from foliodb.errors import CommandError, ErrorCode
from foliodb.query import compare as cmp
from foliodb.query.bsontypes import is_string
from foliodb.query.collation import Collator
from foliodb.query.collation import parse as parse_collation
from foliodb.query.filter import compile_filter
from foliodb.query.render import render_document

_OPTIONS = {
    "unique",
    "sparse",
    "partialFilterExpression",
    "expireAfterSeconds",
    "hidden",
    "collation",
    "background",
    "storageEngine",
    "weights",
    "default_language",
    "language_override",
    "textIndexVersion",
    "2dsphereIndexVersion",
    "bits",
    "min",
    "max",
    "wildcardProjection",
    "prepareUnique",
    "clustered",
}
# Options that distinguish one index from another with the same key.
_IDENTITY = (
    "unique",
    "sparse",
    "partialFilterExpression",
    "collation",
    "expireAfterSeconds",
    "hidden",
    "weights",
    "default_language",
    "language_override",
    "wildcardProjection",
)


def _index_collator(raw: Mapping[str, Any], default: Collator | None) -> Collator | None:
    """An index's collator: its own (``simple`` is none), else its collection's
    default. https://www.mongodb.com/docs/manual/reference/method/db.collection.createIndex/#collation-option"""
    if "collation" not in raw:
        return default
    value = raw["collation"]
    if isinstance(value, Mapping) and not value:
        raise _spec_error(raw, "The field 'collation' cannot be an empty object.", ErrorCode.BadValue)
    try:
        return parse_collation(value, "collation")
    except CommandError as exc:
        shown = render_document({**raw, "v": 2})
        raise CommandError(
            exc.code,
            "failed to add collation information to index spec for index creation: "
            f"{shown} :: caused by :: {exc.errmsg}",
        ) from None


def _spec_error(spec: Mapping[str, Any], message: str, code: int = ErrorCode.CannotCreateIndex) -> CommandError:
    return CommandError(code, f"Error in specification {render_document(dict(spec))} :: caused by :: {message}")


def normalize_spec(raw: Any, default: Collator | None = None) -> dict[str, Any]:
    """Check an index specification and put it in listIndexes' shape; an
    index without a collation takes ``default``, its collection's."""
    if not isinstance(raw, Mapping):
        raise CommandError(ErrorCode.TypeMismatch, "The 'indexes' field must be an array of objects")
    key = raw.get("key")
    if not isinstance(key, Mapping):
        raise _spec_error(
            raw, "The 'key' field is a required property of an index specification", ErrorCode.FailedToParse
        )
    if not key:
        raise _spec_error(raw, "Index keys cannot be empty.")
    name = raw.get("name")
    if not is_string(name):
        raise _spec_error(
            raw, "The 'name' field is a required property of an index specification", ErrorCode.FailedToParse
        )
    if not name:
        raise _spec_error(raw, "The index name cannot be empty", ErrorCode.BadValue)
    if "\x00" in name:  # mongod's IndexCatalogImpl::_isSpecOk
        raise CommandError(ErrorCode.CannotCreateIndex, "index name cannot contain NUL bytes")
    for field_name, direction in key.items():
        if not field_name:
            raise _spec_error(raw, "Index keys cannot be an empty field.")
        if field_name.startswith("$") and field_name != "$**" and not field_name.endswith(".$**"):
            raise _spec_error(raw, "Index key contains an illegal field name: field name starts with '$'.")
        if is_string(direction):
            if direction not in _SPECIAL_TYPES:
                if direction == "geoHaystack":
                    raise CommandError(
                        ErrorCode.NotImplemented, f"'{direction}' indexes are not implemented in FolioDB yet"
                    )
                raise _spec_error(raw, f"Unknown index plugin '{direction}'")
        elif not cmp.is_number(direction) or cmp.number_value(direction) == 0 or not cmp.is_finite_number(direction):
            raise _spec_error(raw, f"Values in the index key pattern can't be 0 or non-numeric: {direction!r}")
    collator = _index_collator(raw, default)
    spec: dict[str, Any] = {"v": 2, "key": dict(key), "name": name}
    _special_kind(raw, key, spec)
    for option, value in raw.items():
        if option in ("key", "name", "v", "ns"):
            continue
        if option == "dropDups":
            continue  # obsolete since MongoDB 3.0: accepted and dropped, as mongod does
        if option not in _OPTIONS:
            raise _spec_error(
                raw,
                f"The field '{option}' is not valid for an index specification.",
                ErrorCode.InvalidIndexSpecificationOption,
            )
        if option == "collation":
            continue  # spelled out in full below, as mongod does
        # "background" is kept (listIndexes shows it) though every build is the same.
        spec.setdefault(option, value)
    if collator is not None:
        if "_fts" in spec["key"]:
            raise _spec_error(raw, f"Index type 'text' does not support collation: {render_document(collator.spec)}")
        spec["collation"] = dict(collator.spec)
    if "partialFilterExpression" in spec:
        if not isinstance(spec["partialFilterExpression"], Mapping):
            raise _spec_error(raw, "'partialFilterExpression' for an index must be a document", ErrorCode.TypeMismatch)
        compile_filter(spec["partialFilterExpression"])
        if spec.get("sparse"):
            raise _spec_error(raw, 'cannot mix "partialFilterExpression" and "sparse" options', ErrorCode.BadValue)
    if "expireAfterSeconds" in spec:
        ttl = spec["expireAfterSeconds"]
        if not cmp.is_number(ttl) or ttl < 0:
            raise _spec_error(
                raw, "TTL index 'expireAfterSeconds' option must be a non-negative number", ErrorCode.InvalidOptions
            )
        if len(key) > 1:
            raise _spec_error(
                raw,
                "TTL indexes are single-field indexes, compound indexes do not support TTL.",
                ErrorCode.CannotCreateIndex,
            )
    if _is_id_pattern(key):
        _check_id_index(raw)
    elif name == "_id_":
        raise CommandError(
            ErrorCode.BadValue,
            "The index name '_id_' is reserved for the _id index, which must have key pattern {_id: 1}, found key: "
            + render_document(dict(key)),
        )
    elif name == "*":
        # dropIndexes' "*" means every index: no index may be named so.
        raise CommandError(ErrorCode.BadValue, "The index name '*' is not valid.")
    return spec


_SPECIAL_TYPES = ("text", "hashed", "2dsphere", "2d")
# The only fields an _id index specification may have (mongod's allowedIdIndexFieldNames).
_ID_INDEX_FIELDS = frozenset({"collation", "name", "v", "key", "ns", "_id"})
MAX_INDEXES = 64  # per collection, the _id index included


def _is_id_pattern(key: Mapping[str, Any]) -> bool:
    """mongod's isIdIndexPattern: ``{_id: 1}`` or ``{_id: -1}`` (by integer part)."""
    if list(key) != ["_id"] or not cmp.is_number(key["_id"]):
        return False
    return int(cmp.number_value(key["_id"])) in (1, -1)


def _check_id_index(raw: Mapping[str, Any]) -> None:
    """An _id index spec names only the _id index: ``{_id: 1}`` and no
    options (``unique``, ``expireAfterSeconds``... are 197)."""
    shown = {**raw, "v": raw.get("v", 2)}
    for option in shown:
        if option not in _ID_INDEX_FIELDS:
            raise CommandError(
                ErrorCode.InvalidIndexSpecificationOption,
                f"The field '{option}' is not valid for an _id index specification. Specification: "
                + render_document(shown),
            )
    if cmp.number_value(raw["key"]["_id"]) != 1:
        raise CommandError(
            ErrorCode.BadValue,
            "The field 'key' for an _id index must be {_id: 1}, but got " + render_document(dict(raw["key"])),
        )


def check_index_limit(info: CollectionInfo, new_specs: list[dict[str, Any]]) -> None:
    """Refuse to grow a collection past 64 indexes, as mongod does (67)."""
    for n, spec in enumerate(new_specs):
        if len(info.indexes) + n >= MAX_INDEXES:
            raise CommandError(
                ErrorCode.CannotCreateIndex,
                f"add index fails, too many indexes for {info.ns} key:{render_document(spec['key'])}",
            )


def _special_kind(raw: Mapping[str, Any], key: Mapping[str, Any], spec: dict[str, Any]) -> None:
    """Check and complete the spec of a text, hashed or wildcard index."""
    directions = list(key.values())
    wildcard = [name for name in key if name == "$**" or name.endswith(".$**")]
    if "text" in directions or "_fts" in key:
        _text_spec(raw, key, spec)
    elif "2dsphere" in directions or "2d" in directions:
        _geo_spec(raw, key, spec)
    elif "hashed" in directions:
        if directions.count("hashed") > 1:
            raise _spec_error(
                raw, "A maximum of one index field is allowed to be hashed but found 2", ErrorCode.CannotCreateIndex
            )
        if raw.get("unique"):
            raise _spec_error(
                raw,
                "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.",
                ErrorCode.CannotCreateIndex,
            )
    elif wildcard:
        if len(key) > 1:
            raise CommandError(ErrorCode.NotImplemented, "compound wildcard indexes are not implemented in FolioDB yet")
        if raw.get("unique"):
            raise _spec_error(
                raw, "Index type 'wildcard' does not support the unique option", ErrorCode.CannotCreateIndex
            )
        if "wildcardProjection" in raw and wildcard[0] != "$**":
            raise _spec_error(
                raw, "The field 'wildcardProjection' is only allowed in an 'wildcard' index", ErrorCode.FailedToParse
            )
    elif "wildcardProjection" in raw:
        raise _spec_error(
            raw, "The field 'wildcardProjection' is only allowed in an 'wildcard' index", ErrorCode.BadValue
        )


def _text_spec(raw: Mapping[str, Any], key: Mapping[str, Any], spec: dict[str, Any]) -> None:
    """Check a text index spec and put it in listIndexes' shape, as mongod's FTSSpec::fixSpec: other keys
    (1 or -1) may come before and after the text fields, which must be adjacent; the key becomes
    ``{<before>, _fts: "text", _ftsx: 1, <after>}``."""
    weights: dict[str, Any] = {}
    fixed: dict[str, Any] = {}
    seen_text = ended_text = False
    for name, direction in key.items():
        if name == "_fts":
            if direction != "text":
                raise _spec_error(raw, 'expecting _fts:"text"')
            seen_text = True
            fixed.update({"_fts": "text", "_ftsx": 1})
        elif name == "_ftsx":
            if not cmp.is_number(direction) or cmp.number_value(direction) != 1:
                raise _spec_error(raw, "expecting _ftsx:1")
        elif direction == "text":
            if ended_text:
                raise _spec_error(raw, "'text' fields in index must all be adjacent")
            seen_text = True
            weights[name] = 1
            fixed.update({"_fts": "text", "_ftsx": 1})
        else:
            if is_string(direction) or int(cmp.number_value(direction)) not in (1, -1):
                raise _spec_error(raw, "expected value 1 or -1 for non-text key in compound index")
            ended_text = seen_text
            fixed[name] = direction
    given = raw.get("weights", {})
    if given == "$**":
        given = {"$**": 1}
    if not isinstance(given, Mapping):
        raise _spec_error(raw, "text index option 'weights' must be an object")
    for name, weight in given.items():
        if not cmp.is_number(weight):
            raise _spec_error(raw, "weight for text index needs numeric type")
        if not 0 < int(cmp.number_value(weight)) < 99999:
            raise _spec_error(
                raw, f"text index weight must be in the exclusive interval (0,99999) but found: {int(weight)}"
            )
        weights[name] = int(cmp.number_value(weight))
    if not weights:
        raise _spec_error(raw, "text index option 'weights' must specify fields or the wildcard")
    language = raw.get("default_language", "english")
    if not is_string(language):
        raise _spec_error(raw, "default_language needs a string type")
    try:
        language_of(language)
    except CommandError:
        raise _spec_error(raw, "default_language is not valid") from None
    override = raw.get("language_override", "language")
    if not is_string(override):
        raise _spec_error(raw, "language_override must be a string")
    if not override or override.startswith("$") or "." in override:
        raise _spec_error(raw, "language_override is not valid")
    spec["key"] = fixed
    spec["weights"] = dict(sorted(weights.items()))
    spec["default_language"] = language
    spec["language_override"] = override
    spec["textIndexVersion"] = 3


def _geo_spec(raw: Mapping[str, Any], key: Mapping[str, Any], spec: dict[str, Any]) -> None:
    """Check a 2dsphere or 2d index spec (Manual: "2dsphere Indexes", "2d Indexes")."""
    directions = list(key.values())
    plugins = {d for d in directions if is_string(d)}
    if len(plugins) > 1:
        raise _spec_error(raw, "Can't use more than one index plugin for a single index.", ErrorCode.CannotCreateIndex)
    if "2dsphere" in plugins:
        version = raw.get("2dsphereIndexVersion", 3)
        if not cmp.is_number(version) or cmp.number_value(version) not in (1, 2, 3):
            raise CommandError(
                17394, f"unsupported geo index version {{ 2dsphereIndexVersion : {version} }}, only versions: [1,2,3]"
            )
        if cmp.number_value(version) != 3:
            raise CommandError(
                ErrorCode.NotImplemented, "2dsphere index versions 1 and 2 are not implemented in FolioDB"
            )
        spec["2dsphereIndexVersion"] = 3
        return
    if directions.count("2d") > 1:
        raise _spec_error(raw, "can't have 2 geo fields", ErrorCode.CannotCreateIndex)
    if directions[0] != "2d":
        raise _spec_error(raw, "2d has to be first in index", ErrorCode.CannotCreateIndex)
    bits = raw.get("bits", 26)
    if not cmp.is_number(bits) or not 1 <= cmp.number_value(bits) <= 32:
        raise _spec_error(raw, "bits in geo index must be between 1 and 32", ErrorCode.InvalidOptions)
    low, high = raw.get("min", -180.0), raw.get("max", 180.0)
    if not (cmp.is_number(low) and cmp.is_number(high)) or not cmp.number_value(low) < cmp.number_value(high):
        raise _spec_error(raw, "need a max value > min value", ErrorCode.InvalidOptions)


def _identity(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(spec.get(option) for option in _IDENTITY)


@COMMANDS.register("createIndexes")
def cmd_createIndexes(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "createIndexes")
    raw_specs = params.field(cmd, "indexes", "array", "createIndexes")
    if not raw_specs:
        raise CommandError(ErrorCode.BadValue, "Must specify at least one index to create")
    engine = request.engine
    info = engine.catalog.get(request.db, name)
    if info is not None and info.is_timeseries:
        # Indexes on a time-series collection are indexes on its buckets.
        raw_specs = [bucket_index_spec(info.options["timeseries"], raw) for raw in raw_specs]
        name = buckets_name(name)
    default = collation.default_of(request, name)
    specs = [normalize_spec(raw, default) for raw in raw_specs]
    created_collection = False
    while True:
        with engine.storage.write():
            store = engine.store(request.db, name)
            if store is None:
                store = engine.ensure_collection(request.db, name)
                created_collection = True
            before = len(store.info.indexes)
            in_progress = next((spec["name"] for spec in specs if spec["name"] in store.info.building), None)
            if in_progress is None:
                to_build = [spec for spec in specs if _conflicting(store.info, spec) is None]
                check_index_limit(store.info, to_build)
                build = engine.begin_index_build(store, to_build) if to_build else None
                break
        # The same index is being built by another command: wait for it, then look again.
        engine.wait_for_build(request.db, name, in_progress)
    if build is not None:
        engine.run_index_build(build)
    info = engine.catalog.get(request.db, name)
    reply: dict[str, Any] = {
        "numIndexesBefore": before,
        "numIndexesAfter": len(info.indexes) if info is not None else before,
        "createdCollectionAutomatically": created_collection,
        "ok": 1.0,
    }
    if not to_build:
        reply["note"] = "all indexes already exist"
    return reply


def _conflicting(info: CollectionInfo, spec: dict[str, Any]) -> IndexInfo | None:
    """The identical existing index (creating it again is a no-op), or None;
    raises MongoDB's error when an existing index conflicts."""
    if _is_id_pattern(spec["key"]) and "_id_" in info.indexes:
        return info.indexes["_id_"]  # {_id: 1} under any name is the _id index: nothing to build
    same_name = info.indexes.get(spec["name"])
    if same_name is not None:
        if list(same_name.key.items()) == list(spec["key"].items()) and _identity(same_name.spec) == _identity(spec):
            return same_name
        if list(same_name.key.items()) != list(spec["key"].items()):
            raise CommandError(
                ErrorCode.IndexKeySpecsConflict,
                "An existing index has the same name as the requested index. When index names are not "
                "specified, they are auto generated and can cause conflicts. Please refer to our "
                f"documentation. Requested index: {render_document(spec)}, existing index: "
                f"{render_document(same_name.spec)}",
            )
        raise CommandError(
            ErrorCode.IndexOptionsConflict,
            "An equivalent index already exists with the same name but different options. Requested index: "
            f"{render_document(spec)}, existing index: {render_document(same_name.spec)}",
        )
    for index in info.indexes.values():
        if "_fts" in spec["key"] and index.kind == "text" and index.name != spec["name"]:
            raise CommandError(
                ErrorCode.IndexOptionsConflict,
                f"An equivalent index already exists with a different name and options. Requested index: "
                f"{render_document(spec)}, existing index: {render_document(index.spec)}",
            )
        if list(index.key.items()) != list(spec["key"].items()):
            continue
        if _identity(index.spec)[:4] == _identity(spec)[:4]:
            if _identity(index.spec) == _identity(spec):
                raise CommandError(
                    ErrorCode.IndexOptionsConflict,
                    f"Index already exists with a different name: {index.name}",
                )
            raise CommandError(
                ErrorCode.IndexOptionsConflict,
                "An equivalent index already exists with a different name and options. Requested index: "
                f"{render_document(spec)}, existing index: {render_document(index.spec)}",
            )
    return None


def find_index(info: CollectionInfo, selector: Any) -> IndexInfo:
    if is_string(selector):
        index = info.indexes.get(selector)
        if index is None:
            raise CommandError(ErrorCode.IndexNotFound, f"index not found with name [{selector}]")
        return index
    if isinstance(selector, Mapping):
        matches = [i for i in info.indexes.values() if list(i.key.items()) == list(selector.items())]
        if not matches:
            raise CommandError(ErrorCode.IndexNotFound, f"can't find index with key: {render_document(dict(selector))}")
        if len(matches) > 1:
            raise CommandError(
                ErrorCode.AmbiguousIndexKeyPattern,
                f"{len(matches)} indexes found for key: {render_document(dict(selector))}, identify by name instead.",
            )
        return matches[0]
    raise CommandError(ErrorCode.TypeMismatch, "invalid index name spec")


@COMMANDS.register("dropIndexes", "deleteIndexes")
def cmd_dropIndexes(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    command = next(iter(cmd))
    name = collection_name(cmd, command)
    engine = request.engine
    selector = cmd.get("index")
    info = engine.catalog.get(request.db, name)
    if info is not None and info.is_timeseries:
        ts = info.options["timeseries"]
        name = buckets_name(name)
        if isinstance(selector, Mapping):
            selector = bucket_key(ts, selector)
        elif isinstance(selector, list):
            selector = [bucket_key(ts, s) if isinstance(s, Mapping) else s for s in selector]
    with engine.storage.write():
        store = engine.store(request.db, name)
        if store is None:
            raise CommandError(ErrorCode.NamespaceNotFound, f"ns not found {request.db}.{name}")
        info = store.info
        before = len(info.indexes)
        if selector == "*":
            # As mongod: every index but _id, builds in progress aborted too.
            targets = [i for i in [*info.indexes.values(), *info.building.values()] if i.name != "_id_"]
        elif isinstance(selector, list):
            targets = [_find_index_or_build(info, s) for s in selector]
        else:
            targets = [_find_index_or_build(info, selector)]
        for index in targets:
            if index.name == "_id_":
                raise CommandError(ErrorCode.InvalidOptions, "cannot drop _id index")
        for index in targets:
            engine.drop_index(info, index)
    return {"nIndexesWas": before, "ok": 1.0}


def _find_index_or_build(info: CollectionInfo, selector: Any) -> IndexInfo:
    """An index to drop: a ready one, or one being built (whose build it aborts, as mongod's dropIndexes does)."""
    if is_string(selector) and selector in info.building:
        return info.building[selector]
    return find_index(info, selector)


@COMMANDS.register("listIndexes")
def cmd_listIndexes(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    name = collection_name(cmd, "listIndexes")
    info = request.engine.catalog.get(request.db, name)
    if info is None:
        raise CommandError(ErrorCode.NamespaceNotFound, f"ns does not exist: {request.db}.{name}")
    if info.is_timeseries:
        buckets = request.engine.catalog.get(request.db, buckets_name(name))
        specs = listed_indexes(info, buckets) if buckets is not None else []
    elif info.is_view:  # mongod's AutoGetCollection refuses a view (jstests/core/views/views_all_commands.js)
        raise CommandError(
            ErrorCode.CommandNotSupportedOnView, f"Namespace {request.db}.{name} is a view, not a collection"
        )
    else:
        specs = [listed_spec(info, index) for index in info.indexes.values()]
    cursor = cmd.get("cursor") or {}
    batch_size = cursor.get("batchSize") if isinstance(cursor, Mapping) else None
    return cursor_reply(request, f"{request.db}.$cmd.listIndexes.{name}", iter(specs), batch_size)


def listed_spec(info: CollectionInfo, index: IndexInfo) -> dict[str, Any]:
    """An index as listIndexes shows it; a clustered collection's _id index as
    its clustered index, with the collection's default collation (mongod's
    formatClusterKeyForListIndexes)."""
    clustered = info.options.get("clusteredIndex")
    if index.name == "_id_" and isinstance(clustered, Mapping):
        default = {"collation": info.options["collation"]} if "collation" in info.options else {}
        return {**clustered, **default, "clustered": True}
    return dict(index.spec)


def modify_index(request: Request, db: str, name: str, change: Any) -> dict[str, Any]:
    """collMod's ``index`` option: hide/unhide an index or change its TTL (inside the collMod's write)."""
    info = request.engine.catalog.get(db, name)
    assert info is not None
    if not isinstance(change, Mapping):
        raise CommandError(ErrorCode.TypeMismatch, "collMod 'index' must be a document")
    if "name" in change and "keyPattern" in change:
        raise CommandError(ErrorCode.InvalidOptions, "Cannot specify both key pattern and name.")
    if "name" in change:
        index = find_index(info, change["name"])
    elif "keyPattern" in change:
        index = find_index(info, change["keyPattern"])
    else:
        raise CommandError(ErrorCode.InvalidOptions, "Must specify either index name or key pattern.")
    spec = dict(index.spec)
    reply: dict[str, Any] = {}
    if "hidden" in change:
        if index.name == "_id_":
            raise CommandError(ErrorCode.BadValue, "can't hide _id index")
        reply["hidden_old"] = bool(spec.get("hidden", False))
        reply["hidden_new"] = bool(change["hidden"])
        if change["hidden"]:
            spec["hidden"] = True
        else:
            spec.pop("hidden", None)
    if "expireAfterSeconds" in change:
        ttl = params.field(change, "expireAfterSeconds", "integer", "collMod.index")
        if ttl < 0:
            raise CommandError(ErrorCode.InvalidOptions, "TTL index 'expireAfterSeconds' option cannot be less than 0")
        if "expireAfterSeconds" in spec:
            reply["expireAfterSeconds_old"] = spec["expireAfterSeconds"]
        # Since MongoDB 5.1 a non-TTL single-field index becomes a TTL index.
        elif index.name == "_id_":
            raise CommandError(ErrorCode.InvalidOptions, "the _id field does not support TTL indexes")
        elif len(index.key) != 1:
            raise CommandError(
                ErrorCode.InvalidOptions, "TTL indexes are single-field indexes, compound indexes do not support TTL"
            )
        reply["expireAfterSeconds_new"] = ttl
        spec["expireAfterSeconds"] = ttl
    request.engine.draft().update_index_spec(info, index, spec)
    modified = {key: reply[f"{key}_new"] for key in ("hidden", "expireAfterSeconds") if key in change}
    before = {key: reply[f"{key}_old"] for key in ("hidden", "expireAfterSeconds") if f"{key}_old" in reply}
    o2 = {"collectionOptions_old": request.engine.options_before(info), "indexOptions_old": before}
    request.engine.record(db, info, {"collMod": name, "index": {"name": index.name, **modified}}, o2=o2)
    reply["ok"] = 1.0
    return reply


@COMMANDS.register("reIndex")
def cmd_reIndex(request: Request, cmd: Mapping[str, Any]) -> dict[str, Any]:
    """Rebuild a collection's indexes (manual: reIndex). As mongod 6.0+, only a standalone may:
    a replica set member answers IllegalOperation."""
    name = collection_name(cmd, "reIndex")
    if request.executor.replica_set is not None:
        raise CommandError(ErrorCode.IllegalOperation, "reIndex is only allowed on a standalone mongod instance.")
    engine = request.engine
    info = engine.catalog.get(request.db, name)
    if info is not None and info.is_view:
        raise CommandError(ErrorCode.CommandNotSupportedOnView, "can't re-index a view")
    with engine.storage.write():
        store = engine.store(request.db, name)
        if store is None:
            raise CommandError(ErrorCode.NamespaceNotFound, f"collection {request.db}.{name} does not exist")
        specs = [listed_spec(store.info, index) for index in store.info.indexes.values()]
        rebuilt = [dict(index.spec) for index in store.info.indexes.values() if index.name != "_id_"]
        for index in [i for i in store.info.indexes.values() if i.name != "_id_"]:
            engine.drop_index(store.info, index)
        build = engine.begin_index_build(store, rebuilt) if rebuilt else None
    if build is not None:
        engine.run_index_build(build)
    return {"nIndexesWas": len(specs), "nIndexes": len(specs), "indexes": specs, "ok": 1.0}
