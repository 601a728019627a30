"""pymongo's AsyncCollection over the sync facade's Collection.

Every method is the sync facade's (:mod:`foliodb.client.collection`), run on
a worker thread, or on the loop for those that send nothing (``find``,
``find_raw_batches``, ``with_options``, sub-collections); see
:mod:`foliodb.client.asynchronous.bridge`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pymongo.asynchronous.collection as pymongo_collection

from foliodb.client.asynchronous.bridge import Bridged, copy_settings, delegated, inline, offloaded, register
from foliodb.client.collection import Collection

if TYPE_CHECKING:
    from foliodb.client.asynchronous.mongo_client import AsyncMongoClient

_Base = pymongo_collection.AsyncCollection


class AsyncCollection(Bridged, _Base[Any]):
    """pymongo's ``AsyncCollection`` (an instance of it) over the embedded engine.

    https://pymongo.readthedocs.io/en/stable/api/pymongo/asynchronous/collection.html"""

    _delegate: Collection

    def __init__(self, delegate: Collection, client: AsyncMongoClient) -> None:
        # pymongo's __init__ does not run: the sync collection holds the state.
        self._delegate = delegate
        self._owner = client
        self._name = delegate.name
        copy_settings(self, delegate)

    database = delegated(_Base.database)

    @property
    def full_name(self) -> str:
        """``<database>.<collection>``."""
        return self._delegate.full_name

    @property
    def name(self) -> str:
        """The name of this collection."""
        return self._delegate.name

    __getitem__ = inline(_Base.__getitem__)
    find = inline(_Base.find)
    find_raw_batches = inline(_Base.find_raw_batches)
    with_options = inline(_Base.with_options)

    aggregate = offloaded(_Base.aggregate)
    aggregate_raw_batches = offloaded(_Base.aggregate_raw_batches)
    bulk_write = offloaded(_Base.bulk_write)
    count_documents = offloaded(_Base.count_documents)
    create_index = offloaded(_Base.create_index)
    create_indexes = offloaded(_Base.create_indexes)
    create_search_index = offloaded(_Base.create_search_index)
    create_search_indexes = offloaded(_Base.create_search_indexes)
    delete_many = offloaded(_Base.delete_many)
    delete_one = offloaded(_Base.delete_one)
    distinct = offloaded(_Base.distinct)
    drop = offloaded(_Base.drop)
    drop_index = offloaded(_Base.drop_index)
    drop_indexes = offloaded(_Base.drop_indexes)
    drop_search_index = offloaded(_Base.drop_search_index)
    estimated_document_count = offloaded(_Base.estimated_document_count)
    find_one = offloaded(_Base.find_one)
    find_one_and_delete = offloaded(_Base.find_one_and_delete)
    find_one_and_replace = offloaded(_Base.find_one_and_replace)
    find_one_and_update = offloaded(_Base.find_one_and_update)
    index_information = offloaded(_Base.index_information)
    insert_many = offloaded(_Base.insert_many)
    insert_one = offloaded(_Base.insert_one)
    list_indexes = offloaded(_Base.list_indexes)
    list_search_indexes = offloaded(_Base.list_search_indexes)
    options = offloaded(_Base.options)
    rename = offloaded(_Base.rename)
    replace_one = offloaded(_Base.replace_one)
    update_many = offloaded(_Base.update_many)
    update_one = offloaded(_Base.update_one)
    update_search_index = offloaded(_Base.update_search_index)
    watch = offloaded(_Base.watch)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AsyncCollection):
            return self._delegate == other._delegate
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._delegate)

    def __repr__(self) -> str:
        return f"AsyncCollection({self.database!r}, {self._name!r})"


register(Collection, AsyncCollection)
