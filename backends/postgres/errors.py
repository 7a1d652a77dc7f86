"""How PostgreSQL failures of evaluated SQL are named, by SQLSTATE.

PostgreSQL gives every error a five-character SQLSTATE whose first two characters are its class;
the kind follows from the exact code where one matters and from the class otherwise.
"""

from __future__ import annotations

import psycopg

from polysql.core.model import ErrorKind

DISK_FULL = "53100"
QUERY_CANCELED = "57014"
IO_ERROR = "58030"
DATA_CORRUPTED = "XX001"
INDEX_CORRUPTED = "XX002"
# The server's storage failed under a statement: the connection stays usable, but a correct
# prediction would have failed just the same, so these are outages, not the statement's fault.
STORAGE_FAILURES = frozenset({DISK_FULL, IO_ERROR, DATA_CORRUPTED, INDEX_CORRUPTED})

_BY_CODE: dict[str, ErrorKind] = {
    "42601": "syntax",  # syntax_error
    "42501": "forbidden",  # insufficient_privilege
    "25006": "forbidden",  # read_only_sql_transaction
    "25001": "forbidden",  # active_sql_transaction: statements that cannot run in our transaction
    "2F003": "forbidden",  # prohibited_sql_statement_attempted
    "2F002": "forbidden",  # modifying_sql_data_not_permitted
    "38002": "forbidden",  # modifying_sql_data_not_permitted (external routine)
    "38003": "forbidden",  # prohibited_sql_statement_attempted (external routine)
    QUERY_CANCELED: "timeout",  # statement_timeout or our cancel (execute tells others apart)
    "57P01": "unavailable",  # admin_shutdown
    "57P02": "unavailable",  # crash_shutdown
    "57P03": "unavailable",  # cannot_connect_now
    "57P04": "unavailable",  # database_dropped
    "57P05": "unavailable",  # idle_session_timeout
    "55P03": "timeout",  # lock_not_available (lock_timeout)
    # The server's disk is full. What one statement may spill is capped for polysql's reader
    # (temp_file_limit: 53400, the statement's own fault, below); a full disk is the machine's
    # state, which would fail a correct prediction just the same, so it is an outage.
    DISK_FULL: "unavailable",
    # The server could not read the copy's files (a failing disk) or found them damaged (as
    # MySQL's crashed-table errors are).
    IO_ERROR: "unavailable",
    DATA_CORRUPTED: "unavailable",
    INDEX_CORRUPTED: "unavailable",
}

_BY_CLASS: dict[str, ErrorKind] = {
    "08": "unavailable",  # connection exception
    "53": "too_large",  # insufficient resources: out of memory, temp_file_limit
    "54": "too_large",  # program limit exceeded: too many columns, statement too complex
    "3D": "unavailable",  # invalid catalog name: the database is gone
}

# The server's answer to more than one statement in one extended-protocol message. polysql
# evaluates exactly one statement per prediction, so this is a refusal, not a typo.
_MULTIPLE_STATEMENTS = "cannot insert multiple commands into a prepared statement"

# A query read through a cursor may not carry INSERT/UPDATE/DELETE in its WITH clause.
_DATA_MODIFYING = "data-modifying statements"


def classify(exc: BaseException) -> tuple[ErrorKind, str | None]:
    """The ``ExecError.kind`` and SQLSTATE for an exception raised while running evaluated SQL."""
    if isinstance(exc, MemoryError):
        return "too_large", None
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate:
        if sqlstate == "42601" and _MULTIPLE_STATEMENTS in str(exc):
            return "forbidden", sqlstate
        if sqlstate == "0A000" and _DATA_MODIFYING in str(exc):
            return "forbidden", sqlstate
        kind = _BY_CODE.get(sqlstate) or _BY_CLASS.get(sqlstate[:2]) or "runtime"
        return kind, sqlstate
    if isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError)):
        # no SQLSTATE: the client lost the connection (server gone, socket closed)
        return "unavailable", None
    return "runtime", None


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the server or the connection is gone (shut down, crashed, the
    socket closed), rather than that the statement failed. A full disk or damaged storage is
    an outage for evaluated SQL but leaves the connection usable, and a load names it as what
    it is."""
    return (classify(exc)[0] == "unavailable"
            and getattr(exc, "sqlstate", None) not in STORAGE_FAILURES)


def message_of(exc: BaseException) -> str:
    """The server's own words without the ``LINE n:`` excerpt, whose text and caret would point
    into the cursor declaration wrapped around the statement rather than at the statement."""
    diag = getattr(exc, "diag", None)
    primary = diag.message_primary if diag is not None else None
    if not primary:
        return str(exc).strip() or type(exc).__name__
    extras = [f"{label}: {text}" for label, text in
              (("DETAIL", diag.message_detail), ("HINT", diag.message_hint)) if text]
    return "\n".join([primary, *extras])
