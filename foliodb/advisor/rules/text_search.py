"""Word searches by unanchored ``$regex``: every run reads every document
(no index bounds an unanchored or case-insensitive pattern); a text index
and ``$text`` find the words from the index, as the texts' blog search does
(``{title: "text", body: "text"}``).

A word search is a pattern with no leading ``^`` and a run of three or more
letters, seen at least :data:`MIN_SEARCHES` times on a collection of at
least :data:`foliodb.advisor.context.MIN_DOCS` documents. ``$text`` matches
whole words (stemmed), not substrings: the change says so.

Where search indexes exist, a search index and ``$search`` are the other
answer (the evidence carries both commands, to read: the proof cannot run
them on a server without search indexes).

Manual: https://www.mongodb.com/docs/manual/core/indexes/index-types/index-text/,
https://www.mongodb.com/docs/manual/data-modeling/design-antipatterns/case-insensitive-queries/ and
https://www.mongodb.com/docs/atlas/atlas-search/
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from foliodb.advisor.context import MIN_DOCS, Context
from foliodb.advisor.report import Change, Finding
from foliodb.advisor.shell import call, count
from foliodb.advisor.workload import predicates

MIN_SEARCHES = 5
_WORD = re.compile(r"[A-Za-z]{3,}")


def rule_regex_word_search(ctx: Context) -> Iterator[Finding]:
    searches: dict[tuple[str, tuple[str, ...]], list[Any]] = {}
    for op in ctx.workload.operations:
        if not op.is_read:
            continue
        words = {f: p for f, p in predicates(op.filter).regex.items() if _word_search(p)}
        if words:
            searches.setdefault((op.collection, tuple(words)), []).append((op, words))
    for (collection, fields), runs in searches.items():
        profile = ctx.profiles.get(collection)
        if profile is None or profile.count < MIN_DOCS or len(runs) < MIN_SEARCHES:
            continue
        examined = sum(op.docs_examined for op, _ in runs)
        patterns = list(dict.fromkeys(p for _, words in runs for p in words.values()))
        word = _WORD.search(patterns[0])
        text_index = next((i for i in profile.indexes if "_fts" in i.get("key", {})), None)
        commands = [] if text_index else [call(collection, "createIndex", dict.fromkeys(fields, "text"))]
        commands.append(call(collection, "find", {"$text": {"$search": word.group(0) if word else "<words>"}}))
        yield Finding(
            collection=collection,
            path=fields[0],
            problem="regex-word-search",
            recommendation="text-index",
            severity="medium",
            summary=(
                f"{count(len(runs))} searches of {', '.join(fields)} by regular expression (such as "
                f"{patterns[0]}) read {count(examined / len(runs))} documents each."
            ),
            evidence={
                "searches": len(runs),
                "fields": list(fields),
                "patterns": patterns[:5],
                "docs_examined_avg": round(examined / len(runs)),
                "returned_avg": round(sum(op.returned for op, _ in runs) / len(runs), 1),
                "plans": sorted({op.plan for op, _ in runs}),
                "text_index": text_index["name"] if text_index else None,
                "or_a_search_index": _search_index(collection, fields, word.group(0) if word else "<words>"),
            },
            change=Change(
                ("Query the existing text index" if text_index else f"Create a text index on {', '.join(fields)}")
                + " with $text: it matches whole words, stemmed, in any case (not substrings). Where search "
                "indexes exist (Atlas, and servers with mongot), a search index and $search rank the matches and "
                "can match parts of words too (the evidence shows both commands).",
                commands,
                dict.fromkeys(fields, "text"),
            ),
            effect=f"Searches read the index entries of the words, not all {count(profile.count)} documents.",
        )


def _search_index(collection: str, fields: tuple[str, ...], word: str) -> list[str]:
    """The search-index alternative, as commands to read (not run: not every server has search indexes)."""
    mapping = {"dynamic": False, "fields": {key: {"type": "string"} for key in fields}}
    return [
        call(collection, "createSearchIndex", {"name": "default", "definition": {"mappings": mapping}}).shell(),
        call(
            collection, "aggregate", [{"$search": {"text": {"query": word, "path": list(fields)}}}, {"$limit": 20}]
        ).shell(),
    ]


def _word_search(pattern: str) -> bool:
    body = pattern[1 : pattern.rindex("/")]
    return not body.startswith(("^", "\\A")) and bool(_WORD.search(body))
