"""The query planner: from a filter, a sort and a hint to an access path.

The modules, in the order a query meets them: :mod:`.conditions` (the
filter's conditions by field, their key intervals, partial-filter
implication), :mod:`.bounds` (intervals and key ranges), :mod:`.candidates`
(which indexes can serve the query, each turned into an index scan),
:mod:`.choose` (hints, ``min``/``max``, IDHACK, the plan cache, the
multi-planner's trial: the :class:`Plan`), :mod:`.plans` (the access stages a
plan runs). ``$near`` is planned by :func:`near_plan` with :mod:`.geo`'s
scans; ``$text`` inside ``$or`` by :mod:`.text`. When index keys can answer
without documents: :mod:`.covering` (covered finds), :mod:`.counting`
(COUNT_SCAN), :mod:`.distinct` (DISTINCT_SCAN).

An index only narrows candidates: ``FOLIODB_NO_INDEXES=1`` in the
environment disables every index access path and the answers must not
change (the test suite can run both ways).
"""

from foliodb.engine.planner.choose import Plan, choose_plan, exact_by_index, id_hack_keys, near_plan, plan_access

__all__ = ["Plan", "choose_plan", "exact_by_index", "id_hack_keys", "near_plan", "plan_access"]
