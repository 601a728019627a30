"""pymongo's topology answers for the embedded client: one node, the primary, no network.

:class:`SingleNode` is a base of :class:`~foliodb.client.mongo_client.MongoClient`
ahead of ``pymongo.MongoClient``, so code that inspects a client's topology
keeps working: no address and no known servers (nothing is reached over a
network), no secondaries or arbiters, the primary (it takes writes), not a
mongos. ``topology_description`` has nothing to describe and raises
:class:`~foliodb.client.driver_hooks.NoNetworkLayer`. The options are the
ones pymongo parsed (``ClientOptions``); library metadata is kept there, as
there is no handshake to send it in.
"""

from __future__ import annotations

from typing import NoReturn

from pymongo.client_options import ClientOptions
from pymongo.driver_info import DriverInfo

from foliodb.client.driver_hooks import no_network


class SingleNode:
    """The topology properties of an embedded client (``_options``: set by its ``__init__``)."""

    _options: ClientOptions

    @property
    def options(self) -> ClientOptions:
        """The client's options as pymongo parsed them (pymongo's ``ClientOptions``)."""
        return self._options

    @property
    def topology_description(self) -> NoReturn:
        """Not available: an embedded client has no server topology to describe."""
        raise no_network("MongoClient.topology_description")

    def append_metadata(self, driver_info: DriverInfo) -> None:
        """Add a library's name and version to the client metadata, as pymongo 4.14+
        does; the embedded client keeps it in ``options.pool_options.metadata``
        (there is no connection handshake to send it in)."""
        if not isinstance(driver_info, DriverInfo):
            raise TypeError(f"driver_info must be an instance of DriverInfo, not {type(driver_info)}")
        self._options.pool_options._update_metadata(driver_info)

    @property
    def address(self) -> None:
        """None: an embedded client has no server address.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html"""
        return None

    # Topology answers of a single embedded node, so code that inspects them keeps working.
    @property
    def nodes(self) -> frozenset[tuple[str, int]]:
        """The set of known servers: empty for an embedded client.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html"""
        return frozenset()

    @property
    def primary(self) -> None:
        """The primary's address: None, an embedded node has no address.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html"""
        return None

    @property
    def secondaries(self) -> set[tuple[str, int | None]]:
        """The replica set's secondaries: none on an embedded single node.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html"""
        return set()

    @property
    def arbiters(self) -> set[tuple[str, int | None]]:
        """The replica set's arbiters: none on an embedded single node.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html"""
        return set()

    @property
    def is_primary(self) -> bool:
        """True: the embedded single node takes writes.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html"""
        return True

    @property
    def is_mongos(self) -> bool:
        """False: the embedded engine is not a mongos router.

        https://pymongo.readthedocs.io/en/stable/api/pymongo/mongo_client.html"""
        return False
