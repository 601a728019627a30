"""The schema-design patterns as recipes: a few functions each, over any
pymongo-compatible collection (FolioDB's or a MongoDB server's).

One pattern a module. Each recipe is one atomic single-document update where
MongoDB's document atomicity allows it; a recipe that writes two documents which
must change together takes a ``session`` and says so in its docstring.

``bucket``              append to the current bucket; roll over at N items or a time window
``subset``              keep the last N embedded, the whole history beside
``extended_reference``  copy chosen fields of a referenced document, refresh the copies
``computed``            counters and averages maintained on write
``fanout``              timelines by fan-out on write (bucketed walls) and on read
``tree``                categories with ancestors: insert, move a subtree, breadcrumbs
``parent_reference``    one-to-squillions: the child holds the parent's id, indexed
``snapshot``            order lines frozen at purchase, stock decremented in one transaction
``carts``               TTL-expired shopping carts with positional updates
``slugs``               unique slugs, retried on a duplicate key
"""
