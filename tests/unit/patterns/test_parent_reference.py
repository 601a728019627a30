"""One-to-squillions: the latest N children of a parent, from the index."""

from __future__ import annotations

import datetime
from typing import Any

from foliodb.patterns import parent_reference

T0 = datetime.datetime(2026, 1, 1)


def test_latest_messages_of_a_host_use_the_index_in_order(db: Any) -> None:
    name = parent_reference.ensure_index(db.logmsg)
    for n in range(30):
        parent_reference.add(db.logmsg, "h1" if n % 3 else "h2", {"time": T0 + datetime.timedelta(seconds=n), "n": n})
    latest = parent_reference.latest(db.logmsg, "h1", 4)
    assert [m["n"] for m in latest] == [29, 28, 26, 25]
    plan = db.logmsg.find({"host": "h1"}).sort("time", -1).limit(4).explain()["queryPlanner"]["winningPlan"]
    text = str(plan)
    assert name in text and "SORT" not in text
