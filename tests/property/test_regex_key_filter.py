"""An index scan under a regex no prefix bounds tests each key's string before reading its
record (foliodb/engine/planner/key_filter.py). Forced onto the index with a hint, the query
returns what a collection scan returns, for random strings (case variants, NULs, accents),
values of other types (a stored regex among them), missing fields, and regexes with options,
on an ascending index and on a compound one whose regex field is descending."""

from __future__ import annotations

import re
from typing import Any

from bson import Regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

STRINGS = st.text(alphabet="aAbBé\x00\n", max_size=4)
VALUES = st.one_of(STRINGS, st.integers(-2, 2), st.none(), st.just(Regex("^a", "i")), st.just(re.compile("b")))
DOCS = st.lists(st.fixed_dictionaries({"n": st.integers(0, 3)}, optional={"s": VALUES}), max_size=15)
PATTERNS = st.sampled_from(["^a", "a", "b$", "^A.b", "é", "^$", "a|B", "\\x00", "^a$"])
OPTIONS = st.sampled_from(["", "i", "m", "s", "im", "x"])
INDEXES = {"s_1": [("s", 1)], "s_-1_n_1": [("s", -1), ("n", 1)], "n_1_s_-1": [("n", 1), ("s", -1)]}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=DOCS, pattern=PATTERNS, options=OPTIONS, index=st.sampled_from(sorted(INDEXES)), bare=st.booleans())
def test_a_hinted_index_scan_under_a_regex_returns_what_a_scan_returns(
    client: Any, docs: list[dict[str, Any]], pattern: str, options: str, index: str, bare: bool
) -> None:
    coll = client.db.c
    coll.drop()
    coll.create_index(INDEXES[index], name=index)
    if docs:
        coll.insert_many([{"_id": i, **doc} for i, doc in enumerate(docs)])
    cond: Any = Regex(pattern, options) if bare else {"$regex": pattern, "$options": options}
    query: dict[str, Any] = {"s": cond, "n": {"$gte": 0}} if index.startswith("n_") else {"s": cond}
    by_index = sorted(doc["_id"] for doc in coll.find(query).hint(index))
    by_scan = sorted(doc["_id"] for doc in coll.find(query).hint({"$natural": 1}))
    assert by_index == by_scan
    assert coll.count_documents(query, hint=index) == len(by_scan)
