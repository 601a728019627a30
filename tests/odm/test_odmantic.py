"""odmantic, unchanged, on FolioDB: its AIOEngine with motor through
``foliodb serve`` and on FolioDB's motor-shaped embedded async client
(``foliodb.client.asynchronous.motor``), and its SyncEngine with pymongo
through the server and on the embedded client.
Models, embedded models, references (odmantic joins them with ``$lookup``),
queries with sort, skip and limit, counts, updates and deletes.

Expected values are written out by hand from the cited pages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
from motor.motor_asyncio import AsyncIOMotorClient
from odmantic import AIOEngine, EmbeddedModel, Field, Model, Reference, SyncEngine, query

import foliodb
from foliodb.client.asynchronous import motor

MODELS = "https://art049.github.io/odmantic/modeling/"
QUERYING = "https://art049.github.io/odmantic/querying/"
REFERENCES = "https://art049.github.io/odmantic/modeling/#referenced-models"

pytestmark = pytest.mark.clients


class Address(EmbeddedModel):
    city: str
    street: str | None = None


class Publisher(Model):
    name: str
    founded: int
    address: Address


class Book(Model):
    title: str
    pages: int = Field(ge=1)
    tags: list[str] = []
    publisher: Publisher = Reference()


def library() -> tuple[list[Publisher], list[Book]]:
    hachette = Publisher(name="Hachette", founded=1826, address=Address(city="Paris"))
    penguin = Publisher(name="Penguin", founded=1935, address=Address(city="London", street="Strand"))
    books = [
        Book(title="Les Misérables", pages=1463, tags=["novel"], publisher=hachette),
        Book(title="Candide", pages=144, tags=["novel", "satire"], publisher=hachette),
        Book(title="Ulysses", pages=730, tags=["novel"], publisher=penguin),
        Book(title="Essays", pages=320, publisher=penguin),
    ]
    return [hachette, penguin], books


@pytest.fixture(params=["wire", "embedded"])
def motor_client(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """motor over ``foliodb serve``, or FolioDB's motor-shaped embedded async client."""
    if request.param == "wire":
        client: Any = AsyncIOMotorClient(request.getfixturevalue("server_uri"), serverSelectionTimeoutMS=5000)
    else:
        client = motor.AsyncIOMotorClient(str(tmp_path / "embedded"))
    yield client
    client.close()


def test_aio_engine(motor_client: Any) -> None:
    async def main() -> None:
        engine = AIOEngine(client=motor_client, database="library")
        publishers, books = library()
        await engine.save_all(books)  # REFERENCES: saving a book saves its publisher first
        assert await engine.count(Publisher) == 2
        # QUERYING: comparison operators on fields, sort, skip and limit; references are joined.
        long = await engine.find(Book, Book.pages > 300, sort=Book.pages.desc(), limit=2)
        assert [(b.title, b.publisher.name) for b in long] == [
            ("Les Misérables", "Hachette"),
            ("Ulysses", "Penguin"),
        ]
        rest = await engine.find(Book, sort=Book.title, skip=1, limit=2)
        assert [b.title for b in rest] == ["Essays", "Les Misérables"]
        satire = await engine.find_one(Book, query.in_(Book.tags, ["satire"]))
        assert satire is not None and satire.publisher.address.city == "Paris"
        london = await engine.find(Publisher, Publisher.address.city == "London")
        assert [p.name for p in london] == ["Penguin"]
        assert await engine.count(Book, Book.publisher == publishers[1].id) == 2
        # MODELS: change a field and save again: an update of the same document.
        candide = books[1]
        candide.pages = 150
        await engine.save(candide)
        again = await engine.find_one(Book, Book.id == candide.id)
        assert again is not None and again.pages == 150
        # https://art049.github.io/odmantic/engine/#transactions: saved together, or not at all.
        async with engine.transaction() as transaction:
            candide.pages = 160
            await transaction.save(candide)
            await transaction.abort()
        assert (await engine.find_one(Book, Book.id == candide.id)).pages == 150  # type: ignore[union-attr]
        await engine.delete(candide)
        assert await engine.count(Book) == 3
        assert await engine.remove(Book, Book.pages > 700) == 2
        assert [b.title for b in await engine.find(Book)] == ["Essays"]

    asyncio.run(main())


def test_aio_engine_or(motor_client: Any) -> None:
    async def main() -> None:
        engine = AIOEngine(client=motor_client, database="library")
        await engine.save_all(library()[1])
        # QUERYING: logical operators.
        either = await engine.find(Book, query.or_(Book.pages < 200, Book.title == "Ulysses"), sort=Book.pages)
        assert [b.title for b in either] == ["Candide", "Ulysses"]

    asyncio.run(main())


@pytest.fixture(params=["wire", "embedded"])
def sync_client(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "wire":
        client: Any = pymongo.MongoClient(request.getfixturevalue("server_uri"), serverSelectionTimeoutMS=5000)
    else:
        client = foliodb.MongoClient(str(tmp_path / "embedded"))
    yield client
    client.close()


def test_sync_engine(sync_client: Any) -> None:
    engine = SyncEngine(client=sync_client, database="library")
    publishers, books = library()
    engine.save_all(books)
    # REFERENCES: the book document holds the publisher's id; find joins it back.
    raw = sync_client.library.book.find_one({"title": "Candide"})
    assert raw["publisher"] == publishers[0].id
    # The publishers' ObjectIds were made in order, Hachette's first: sorting by the reference sorts by it.
    found = engine.find(Book, Book.pages >= 320, sort=(Book.publisher, Book.pages))
    assert [b.title for b in found] == ["Les Misérables", "Essays", "Ulysses"]
    found = engine.find(Book, Book.pages >= 320, sort=Book.pages)
    assert [(b.title, b.publisher.name) for b in found] == [
        ("Essays", "Penguin"),
        ("Ulysses", "Penguin"),
        ("Les Misérables", "Hachette"),
    ]
    assert engine.count(Book, query.match(Book.title, "^[CE]")) == 2
    hachette = engine.find_one(Publisher, Publisher.name == "Hachette")
    assert hachette is not None and hachette.address == Address(city="Paris")
    assert engine.remove(Book, Book.publisher == hachette.id) == 2
    assert sorted(b.title for b in engine.find(Book)) == ["Essays", "Ulysses"]
