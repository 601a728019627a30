"""The search extra (numpy, usearch) is loaded by the first search, not by FolioDB.

An application that never searches does not pay numpy's and usearch's import
time and memory; one whose environment lacks them gets, at its first search,
CommandNotSupported (115) naming the extra to install, and everything else
works. Each case runs in a fresh interpreter: this test process has numpy
loaded already.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap


def _run(script: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120, check=True
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


_WORK = """
    import json, sys, tempfile
    {prelude}
    import foliodb
    from pymongo.errors import OperationFailure
    client = foliodb.MongoClient(tempfile.mkdtemp())
    coll = client.test.docs
    coll.insert_many([{{"_id": i, "v": [float(i), 1.0], "t": "word %d" % i}} for i in range(20)])
    coll.create_index("t")
    found = coll.find_one({{"t": "word 3"}})["_id"]
    grouped = list(coll.aggregate([{{"$group": {{"_id": None, "n": {{"$sum": 1}}}}}}]))[0]["n"]
    loaded_before = sorted(m for m in ("numpy", "usearch") if m in sys.modules)
    stage = {{"$vectorSearch": {{"index": "vec", "path": "v", "queryVector": [3.0, 1.0],
                                  "exact": True, "limit": 2}}}}
    coll.database.command("createSearchIndexes", "docs", indexes=[{{"name": "vec", "type": "vectorSearch",
        "definition": {{"fields": [{{"type": "vector", "path": "v", "numDimensions": 2,
                                     "similarity": "euclidean"}}]}}}}])
    try:
        answer = [d["_id"] for d in coll.aggregate([stage])]
        error = None
    except OperationFailure as exc:
        answer, error = None, [exc.code, str(exc)]
    client.close()
    print(json.dumps({{"found": found, "grouped": grouped, "loaded_before": loaded_before,
                       "answer": answer, "error": error}}))
"""


def test_numpy_and_usearch_load_at_the_first_search() -> None:
    result = _run(_WORK.format(prelude=""))
    assert result["found"] == 3 and result["grouped"] == 20
    assert result["loaded_before"] == []  # inserts, finds, an index, an aggregation: no search extra
    assert result["answer"] == [3, 2] or result["answer"] == [3, 4]  # [3, 1] is nearest, then a tie at 1
    assert result["error"] is None


def test_a_missing_extra_fails_the_search_with_its_name_and_nothing_else() -> None:
    blocker = """
    class _NoSearchExtra:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("numpy", "usearch"):
                raise ImportError("blocked: " + name)
            return None
    sys.meta_path.insert(0, _NoSearchExtra())
    """
    result = _run(_WORK.format(prelude=textwrap.indent(textwrap.dedent(blocker), "    ").strip()))
    assert result["found"] == 3 and result["grouped"] == 20
    assert result["answer"] is None
    code, message = result["error"]  # type: ignore[misc]
    assert code == 115  # CommandNotSupported
    assert "foliodb[search]" in message
