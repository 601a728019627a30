"""One registry type for every operator family (filters, updates, stages...).

A registry maps MongoDB's spelling of an operator (``"$gt"``) to the function
that compiles it. Names MongoDB has but FolioDB does not build yet are listed
as *unbuilt*: they answer NotImplemented (238) instead of the family's
"unknown operator" error, so users can tell the two apart. The docs'
compatibility table is generated from the registries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from foliodb.errors import CommandError, ErrorCode

F = TypeVar("F", bound=Callable[..., object])


class Registry(Generic[F]):
    def __init__(self, family: str, unknown: Callable[[str], CommandError], unbuilt: Iterable[str] = ()) -> None:
        self.family = family
        self._unknown = unknown
        self._ops: dict[str, F] = {}
        self.unbuilt: set[str] = set(unbuilt)

    def register(self, *names: str) -> Callable[[F], F]:
        def add(fn: F) -> F:
            for name in names:
                if name in self._ops:
                    raise ValueError(f"{self.family}: {name} registered twice")
                self._ops[name] = fn
                self.unbuilt.discard(name)
            return fn

        return add

    def __contains__(self, name: str) -> bool:
        return name in self._ops

    def get(self, name: str) -> F:
        try:
            return self._ops[name]
        except KeyError:
            if name in self.unbuilt:
                raise CommandError(
                    ErrorCode.NotImplemented, f"{self.family} {name} is not implemented in FolioDB yet"
                ) from None
            raise self._unknown(name) from None

    def names(self) -> list[str]:
        return sorted(self._ops)
