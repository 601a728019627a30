"""MongoDB error codes and the one exception type the engine raises.

Every error FolioDB reports to a user carries MongoDB's numeric ``code`` and
its ``codeName``; the facade and the server turn a :class:`CommandError` into
the reply document ``{"ok": 0, "errmsg", "code", "codeName", ...}`` and from
there into pymongo's exception classes, exactly as pymongo does for a server.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ErrorCode(IntEnum):
    """MongoDB's error codes, by codeName (``ErrorCode.DuplicateKey == 11000``)."""

    InternalError = 1
    BadValue = 2
    NoSuchKey = 4
    GraphContainsCycle = 5
    HostUnreachable = 6
    HostNotFound = 7
    UnknownError = 8
    FailedToParse = 9
    UserNotFound = 11
    UnsupportedFormat = 12
    Unauthorized = 13
    TypeMismatch = 14
    Overflow = 15
    InvalidLength = 16
    ProtocolError = 17
    AuthenticationFailed = 18
    IllegalOperation = 20
    EmptyArrayOperation = 21
    InvalidBSON = 22
    AlreadyInitialized = 23
    LockTimeout = 24
    NamespaceNotFound = 26
    IndexNotFound = 27
    PathNotViable = 28
    NonExistentPath = 29
    InvalidPath = 30
    RoleNotFound = 31
    CannotBackfillArray = 34
    ConflictingUpdateOperators = 40
    CursorNotFound = 43
    NoMatchingDocument = 47
    NamespaceExists = 48
    InvalidRoleModification = 49
    MaxTimeMSExpired = 50
    DollarPrefixedFieldName = 52
    InvalidIdField = 53
    NotSingleValueField = 54
    InvalidDBRef = 55
    EmptyFieldName = 56
    DottedFieldName = 57
    CommandNotFound = 59
    WriteConcernTimeout = 64
    ImmutableField = 66
    CannotCreateIndex = 67
    IndexAlreadyExists = 68
    InvalidOptions = 72
    InvalidNamespace = 73
    NoReplicationEnabled = 76
    UnknownReplWriteConcern = 79
    IndexOptionsConflict = 85
    IndexKeySpecsConflict = 86
    NetworkTimeout = 89
    ShutdownInProgress = 91
    OperationFailed = 96
    UnsatisfiableWriteConcern = 100
    DBPathInUse = 98
    NotExactValueField = 111
    WriteConflict = 112
    ConflictingOperationInProgress = 117
    CommandNotSupported = 115
    DocTooLargeForCapped = 116
    DocumentValidationFailure = 121
    NotAReplicaSet = 123
    CommandFailed = 125
    FailedToSatisfyReadPreference = 133
    ReadConcernMajorityNotAvailableYet = 134
    CappedPositionLost = 136
    JSInterpreterFailure = 139
    ExceededMemoryLimit = 146
    StaleEpoch = 150
    DurationOverflow = 159
    CommandNotSupportedOnView = 166
    OptionNotSupportedOnView = 167
    InvalidPipelineOperator = 168
    CannotIndexParallelArrays = 171
    QueryPlanKilled = 175
    PrimarySteppedDown = 189
    InvalidIndexSpecificationOption = 197
    CannotBuildIndexKeys = 201
    IncompleteTransactionHistory = 217
    UpdateOperationFailed = 218
    NoSuchSession = 206
    MaxSubPipelineDepthExceeded = 232
    SnapshotTooOld = 239
    IllegalOpMsgFlag = 223
    QueryFeatureNotAllowed = 224
    TransactionTooOld = 225
    RetryChangeStream = 234
    CursorKilled = 237
    NotImplemented = 238
    SnapshotUnavailable = 246
    StaleDbVersion = 249
    ExceededTimeLimit = 262
    FailPointSetFailed = 266
    PreparedTransactionInProgress = 267
    IndexBuildAborted = 276
    ClientDisconnect = 279
    ChangeStreamFatalError = 280
    ChangeStreamHistoryLost = 286
    ConversionFailure = 241
    NoSuchTransaction = 251
    TransactionCommitted = 256
    TransactionTooLarge = 257
    OperationNotSupportedInTransaction = 263
    MechanismUnavailable = 334
    UnsupportedOpQueryCommand = 352
    AmbiguousIndexKeyPattern = 359
    NoQueryExecutionPlans = 291
    QueryExceededMemoryLimitNoDiskUseAllowed = 292
    APIVersionError = 322
    APIStrictError = 323
    SocketException = 9001
    NotWritablePrimary = 10107
    BSONObjectTooLarge = 10334
    DuplicateKey = 11000
    InterruptedAtShutdown = 11600
    InterruptedDueToReplStateChange = 11602
    DatabaseDifferCase = 13297
    StaleConfig = 13388
    Interrupted = 11601
    NotPrimaryNoSecondaryOk = 13435
    NotPrimaryOrSecondary = 13436


def code_name(code: int) -> str:
    """MongoDB's codeName for ``code``; ``Location<code>`` when it has none."""
    try:
        name = ErrorCode(code).name
    except ValueError:
        return f"Location{code}"
    return name


# mongod's ErrorCategory::Interruption, as far as FolioDB raises them.
INTERRUPTIONS = frozenset(
    {
        ErrorCode.MaxTimeMSExpired,
        ErrorCode.ExceededTimeLimit,
        ErrorCode.Interrupted,
        ErrorCode.InterruptedAtShutdown,
        ErrorCode.InterruptedDueToReplStateChange,
    }
)


class CommandError(Exception):
    """A MongoDB error: ``code``, ``codeName``, ``errmsg`` and optional extra
    fields of the error reply (``keyPattern``, ``keyValue``, ``errInfo``...).

    The engine raises this and only this for anything a user did wrong.
    """

    def __init__(self, code: int, errmsg: str, **extra: Any) -> None:
        super().__init__(errmsg)
        self.code = int(code)
        self.errmsg = errmsg
        self.extra = extra
        self.labels: list[str] = []

    @property
    def code_name(self) -> str:
        return code_name(self.code)

    def to_reply(self) -> dict[str, Any]:
        reply: dict[str, Any] = {
            "ok": 0.0,
            "errmsg": self.errmsg,
            "code": self.code,
            "codeName": self.code_name,
        }
        reply.update(self.extra)
        if self.labels:
            reply["errorLabels"] = list(self.labels)
        return reply

    def to_write_error(self, index: int) -> dict[str, Any]:
        """This error as the ``writeErrors`` entry of the write at ``index``. An interruption is no
        one write's error: it is raised again, to fail the whole command (as mongod's write path,
        whose ``handleError`` rethrows them: "These have always failed the whole batch")."""
        if self.code in INTERRUPTIONS:
            raise self
        error: dict[str, Any] = {"index": index, "code": self.code}
        if self.code != ErrorCode.DuplicateKey:
            error["codeName"] = self.code_name
        error["errmsg"] = self.errmsg
        error.update(self.extra)
        return error

    def __repr__(self) -> str:
        return f"CommandError({self.code}, {self.errmsg!r})"


def bad_value(message: str) -> CommandError:
    return CommandError(ErrorCode.BadValue, message)


def type_mismatch(message: str) -> CommandError:
    return CommandError(ErrorCode.TypeMismatch, message)


def failed_to_parse(message: str) -> CommandError:
    return CommandError(ErrorCode.FailedToParse, message)


def location(code: int, message: str) -> CommandError:
    """An error MongoDB reports only by its numeric location code."""
    return CommandError(code, message)
