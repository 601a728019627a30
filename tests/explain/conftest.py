"""Each explain test runs twice: through the embedded client and through
pymongo over the wire against ``foliodb serve`` (one server per module)."""

from tests.both_targets import client, db, server  # noqa: F401  (fixtures)
