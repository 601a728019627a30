"""Accumulators of ``$group``, ``$bucket``, ``$bucketAuto`` and ``$setWindowFields``.

Manual: https://www.mongodb.com/docs/manual/reference/operator/aggregation/#accumulators---group---bucket---bucketauto---setwindowfields-

An accumulator compiles once (``ACCUMULATORS.get("$sum")(arg, scope)``) into
an :class:`Accumulator`: the expression evaluated per input document, and
``start(key_doc, vars)``, which makes a fresh *state* for one group (the
N-accumulators evaluate their ``n`` there, against the group key when it is a
document, as MongoDB does). A state is a small mutable object:

* ``add(value) -> int`` takes one evaluated input and returns the bytes it
  added to the state (for the stage memory limits);
* ``merge(other)`` folds in the partial state of the same group built from
  *later* input (``$group`` spills partial groups to disk and merges them);
* ``result()`` is the value the stage outputs (MISSING becomes null there);
  it never shares mutable state, so a window can keep adding after it.

States hold only plain data (no closures), so they pickle for spilling.

Families, one module each: ``arithmetic`` ($sum $avg $stdDevPop $stdDevSamp
$count), ``selection`` ($min $max $first $last $push $addToSet
$mergeObjects), ``n_family`` ($firstN $lastN $maxN $minN $top $bottom $topN
$bottomN), ``quantiles`` ($percentile $median), ``javascript`` ($accumulator); ``core`` holds what they
share. Importing the package registers every family in :data:`ACCUMULATORS`.
"""

from foliodb.aggregation.accumulators import (  # noqa: F401  (each module registers its accumulators)
    arithmetic,
    javascript,
    n_family,
    quantiles,
    selection,
)
from foliodb.aggregation.accumulators.arithmetic import SumState
from foliodb.aggregation.accumulators.core import (
    ACCUMULATORS,
    DECIMAL,
    GROUP_ONLY,
    Accumulator,
    State,
    compile_accumulator,
    constant_value,
    is_numeric,
)

__all__ = [
    "ACCUMULATORS",
    "DECIMAL",
    "GROUP_ONLY",
    "Accumulator",
    "State",
    "SumState",
    "compile_accumulator",
    "constant_value",
    "is_numeric",
]
