"""The rules, one a module, in one table: name -> function from the
:class:`~foliodb.advisor.context.Context` to findings. docs/advisor.md
lists each with its threshold and its source."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from foliodb.advisor.context import Context
from foliodb.advisor.report import Finding
from foliodb.advisor.rules.approximation import rule_hot_counter
from foliodb.advisor.rules.archive import rule_cold_documents
from foliodb.advisor.rules.attributes import rule_sparse_attributes
from foliodb.advisor.rules.computed import rule_recomputed_aggregate
from foliodb.advisor.rules.counters import rule_drifting_counter
from foliodb.advisor.rules.expiring import rule_missing_ttl
from foliodb.advisor.rules.indexes import rule_redundant_index, rule_unused_index
from foliodb.advisor.rules.joins import rule_join_on_read
from foliodb.advisor.rules.large_documents import rule_large_document
from foliodb.advisor.rules.lookups import rule_lookup_on_read
from foliodb.advisor.rules.mixed_types import rule_mixed_types
from foliodb.advisor.rules.polymorphic import rule_split_collections
from foliodb.advisor.rules.reference_arrays import rule_huge_reference_array
from foliodb.advisor.rules.repeated import rule_repeated_subdocument
from foliodb.advisor.rules.revisions import rule_old_versions
from foliodb.advisor.rules.scans import rule_collection_scan
from foliodb.advisor.rules.sparse_indexes import rule_sparse_field_index
from foliodb.advisor.rules.stale_copies import rule_stale_copy
from foliodb.advisor.rules.subset import rule_unread_array
from foliodb.advisor.rules.text_search import rule_regex_word_search
from foliodb.advisor.rules.time_series import rule_one_document_per_event
from foliodb.advisor.rules.unbounded_arrays import rule_unbounded_array

Rule = Callable[[Context], Iterable[Finding]]

RULES: dict[str, Rule] = {
    "large-document": rule_large_document,
    "unbounded-array": rule_unbounded_array,
    "huge-reference-array": rule_huge_reference_array,
    "one-document-per-event": rule_one_document_per_event,
    "join-on-read": rule_join_on_read,
    "lookup-on-read": rule_lookup_on_read,
    "recomputed-aggregate": rule_recomputed_aggregate,
    "sparse-attributes": rule_sparse_attributes,
    "split-collections": rule_split_collections,
    "repeated-subdocument": rule_repeated_subdocument,
    "unread-array": rule_unread_array,
    "cold-documents": rule_cold_documents,
    "old-versions": rule_old_versions,
    "hot-counter": rule_hot_counter,
    "stale-copy": rule_stale_copy,
    "drifting-counter": rule_drifting_counter,
    "collection-scan": rule_collection_scan,
    "regex-word-search": rule_regex_word_search,
    "missing-ttl": rule_missing_ttl,
    "mixed-types": rule_mixed_types,
    "unused-index": rule_unused_index,
    "redundant-index": rule_redundant_index,
    "sparse-field-index": rule_sparse_field_index,
}
