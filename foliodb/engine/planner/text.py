"""Plans for ``$text`` inside ``$or``: the text search unioned with an index scan of each other branch.

mongod plans an ``$or`` holding ``$text`` as an OR stage over the text search and the other branches'
index scans (Manual, $text: "if $text is in an $or, all clauses in the $or must be indexed"); a branch no
index serves fails the query (NoQueryExecutionPlans, "Failed to produce a solution for TEXT under OR").
The ``$or`` may be the filter's own or one in its top-level ``$and``; the text branch's own equalities
give a compound text index its prefix (conditions outside the ``$or`` do not reach the branch, as in
mongod). With indexes switched off a collection scan stands in for the other branches, so answers do
not change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foliodb.engine.catalog import IndexInfo
from foliodb.engine.planner.candidates import candidates, index_scan
from foliodb.engine.planner.choose import Plan, indexes_disabled
from foliodb.engine.planner.plans import AccessStage, CollScan, OrScan, TextScan
from foliodb.engine.records import CollectionStore
from foliodb.engine.text import TextIndex, TextQuery, prefix_values, split_text
from foliodb.errors import CommandError, ErrorCode
from foliodb.query.collation import Collator

_UNINDEXED_BRANCH = (
    "error processing query: planner returned error :: caused by :: Failed to produce a solution for TEXT "
    "under OR - other non-TEXT clauses under OR have to be indexed as well."
)


def text_or_plan(
    store: CollectionStore,
    filter_spec: Mapping[str, Any],
    index: IndexInfo,
    text: TextIndex,
    query: TextQuery,
    collator: Collator | None,
) -> Plan:
    branches = _or_holding_text(filter_spec)
    if branches is None:
        raise CommandError(ErrorCode.NoQueryExecutionPlans, _UNINDEXED_BRANCH)
    scans: list[AccessStage] = []
    for branch in branches:
        found_text, rest = split_text(branch)
        if found_text is not None:
            scans.append(TextScan(store, index, text, query, prefix_values(text, rest)))
            continue
        found = candidates(store, branch, None, None, collator)
        scan: AccessStage | None = next((s for c in found if (s := index_scan(store, c)) is not None), None)
        if scan is None:
            if not indexes_disabled():
                raise CommandError(ErrorCode.NoQueryExecutionPlans, _UNINDEXED_BRANCH)
            scan = CollScan(store)
        scans.append(scan)
    return Plan(OrScan(scans))


def _or_holding_text(spec: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The branches of the ``$or`` (the filter's, or one in its top-level ``$and``) of which one holds
    ``$text`` at its own top level; None when ``$text`` sits deeper."""
    ands = spec.get("$and")
    ors = [spec.get("$or")]
    ors += [branch.get("$or") for branch in ands if isinstance(branch, Mapping)] if isinstance(ands, list) else []
    for branches in ors:
        if not isinstance(branches, list) or not all(isinstance(b, Mapping) for b in branches):
            continue
        if any(_holds_text(b) for b in branches):
            return branches
    return None


def _holds_text(branch: Mapping[str, Any]) -> bool:
    ands = branch.get("$and")
    return "$text" in branch or (isinstance(ands, list) and any(isinstance(b, Mapping) and "$text" in b for b in ands))
