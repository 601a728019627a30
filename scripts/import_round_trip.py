"""Re-import a large ``foliodb export`` with ``foliodb import`` and check that nothing
is lost: issue 26's report (200,000 documents, 8 lost, exit status 0), end to end.

    python scripts/import_round_trip.py                 # 200,000 documents, JSON relaxed and canonical
    python scripts/import_round_trip.py --docs 50000

Documents are small and full of the tokens a read boundary used to cut (floats,
exponents, negatives, true/false, null). For each JSON format the script runs
``foliodb export`` and ``foliodb import`` as a user would, then checks the exit
statuses, the counts and every document against the source. It prints one line
per format and exits 1 when anything differs. The suite runs a bounded version
(``tests/unit/tools/test_round_trip.py``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

import foliodb


def documents(n: int) -> list[dict[str, object]]:
    return [
        {"_id": i, "f": -i / 7, "e": i * 1e-9, "t": i % 2 == 0, "n": None, "neg": -i, "s": f"é{i}"} for i in range(n)
    ]


def foliodb_command(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "foliodb", *args], capture_output=True, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=200_000)
    args = parser.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        dbpath = os.path.join(tmp, "data")
        with foliodb.MongoClient(dbpath) as client:
            source = documents(args.docs)
            for start in range(0, args.docs, 10_000):
                client.rt.source.insert_many(source[start : start + 10_000])
        for json_format in ("relaxed", "canonical"):
            out = os.path.join(tmp, f"{json_format}.json")
            exported = foliodb_command(
                "export", "--dbpath", dbpath, "-d", "rt", "-c", "source", "--jsonFormat", json_format, "-o", out
            )
            imported = foliodb_command(
                "import", "--dbpath", dbpath, "-d", "rt", "-c", json_format, "--drop", "--quiet", out
            )
            with foliodb.MongoClient(dbpath) as client:
                count = client.rt[json_format].count_documents({})
                differ = sum(
                    a != b for a, b in zip(client.rt.source.find(), client.rt[json_format].find(), strict=False)
                )
            ok = exported.returncode == 0 and imported.returncode == 0 and count == args.docs and differ == 0
            failures += not ok
            print(
                f"{json_format}: {os.path.getsize(out):,} bytes, export status {exported.returncode}, "
                f"import status {imported.returncode}, {count:,} of {args.docs:,} documents back, "
                f"{differ} differ: {'ok' if ok else 'LOST DATA'}"
            )
            if imported.stderr:
                print(imported.stderr.decode().rstrip())
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
