"""The schema-design advisor: reads a database (a sample of each collection,
its indexes, the profiler's record of its queries) and recommends embed,
reference, bucket, denormalize and index changes, each with its evidence.

It needs only pymongo's API, so it reads a FolioDB database, ``foliodb
serve``, or a MongoDB deployment alike::

    from foliodb.advisor import advise
    for rec in advise(client.shop):
        print(rec.kind, rec.collection, rec.message)
"""

from foliodb.advisor.advise import advise, render
from foliodb.advisor.rules import Recommendation

__all__ = ["Recommendation", "advise", "render"]
