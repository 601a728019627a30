"""What a pipeline may ask of the database around it.

Stages that reach beyond their input (``$lookup``, ``$graphLookup``,
``$unionWith``, ``$out``, ``$merge``, ``$collStats``, ``$indexStats``,
``$vectorSearch``, ``$search``, ``$searchMeta``, ``$listSearchIndexes``) do it
through this interface; the aggregate command implements it over the engine,
so every read goes through the planner (and its indexes) and every write
through the same write path as the insert/update commands.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

from foliodb.query.context import Context


class PipelineEnv(Protocol):
    ctx: Context  # let variables and $$NOW of the command
    db: str  # the database the aggregate runs in
    coll: str | None  # the collection aggregated; None for a database-level aggregate ($documents)
    allow_disk_use: bool

    def aggregate(
        self,
        coll: str,
        pipeline: list[Mapping[str, Any]],
        db: str | None = None,
        variables: Mapping[str, Any] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Run a pipeline over another collection (a missing collection is
        empty); ``variables`` are extra ``$$`` variables visible inside
        (``$lookup``'s ``let``). A leading ``$match`` uses indexes."""
        ...

    def collection_exists(self, coll: str, db: str | None = None) -> bool: ...

    def has_text_index(self, coll: str, db: str | None = None) -> bool:
        """Does the collection a name resolves to have a text index?"""
        ...

    def view_pipeline(self, coll: str, db: str | None = None) -> list[Any]:
        """The pipelines of the views a name resolves through, outermost last (none for a collection)."""
        ...

    def replace_collection(
        self,
        coll: str,
        docs: Iterable[Mapping[str, Any]],
        db: str | None = None,
        timeseries: Mapping[str, Any] | None = None,
    ) -> None:
        """``$out``: atomically replace the collection's documents with
        ``docs`` (keeping its indexes and options; creating it if missing);
        with ``timeseries``, a time-series collection of those options."""
        ...

    def unique_index_on(self, coll: str, fields: list[str], db: str | None = None) -> bool:
        """Does a unique index with exactly these key fields exist (``$merge``'s
        ``on`` requirement)? ``_id`` alone always qualifies."""
        ...

    def indexed(self, coll: str, field: str, db: str | None = None) -> bool:
        """Can an equality on ``field`` be an index lookup there: an index (not partial or sparse,
        of the pipeline's collation) whose first key is ``field``? (False for a view.)"""
        ...

    def find_one(self, coll: str, filter: Mapping[str, Any], db: str | None = None) -> dict[str, Any] | None: ...

    def insert(self, coll: str, doc: Mapping[str, Any], db: str | None = None) -> None:
        """Insert one document (creating the collection when missing);
        raises CommandError (e.g. DuplicateKey) as an insert command would."""
        ...

    def replace(self, coll: str, filter: Mapping[str, Any], doc: Mapping[str, Any], db: str | None = None) -> None:
        """Replace the one document matching ``filter`` with ``doc``."""
        ...

    def coll_stats(self, coll: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        """The ``$collStats`` output document for ``spec``."""
        ...

    def index_stats(self, coll: str) -> list[dict[str, Any]]:
        """One ``$indexStats`` document per index."""
        ...

    def plan_cache_stats(self, coll: str) -> list[dict[str, Any]]:
        """One ``$planCacheStats`` document per cached plan."""
        ...

    def current_ops(
        self, idle_connections: bool, idle_cursors: bool, all_users: bool, idle_sessions: bool, truncate: bool
    ) -> list[dict[str, Any]]:
        """The ``$currentOp`` documents (with idle connections, idle cursors, of every user, with
        idle sessions' open transactions, with commands over 1000 bytes truncated)."""
        ...

    def vector_search(self, coll: str, query: Any) -> list[dict[str, Any]]:
        """A ``$vectorSearch``'s documents (``query``: its checked VectorQuery), best first, each
        with its ``vectorSearchScore`` metadata."""
        ...

    def text_search(self, coll: str, query: Any) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
        """A ``$search``'s meta document (count, facets) and its documents, best first (``query``:
        its checked SearchQuery); for ``$searchMeta`` the documents are none."""
        ...

    def search_indexes(self, coll: str, name: str | None, index_id: str | None) -> list[dict[str, Any]]:
        """The ``$listSearchIndexes`` documents of a collection (of one index, by name or id)."""
        ...

    def sessions(self, all_users: bool, users: list[tuple[str, str]]) -> list[dict[str, Any]]:
        """The session records of ``$listLocalSessions``: every session, those of ``users``
        ((db, user) pairs), or with neither the running user's."""
        ...
