"""span's multi-term ``term`` (prefix, regex, wildcard, fuzzy) against an independent evaluation.

For random documents over a small alphabet (so terms are near one another) and random
queries, the documents a span ``term`` matches alone and inside an ordered ``near`` are
those the reference says (:func:`tests.unit.search.text_reference.expanded_terms`: the index
terms the query stands for, as Lucene expands it), and a lone term's score is BM25 with the
expanded terms' summed idf (Lucene's SpanWeight over SpanMultiTermQueryWrapper).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo.operations import SearchIndexModel

import foliodb
from tests.unit.search.conftest import wait_ready
from tests.unit.search.text_reference import expanded_terms, float32, norm_length, standard_terms

WORD = st.text("abc", min_size=1, max_size=5)
DOCS = st.lists(st.lists(WORD, min_size=1, max_size=6).map(" ".join), min_size=1, max_size=20)
WILDCARD = st.lists(st.sampled_from(["a", "b", "c", "*", "?"]), min_size=1, max_size=4).map("".join)
REGEX = st.lists(st.sampled_from(["a", "b", "c", ".", "[ab]", "a*", "b+", "c?", "(a|bc)"]), min_size=1, max_size=4).map(
    "".join
)
FUZZY = st.fixed_dictionaries(
    {}, optional={"maxEdits": st.integers(0, 2), "prefixLength": st.integers(0, 3), "maxExpansions": st.integers(1, 4)}
)
TERM = st.one_of(
    st.tuples(WILDCARD, st.just({"wildcard": True})),
    st.tuples(REGEX, st.just({"regex": True})),
    st.tuples(WORD, FUZZY.map(lambda f: {"fuzzy": f})),
    st.tuples(WORD, st.just({"prefix": True})),
).map(lambda t: {"term": {"path": "t", "query": t[0], **t[1]}})


def _positions(tokens: list[str], terms: set[str]) -> list[int]:
    return [p for p, t in enumerate(tokens) if t in terms]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=DOCS, specs=st.lists(TERM, min_size=2, max_size=5))
def test_multi_term_spans_equal_the_reference(docs: list[str], specs: list[dict[str, Any]]) -> None:
    tokens = [standard_terms(d) for d in docs]
    vocabulary = set(itertools.chain.from_iterable(tokens))
    n = len(tokens)
    avgdl = sum(len(t) for t in tokens) / n
    with foliodb.MongoClient(":memory:") as client:
        coll = client.test.docs
        coll.insert_many([{"_id": i, "t": d} for i, d in enumerate(docs)])
        coll.create_search_index(SearchIndexModel(name="default", definition={"mappings": {"dynamic": True}}))
        wait_ready(coll, "default")

        def search(spec: dict[str, Any]) -> dict[int, float]:
            pipeline = [{"$search": {"span": spec}}, {"$project": {"s": {"$meta": "searchScore"}}}]
            return {d["_id"]: d["s"] for d in coll.aggregate(pipeline)}

        for spec in specs:
            terms = expanded_terms(spec["term"], vocabulary)
            got = search(spec)
            assert set(got) == {i for i, t in enumerate(tokens) if terms & set(t)}, spec
            weight = sum(
                math.log(1 + (n - df + 0.5) / (df + 0.5)) for df in (sum(w in t for t in tokens) for w in terms)
            )
            for i, score in got.items():
                tf = len(_positions(tokens[i], terms))
                expected = weight * tf / (tf + 1.2 * (1 - 0.75 + 0.75 * norm_length(len(tokens[i])) / avgdl))
                assert abs(score - float32(expected)) <= 1e-5 * expected, (spec, i)
        first, second = specs[0], specs[1]
        near = {"near": {"clauses": [first, second], "slop": 1, "inOrder": True}}
        a, b = (expanded_terms(s["term"], vocabulary) for s in (first, second))
        expected_near = {
            i
            for i, t in enumerate(tokens)
            if any(0 <= q - p - 1 <= 1 for p in _positions(t, a) for q in _positions(t, b))
        }
        assert set(search(near)) == expected_near, near
