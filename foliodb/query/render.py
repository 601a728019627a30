"""BSON values as MongoDB writes them in messages (``{ _id: ObjectId('...') }``),
the shape of ``BSONObj::toString()`` that error messages such as E11000 use."""

from __future__ import annotations

import base64
from typing import Any

from bson import Code, Decimal128, Int64, MaxKey, MinKey, ObjectId, Timestamp

from foliodb.query import compare as cmp


def render(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    cls = value.__class__
    if cls is str:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if cls is int or cls is Int64:
        return str(int(value))
    if cls is float:
        if value != value:
            return "nan.0"
        if value in (float("inf"), float("-inf")):
            return "inf.0" if value > 0 else "-inf.0"
        return repr(value)
    if cls is Decimal128:
        return f'NumberDecimal("{value}")'
    if cls is ObjectId:
        return f"ObjectId('{value}')"
    if isinstance(value, Code):
        return f"function {value}"
    b = cmp.bracket(value)
    if b == cmp.OBJECT:
        return render_document(dict(cmp.object_items(value)))
    if b == cmp.ARRAY:
        return "[ " + ", ".join(render(v) for v in value) + " ]" if value else "[]"
    if b == cmp.DATE:
        return f"new Date({cmp.date_millis(value)})"
    if b == cmp.BINDATA:
        subtype, payload = cmp.binary_parts(value)
        return f"BinData({subtype}, {base64.b16encode(payload).decode()})"
    if b == cmp.REGEX:
        pattern, flags = cmp.regex_parts(value)
        return f"/{pattern}/{flags}"
    if isinstance(value, Timestamp):
        return f"Timestamp({value.time}, {value.inc})"
    if isinstance(value, MinKey):
        return "MinKey"
    if isinstance(value, MaxKey):
        return "MaxKey"
    return str(value)


def render_document(doc: dict[str, Any]) -> str:
    if not doc:
        return "{}"
    return "{ " + ", ".join(f"{name}: {render(value)}" for name, value in doc.items()) + " }"
