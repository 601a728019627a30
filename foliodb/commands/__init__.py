"""The command layer: one handler per MongoDB command, one module per family.

Importing this package registers every command; :class:`Executor` runs them.
"""

from foliodb.commands import (  # noqa: F401  (each module registers its commands)
    aggregate,
    apply_ops,
    bulk_write,
    capped,
    collections,
    current_op,
    cursors,
    db_hash,
    delete,
    diagnostics,
    explain,
    failpoints,
    find,
    find_and_modify,
    fsync,
    indexes,
    insert,
    map_reduce,
    parameters,
    plan_cache,
    profiler,
    replication,
    roles,
    search_indexes,
    sessions,
    sleep,
    stats,
    update,
    users,
    write,
)
from foliodb.commands.executor import Executor, Request
from foliodb.engine.catalog import CODEC  # how documents cross the command layer

__all__ = ["CODEC", "Executor", "Request"]
