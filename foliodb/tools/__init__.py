"""Moving data in and out in the formats of MongoDB's database tools, through any
pymongo-compatible client: :mod:`~foliodb.tools.dump` and :mod:`~foliodb.tools.restore`
(mongodump's directory and :mod:`~foliodb.tools.archive` formats),
:mod:`~foliodb.tools.exporter` and :mod:`~foliodb.tools.importer` (mongoexport's and
mongoimport's JSON, CSV and TSV). :mod:`~foliodb.tools.target` opens the database a
command works on, :mod:`~foliodb.tools.progress` reports on stderr."""
