"""The Stable API fields every command may carry: apiVersion, apiStrict,
apiDeprecationErrors, and the requireApiVersion server parameter.

Manual: https://www.mongodb.com/docs/manual/reference/stable-api/ (the fields and their errors),
https://www.mongodb.com/docs/manual/reference/stable-api-changelog/ (the commands of API V1),
https://www.mongodb.com/docs/manual/reference/parameters/#mongodb-parameter-param.requireApiVersion
Messages as mongod's validate_api_parameters.cpp and jstests/core/api/api_version_parameters.js.
"""

from __future__ import annotations

from typing import Any

import pytest
from bson.son import SON
from pymongo.errors import OperationFailure

STABLE = "https://www.mongodb.com/docs/manual/reference/stable-api/"

ACCEPTED = [
    # (command, manual page): create and collMod with the fields a ServerApi("1") client adds.
    (SON([("create", "c"), ("apiVersion", "1")]), STABLE),
    (SON([("create", "c2"), ("apiVersion", "1"), ("apiStrict", True), ("apiDeprecationErrors", True)]), STABLE),
    (SON([("collMod", "existing"), ("validationLevel", "off"), ("apiVersion", "1"), ("apiStrict", True)]), STABLE),
    (SON([("ping", 1), ("apiVersion", "1"), ("apiStrict", False), ("apiDeprecationErrors", False)]), STABLE),
    # Outside API V1 but not strict: allowed.
    (SON([("distinct", "existing"), ("key", "a"), ("apiVersion", "1")]), STABLE),
    (SON([("listCommands", 1), ("apiVersion", "1"), ("apiDeprecationErrors", True)]), STABLE),
    # Reading system.js is fine in strict mode.
    (SON([("find", "system.js"), ("apiVersion", "1"), ("apiStrict", True)]), STABLE),
]


@pytest.mark.parametrize(("command", "page"), ACCEPTED)
def test_api_fields_are_accepted(db: Any, command: SON[str, Any], page: str) -> None:
    db.existing.insert_one({"a": 1})
    assert db.command(command)["ok"] == 1.0


STRICT_MESSAGE = (
    "Provided apiStrict:true, but the command {} is not in API Version 1. Information on supported commands and "
    "migrations in API Version 1 can be found at https://dochub.mongodb.org/core/manual-versioned-api."
)

REFUSED = [
    # (command, code, codeName, errmsg)
    (
        SON([("distinct", "existing"), ("key", "a"), ("apiVersion", "1"), ("apiStrict", True)]),
        323,
        "APIStrictError",
        STRICT_MESSAGE.format("distinct"),
    ),
    (
        SON([("buildInfo", 1), ("apiVersion", "1"), ("apiStrict", True)]),
        323,
        "APIStrictError",
        STRICT_MESSAGE.format("buildInfo"),
    ),
    (
        SON([("insert", "system.js"), ("documents", [{"_id": 1}]), ("apiVersion", "1"), ("apiStrict", True)]),
        323,
        "APIStrictError",
        "Provided apiStrict:true, but the command insert attempts to write to system.js.",
    ),
    (SON([("ping", 1), ("apiVersion", "2")]), 322, "APIVersionError", 'API version must be "1"'),
    (SON([("create", "c"), ("apiVersion", "0")]), 322, "APIVersionError", 'API version must be "1"'),
    (
        SON([("ping", 1), ("apiStrict", True)]),
        4886600,
        "Location4886600",
        "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion",
    ),
    (
        SON([("ping", 1), ("apiDeprecationErrors", False)]),
        4886600,
        "Location4886600",
        "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion",
    ),
    (
        SON([("ping", 1), ("apiVersion", 1)]),
        14,
        "TypeMismatch",
        "BSON field 'apiVersion' is the wrong type 'int', expected type 'string'",
    ),
    (
        SON([("ping", 1), ("apiVersion", "1"), ("apiStrict", "true")]),
        14,
        "TypeMismatch",
        "BSON field 'apiStrict' is the wrong type 'string', expected type 'boolean'",
    ),
]


@pytest.mark.parametrize(("command", "code", "name", "message"), REFUSED)
def test_api_fields_refused(db: Any, command: SON[str, Any], code: int, name: str, message: str) -> None:
    db.existing.insert_one({"a": 1})
    with pytest.raises(OperationFailure) as err:
        db.command(command)
    assert (err.value.code, err.value.details["codeName"], err.value.details["errmsg"]) == (code, name, message)


def test_require_api_version(client: Any) -> None:
    admin = client.admin
    admin.command("setParameter", 1, requireApiVersion=True)
    with pytest.raises(OperationFailure) as err:
        client.t.command("ping")
    assert err.value.code == 498870
    assert client.t.command(SON([("ping", 1), ("apiVersion", "1")]))["ok"] == 1.0
    admin.command(SON([("setParameter", 1), ("requireApiVersion", False), ("apiVersion", "1")]))
    assert client.t.command("ping")["ok"] == 1.0
