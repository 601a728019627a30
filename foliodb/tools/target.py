"""The database a tool works on: an embedded dbpath or a MongoDB URI, and the
one-line messages the ``foliodb`` command prints when opening or using it fails.

A dbpath holds FolioDB's data in ``foliodb.sqlite``
(:data:`foliodb.engine.dbpath.DATA_FILE`). Tools that only read (``dump``,
``export``, ``advise``) never create a dbpath and refuse a directory without
that file, so a typo cannot leave an empty database behind or dump nothing
silently; they open it read-only with ``--readOnly``, or when the user cannot
write it. A dbpath held by another process is named by the owner its lock
file records; when the owner is ``foliodb serve``, the message gives the
``--uri`` that reaches the same data through it.
"""

from __future__ import annotations

import errno
import os
import shlex
from typing import Any

from pymongo.errors import OperationFailure, PyMongoError

import foliodb
from foliodb.engine.dbpath import DATA_FILE, LOCK_FILE
from foliodb.errors import CommandError, ErrorCode
from foliodb.server import DEFAULT_PORT

DEFAULT_DBPATH = "./data"


class ToolError(Exception):
    """A user error: the command prints the message as one line and exits 1."""


def open_client(dbpath: str | None, uri: str | None, reads_only: bool, read_only: bool | None = False) -> Any:
    """A pymongo-compatible client of ``uri`` (pymongo) or of ``dbpath`` (embedded).

    ``reads_only``: the tool only reads, so a missing dbpath is an error, not a new
    database. ``read_only`` (``--readOnly``): the files are opened read-only, as the
    API's ``read_only=True``: no lock is taken and no owner is asked, so a backup copy,
    another user's files or a dbpath another process holds can be read; ``None``: so
    only when the user cannot write the dbpath (its directory or its data file)."""
    if uri is not None:
        if read_only:
            raise ToolError("--readOnly opens a --dbpath's files: it does not apply to --uri")
        import pymongo

        try:
            return pymongo.MongoClient(uri)
        except PyMongoError as exc:
            raise ToolError(f"bad --uri {uri!r}: {describe(exc)}") from None
    path = dbpath or DEFAULT_DBPATH
    if reads_only or read_only:
        if not os.path.isdir(path):
            raise ToolError(f"no database at {path}: the directory does not exist")
        if not os.path.isfile(os.path.join(path, DATA_FILE)):
            raise ToolError(f"no FolioDB database at {path}: the directory holds no {DATA_FILE}")
    if read_only is None:
        read_only = not all(os.access(p, os.W_OK) for p in (path, os.path.join(path, DATA_FILE)))
    try:
        if read_only:
            return foliodb.MongoClient(path, read_only=True)
        return foliodb.MongoClient(path)
    except OperationFailure as exc:
        if exc.code == ErrorCode.DBPathInUse:
            raise ToolError(in_use_message(path)) from None
        raise ToolError(describe(exc)) from None
    except OSError as exc:
        raise ToolError(f"cannot open the dbpath {path}: {os_reason(exc, with_file=False)}") from None


def in_use_message(path: str) -> str:
    """Who holds the dbpath, from its lock file, and what to do instead."""
    try:
        with open(os.path.join(path, LOCK_FILE), encoding="utf-8", errors="replace") as fh:
            owner = fh.read().strip()
    except OSError:
        owner = ""
    pid, _, rest = owner.removeprefix("pid ").partition(" on ")
    host, _, command = rest.partition(" (")
    command = command.removesuffix(")")
    words = _split(command)
    if "serve" in words:
        served = words[words.index("serve") + 1 :]
        port = _option(served, "--port") or str(DEFAULT_PORT)
        if port == "0":  # the system chose it; the server printed it when it started
            port = "<the port it printed>"
        address = _option(served, "--bind_ip") or "127.0.0.1"
        if address in ("0.0.0.0", "::"):
            address = "127.0.0.1"
        return (
            f"the dbpath {path} is in use by foliodb serve (pid {pid} on {host}): "
            f"use --uri mongodb://{address}:{port} to work through it"
        )
    who = f"pid {pid} on {host} ({command})" if owner else "another process"
    return (
        f"the dbpath {path} is in use by {who}: one process opens a dbpath at a time; "
        "stop it, or serve the dbpath with foliodb serve and use --uri"
    )


def _split(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _option(words: list[str], name: str) -> str | None:
    for i, word in enumerate(words):
        if word == name and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(name + "="):
            return word.partition("=")[2]
    return None


def os_reason(exc: OSError, with_file: bool = True) -> str:
    """An OSError in words, without Python's ``[Errno n]`` prefix."""
    if exc.errno in (errno.EACCES, errno.EPERM):
        reason = "permission denied"
    elif exc.errno == errno.ENOSPC:
        reason = "no space left on the device"
    else:
        reason = exc.strerror or str(exc)
    return f"{reason} ({exc.filename})" if exc.filename and with_file else reason


def describe(exc: BaseException) -> str:
    """An error as one line: a server's errmsg, not pymongo's "full error" dump."""
    if isinstance(exc, OperationFailure):
        details = exc.details or {}
        return str(details.get("errmsg") or exc).splitlines()[0]
    if isinstance(exc, CommandError):
        return exc.errmsg
    if isinstance(exc, OSError):
        return os_reason(exc)
    text = str(exc).split(", Timeout:")[0]  # pymongo appends its topology to server selection errors
    return text.splitlines()[0] if text else type(exc).__name__
