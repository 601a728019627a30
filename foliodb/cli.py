"""The ``foliodb`` command: argument parsing only."""

from __future__ import annotations

import argparse
import os
import sys

import foliodb
from foliodb.demo import run as run_demo


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="foliodb", description="FolioDB: an embedded MongoDB-compatible database.")
    parser.add_argument("--version", action="version", version=f"foliodb {foliodb.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="load the e-commerce catalogue example and run its queries")
    demo.add_argument("dbpath", nargs="?", default="./foliodb-demo", help="database directory (default ./foliodb-demo)")
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            run_demo(args.dbpath)
    except BrokenPipeError:
        # The reader went away (say, `| head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
