"""The ``foliodb`` command: argument parsing only.

Every user error ends the command with one line on stderr,
``foliodb <command>: <what went wrong>``, and exit status 1; never a traceback.
Data goes to stdout (``export``, ``dump --archive``); progress and notes go to
stderr (see :mod:`foliodb.tools.progress`).
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from bson import Timestamp, json_util
from pymongo.errors import OperationFailure, PyMongoError

import foliodb
from foliodb.advisor import DEFAULT_SAMPLE, advise
from foliodb.advisor.codes import SEVERITIES
from foliodb.advisor.html import render_html
from foliodb.advisor.text import render_text
from foliodb.commands import failpoints
from foliodb.demo import run as run_demo
from foliodb.errors import CommandError, ErrorCode
from foliodb.lab import DEFAULT_SIZE as DEFAULT_LAB_SIZE
from foliodb.lab import SCENARIOS as LAB_SCENARIOS
from foliodb.lab import run as run_lab_scenarios
from foliodb.lab.html import render_html as render_lab_html
from foliodb.lab.report import render_claims
from foliodb.lab.report import render_text as render_lab_text
from foliodb.server import DEFAULT_PORT, Server
from foliodb.server.server import tune_interpreter_for_serving
from foliodb.server.tls import MODES as TLS_MODES
from foliodb.server.tls import TLSError
from foliodb.tools import files
from foliodb.tools.commands import run_dump, run_export, run_import, run_restore, run_sync, with_client
from foliodb.tools.dump import SKIPPED_DATABASES
from foliodb.tools.oplog import parse_limit
from foliodb.tools.progress import Reporter
from foliodb.tools.target import ToolError, describe, in_use_message, os_reason


class UsageError(Exception):
    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    """argparse, with a bad command line reported as one line and exit status 1."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, message)


def port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text} is not a port number (0 to 65535; 0 picks a free one)")
    return value


def count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a count (a whole number, 0 or more)")
    return value


def positive(text: str) -> int:
    value = count(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def oplog_limit(text: str) -> Timestamp:
    try:
        return parse_limit(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def extended_json(text: str) -> dict[str, Any]:
    try:
        value = json_util.loads(text)
    except (ValueError, TypeError) as exc:
        raise argparse.ArgumentTypeError(f"not a JSON document ({exc})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("not a JSON document")
    return value


def build_parser() -> Parser:
    parser = Parser(prog="foliodb", description="FolioDB: an embedded MongoDB-compatible database.")
    parser.add_argument("--version", action="version", version=f"foliodb {foliodb.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser("demo", help="load the e-commerce catalogue example and run its queries")
    demo.add_argument("dbpath", nargs="?", default="./foliodb-demo", help="database directory (default ./foliodb-demo)")
    serve = commands.add_parser("serve", help="serve a database over MongoDB's wire protocol")
    serve.add_argument("--dbpath", default="./data", help="database directory (default ./data)")
    serve.add_argument("--bind_ip", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=port, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks one)")
    serve.add_argument("--auth", action="store_true", help="require users (SCRAM) and check their roles")
    serve.add_argument("--tlsMode", choices=TLS_MODES, default="disabled", help="TLS, as mongod (default disabled)")
    serve.add_argument("--tlsCertificateKeyFile", help="the server's certificate and key, one PEM file")
    serve.add_argument("--tlsCAFile", help="CA certificates (PEM) that sign client certificates (MONGODB-X509)")
    serve.add_argument(
        "--tlsAllowConnectionsWithoutCertificates", action="store_true", help="with --tlsCAFile, certificates optional"
    )
    persona = serve.add_mutually_exclusive_group()
    persona.add_argument("--replSet", default="rs0", help="the one-member replica set's name (default rs0)")
    persona.add_argument("--standalone", action="store_true", help="answer as a standalone (no transactions)")
    serve.add_argument("--oplogSizeMB", type=float, help="the oplog's size bound in MB (default 1024)")
    serve.add_argument("--oplogMinRetentionHours", type=float, help="keep oplog entries at least this long")
    serve.add_argument("--maxConns", type=int, help="connection limit (default: 80%% of the soft RLIMIT_NOFILE)")
    serve.add_argument(
        "--noscripting", action="store_true", help="no server-side JavaScript ($where, $function, mapReduce)"
    )
    serve.add_argument(
        "--enableTestCommands", action="store_true", help="allow configureFailPoint, as mongod's enableTestCommands"
    )

    dump_cmd = _tool(
        commands, "dump", "write databases in mongodump's format (mongorestore loads them into MongoDB)", reads=True
    )
    out = dump_cmd.add_mutually_exclusive_group()
    out.add_argument("--out", "-o", default=None, help="the dump directory (default ./dump)")
    out.add_argument("--archive", nargs="?", const="-", default=None, metavar="FILE", help=_ARCHIVE_OUT)
    dump_cmd.add_argument("--db", "-d", default=None, help="only this database")
    dump_cmd.add_argument("--collection", "-c", default=None, help="only this collection (with --db)")
    dump_cmd.add_argument("--query", "-q", type=extended_json, default=None, help="only the documents matching it")
    dump_cmd.add_argument("--gzip", action="store_true", help="compress the files (or the archive)")
    dump_cmd.add_argument("--dumpDbUsersAndRoles", action="store_true", help="the --db database's users and roles too")
    dump_cmd.add_argument("--oplog", action="store_true", help="the oplog entries written during the dump too")

    restore_cmd = _tool(commands, "restore", "load a dump in mongodump's format (from mongodump or foliodb dump)")
    restore_cmd.add_argument("dir", nargs="?", default=None, help="the dump directory (default ./dump)")
    restore_cmd.add_argument("--archive", nargs="?", const="-", default=None, metavar="FILE", help=_ARCHIVE_IN)
    restore_cmd.add_argument("--gzip", action="store_true", help="the archive is compressed")
    restore_cmd.add_argument("--drop", action="store_true", help="drop each collection before restoring it")
    restore_cmd.add_argument("--nsInclude", action="append", default=[], metavar="PATTERN", help=_NS_PATTERN)
    restore_cmd.add_argument("--nsExclude", action="append", default=[], metavar="PATTERN", help=_NS_PATTERN)
    restore_cmd.add_argument("--nsFrom", action="append", default=[], metavar="PATTERN", help="rename from (pairs)")
    restore_cmd.add_argument("--nsTo", action="append", default=[], metavar="PATTERN", help="rename to (pairs)")
    restore_cmd.add_argument("--noIndexRestore", action="store_true", help="restore no index but _id")
    restore_cmd.add_argument(
        "--numInsertionWorkersPerCollection",
        "--numInsertionWorkers",
        "-j",
        type=positive,
        default=1,
        dest="workers",
        help="concurrent insert_many batches per collection (default 1)",
    )
    restore_cmd.add_argument("--restoreDbUsersAndRoles", action="store_true", help="restore $admin.system.* files")
    restore_cmd.add_argument(
        "--bypassDocumentValidation", action="store_true", help="insert documents their collection's validator refuses"
    )
    restore_cmd.add_argument("--oplogReplay", action="store_true", help="apply the dump's oplog (from dump --oplog)")
    restore_cmd.add_argument("--oplogLimit", type=oplog_limit, default=None, metavar="SECONDS[:ORDINAL]", help=_LIMIT)

    import_cmd = _tool(commands, "import", "load JSON, CSV or TSV as mongoimport does")
    import_cmd.add_argument("file", nargs="?", default=None, help="the input file (default: --file, else stdin)")
    import_cmd.add_argument("--file", dest="file_option", default=None, help="the input file (default stdin)")
    import_cmd.add_argument("--db", "-d", default="test", help="the database (default test)")
    import_cmd.add_argument("--collection", "-c", default=None, help="the collection (default: the file's name)")
    import_cmd.add_argument("--type", choices=("json", "csv", "tsv"), default="json", help="input format")
    import_cmd.add_argument("--jsonArray", action="store_true", help="the input is one JSON array")
    _field_options(import_cmd)
    import_cmd.add_argument("--headerline", action="store_true", help="the first line names the fields (CSV, TSV)")
    import_cmd.add_argument("--columnsHaveTypes", action="store_true", help="fields are typed: name.int32() ...")
    import_cmd.add_argument("--parseGrace", choices=("autoCast", "skipField", "skipRow", "stop"), default="stop")
    import_cmd.add_argument("--ignoreBlanks", action="store_true", help="leave empty CSV/TSV values out")
    import_cmd.add_argument("--mode", choices=("insert", "upsert", "merge", "delete"), default=None)
    import_cmd.add_argument("--upsertFields", default=None, help="fields that find the document to replace or merge")
    import_cmd.add_argument("--drop", action="store_true", help="drop the collection first")
    import_cmd.add_argument("--stopOnError", action="store_true", help="stop at the first bad line or write error")

    export_cmd = _tool(commands, "export", "write a collection as JSON or CSV, as mongoexport does", reads=True)
    export_cmd.add_argument("--db", "-d", default="test", help="the database (default test)")
    export_cmd.add_argument("--collection", "-c", required=True, help="the collection")
    export_cmd.add_argument("--out", "-o", default="-", help="the output file (default stdout)")
    export_cmd.add_argument("--type", choices=("json", "csv"), default="json", help="output format")
    export_cmd.add_argument("--jsonFormat", choices=("relaxed", "canonical"), default="relaxed")
    export_cmd.add_argument("--jsonArray", action="store_true", help="one JSON array")
    export_cmd.add_argument("--pretty", action="store_true", help="indented JSON")
    _field_options(export_cmd)
    export_cmd.add_argument("--noHeaderLine", action="store_true", help="CSV without the field names line")
    export_cmd.add_argument("--query", "-q", type=extended_json, default=None, help="only the documents matching it")
    export_cmd.add_argument("--sort", type=extended_json, default=None, help="sort order, e.g. '{\"age\": 1}'")
    export_cmd.add_argument("--skip", type=count, default=0)
    export_cmd.add_argument("--limit", type=count, default=0)
    export_cmd.add_argument("--assertExists", action="store_true", help="fail when the collection does not exist")

    sync_cmd = commands.add_parser(
        "sync", help="copy a FolioDB database to MongoDB, then apply its changes continuously (a live move)"
    )
    sync_cmd.add_argument("source", metavar="SOURCE", help="a FolioDB dbpath, or a mongodb:// URI of foliodb serve")
    sync_cmd.add_argument("target", metavar="TARGET", help="a MongoDB URI (replica set, sharded cluster), or a dbpath")
    sync_cmd.add_argument("--db", "-d", action="append", default=[], metavar="NAME", help="only NAME (repeatable)")
    sync_cmd.add_argument("--nsInclude", action="append", default=[], metavar="PATTERN", help=_NS_PATTERN)
    sync_cmd.add_argument("--nsExclude", action="append", default=[], metavar="PATTERN", help=_NS_PATTERN)
    sync_cmd.add_argument("--resync", action="store_true", help="drop what was synced on the target and start over")
    sync_cmd.add_argument("--once", action="store_true", help="stop when caught up instead of following the source")
    sync_cmd.add_argument("--quiet", action="store_true", help="no progress, no notes (problems are still shown)")

    # advise parses its own arguments (advise_parser): a usage error there exits 2, as its documentation says.
    advise_cmd = commands.add_parser(
        "advise", help="schema-design findings for a database, with evidence", add_help=False, prefix_chars="\0"
    )
    advise_cmd.add_argument("arguments", nargs="*")
    lab = commands.add_parser("lab", help="build competing schema designs and measure the same workload on each")
    lab.add_argument(
        "scenarios", nargs="*", metavar="SCENARIO", help=f"any of {', '.join(LAB_SCENARIOS)} (default all)"
    )
    lab.add_argument(
        "--size", type=positive, default=DEFAULT_LAB_SIZE, help=f"scale of the data (default {DEFAULT_LAB_SIZE})"
    )
    lab.add_argument(
        "--calls", type=positive, default=20, help="calls of each question per unit of weight (default 20)"
    )
    lab.add_argument("--seed", type=int, default=1, help="seed of the generated data and workload (default 1)")
    lab.add_argument("--dbpath", default=":memory:", help="scratch database (default :memory:)")
    lab.add_argument("--html", metavar="FILE", help="also write the report as one self-contained HTML page")
    lab.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return parser


_ARCHIVE_OUT = "write one archive to FILE (a directory gets FILE/archive), or to stdout without FILE"
_ARCHIVE_IN = "read one archive from FILE, or from stdin without FILE"
_NS_PATTERN = "db.collection, * matches anything (repeatable)"
_READ_ONLY = "open the dbpath's files read-only (a backup, another user's files); automatic when not writable"
_LIMIT = "with --oplogReplay: apply only the entries before this time"


def _tool(commands: Any, name: str, help_text: str, reads: bool = False) -> Parser:
    tool: Parser = commands.add_parser(name, help=help_text)
    source = tool.add_mutually_exclusive_group()
    source.add_argument("--dbpath", default=None, help="an embedded database directory (default ./data)")
    source.add_argument("--uri", default=None, help="a MongoDB connection string instead (foliodb serve, MongoDB)")
    if reads:
        _read_only_option(tool)
    tool.add_argument("--quiet", action="store_true", help="no progress, no notes (problems are still shown)")
    return tool


def _read_only_option(tool: Parser) -> None:
    tool.add_argument("--readOnly", action="store_true", help=_READ_ONLY)


def _field_options(tool: Parser) -> None:
    fields = tool.add_mutually_exclusive_group()
    fields.add_argument("--fields", "-f", default=None, help="comma-separated field names")
    fields.add_argument("--fieldFile", default=None, help="a file of field names, one a line")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        print(f"{exc.prog}: {exc} (see {exc.prog} --help)", file=sys.stderr)
        return 1
    command = f"foliodb {args.command}"
    try:
        if args.command == "demo":
            run_demo(args.dbpath)
            return 0
        if args.command == "serve":
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
                replica_set=None if args.standalone else args.replSet,
                oplog_size_mb=args.oplogSizeMB,
                oplog_min_retention_hours=args.oplogMinRetentionHours,
                test_commands=args.enableTestCommands,
                javascript=not args.noscripting,
            )
        return COMMANDS[args.command](args)
    except BrokenPipeError:
        # The reader went away (say, `| head`): stop quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        return 130
    except OperationFailure as exc:
        if exc.code == ErrorCode.DBPathInUse and args.command == "demo":
            print(f"{command}: {in_use_message(args.dbpath)}", file=sys.stderr)
        else:
            print(f"{command}: {describe(exc)}", file=sys.stderr)
        return 1
    except (ToolError, PyMongoError, OSError, ValueError) as exc:
        print(f"{command}: {describe(exc)}", file=sys.stderr)
        return 1


def run_server(dbpath: str, host: str, port: int, auth: bool, test_commands: bool = False, **options: Any) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    tune_interpreter_for_serving()
    try:
        server = Server(dbpath, host, port, auth=auth, **options)
        if test_commands:
            failpoints.enable_test_commands(server.executor)
    except CommandError as exc:
        message = in_use_message(dbpath) if exc.code == ErrorCode.DBPathInUse else exc.errmsg
        print(f"foliodb serve: {message}", file=sys.stderr)
        return 1
    except TLSError as exc:
        print(f"foliodb serve: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"foliodb serve: cannot open the dbpath {dbpath}: {os_reason(exc, with_file=False)}", file=sys.stderr)
        return 1
    try:
        host, port = server.start()
    except TLSError as exc:
        print(f"foliodb serve: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            reason = f"port {port} on {host} is in use by another process (choose another with --port; 0 picks one)"
        else:
            reason = f"cannot listen on {host}:{port}: {os_reason(exc)}"
        print(f"foliodb serve: {reason}", file=sys.stderr)
        return 1
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: server.shutdown())
    # One line a script can wait for, naming the port (useful with --port 0).
    print(f"foliodb {foliodb.__version__} waiting for connections on {host}:{port} (dbpath {dbpath})", flush=True)
    server.serve_forever()
    return 0


def advise_parser() -> Parser:
    parser = Parser(
        prog="foliodb advise",
        description="Schema-design findings (embed, reference, bucket, denormalize, index) with their evidence. "
        "Exit status 0 whether or not something is found, 2 for a bad command line.",
    )
    parser.add_argument("target", nargs="?", metavar="DBPATH | mongodb://URI", help="default ./data")
    parser.add_argument("--dbpath", default=None, help="an embedded database directory (as the other tools take it)")
    parser.add_argument("--uri", default=None, help="a MongoDB connection string (as the other tools take it)")
    _read_only_option(parser)
    parser.add_argument("--db", "-d", action="append", default=[], metavar="NAME", help="advise NAME (repeatable)")
    parser.add_argument("--sample", type=positive, default=DEFAULT_SAMPLE, help="documents sampled per collection")
    parser.add_argument("--json", default=None, metavar="FILE", help="write the JSON report to FILE (- for stdout)")
    parser.add_argument("--html", default=None, metavar="FILE", help="write the HTML report to FILE")
    parser.add_argument("--min-severity", choices=SEVERITIES, default=SEVERITIES[0], help="leave out milder findings")
    parser.add_argument("--quiet", action="store_true", help="no progress")
    return parser


def run_advisor(args: argparse.Namespace) -> int:
    parser = advise_parser()
    try:
        options = parser.parse_args(args.arguments)
        if options.target is not None and (options.dbpath is not None or options.uri is not None):
            parser.error("give the database once: DBPATH, mongodb://URI, --dbpath or --uri")
        if options.dbpath is not None and options.uri is not None:
            parser.error("give --dbpath or --uri, not both")
    except UsageError as exc:
        print(f"{exc.prog}: {exc} (see {exc.prog} --help)", file=sys.stderr)
        return 2
    target = options.target
    uri = options.uri if target is None or not target.startswith(("mongodb://", "mongodb+srv://")) else target
    dbpath = options.dbpath if uri is not None or target is None else target
    reporter = Reporter(options.quiet)

    def work(client: Any) -> int:
        names = options.db or [n for n in client.list_database_names() if n not in _NOT_ADVISED]
        reports = []
        with reporter.task("advise", len(names), "databases") as task:
            for name in names:
                reports.append(advise(client[name], sample=options.sample).at_least(options.min_severity))
                task.advance(1)
        if options.json is not None:
            text = json.dumps([r.as_json() for r in reports], indent=1) + "\n"
            if options.json == files.STDIO:
                sys.stdout.write(text)
            else:
                with open(options.json, "w", encoding="utf-8") as out:
                    out.write(text)
        if options.html is not None:
            with open(options.html, "w", encoding="utf-8") as out:
                out.write(render_html(reports))
        if options.json != files.STDIO:
            print("\n\n".join(render_text(r) for r in reports) or "no databases")
        return 0

    return with_client(argparse.Namespace(dbpath=dbpath, uri=uri, readOnly=options.readOnly), True, work)


_NOT_ADVISED = ("admin", *SKIPPED_DATABASES)


def run_lab(args: argparse.Namespace) -> int:
    unknown = [name for name in args.scenarios if name not in LAB_SCENARIOS]
    if unknown:
        print(
            f"foliodb lab: unknown scenario {', '.join(unknown)}; choose from {', '.join(LAB_SCENARIOS)}",
            file=sys.stderr,
        )
        return 2
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    results = run_lab_scenarios(
        args.scenarios, size=args.size, calls=args.calls, seed=args.seed, path=args.dbpath, progress=progress
    )
    print(render_lab_text(results))
    print(render_claims(results))
    if args.html is not None:
        with open(args.html, "w", encoding="utf-8") as out:
            out.write(render_lab_html(results))
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "dump": run_dump,
    "restore": run_restore,
    "import": run_import,
    "export": run_export,
    "sync": run_sync,
    "advise": run_advisor,
    "lab": run_lab,
}

if __name__ == "__main__":
    sys.exit(main())
