"""beanie 2, unchanged, through ``foliodb serve`` with pymongo's
AsyncMongoClient (beanie 2 requires it): documents, ``Indexed`` fields,
``find_many`` with sort and limit, aggregation into projection models, and
``Link`` / ``BackLink`` relations with and without ``fetch_links``.

Expected values are written out by hand from the cited pages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pymongo
import pytest
from beanie import BackLink, Document, Indexed, Link, WriteRules, init_beanie
from pydantic import BaseModel, Field
from pymongo import AsyncMongoClient

FIND = "https://beanie-odm.dev/tutorial/finding-documents/"
INDEXES = "https://beanie-odm.dev/tutorial/indexes/"
AGGREGATE = "https://beanie-odm.dev/tutorial/aggregation/"
RELATIONS = "https://beanie-odm.dev/tutorial/relations/"

pytestmark = pytest.mark.clients


class Product(Document):
    name: Indexed(str, unique=True)
    category: str
    price: float

    class Settings:
        name = "products"


class Total(BaseModel):
    id: str = Field(alias="_id")
    total: float


class NameOnly(BaseModel):
    name: str


class Door(Document):
    height: int


class Window(Document):
    width: int


class Owner(Document):
    name: str
    houses: list[BackLink[House]] = Field(default=[], json_schema_extra={"original_field": "owner"})


class House(Document):
    name: str
    door: Link[Door]
    windows: list[Link[Window]] = []
    owner: Link[Owner] | None = None


Owner.model_rebuild()  # resolve the forward reference to House (pydantic's rule for forward references)

MODELS = [Product, Door, Window, Owner, House]


def run(server_uri: str, scenario: Callable[[], Awaitable[None]]) -> None:
    async def main() -> None:
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(server_uri, serverSelectionTimeoutMS=5000)
        try:
            await init_beanie(database=client.shop, document_models=MODELS)
            await scenario()
        finally:
            await client.close()

    asyncio.run(main())


async def add_products() -> None:
    await Product.insert_many(
        [
            Product(name="tea", category="drinks", price=3.5),
            Product(name="coffee", category="drinks", price=4.0),
            Product(name="cake", category="food", price=6.0),
            Product(name="bread", category="food", price=2.5),
        ]
    )


def test_indexed_fields(server_uri: str) -> None:
    async def scenario() -> None:
        # INDEXES: Indexed(str, unique=True) makes init_beanie create a unique index.
        info = await Product.get_pymongo_collection().index_information()
        assert info["name_1"]["key"] == [("name", 1)]
        assert info["name_1"]["unique"] is True
        await Product(name="tea", category="drinks", price=1).insert()
        with pytest.raises(pymongo.errors.DuplicateKeyError):
            await Product(name="tea", category="other", price=2).insert()

    run(server_uri, scenario)


def test_find_many_sort_limit_skip(server_uri: str) -> None:
    async def scenario() -> None:
        await add_products()
        # FIND: operators on fields, sort by -field (descending), skip and limit.
        found = await Product.find_many(Product.price > 3).sort(-Product.price).limit(2).to_list()
        assert [p.name for p in found] == ["cake", "coffee"]
        found = await Product.find_many(Product.category == "drinks").sort(+Product.price).skip(1).to_list()
        assert [p.name for p in found] == ["coffee"]
        assert await Product.find_many(Product.category == "food").count() == 2
        cheapest = await Product.find_one(Product.category == "food", sort=[("price", 1)])
        assert cheapest is not None and cheapest.name == "bread"
        names = await Product.find_many(Product.price < 4).sort(+Product.name).project(NameOnly).to_list()
        assert [n.name for n in names] == ["bread", "tea"]
        await Product.find_many(Product.category == "food").update({"$inc": {Product.price: 1}})
        assert (await Product.find_one(Product.name == "cake")).price == 7.0
        await Product.find_many(Product.price > 5).delete()
        assert await Product.count() == 3

    run(server_uri, scenario)


def test_aggregation_into_a_projection_model(server_uri: str) -> None:
    async def scenario() -> None:
        await add_products()
        # AGGREGATE: aggregate(..., projection_model=...) parses each result into the model.
        pipeline = [{"$group": {"_id": "$category", "total": {"$sum": "$price"}}}, {"$sort": {"_id": 1}}]
        totals = await Product.find_all().aggregate(pipeline, projection_model=Total).to_list()
        assert [(t.id, t.total) for t in totals] == [("drinks", 7.5), ("food", 8.5)]
        totals = await Product.find(Product.price > 3).aggregate(pipeline, projection_model=Total).to_list()
        assert [(t.id, t.total) for t in totals] == [("drinks", 7.5), ("food", 6.0)]
        assert await Product.find(Product.category == "food").avg(Product.price) == 4.25

    run(server_uri, scenario)


async def add_houses() -> tuple[House, House]:
    alice = await Owner(name="Alice").insert()
    first = House(name="first", door=Door(height=2), windows=[Window(width=1), Window(width=3)], owner=alice)
    second = House(name="second", door=Door(height=3), owner=alice)
    # RELATIONS: WriteRules.WRITE inserts the linked documents too.
    await first.insert(link_rule=WriteRules.WRITE)
    await second.insert(link_rule=WriteRules.WRITE)
    return first, second


def test_links_stored_as_references_and_fetched_on_demand(server_uri: str) -> None:
    async def scenario() -> None:
        first, _ = await add_houses()
        assert await Door.count() == 2
        assert await Window.count() == 2
        raw = await House.get_pymongo_collection().find_one({"name": "first"})
        assert raw["door"].collection == "Door"  # RELATIONS: a Link is stored as a DBRef
        house = await House.find_one(House.name == "first")
        assert house is not None and isinstance(house.door, Link)
        # RELATIONS: fetch_link resolves one link field by its ids (Owner's would join its BackLinks).
        await house.fetch_link(House.door)
        await house.fetch_link(House.windows)
        assert isinstance(house.door, Door) and house.door.height == 2
        assert sorted(w.width for w in house.windows) == [1, 3]
        door = await Door.get(first.door.id)
        assert door is not None and door.height == 2
        # RELATIONS: a link's id is queryable as <field>.$id of the stored DBRef.
        by_door = await House.find(House.door.id == first.door.id).to_list()
        assert [h.name for h in by_door] == ["first"]

    run(server_uri, scenario)


def test_fetch_links_in_the_query(server_uri: str) -> None:
    async def scenario() -> None:
        await add_houses()
        # RELATIONS: fetch_links=True resolves links with $lookup in the same query.
        houses = await House.find(House.name == "first", fetch_links=True).to_list()
        assert len(houses) == 1
        assert isinstance(houses[0].door, Door) and houses[0].door.height == 2
        assert sorted(w.width for w in houses[0].windows) == [1, 3]
        tall = await House.find(House.door.height == 3, fetch_links=True).to_list()
        assert [h.name for h in tall] == ["second"]

    run(server_uri, scenario)


def test_back_links(server_uri: str) -> None:
    async def scenario() -> None:
        await add_houses()
        # RELATIONS: a BackLink lists the documents whose Link points here, fetched with fetch_links.
        owner = await Owner.find_one(Owner.name == "Alice", fetch_links=True)
        assert owner is not None
        assert sorted(h.name for h in owner.houses) == ["first", "second"]

    run(server_uri, scenario)
