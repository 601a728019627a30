"""Child process of the full-text crash tests: writes documents forever, reporting each
acknowledged write on stdout (flushed) until it is killed, while a reader thread runs $search and
the engine freezes, merges and saves the text index often (segments of 16 entries, merged 4 at a
time, saved every 50 applied changes), so a kill lands in writes, in searches' catch-ups, in
merges and in the middle of saving the index's files.

Usage: python -m tests.crash.text_writer DBPATH SEED
Lines: "ready" once the index exists and is READY; then per write "try <n> [<m>]" naming the
documents it is about to change (flushed before it starts), and after it is acknowledged "put
<n>" when {_id: n} got its text (insert or update), "del <n>" when it was deleted. A kill may
land between a write's commit and its acknowledgement line: the "try" line says which
documents that write may have changed.
"""

from __future__ import annotations

import random
import sys
import threading
import time

from pymongo.operations import SearchIndexModel

import foliodb
from foliodb.engine.search import manager
from foliodb.engine.search.text import index as text_index

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
INDEX = {"mappings": {"dynamic": False, "fields": {"body": {"type": "string"}, "n": {"type": "number"}}}}


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 8)))


def search_forever(coll: object, seed: int) -> None:
    rng = random.Random(seed)
    while True:
        stage = {"index": "text", "text": {"query": rng.choice(WORDS), "path": "body"}}
        list(coll.aggregate([{"$search": stage}, {"$limit": 5}]))  # type: ignore[attr-defined]


def main() -> None:
    path, seed = sys.argv[1], int(sys.argv[2])
    manager.SAVE_AFTER = 50
    text_index.FREEZE_AT = 16
    text_index.MERGE_FACTOR = 4
    rng = random.Random(seed)
    client = foliodb.MongoClient(path)
    coll = client.crash.texts
    if "text" not in [index["name"] for index in coll.list_search_indexes()]:
        coll.insert_one({"_id": -1, "body": "alpha", "n": 0})
        coll.create_search_index(SearchIndexModel(definition=INDEX, name="text"))
    while next(iter(coll.list_search_indexes()))["status"] != "READY":
        time.sleep(0.01)
    threading.Thread(target=search_forever, args=(coll, seed), daemon=True).start()
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    while True:
        n = rng.randrange(400)
        action = rng.random()
        out.write(f"try {n} {(n + 1) % 400}\n" if action >= 0.85 else f"try {n}\n")
        out.flush()
        if action < 0.7:
            coll.replace_one({"_id": n}, {"body": text(rng), "n": n % 7}, upsert=True)
            out.write(f"put {n}\n")
        elif action < 0.85:
            coll.delete_one({"_id": n})
            out.write(f"del {n}\n")
        else:
            with client.start_session() as session, session.start_transaction():
                coll.replace_one({"_id": n}, {"body": text(rng), "n": n % 7}, upsert=True, session=session)
                coll.delete_one({"_id": (n + 1) % 400}, session=session)
            out.write(f"put {n}\ndel {(n + 1) % 400}\n")
        out.flush()


if __name__ == "__main__":
    main()
