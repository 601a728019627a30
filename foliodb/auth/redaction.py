"""Keeping secrets out of error messages and logs.

What counts as a secret: a ``pwd`` (createUser, updateUser), a SASL
``payload`` (saslStart/saslContinue), and stored ``credentials`` (the SCRAM
keys of a user document, from which a password can be attacked offline).
mongod shows such fields as ``"xxx"`` (``snipForLogging``); so does FolioDB,
at any depth (a user document in an ``insert`` to ``admin.system.users`` holds
``credentials`` one level down).

:class:`SecretFilter` applies the same redaction to log records whose
arguments are command documents, so a logged command (an internal error
reports the command it ran) never carries a password.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

SECRET_FIELDS = frozenset({"pwd", "payload", "credentials"})
SHOWN = "xxx"


def redact(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``doc`` with every secret field's value replaced by ``"xxx"``."""
    return {k: SHOWN if k in SECRET_FIELDS else _redact_value(v) for k, v in doc.items()}


def _redact_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return redact(value)
    if isinstance(value, list):
        return [_redact_value(v) for v in value]
    return value


def _contains_secret(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            if SECRET_FIELDS.intersection(k for k in item if isinstance(k, str)):
                return True
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


class SecretFilter(logging.Filter):
    """Redacts command documents passed as a log record's arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and any(_contains_secret(a) for a in args):
            record.args = tuple(redact(a) if isinstance(a, Mapping) else _redact_value(a) for a in args)
        elif isinstance(args, Mapping) and _contains_secret(args):
            record.args = redact(args)
        return True


def install_log_filter(logger: logging.Logger) -> None:
    """Add :class:`SecretFilter` to ``logger`` once."""
    if not any(isinstance(f, SecretFilter) for f in logger.filters):
        logger.addFilter(SecretFilter())
