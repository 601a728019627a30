"""Principles of MongoDB's pattern catalogue the fixture sets meet only in
passing, each on a small database in the design the pattern warns about and
the one it recommends: approximation (a view counter written on every
view), document versioning (old versions beside the current ones), the
outlier pattern (a few documents far longer than the rest) and the search
index beside the text index for word searches (issue 28).

Manual: https://www.mongodb.com/docs/manual/data-modeling/design-patterns/ (the catalogue).
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from bson import json_util

import foliodb
from foliodb.advisor import advise


@pytest.fixture
def db() -> Iterator[Any]:
    client = foliodb.MongoClient(":memory:")
    yield client.site
    client.close()


def _serve(db: Any, request: Callable[[random.Random], None], requests: int, workers: int = 4) -> None:
    """``requests`` requests from ``workers`` threads, profiled."""
    db.command("profile", 2)

    def work(n: int) -> None:
        rnd = random.Random(n)
        for _ in range(requests // workers):
            request(rnd)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    db.command("profile", 0)


def _articles(db: Any) -> None:
    db.articles.insert_many([{"slug": f"a{i}", "title": f"article {i}", "views": 0} for i in range(1000)])
    db.articles.create_index("slug", unique=True)


@pytest.mark.parametrize("approximate", [False, True], ids=["every-view", "one-in-ten"])
def test_a_view_counter_written_on_every_view(db: Any, approximate: bool) -> None:
    # Every view adds 1 to a popular article's counter (the only write of the request): the approximation
    # pattern adds 10 one time in 10. Done that way, nothing is left to say.
    _articles(db)

    def view(rnd: random.Random) -> None:
        article = db.articles.find_one({"slug": f"a{rnd.randrange(20)}"})
        if not approximate:
            db.articles.update_one({"_id": article["_id"]}, {"$inc": {"views": 1}})
        elif rnd.random() < 0.1:
            db.articles.update_one({"_id": article["_id"]}, {"$inc": {"views": 10}})

    _serve(db, view, 240)
    found = [f.key for f in advise(db).findings]
    assert found == ([] if approximate else [("articles", "views", "hot-counter", "approximation")])


def test_a_counter_kept_with_what_it_counts_stays_exact(db: Any) -> None:
    # comment_count rises with each comment inserted in the same request: it must stay exact.
    _articles(db)

    def comment(rnd: random.Random) -> None:
        article = db.articles.find_one({"slug": f"a{rnd.randrange(20)}"})
        db.comments.insert_one({"article_id": article["_id"], "text": "hello"})
        db.articles.update_one({"_id": article["_id"]}, {"$inc": {"comment_count": 1}})

    _serve(db, comment, 240)
    assert [f.key for f in advise(db).findings if f.problem == "hot-counter"] == []


@pytest.mark.parametrize("kept", [False, True], ids=["versions-together", "revisions-apart"])
def test_old_versions_kept_beside_the_current_ones(db: Any, kept: bool) -> None:
    # A wiki keeps every edit of a page as a document with current: true/false, and every read asks for
    # the current one; the document versioning pattern keeps the older versions in pages_revisions.
    docs = [
        {"slug": f"p{page}", "version": v, "current": v == 5, "body": f"text {page}.{v}"}
        for page in range(400)
        for v in range(1, 6)
    ]
    db.pages.insert_many([d for d in docs if d["current"] or not kept])
    if kept:
        db.pages_revisions.insert_many([d for d in docs if not d["current"]])
    db.pages.create_index([("slug", 1), ("current", 1)])

    def read(rnd: random.Random) -> None:
        db.pages.find_one({"slug": f"p{rnd.randrange(400)}", "current": True})

    _serve(db, read, 80)
    findings = advise(db).findings
    assert [f.key for f in findings] == ([] if kept else [("pages", "current", "old-versions", "document-versioning")])
    if not kept:
        # 1,600 of 2,000 documents are old versions (counted on the index); moving them changes no read.
        assert findings[0].evidence["older_versions"] == 1600 and findings[0].evidence["exact"] is True
        proof = findings[0].proof
        assert proof is not None and proof.status == "proven" and proof.queries_replayed > 0
        assert proof.unchanged == proof.queries_replayed


def test_a_few_long_arrays_name_the_outlier_pattern(first_set: Any) -> None:
    # 3 of 300 posts hold 1,500 to 3,000 comments, the rest at most 30: the bucket is proposed, and the
    # outlier pattern (an overflow document for the few) named as the lighter change.
    report = first_set[1][("blog_comments", False)].report
    (finding,) = report.findings
    assert finding.evidence["long_share_sampled"] == pytest.approx(3 / 300, abs=0.002)
    assert "outlier pattern" in finding.change.description


def test_word_searches_name_a_search_index_too(first_set: Any) -> None:
    (finding,) = first_set[1][("word_search", False)].report.findings
    search = finding.evidence["or_a_search_index"]
    assert search[0].startswith("db.articles.createSearchIndex(") and '"$search"' not in search[1]
    assert "$search: { text: { query:" in search[1] and "search index" in finding.change.description


def test_a_tree_walked_down_its_children_one_level_a_query(db: Any) -> None:
    # Categories holding their children's ids; a menu reads a category, then its children, then theirs:
    # one query per level. The ancestors array makes a subtree one query ({"ancestors._id": id}).
    nodes: list[dict[str, Any]] = []

    def add(depth: int) -> Any:
        node: dict[str, Any] = {"_id": len(nodes) + 1, "slug": f"c{len(nodes) + 1}", "name": f"category {len(nodes)}"}
        nodes.append(node)
        node["children"] = [add(depth + 1) for _ in range(4)] if depth < 3 else []
        return node["_id"]

    roots = [add(0) for _ in range(4)]
    db.categories.insert_many(nodes)
    db.categories.create_index("slug", unique=True)

    def menu(rnd: random.Random) -> None:
        level = [db.categories.find_one({"slug": f"c{rnd.choice(roots)}"})]
        while level and level[0]["children"]:
            level = list(db.categories.find({"_id": {"$in": [c for n in level for c in n["children"]]}}))

    _serve(db, menu, 40)
    (finding,) = advise(db).findings
    assert finding.key == ("categories", "children", "join-on-read", "tree-ancestors")
    assert finding.evidence["longest_chain"] == 3 and finding.proof is not None
    assert finding.proof.status == "proven" and '"connectToField": "children"' in json.dumps(finding.as_json())


def test_an_aggregation_starting_with_an_unindexed_match_is_a_missing_index(db: Any) -> None:
    # A report pipeline whose $match and $sort no index serves reads every order each run.
    db.orders.insert_many([{"region": f"r{i % 40}", "total": i % 500, "day": i % 365} for i in range(5000)])

    def report(rnd: random.Random) -> None:
        region = f"r{rnd.randrange(40)}"
        pipeline = [{"$match": {"region": region}}, {"$sort": {"day": -1}}, {"$limit": 20}, {"$project": {"total": 1}}]
        list(db.orders.aggregate(pipeline))

    _serve(db, report, 40)
    (finding,) = advise(db).findings
    assert finding.key == ("orders", "region", "collection-scan", "compound-index")
    assert finding.change.commands == ["db.orders.createIndex({ region: 1, day: -1 })"]
    assert finding.proof is not None and finding.proof.status == "proven"


@pytest.mark.parametrize("widths", ["fixed", "varied"])
def test_numbers_among_fixed_width_digit_codes_convert_with_their_zeros(db: Any, widths: str) -> None:
    # Zip codes stored as strings, a third of them as numbers that lost their leading zeros.
    # A plain $toString would store "2134" where the others say "02134": no query for "02134"
    # would ever find it. Codes of varied widths have no format to restore: converted as they are.
    def code(n: int) -> str:
        return f"{n:05d}" if widths == "fixed" else str(n)

    numbers = [(i * 37) % 3000 for i in range(900)]
    db.customers.insert_many([{"_id": i, "zip": n if i % 3 == 0 else code(n)} for i, n in enumerate(numbers)])
    _serve(db, lambda rnd: list(db.customers.find({"zip": code(rnd.choice(numbers))})), 40)
    [finding] = [f.as_json() for f in advise(db).findings if f.as_json()["recommendation"] == "normalize-type"]
    assert finding["question"] is None
    for command in json_util.loads(json.dumps(finding["change"]["run"])):
        db.customers.update_many(command["args"][0], command["args"][1])
    assert {d["_id"]: d["zip"] for d in db.customers.find()} == {i: code(n) for i, n in enumerate(numbers)}
