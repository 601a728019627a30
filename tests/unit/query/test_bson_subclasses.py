"""Values of subclasses of BSON classes (an ODM's ObjectId, a Decimal128 or Regex subclass)
are the BSON type of their base, as pymongo's codec encodes them.

https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/
"""

from __future__ import annotations

from typing import Any

from bson import Decimal128, ObjectId, Regex

from foliodb.query import compare as cmp
from foliodb.query.bsontypes import type_name


class OdmObjectId(ObjectId):
    pass


class MyDecimal(Decimal128):
    pass


class MyRegex(Regex):  # type: ignore[type-arg]
    pass


def test_subclasses_take_their_base_type() -> None:
    assert cmp.bracket(OdmObjectId()) == cmp.OBJECTID and type_name(OdmObjectId()) == "objectId"
    assert cmp.bracket(MyDecimal("1.5")) == cmp.NUMBER and type_name(MyDecimal("1.5")) == "decimal"
    assert cmp.bracket(MyRegex("^a")) == cmp.REGEX and type_name(MyRegex("^a")) == "regex"


def test_an_odm_object_id_is_stored_and_found(db: Any) -> None:
    oid = OdmObjectId()
    db.c.insert_one({"_id": oid, "ref": OdmObjectId(str(oid))})
    assert db.c.find_one({"_id": ObjectId(str(oid))}) == {"_id": ObjectId(str(oid)), "ref": ObjectId(str(oid))}
    assert db.c.count_documents({"ref": {"$type": "objectId"}}) == 1
