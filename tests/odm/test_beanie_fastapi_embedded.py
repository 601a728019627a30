"""A FastAPI application on beanie 2 over ``foliodb.AsyncMongoClient``, in process, no server.

Requests go through httpx's ASGI transport to the app: create, read,
update and delete documents, an aggregation (stock value per category) and a
transaction (moving stock between two products: both writes or neither).

Expected values are written out by hand from the cited pages.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from beanie import Document, Indexed, PydanticObjectId, init_beanie
from beanie.operators import Inc
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel
from pymongo.errors import DuplicateKeyError

import foliodb

CRUD = "https://beanie-odm.dev/tutorial/inserting-into-the-database/"
AGGREGATE = "https://beanie-odm.dev/tutorial/aggregation/"
TRANSACTIONS = "https://www.mongodb.com/docs/manual/core/transactions/"


class Product(Document):
    name: Indexed(str, unique=True)  # type: ignore[valid-type]
    category: str
    price: float
    stock: int

    class Settings:
        name = "products"


class NewProduct(BaseModel):
    name: str
    category: str
    price: float
    stock: int


class Transfer(BaseModel):
    source: str
    target: str
    quantity: int


def make_app(dbpath: str) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        client = foliodb.AsyncMongoClient(dbpath)
        app.state.client = client
        await init_beanie(database=client.shop, document_models=[Product])
        yield
        await client.close()

    app = FastAPI(lifespan=lifespan)

    @app.post("/products", status_code=201)
    async def create(product: NewProduct) -> dict[str, Any]:
        try:
            created = await Product(**product.model_dump()).insert()
        except DuplicateKeyError:
            raise HTTPException(409, "a product of that name exists") from None
        return {"id": str(created.id)}

    @app.get("/products/{product_id}")
    async def read(product_id: PydanticObjectId) -> dict[str, Any]:
        product = await Product.get(product_id)
        if product is None:
            raise HTTPException(404)
        return product.model_dump(exclude={"id", "revision_id"})

    @app.patch("/products/{product_id}")
    async def reprice(product_id: PydanticObjectId, price: float) -> dict[str, Any]:
        product = await Product.get(product_id)
        if product is None:
            raise HTTPException(404)
        await product.set({Product.price: price})
        return {"price": product.price}

    @app.delete("/products/{product_id}", status_code=204)
    async def delete(product_id: PydanticObjectId) -> None:
        product = await Product.get(product_id)
        if product is None:
            raise HTTPException(404)
        await product.delete()

    @app.get("/stock-value")
    async def stock_value() -> list[dict[str, Any]]:
        pipeline = [
            {"$group": {"_id": "$category", "value": {"$sum": {"$multiply": ["$price", "$stock"]}}}},
            {"$sort": {"_id": 1}},
        ]
        return await Product.aggregate(pipeline).to_list()

    @app.post("/transfers")
    async def transfer(move: Transfer) -> dict[str, int]:
        client = app.state.client
        async with client.start_session() as session, await session.start_transaction():
            taken = await Product.find_one(Product.name == move.source, session=session)
            if taken is None or taken.stock < move.quantity:
                raise HTTPException(409, "not enough stock")  # leaving the block aborts the transaction
            await taken.update(Inc({Product.stock: -move.quantity}), session=session)
            target = await Product.find_one(Product.name == move.target, session=session)
            if target is None:
                raise HTTPException(404, "no such target")
            await target.update(Inc({Product.stock: move.quantity}), session=session)
        return {"moved": move.quantity}

    return app


def test_fastapi_beanie_crud_aggregation_and_transaction(tmp_path: Path) -> None:
    app = make_app(str(tmp_path / "data"))

    async def main() -> None:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://app") as http:
                await scenario(http)

    asyncio.run(main())


async def scenario(http: httpx.AsyncClient) -> None:
    # CRUD: created documents are read back, updated and deleted.
    ids = {}
    for name, category, price, stock in [
        ("pen", "office", 1.5, 100),
        ("desk", "furniture", 120.0, 3),
        ("lamp", "furniture", 30.0, 10),
        ("ink", "office", 4.0, 0),
    ]:
        response = await http.post(
            "/products", json={"name": name, "category": category, "price": price, "stock": stock}
        )
        assert response.status_code == 201
        ids[name] = response.json()["id"]
    duplicate = {"name": "pen", "category": "office", "price": 1, "stock": 1}
    assert (await http.post("/products", json=duplicate)).status_code == 409  # the unique index refuses it
    assert (await http.get(f"/products/{ids['pen']}")).json() == {
        "name": "pen",
        "category": "office",
        "price": 1.5,
        "stock": 100,
    }
    assert (await http.patch(f"/products/{ids['lamp']}", params={"price": 25.0})).json() == {"price": 25.0}
    assert (await http.delete(f"/products/{ids['ink']}")).status_code == 204
    assert (await http.get(f"/products/{ids['ink']}")).status_code == 404

    # AGGREGATE: furniture 120 x 3 + 25 x 10 = 610; office 1.5 x 100 = 150.
    assert (await http.get("/stock-value")).json() == [
        {"_id": "furniture", "value": 610.0},
        {"_id": "office", "value": 150.0},
    ]

    # TRANSACTIONS: a transfer moves stock in both documents; a refused one changes neither.
    moved = await http.post("/transfers", json={"source": "pen", "target": "desk", "quantity": 40})
    assert moved.json() == {"moved": 40}
    refused = await http.post("/transfers", json={"source": "desk", "target": "pen", "quantity": 500})
    assert refused.status_code == 409
    half_done = await http.post("/transfers", json={"source": "pen", "target": "nothing", "quantity": 5})
    assert half_done.status_code == 404  # pen's decrement was rolled back with the transaction
    stocks = {name: (await http.get(f"/products/{ids[name]}")).json()["stock"] for name in ("pen", "desk", "lamp")}
    assert stocks == {"pen": 60, "desk": 43, "lamp": 10}
