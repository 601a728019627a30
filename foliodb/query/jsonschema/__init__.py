"""MongoDB's ``$jsonSchema``: JSON Schema draft 4 with BSON types, compiled once.

``compile_json_schema(schema)`` checks the whole schema, raising MongoDB's
errors (FailedToParse, TypeMismatch, BadValue; QueryFeatureNotAllowed for the
encryption keywords, which FolioDB does not support), and returns a
:class:`JsonSchema`: ``check(doc) -> bool`` and ``check.explain(doc)``, the
``details`` MongoDB 5+ reports when a document fails a ``$jsonSchema``
validator (``{"operatorName": "$jsonSchema", "schemaRulesNotSatisfied":
[...]}``).

Semantics (manual: https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/):

* A *subschema* applies to one value: the document at the top, a property's
  value (MISSING when absent), an array item, an additional property.
* Keywords restrict only values of their own type, as JSON Schema says:
  ``minLength`` ignores non-strings, ``minimum`` non-numbers, ``properties``
  non-objects. Only ``type``/``bsonType`` and ``enum`` reject other types (and
  a missing value). Arrays are values, never traversed like query paths.
* At the top level, string, number and array keywords have no effect (MongoDB
  stores only documents), a type that excludes "object" matches nothing, and
  ``enum`` considers only its document values.
* When ``type``/``bsonType`` names a single type, keywords of other types are
  dropped, so an explanation reports only the type mismatch (MongoDB's
  ``makeRestriction``).
* ``enum`` and ``uniqueItems`` use MongoDB equality (``1 == 1.0``) except that
  embedded documents are equal whatever their field order.
* Property names in ``properties``, ``required`` and ``dependencies`` are
  looked up as dotted paths through embedded documents, as MongoDB does;
  unlike MongoDB, arrays met on such a dotted path are not traversed.

An explanation lists the failing rules of each subschema in MongoDB's order:
pattern, maxLength, minLength, multipleOf, maximum, minimum, minItems,
maxItems, uniqueItems, items, additionalItems, properties,
additionalProperties/patternProperties, required, minProperties,
maxProperties, dependencies, allOf, anyOf, oneOf, not, enum, type/bsonType.
A rule reports nothing about a value it does not apply to (a missing
property, a non-string under ``minLength``): the rule that rejects it does.

Modules: ``compiler`` (keyword set, one subschema, :class:`JsonSchema`),
``rules`` (compiled rules and explanation shapes), one module per keyword
group (``scalars``, ``arrays``, ``objects``, ``logical``), ``arguments``
(shared argument checks) and ``values`` (kinds, lookup, equality, decimals).
"""

from foliodb.query.jsonschema.compiler import JsonSchema, compile_json_schema

__all__ = ["JsonSchema", "compile_json_schema"]
