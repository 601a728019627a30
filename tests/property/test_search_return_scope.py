"""returnScope with hasRoot and hasAncestor against an independent evaluation.

For random documents holding arrays of items holding arrays of parts (both
``embeddedDocuments`` with a ``storedSource``) and random queries, ``returnScope`` returns
exactly the elements a plain-Python evaluation matches: items whose name holds a word,
narrowed by their document's category (``hasRoot``), and parts whose item's name holds a
word (``hasAncestor``), each with its document's ``_id`` as ``searchRootDocumentId``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.operations import SearchIndexModel

import foliodb
from tests.unit.search.conftest import wait_ready

WORDS = ["red", "blue", "saw", "kite"]
CATEGORIES = ["tools", "toys"]
NAME = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
PART = st.fixed_dictionaries({"kind": st.sampled_from(WORDS)})
ITEM = st.fixed_dictionaries({"name": NAME}, optional={"parts": st.lists(PART, max_size=2)})
DOC = st.fixed_dictionaries({"category": st.sampled_from(CATEGORIES), "items": st.lists(ITEM, max_size=3)})
QUERY = st.tuples(st.sampled_from(WORDS), st.one_of(st.none(), st.sampled_from(CATEGORIES)), st.booleans())
STORED = {"type": "embeddedDocuments", "dynamic": True, "storedSource": True}
DEFINITION = {"mappings": {"dynamic": True, "fields": {"items": {**STORED, "fields": {"parts": STORED}}}}}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(DOC, min_size=1, max_size=12), queries=st.lists(QUERY, min_size=1, max_size=4))
def test_elements_equal_a_python_evaluation(docs: list[dict[str, Any]], queries: list[Any]) -> None:
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.docs
        coll.insert_many([{"_id": i, **d} for i, d in enumerate(docs)])
        coll.create_search_index(SearchIndexModel(name="default", definition=DEFINITION))
        wait_ready(coll, "default")

        def elements(operator: dict[str, Any], scope: str) -> Counter[Any]:
            stage = {**operator, "returnScope": {"path": scope}, "returnStoredSource": True}
            found = coll.aggregate([{"$search": stage}, {"$addFields": {"r": {"$meta": "searchRootDocumentId"}}}])
            return Counter((d.pop("r"), repr(sorted(d.items()))) for d in found)

        for word, category, parts in queries:
            name_has = {"text": {"query": word, "path": "items.name"}}
            if parts:
                got = elements({"hasAncestor": {"ancestorPath": "items", "operator": name_has}}, "items.parts")
                expected = Counter(
                    (i, repr(sorted(part.items())))
                    for i, d in enumerate(docs)
                    for item in d["items"]
                    if word in item["name"].split()
                    for part in item.get("parts", [])
                )
            else:
                operator: dict[str, Any] = name_has
                if category is not None:
                    in_category = {"hasRoot": {"operator": {"text": {"query": category, "path": "category"}}}}
                    operator = {"compound": {"must": [name_has], "filter": [in_category]}}
                got = elements(operator, "items")
                expected = Counter(
                    (i, repr(sorted(item.items())))
                    for i, d in enumerate(docs)
                    if category is None or d["category"] == category
                    for item in d["items"]
                    if word in item["name"].split()
                )
            assert got == expected, (word, category, parts)
