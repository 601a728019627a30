"""The tools' commands (``foliodb dump``, ``restore``, ``import``, ``export``, ``sync``)
once :mod:`foliodb.cli` has parsed their arguments: each opens its database
(:func:`foliodb.tools.target.open_client`), runs the tool and says how it went.

The exit status is 0, or 1 when any document was not imported or restored
(the summary says so even with ``--quiet``); a user error raises
:class:`foliodb.tools.target.ToolError`, which the command prints as one line.
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import sys
from collections.abc import Callable
from typing import IO, Any

from foliodb.tools import files
from foliodb.tools.archive import ArchiveError
from foliodb.tools.dump import dump, dump_archive
from foliodb.tools.exporter import ExportOptions, export_documents
from foliodb.tools.fields import read_field_file, split_fields
from foliodb.tools.importer import ImportOptions, InputError, import_documents
from foliodb.tools.progress import Reporter
from foliodb.tools.restore import Options, RestoreReport, restore, restore_archive
from foliodb.tools.sync import Sync, SyncOptions, source_name
from foliodb.tools.target import ToolError, open_client


def with_client(args: argparse.Namespace, reads_only: bool, work: Callable[[Any], int]) -> int:
    # A reading tool opens the files read-only when asked (--readOnly) or when it cannot write them.
    read_only = (getattr(args, "readOnly", False) or None) if reads_only else False
    client = open_client(args.dbpath, args.uri, reads_only, read_only)
    try:
        return work(client)
    finally:
        client.close()


def run_dump(args: argparse.Namespace) -> int:
    if args.collection is not None and args.db is None:
        raise ToolError("--collection needs --db")
    if args.query is not None and args.collection is None:
        raise ToolError("cannot dump using a query without a specified collection")
    if args.dumpDbUsersAndRoles and (args.db is None or args.collection is not None):
        raise ToolError("--dumpDbUsersAndRoles needs --db and no --collection")
    if args.oplog and args.db is not None:
        raise ToolError("--oplog mode only supported on full dumps")
    reporter = Reporter(args.quiet)
    what = (args.db, args.collection, args.query)

    def work(client: Any) -> int:
        if args.archive is None:
            out = args.out or "dump"
            dump(client, out, *what, args.gzip, args.dumpDbUsersAndRoles, reporter, oplog=args.oplog)
            return 0
        path = args.archive
        if path != files.STDIO and os.path.isdir(path):
            path = os.path.join(path, "archive.gz" if args.gzip else "archive")  # as mongodump does
        if path == files.STDIO and sys.stdout.isatty():
            raise ToolError("will not write an archive to a terminal: give --archive=FILE or redirect stdout")
        with files.open_write(path, args.gzip) as stream:
            dump_archive(client, stream, *what, args.dumpDbUsersAndRoles, reporter, oplog=args.oplog)
        return 0

    return with_client(args, True, work)


def run_restore(args: argparse.Namespace) -> int:
    if args.archive is not None and args.dir is not None:
        raise ToolError("give the dump directory or --archive, not both")
    options = Options(
        drop=args.drop,
        include=args.nsInclude,
        exclude=args.nsExclude,
        renames=(args.nsFrom, args.nsTo),
        no_index_restore=args.noIndexRestore,
        workers=args.workers,
        restore_db_users_and_roles=args.restoreDbUsersAndRoles,
        bypass_document_validation=args.bypassDocumentValidation,
        oplog_replay=args.oplogReplay,
        oplog_limit=args.oplogLimit,
    )
    if args.oplogLimit is not None and not args.oplogReplay:
        raise ToolError("cannot use --oplogLimit without --oplogReplay enabled")
    reporter = Reporter(args.quiet)

    def work(client: Any) -> int:
        if args.archive is None:
            report = restore(client, args.dir or "dump", options, reporter)
        else:
            with files.open_read(args.archive, args.gzip) as stream:
                try:
                    report = restore_archive(client, stream, options, reporter)
                except ArchiveError as exc:
                    name = "standard input" if args.archive == files.STDIO else args.archive
                    raise ToolError(f"{name}: {exc}") from None
        return _restore_summary(report, reporter)

    if args.archive is None and not os.path.isdir(args.dir or "dump"):
        raise ToolError(f"no dump directory at {args.dir or 'dump'}")
    return with_client(args, False, work)


def _restore_summary(report: RestoreReport, reporter: Reporter) -> int:
    """mongorestore's closing line; the exit status: 1 when a document failed or data was not
    restored (said even with --quiet)."""
    for namespace in report.ignored:
        reporter.note(f"skipped {namespace}")
    restored = sum(report.documents.values())
    failed = sum(report.failures.values())
    skipped = sum(report.skipped.values())
    extra = f" {skipped} document(s) skipped: their _id was already there." if skipped else ""
    summary = f"{restored} document(s) restored successfully. {failed} document(s) failed to restore.{extra}"
    if not failed and not report.unrestored:
        reporter.note(summary)
        return 0
    for problem in report.unrestored:
        reporter.warn(problem)
    for namespace, count in report.failures.items():
        reporter.warn(f"{namespace}: {count} document(s) failed to restore, the first: {report.errors[namespace]}")
    reporter.warn(summary)
    return 1


def run_import(args: argparse.Namespace) -> int:
    if args.file is not None and args.file_option is not None:
        raise ToolError("give the input file once: as an argument or with --file")
    path = args.file or args.file_option
    collection = args.collection
    if collection is None:
        if path is None:
            raise ToolError("no collection specified: give --collection (reading stdin)")
        collection = os.path.splitext(os.path.basename(path))[0]
    fields = _fields(args)
    upsert_fields = split_fields(args.upsertFields) if args.upsertFields else None
    mode = args.mode or ("upsert" if upsert_fields else "insert")
    options = ImportOptions(
        type=args.type,
        json_array=args.jsonArray,
        fields=fields,
        header_line=args.headerline,
        columns_have_types=args.columnsHaveTypes,
        parse_grace=args.parseGrace,
        ignore_blanks=args.ignoreBlanks,
        mode=mode,
        upsert_fields=upsert_fields,
        stop_on_error=args.stopOnError,
    )
    reporter = Reporter(args.quiet)
    size = os.path.getsize(path) if path is not None and os.path.isfile(path) else None
    source: IO[bytes] = files.open_read(path or files.STDIO)

    def work(client: Any) -> int:
        target = client[args.db][collection]
        if args.drop:
            reporter.note(f"dropping: {args.db}.{collection}")
            target.drop()
        try:
            report = import_documents(target, source, options, size, reporter)
        except InputError as exc:
            before = exc.report
            failed = f", {before.failed} failed" if before.failed else ""
            raise ToolError(f"{exc} ({before.imported} document(s) imported before it{failed})") from None
        done, verb = ("deleted", "delete") if mode == "delete" else ("imported", "import")  # mongoimport's words
        summary = f"{report.imported} document(s) {done} successfully. {report.failed} document(s) failed to {verb}."
        if report.failed:  # shown even with --quiet, and the status says it: nothing is lost silently
            reporter.warn(summary)
            return 1
        reporter.note(summary)
        return 0

    try:
        return with_client(args, False, work)
    finally:
        if path is not None:
            source.close()


def run_export(args: argparse.Namespace) -> int:
    options = ExportOptions(
        type=args.type,
        json_format=args.jsonFormat,
        json_array=args.jsonArray,
        pretty=args.pretty,
        fields=_fields(args),
        no_header_line=args.noHeaderLine,
        query=args.query,
        sort=args.sort,
        skip=args.skip,
        limit=args.limit,
    )
    reporter = Reporter(args.quiet)

    def work(client: Any) -> int:
        if args.assertExists and not client[args.db].list_collection_names(filter={"name": args.collection}):
            raise ToolError(f"collection {args.db}.{args.collection} does not exist")
        with files.open_write(args.out) as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
            exported = export_documents(client[args.db][args.collection], text, options, reporter)
            text.flush()
            text.detach()
        reporter.note(f"exported {exported} record{'s' if exported != 1 else ''}")
        return 0

    return with_client(args, True, work)


def run_sync(args: argparse.Namespace) -> int:
    include = [*(f"{name}.*" for name in args.db), *args.nsInclude]
    options = SyncOptions(include=include, exclude=args.nsExclude, resync=args.resync, once=args.once)
    source = open_client(*_database(args.source), reads_only=True)
    try:
        target = open_client(*_database(args.target), reads_only=False)
        try:
            sync = Sync(source, target, source_name(args.source), options, Reporter(args.quiet))
            for signum in (signal.SIGINT, signal.SIGTERM):
                signal.signal(signum, lambda *_: sync.stop())
            sync.run()
        finally:
            target.close()
    finally:
        source.close()
    return 0


def _database(text: str) -> tuple[str | None, str | None]:
    """(dbpath, uri) of a command-line database."""
    return (None, text) if text.startswith(("mongodb://", "mongodb+srv://")) else (text, None)


def _fields(args: argparse.Namespace) -> list[str] | None:
    if args.fields is not None:
        return split_fields(args.fields)
    if args.fieldFile is not None:
        return read_field_file(args.fieldFile)
    return None
