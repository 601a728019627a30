"""The ``foliodb`` command: argument parsing only."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from typing import Any

from bson import json_util
from pymongo.errors import PyMongoError

import foliodb
from foliodb.advisor import advise, render
from foliodb.advisor.advise import DEFAULT_SAMPLE
from foliodb.demo import run as run_demo
from foliodb.errors import CommandError
from foliodb.server import DEFAULT_PORT, Server
from foliodb.server.tls import MODES as TLS_MODES
from foliodb.server.tls import TLSError
from foliodb.tools.dump import SYSTEM_DATABASES, dump
from foliodb.tools.restore import restore


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
    serve.add_argument("--auth", action="store_true", help="require users (SCRAM) and check their roles")
    serve.add_argument("--tlsMode", choices=TLS_MODES, default="disabled", help="TLS, as mongod (default disabled)")
    serve.add_argument("--tlsCertificateKeyFile", help="the server's certificate and key, one PEM file")
    serve.add_argument("--tlsCAFile", help="CA certificates (PEM) that sign client certificates (MONGODB-X509)")
    serve.add_argument(
        "--tlsAllowConnectionsWithoutCertificates", action="store_true", help="with --tlsCAFile, certificates optional"
    )
    serve.add_argument("--maxConns", type=int, help="connection limit (default: 80%% of the soft RLIMIT_NOFILE)")
    for name, help_text in (
        ("dump", "write databases in mongodump's format (mongorestore loads them into MongoDB)"),
        ("restore", "load a dump in mongodump's format (from mongodump or foliodb dump)"),
    ):
        tool = commands.add_parser(name, help=help_text)
        source = tool.add_mutually_exclusive_group()
        source.add_argument("--dbpath", default=None, help="an embedded database directory (default ./data)")
        source.add_argument("--uri", default=None, help="a MongoDB connection string instead (foliodb serve, MongoDB)")
        if name == "dump":
            tool.add_argument("--out", "-o", default="dump", help="the dump directory (default ./dump)")
            tool.add_argument("--db", "-d", default=None, help="only this database")
            tool.add_argument("--collection", "-c", default=None, help="only this collection (with --db)")
            tool.add_argument("--gzip", action="store_true", help="compress every file (.gz)")
        else:
            tool.add_argument("dir", nargs="?", default="dump", help="the dump directory (default ./dump)")
            tool.add_argument("--drop", action="store_true", help="drop each collection before restoring it")
    advise_cmd = commands.add_parser("advise", help="schema-design recommendations for a database, with evidence")
    advise_source = advise_cmd.add_mutually_exclusive_group()
    advise_source.add_argument("--dbpath", default=None, help="an embedded database directory (default ./data)")
    advise_source.add_argument("--uri", default=None, help="a MongoDB connection string instead")
    advise_cmd.add_argument("--db", "-d", default=None, help="only this database (default: every user database)")
    advise_cmd.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, help="documents sampled per collection")
    advise_cmd.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            run_demo(args.dbpath)
        elif args.command == "serve":
            return run_server(
                args.dbpath,
                args.bind_ip,
                args.port,
                args.auth,
                tls_mode=args.tlsMode,
                tls_certificate_key_file=args.tlsCertificateKeyFile,
                tls_ca_file=args.tlsCAFile,
                tls_allow_connections_without_certificates=args.tlsAllowConnectionsWithoutCertificates,
                max_conns=args.maxConns,
            )
        elif args.command in ("dump", "restore"):
            return run_tool(args)
        elif args.command == "advise":
            return run_advisor(args)
    except BrokenPipeError:
        # The reader went away (say, `| head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


def run_server(dbpath: str, host: str, port: int, auth: bool, **options: Any) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        server = Server(dbpath, host, port, auth=auth, **options)
        host, port = server.start()
    except (OSError, CommandError, TLSError) as exc:
        print(f"foliodb serve: {exc}", file=sys.stderr)
        return 1
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: server.shutdown())
    # One line a script can wait for, naming the port (useful with --port 0).
    print(f"foliodb {foliodb.__version__} waiting for connections on {host}:{port} (dbpath {dbpath})", flush=True)
    server.serve_forever()
    return 0


def _client(args: argparse.Namespace) -> Any:
    if args.uri is not None:
        import pymongo

        return pymongo.MongoClient(args.uri)
    return foliodb.MongoClient(args.dbpath or "./data")


def run_advisor(args: argparse.Namespace) -> int:
    client = _client(args)
    try:
        names = [args.db] if args.db else [n for n in client.list_database_names() if n not in SYSTEM_DATABASES]
        report = {name: advise(client[name], sample_size=args.sample) for name in names}
    except (PyMongoError, OSError) as exc:
        print(f"foliodb advise: {exc}", file=sys.stderr)
        return 1
    finally:
        client.close()
    if args.json:
        print(json_util.dumps({name: [r.as_dict() for r in recs] for name, recs in report.items()}, indent=1))
    else:
        print("\n\n".join(render(name, recs) for name, recs in report.items()) or "no databases")
    return 0


def run_tool(args: argparse.Namespace) -> int:
    client = _client(args)
    try:
        if args.command == "dump":
            if args.collection is not None and args.db is None:
                print("foliodb dump: --collection needs --db", file=sys.stderr)
                return 2
            dumped = dump(client, args.out, db=args.db, collection=args.collection, gzip=args.gzip)
            for ns, count in dumped.documents.items():
                print(f"dumped {count} documents from {ns}")
            for ns in dumped.views:
                print(f"dumped view {ns}")
        else:
            restored = restore(client, args.dir, drop=args.drop)
            for ns, count in restored.documents.items():
                refused = restored.failures.get(ns, 0)
                extra = f", {refused} refused (duplicate _id)" if refused else ""
                print(f"restored {count} documents to {ns}{extra}, {restored.indexes.get(ns, 0)} indexes")
            for ns in restored.views:
                print(f"restored view {ns}")
    except (PyMongoError, OSError, ValueError) as exc:
        print(f"foliodb {args.command}: {exc}", file=sys.stderr)
        return 1
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
