"""FolioDB: MongoDB's data model and languages, embedded like SQLite.

``foliodb.MongoClient("./data")`` opens a dbpath in this process and answers
pymongo's API; ``foliodb serve`` offers the same engine over MongoDB's wire
protocol.
"""

__version__ = "0.1.0"
