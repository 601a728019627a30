"""Child process of the transaction crash tests: runs multi-document
transactions and retryable writes forever, through the executor exactly as a
driver's commands arrive (lsid, txnNumber, autocommit, startTransaction),
reporting each acknowledged one on stdout (flushed) until it is killed.

Usage: python -m tests.crash.txn_writer DBPATH SEED
Lines: "txn <k>" after the transaction inserting order {_id: k} and taking one
       unit of stock committed; "retry <session hex> <txnNumber> <k>" after a
       retryable insert of {_id: "r<k>"} was acknowledged.
"""

from __future__ import annotations

import random
import sys
import uuid

from bson import Int64
from bson.binary import Binary, UuidRepresentation

from foliodb.commands import Executor
from foliodb.commands.replication import ReplicaSet

STOCK = 1_000_000


def lsid(value: uuid.UUID) -> dict[str, Binary]:
    return {"id": Binary.from_uuid(value, UuidRepresentation.STANDARD)}


def check(reply: dict[str, object]) -> dict[str, object]:
    if reply.get("ok") != 1.0 or reply.get("writeErrors"):
        raise SystemExit(f"unexpected reply: {reply}")
    return reply


def main() -> None:
    path, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    executor = Executor.open(path, ReplicaSet())
    check(
        executor.execute(
            "shop", {"createIndexes": "orders", "indexes": [{"key": {"ref": 1}, "name": "ref_1", "unique": True}]}
        )
    )
    if executor.execute("shop", {"count": "stock"}).get("n") == 0:
        check(executor.execute("shop", {"insert": "stock", "documents": [{"_id": "sku", "qty": STOCK}]}))
    order = int(executor.execute("shop", {"count": "orders"})["n"]) + seed * 1_000_000
    txn_session = lsid(uuid.uuid4())
    retry_session_id = uuid.uuid4()
    txn_number = 0
    retry_number = 0
    out = sys.stdout
    while True:
        if rng.random() < 0.6:
            txn_number += 1
            order += 1
            base = {"lsid": txn_session, "txnNumber": Int64(txn_number), "autocommit": False}
            check(
                executor.execute(
                    "shop",
                    {
                        "insert": "orders",
                        "documents": [{"_id": order, "ref": f"o{order}"}],
                        "startTransaction": True,
                        **base,
                    },
                )
            )
            check(
                executor.execute(
                    "shop", {"update": "stock", "updates": [{"q": {"_id": "sku"}, "u": {"$inc": {"qty": -1}}}], **base}
                )
            )
            check(executor.execute("admin", {"commitTransaction": 1, **base}))
            out.write(f"txn {order}\n")
        else:
            retry_number += 1
            order += 1
            check(
                executor.execute(
                    "shop",
                    {
                        "insert": "retried",
                        "documents": [{"_id": f"r{order}"}],
                        "lsid": lsid(retry_session_id),
                        "txnNumber": Int64(retry_number),
                    },
                )
            )
            out.write(f"retry {retry_session_id.hex} {retry_number} {order}\n")
        out.flush()


if __name__ == "__main__":
    main()
