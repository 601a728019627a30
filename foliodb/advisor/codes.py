"""The advisor's stable codes: what a finding's ``problem``, ``recommendation``
and ``severity`` may say. Tools match on these strings, so a code, once
published (docs/advisor.md lists them from these tables), keeps its meaning;
new codes may be added, none renamed.
"""

from __future__ import annotations

PROBLEMS: dict[str, str] = {
    "unbounded-array": "an embedded array that grows with use and is already hundreds of elements long",
    "large-document": "a document large enough to slow every read and write of it, on its way to 16 MiB",
    "huge-reference-array": "an array of references past what one-to-many means (one-to-squillions)",
    "one-document-per-event": "a time series stored as one small document per reading",
    "join-on-read": "the application joins collections on every read (a find, then finds or $in on another)",
    "stale-copy": "copied fields (an extended reference) that no longer match their source",
    "drifting-counter": "a stored count that differs from what it counts",
    "collection-scan": "a recorded query shape that reads far more documents than it returns",
    "in-memory-sort": "a recorded query shape that sorts many documents in memory",
    "missing-ttl": "documents that expire in the application's eyes but are never removed",
    "mixed-types": "one field holding values of different types (or null beside missing)",
    "unused-index": "an index no recorded operation used",
    "redundant-index": "an index whose key is a prefix of another index's key",
    "regex-word-search": "word searches by unanchored $regex, which scan every document",
    "sparse-attributes": "many similar fields, each in a few documents, each queried (and indexed) on its own",
    "split-collections": "one kind of thing split across collections that requests read together",
    "recomputed-aggregate": "an aggregation over many documents recomputed on every request",
    "repeated-subdocument": "the same sub-document copied into many documents, the copies drifting apart",
    "unread-array": "an embedded array far larger than the part the reads use",
    "cold-documents": "most documents are older than anything the workload reads",
    "sparse-field-index": "an index over every document for a field only a few of them have",
    "hot-counter": "a counter incremented by one on every request, a write per read for an estimate",
    "old-versions": "older versions of documents kept beside the current ones, which every read skips",
}

RECOMMENDATIONS: dict[str, str] = {
    "embed": "embed the children in the parent (one-to-few, read together)",
    "reference-array": "an array of references in the parent, read with one $in query",
    "parent-reference": "a reference to the parent in each child document, indexed",
    "bucket": "one document per bucket of items (or per source and hour), with pre-computed aggregates",
    "subset": "keep only the most recent items embedded ($push with $each and $slice), the rest apart",
    "extended-reference": "copy the few read-mostly fields next to the reference and keep them up to date",
    "computed-field": "keep the count up to date with $inc in the same write, and repair it once",
    "separate-collection": "move the part that grows into its own collection",
    "ttl-index": "a TTL index that removes documents once they expire",
    "partial-index": "an index over only the documents the queries select (partialFilterExpression)",
    "compound-index": "an index in equality, sort, range order for the recorded query shape",
    "text-index": "a text index and $text queries",
    "drop-index": "drop the index (hide it first to be sure)",
    "normalize-type": "convert the field's values to one type",
    "tree-ancestors": "store each node's ancestors in it (array of ancestors), read the path in one query",
    "attribute": "key-value pairs in one array ([{k, v}]) under one compound index",
    "polymorphic": "one collection for the kinds, a field saying which kind each document is",
    "schema-versioning": "a version field in each document saying which shape it has",
    "computed": "store the computed result and update it when the data changes, not on every read",
    "archive": "move the documents past the window the application reads into an archive collection",
    "approximation": "increment by N one time in N (or batch the increments): about the count, N times fewer writes",
    "document-versioning": "keep the current versions in the collection, the older ones in a revisions collection",
}

# Lowest first: --min-severity LEVEL keeps LEVEL and those after it.
SEVERITIES: tuple[str, ...] = ("low", "medium", "high", "critical")
SEVERITY_MEANING: dict[str, str] = {
    "low": "hygiene: costs a little on every write or confuses queries",
    "medium": "performance: the workload pays for it on every run",
    "high": "wrong answers, or a limit the data is heading for",
    "critical": "writes will fail: the data is close to a hard limit",
}


def severity_rank(level: str) -> int:
    return SEVERITIES.index(level)
