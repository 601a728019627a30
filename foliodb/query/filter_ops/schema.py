"""The $jsonSchema query operator: documents that satisfy a JSON Schema.

Manual: https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/

The schema is checked and compiled once by :mod:`foliodb.query.jsonschema`;
``$jsonSchema`` is a top-level operator and applies to the whole document
(or to each element inside an object ``$elemMatch``).
"""

from __future__ import annotations

from typing import Any

from foliodb.query import jsonschema
from foliodb.query.context import Context
from foliodb.query.filter import TOP_OPS, Matcher


@TOP_OPS.register("$jsonSchema")
def filter_jsonSchema(arg: Any, ctx: Context) -> Matcher:
    # The module, not the function, is imported: jsonschema imports the
    # filter operators it reuses, which import this module.
    matches = jsonschema.compile_json_schema(arg).matches

    def match_json_schema(doc: Any, details: Any = None) -> bool:
        return matches(doc)

    return match_json_schema
