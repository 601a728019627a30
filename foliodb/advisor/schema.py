"""The schema a collection actually has, as a ``$jsonSchema`` validator every
current document passes, with what a stricter one would reject: Compass's
schema analysis, as a proposal with its evidence.

From the sample: each path's BSON types (several number types are
``"number"``), the paths every sampled document has (``required``, at each
level relative to its parent), array elements' types (``items``), and the
version or kind fields (a field named like ``schema_version``, ``kind`` or
``type`` with at most :data:`VERSIONS` values). Objects with more than
:data:`MAX_KEYS` distinct keys are maps (minutes, ids as keys) and get no
``properties``; nesting stops at :data:`DEPTH`. No ``additionalProperties``:
new fields stay allowed.

The validator is then checked on the collection when a pass is cheap
(:func:`foliodb.advisor.context.Context.exact`): each document it rejects
(the sample missed its shape) widens it, up to :data:`WIDEN` times, and a
validator still rejecting documents drops its ``required`` lists. The
stricter rules (a field most documents have made required, a mixed field
held to its commonest type) come with the documents that break them.

Manual: https://www.mongodb.com/docs/manual/core/schema-validation/specify-json-schema/
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from pymongo.errors import PyMongoError

from foliodb.advisor.report import SchemaSummary, Stricter
from foliodb.advisor.sampling import EXACT_SCAN_DOCS, CollectionProfile
from foliodb.query.bsontypes import type_name

DEPTH = 4
MAX_KEYS = 50
VERSIONS = 20
WIDEN = 5
MOSTLY = 0.9  # a path this share of documents has could be required
STRICTER = 4  # stricter rules shown
EXAMPLES = 3
_NUMBERS = frozenset({"int", "long", "double", "decimal"})
_ABSENT = object()
_VERSION = re.compile(r"^(_?_?v|_t|_cls|kind|type|.*version)$", re.IGNORECASE)


class _Node:
    """What the sample holds at one path."""

    def __init__(self) -> None:
        self.types: Counter[str] = Counter()
        self.present = 0
        self.children: dict[str, _Node] = {}
        self.items: _Node | None = None
        self.objects = 0  # how many of the values were documents

    def add(self, value: Any, depth: int) -> None:
        self.present += 1
        self.types[type_name(value)] += 1
        if isinstance(value, Mapping) and depth < DEPTH:
            self.objects += 1
            for key, child in value.items():
                self.children.setdefault(str(key), _Node()).add(child, depth + 1)
        elif isinstance(value, list) and depth < DEPTH:
            self.items = self.items or _Node()
            for element in value:
                self.items.add(element, depth + 1)

    def schema(self, top: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"bsonType": "object"} if top else {"bsonType": _bson_types(self.types)}
        if (top or self.objects) and len(self.children) <= MAX_KEYS:
            total = self.present if top else self.objects
            out["properties"] = {k: c.schema() for k, c in sorted(self.children.items())}
            required = sorted(k for k, c in self.children.items() if c.present == total)
            if required:
                out["required"] = required
        if self.items is not None and self.items.present:
            out["items"] = self.items.schema()
        return out


def _bson_types(types: Counter[str]) -> str | list[str]:
    names = set(types)
    if len(names & _NUMBERS) > 1:
        names = (names - _NUMBERS) | {"number"}
    ordered = sorted(names)
    return ordered[0] if len(ordered) == 1 else ordered


def infer_schema(database: Any, profile: CollectionProfile) -> SchemaSummary:
    root = _Node()
    for doc in profile.documents:
        root.add(doc, 0)
    root.present = len(profile.documents)
    validator = root.schema(top=True)
    coll = database[profile.name]
    exact = profile.count <= EXACT_SCAN_DOCS
    checked = "sample"
    if exact:
        validator, checked = _widened(coll, root, validator)
    optional = sorted(_optional(root, ""))
    return SchemaSummary(
        validator=validator,
        checked=checked,
        optional=optional,
        versions=_versions(profile),
        stricter=_stricter(coll, profile, root, exact),
    )


def _widened(coll: Any, root: _Node, validator: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The validator, widened by the documents it rejects until the collection passes."""
    for _ in range(WIDEN):
        try:
            rejected = coll.find_one({"$nor": [{"$jsonSchema": validator}]})
        except PyMongoError:  # a server without $jsonSchema in queries: the sample is all there is
            return validator, "sample"
        if rejected is None:
            return validator, "collection"
        root.add(rejected, 0)
        root.present += 1
        validator = root.schema(top=True)
    loose = _without_required(validator)
    try:
        passes = coll.find_one({"$nor": [{"$jsonSchema": loose}]}) is None
    except PyMongoError:
        passes = False
    return loose, "collection" if passes else "sample"


def _without_required(schema: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in schema.items() if k != "required"}
    if "properties" in out:
        out["properties"] = {k: _without_required(v) for k, v in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = _without_required(out["items"])
    return out


def _optional(node: _Node, prefix: str) -> list[str]:
    total = node.objects or node.present
    out = []
    for key, child in node.children.items():
        path = f"{prefix}{key}"
        if child.present < total and len(node.children) <= MAX_KEYS:
            out.append(path)
        if len(child.children) <= MAX_KEYS:
            out += _optional(child, path + ".")
    return out


def _versions(profile: CollectionProfile) -> dict[str, dict[str, int]]:
    """Version or kind fields (named so, few values, scalars): their values in the sample, absence included."""
    found: dict[str, dict[str, int]] = {}
    names = {k for doc in profile.documents for k in doc if _VERSION.match(str(k))}
    for name in sorted(names):
        values: Counter[str] = Counter()
        for doc in profile.documents:
            value = doc.get(name, _ABSENT)
            if isinstance(value, (Mapping, list)):
                break
            values["(missing)" if value is _ABSENT else str(value)] += 1
        else:
            if 1 < len(values) <= VERSIONS:
                found[name] = dict(values.most_common())
    return found


def _stricter(coll: Any, profile: CollectionProfile, root: _Node, exact: bool) -> list[Stricter]:
    rules: list[tuple[str, dict[str, Any]]] = []
    for key, child in sorted(root.children.items(), key=lambda kv: -kv[1].present):
        if MOSTLY * root.present <= child.present < root.present:
            rules.append((f"require {key}", {key: {"$exists": False}}))
        kinds = {"number" if t in _NUMBERS else t for t in child.types if t != "null"}
        if len(kinds) > 1:
            common = child.types.most_common(1)[0][0]
            rules.append((f"{key} always {common}", {key: {"$exists": True, "$not": {"$type": common}}}))
    out = []
    for rule, breaking in rules[:STRICTER]:
        if exact:
            failing = coll.count_documents(breaking)
            examples = [d["_id"] for d in coll.find(breaking, {"_id": 1}).limit(EXAMPLES)]
        else:
            docs = [d for d in profile.documents if _breaks(d, breaking)]
            failing, examples = len(docs), [d.get("_id") for d in docs[:EXAMPLES]]
        out.append(Stricter(rule, failing, exact, examples))
    return out


def _breaks(doc: Mapping[str, Any], breaking: dict[str, Any]) -> bool:
    """Whether a sampled document breaks a stricter rule (the two rule forms :func:`_stricter` makes)."""
    key, test = next(iter(breaking.items()))
    if test == {"$exists": False}:
        return key not in doc
    return key in doc and type_name(doc[key]) != test["$not"]["$type"]
