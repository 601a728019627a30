"""The ``foliodb`` command: argument parsing only."""

from __future__ import annotations

import argparse
import sys

import foliodb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="foliodb", description="FolioDB: an embedded MongoDB-compatible database.")
    parser.add_argument("--version", action="version", version=f"foliodb {foliodb.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="load the e-commerce catalogue example and run its queries")
    demo.add_argument("dbpath", nargs="?", default="./foliodb-demo", help="database directory (default ./foliodb-demo)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from foliodb.demo import run

        run(args.dbpath)
    return 0


if __name__ == "__main__":
    sys.exit(main())
