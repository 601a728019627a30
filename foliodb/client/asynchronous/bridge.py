"""How an async class of the embedded client stands for a sync facade object.

Each async object (client, database, collection, cursor, session, change
stream) holds the sync facade object it stands for (``_delegate``) and the
async client it belongs to (``_owner``). Its methods are made here, from
pymongo's async class's own (so ``inspect.signature`` and ``help()`` show
pymongo's), in four kinds:

* :func:`offloaded`: a coroutine that runs the sync method of the same name on
  a worker thread (:mod:`foliodb.client.asynchronous.offload`);
* :func:`inline`: the sync method called on the loop, for what does no I/O
  (``find`` builds a lazy cursor, ``get_collection`` a handle);
* :func:`chained`: a cursor's builder (``sort``, ``limit``...), which returns
  the async cursor itself;
* :func:`delegated`: a property read from the sync object.

Arguments go to the sync method with every async object replaced by its sync
one (a session, a database given to ``drop_database``); results come back
with every sync facade object replaced by a new async one of the registered
class (:func:`register`), so a cursor, a database or a session returned by
the sync method is the async client's. Behaviour, validation and errors are
the sync facade's: nothing is decided twice.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pymongo import common

if TYPE_CHECKING:
    from foliodb.client.asynchronous.mongo_client import AsyncMongoClient

_F = TypeVar("_F", bound=Callable[..., Any])

# Sync facade class -> the function making its async counterpart from (sync object, async client):
# pymongo's async classes. A client class may answer with others (its ``_bridged`` table).
BRIDGED: dict[type, Callable[[Any, Any], Any]] = {}


class Bridged:
    """An async object standing for a sync facade object."""

    _delegate: Any
    _owner: AsyncMongoClient


def copy_settings(target: common.BaseObject, delegate: common.BaseObject) -> None:
    """Give ``target`` (a pymongo async client, database or collection whose ``__init__`` does not
    run) the four settings of the sync object it stands for, and no timeoutMS (maxTimeMS bounds an
    embedded operation)."""
    common.BaseObject.__init__(
        target, delegate.codec_options, delegate.read_preference, delegate.write_concern, delegate.read_concern
    )
    target._timeout = None  # type: ignore[attr-defined]


def register(sync_class: type, make: Callable[[Any, Any], Any]) -> None:
    """Results of class ``sync_class`` (and its subclasses) come back as ``make(result, client)``."""
    BRIDGED[sync_class] = make


def to_async(value: Any, client: AsyncMongoClient) -> Any:
    """``value``, or its async counterpart (for ``client``) when it is a sync facade object."""
    table = client._bridged
    for cls in type(value).__mro__:
        make = table.get(cls)
        if make is not None:
            return make(value, client)
    return value


def to_sync(value: Any) -> Any:
    """``value``, or the sync object an async one stands for."""
    return value._delegate if isinstance(value, Bridged) else value


def _sync_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    return [to_sync(arg) for arg in args], {key: to_sync(arg) for key, arg in kwargs.items()}


def offloaded(method: _F) -> _F:
    """A coroutine method running the sync method of the same name on a worker thread."""
    name = method.__name__

    @functools.wraps(method)
    async def run(self: Bridged, *args: Any, **kwargs: Any) -> Any:
        sync_args, sync_kwargs = _sync_arguments(args, kwargs)
        client = self._owner
        result = await client._offload.run(getattr(self._delegate, name), *sync_args, **sync_kwargs)
        return to_async(result, client)

    return run  # type: ignore[return-value]


def inline(method: _F) -> _F:
    """A method calling the sync method of the same name on the loop (it does no I/O)."""
    name = method.__name__

    @functools.wraps(method)
    def call(self: Bridged, *args: Any, **kwargs: Any) -> Any:
        sync_args, sync_kwargs = _sync_arguments(args, kwargs)
        return to_async(getattr(self._delegate, name)(*sync_args, **sync_kwargs), self._owner)

    return call  # type: ignore[return-value]


def chained(method: _F) -> _F:
    """A cursor builder: the sync cursor's (it does no I/O), returning this async cursor."""
    name = method.__name__

    @functools.wraps(method)
    def call(self: Bridged, *args: Any, **kwargs: Any) -> Any:
        getattr(self._delegate, name)(*args, **kwargs)
        return self

    return call  # type: ignore[return-value]


def delegated(prop: Any) -> Any:
    """A property read from the sync object (async counterparts for facade objects)."""
    name = prop.fget.__name__

    @functools.wraps(prop.fget)
    def get(self: Bridged) -> Any:
        return to_async(getattr(self._delegate, name), self._owner)

    return property(get)
