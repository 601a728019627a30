"""mongoengine, unchanged, on FolioDB: through ``foliodb serve`` with pymongo,
and embedded through ``connect(mongo_client_class=foliodb.MongoClient)``
(mongoengine builds the client itself from the class, passing ``host`` as a
list of one dbpath).

Expected values are written out by hand from the cited pages.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mongoengine as me
import pytest
from mongoengine.context_managers import query_counter

import foliodb

GUIDE = "https://docs.mongoengine.org/guide/"
QUERYING = "https://docs.mongoengine.org/guide/querying.html"
INDEXES = "https://docs.mongoengine.org/guide/defining-documents.html#indexes"
QUERY_COUNTER = "https://docs.mongoengine.org/apireference.html#mongoengine.context_managers.query_counter"


class Address(me.EmbeddedDocument):
    street = me.StringField()
    city = me.StringField(required=True)


class Author(me.Document):
    name = me.StringField(required=True)
    email = me.EmailField()
    age = me.IntField()
    address = me.EmbeddedDocumentField(Address)
    meta = {"indexes": ["name", ("-age", "name"), {"fields": ["email"], "unique": True, "sparse": True}]}


class Post(me.Document):
    title = me.StringField(required=True)
    author = me.ReferenceField(Author, reverse_delete_rule=me.CASCADE)
    tags = me.ListField(me.StringField())
    comments = me.ListField(me.EmbeddedDocumentField(Address))
    likes = me.IntField(default=0)


@pytest.fixture(params=["wire", "embedded"])
def connection(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "wire":
        uri = request.getfixturevalue("server_uri")
        client = me.connect(db="blog", host=uri, uuidRepresentation="standard", serverSelectionTimeoutMS=5000)
    else:
        client = me.connect(
            db="blog",
            host=str(tmp_path / "embedded"),
            uuidRepresentation="standard",
            mongo_client_class=foliodb.MongoClient,
        )
        assert isinstance(client, foliodb.MongoClient)
    yield client
    me.disconnect()


def test_documents_save_query_update_delete(connection: Any) -> None:
    ada = Author(name="Ada", age=36, email="ada@example.org").save()
    Author(name="Alan", age=41).save()
    assert Author.objects.count() == 2
    assert Author.objects.get(name="Ada").id == ada.id
    # QUERYING: field__op lookups, ordering, slicing.
    assert [a.name for a in Author.objects(age__gte=30).order_by("-age")] == ["Alan", "Ada"]
    assert [a.name for a in Author.objects.order_by("name")[1:]] == ["Alan"]
    assert Author.objects(name__startswith="A", age__lt=40).count() == 1
    assert Author.objects(name="Alan").update_one(inc__age=1) == 1
    assert Author.objects.get(name="Alan").age == 42
    ada.age = 37
    ada.save()
    assert Author.objects.get(id=ada.id).age == 37
    assert Author.objects(name="Nobody").first() is None
    Author.objects(name="Alan").delete()
    assert [a.name for a in Author.objects] == ["Ada"]
    with pytest.raises(me.DoesNotExist):
        Author.objects.get(name="Alan")


def test_embedded_documents(connection: Any) -> None:
    Author(name="Ada", address=Address(street="1 Lovelace Rd", city="London")).save()
    Author(name="Grace", address=Address(city="New York")).save()
    # QUERYING: "__" reaches into an embedded document.
    assert [a.name for a in Author.objects(address__city="London")] == ["Ada"]
    grace = Author.objects.get(name="Grace")
    assert isinstance(grace.address, Address)
    assert (grace.address.city, grace.address.street) == ("New York", None)
    Author.objects(name="Grace").update(set__address__street="Broadway")
    assert Author.objects.get(name="Grace").address.street == "Broadway"


def test_references_and_cascade(connection: Any) -> None:
    ada = Author(name="Ada").save()
    Post(title="Notes", author=ada).save()
    Post(title="Sketch", author=ada).save()
    post = Post.objects.get(title="Notes")
    assert isinstance(post.author, Author)  # dereferenced on access
    assert post.author.name == "Ada"
    assert [p.title for p in Post.objects(author=ada).order_by("title")] == ["Notes", "Sketch"]
    assert [p.author.name for p in Post.objects.select_related()] == ["Ada", "Ada"]
    ada.delete()  # reverse_delete_rule=CASCADE deletes the posts
    assert Post.objects.count() == 0


def test_list_fields(connection: Any) -> None:
    Post(title="a", tags=["db", "python"]).save()
    Post(title="b", tags=["db"]).save()
    Post(title="c", tags=[]).save()
    # QUERYING: a list field matches when any element does; __all, __size, push/pull.
    assert [p.title for p in Post.objects(tags="db").order_by("title")] == ["a", "b"]
    assert [p.title for p in Post.objects(tags__all=["db", "python"])] == ["a"]
    assert [p.title for p in Post.objects(tags__size=0)] == ["c"]
    Post.objects(title="b").update_one(push__tags="mongo")
    Post.objects(title="a").update_one(pull__tags="db")
    assert Post.objects.get(title="b").tags == ["db", "mongo"]
    assert Post.objects.get(title="a").tags == ["python"]
    Post.objects(title="c").update_one(push__comments=Address(city="Paris"))
    assert Post.objects(comments__city="Paris").count() == 1


def test_indexes_from_meta(connection: Any) -> None:
    Author.ensure_indexes()
    info = Author._get_collection().index_information()
    # INDEXES: "-age" is descending; the dict form passes options through.
    assert info["name_1"]["key"] == [("name", 1)]
    assert info["age_-1_name_1"]["key"] == [("age", -1), ("name", 1)]
    assert info["email_1"]["unique"] is True
    assert info["email_1"]["sparse"] is True
    Author(name="Ada", email="ada@example.org").save()
    with pytest.raises(me.NotUniqueError):
        Author(name="Other", email="ada@example.org").save()
    Author(name="No email").save()
    Author(name="No email either").save()  # sparse: missing emails do not collide


def test_aggregation(connection: Any) -> None:
    for title, likes, tags in (("a", 3, ["db"]), ("b", 5, ["db", "py"]), ("c", 1, ["py"])):
        Post(title=title, likes=likes, tags=tags).save()
    pipeline = [
        {"$unwind": "$tags"},
        {"$group": {"_id": "$tags", "likes": {"$sum": "$likes"}}},
        {"$sort": {"_id": 1}},
    ]
    # QUERYING: aggregate() runs after the queryset's own filter.
    assert list(Post.objects.aggregate(pipeline)) == [{"_id": "db", "likes": 8}, {"_id": "py", "likes": 6}]
    assert list(Post.objects(likes__gte=3).aggregate(pipeline)) == [
        {"_id": "db", "likes": 8},
        {"_id": "py", "likes": 5},
    ]
    assert Post.objects.sum("likes") == 9
    assert Post.objects.distinct("tags") == ["db", "py"]


def test_query_counter(connection: Any) -> None:
    # QUERY_COUNTER: each query is one system.profile entry; the counter's own reads are discounted.
    # The indexes from meta first: mongoengine creates them on a collection's first use, and
    # each createIndexes is an operation the profiler records too.
    Author.ensure_indexes()
    with query_counter() as q:
        assert q == 0
        ada = Author(name="Ada").save()
        assert q == 1  # an insert
        Author.objects.first()
        assert q == 2  # a find
        Author.objects(id=ada.id).update_one(set__age=1)
        assert q == 3  # an update


class Attachment(me.Document):
    name = me.StringField()
    body = me.FileField()


def test_file_field_stores_in_gridfs(connection: Any) -> None:
    # mongoengine's FileField is gridfs.GridFS over the connection's database (which gridfs
    # type-checks as a pymongo Database): 300,000 bytes make 2 chunks of 255 KiB.
    payload = bytes(range(256)) * 1172 + b"tail"
    doc = Attachment(name="scan")
    doc.body.put(payload, content_type="application/octet-stream")
    doc.save()
    loaded = Attachment.objects.get(name="scan")
    assert loaded.body.read() == payload
    assert loaded.body.length == len(payload) == 300_036
    db = me.get_db()
    assert db.fs.chunks.count_documents({"files_id": loaded.body.grid_id}) == 2
    loaded.body.delete()
    assert db.fs.files.count_documents({}) == 0
