"""The ``foliodb`` command: argument parsing only."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

import foliodb
from foliodb.demo import run as run_demo
from foliodb.errors import CommandError
from foliodb.server import DEFAULT_PORT, Server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="foliodb", description="FolioDB: an embedded MongoDB-compatible database.")
    parser.add_argument("--version", action="version", version=f"foliodb {foliodb.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="load the e-commerce catalogue example and run its queries")
    demo.add_argument("dbpath", nargs="?", default="./foliodb-demo", help="database directory (default ./foliodb-demo)")
    serve = commands.add_parser("serve", help="serve a database over MongoDB's wire protocol")
    serve.add_argument("--dbpath", default="./data", help="database directory (default ./data)")
    serve.add_argument("--bind_ip", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks one)")
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            run_demo(args.dbpath)
        elif args.command == "serve":
            return run_server(args.dbpath, args.bind_ip, args.port)
    except BrokenPipeError:
        # The reader went away (say, `| head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


def run_server(dbpath: str, host: str, port: int) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        server = Server(dbpath, host, port)
        host, port = server.start()
    except (OSError, CommandError) as exc:
        print(f"foliodb serve: {exc}", file=sys.stderr)
        return 1
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: server.shutdown())
    # One line a script can wait for, naming the port (useful with --port 0).
    print(f"foliodb {foliodb.__version__} waiting for connections on {host}:{port} (dbpath {dbpath})", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
