"""How MySQL/MariaDB failures of evaluated SQL are named.

Error codes are the servers' own (``ER_*`` in the server source, ``CR_*`` for client-side errors
PyMySQL raises itself); MySQL 8 and MariaDB share the low numbers and differ in a few newer ones,
so both spellings are listed where they differ.
"""

from __future__ import annotations

import re

import pymysql

from polysql.core.model import ErrorKind

SYNTAX_CODES = frozenset({
    1064,  # ER_PARSE_ERROR
    1065,  # ER_EMPTY_QUERY
    1149,  # ER_SYNTAX_ERROR
})

FORBIDDEN_CODES = frozenset({
    1036,  # ER_OPEN_AS_READONLY
    1044,  # ER_DBACCESS_DENIED_ERROR
    1045,  # ER_ACCESS_DENIED_ERROR (during a statement: e.g. INTO OUTFILE without FILE)
    1095,  # ER_KILL_DENIED_ERROR
    1142,  # ER_TABLEACCESS_DENIED_ERROR
    1143,  # ER_COLUMNACCESS_DENIED_ERROR
    1148,  # ER_NOT_ALLOWED_COMMAND (LOAD DATA LOCAL refused)
    1211,  # ER_NO_PERMISSION_TO_CREATE_USER
    1227,  # ER_SPECIFIC_ACCESS_DENIED_ERROR (SUPER, PROCESS, ...)
    1290,  # ER_OPTION_PREVENTS_STATEMENT (read_only, secure_file_priv)
    1370,  # ER_PROCACCESS_DENIED_ERROR
    1792,  # ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
    1873,  # ER_ACCESS_DENIED_CHANGE_USER_ERROR
    3948,  # MySQL 8: ER_CLIENT_LOCAL_FILES_DISABLED
    4166,  # MariaDB: ER_LOAD_INFILE_CAPABILITY_DISABLED (LOAD DATA LOCAL refused)
})

TIMEOUT_CODES = frozenset({
    1205,  # ER_LOCK_WAIT_TIMEOUT
    1317,  # ER_QUERY_INTERRUPTED (KILL QUERY from the client-side backstop)
    1969,  # MariaDB: ER_STATEMENT_TIMEOUT (max_statement_time exceeded)
    3024,  # MySQL 8: ER_QUERY_TIMEOUT (max_execution_time exceeded)
})

TOO_LARGE_CODES = frozenset({
    1037,  # ER_OUTOFMEMORY
    1038,  # ER_OUT_OF_SORTMEMORY
    1041,  # ER_OUT_OF_RESOURCES
    1104,  # ER_TOO_BIG_SELECT (max_join_size)
    1114,  # ER_RECORD_FILE_FULL (temporary table full)
    1135,  # ER_CANT_CREATE_THREAD
    1153,  # ER_NET_PACKET_TOO_LARGE
    1301,  # ER_WARN_ALLOWED_PACKET_OVERFLOWED
})

UNAVAILABLE_CODES = frozenset({
    1040,  # ER_CON_COUNT_ERROR (too many connections)
    1049,  # ER_BAD_DB_ERROR (the evaluation database is gone)
    1053,  # ER_SERVER_SHUTDOWN
    1152,  # ER_ABORTING_CONNECTION
    1927,  # MariaDB: ER_CONNECTION_KILLED
    2002,  # CR_CONNECTION_ERROR
    2003,  # CR_CONN_HOST_ERROR
    2005,  # CR_UNKNOWN_HOST
    2006,  # CR_SERVER_GONE_ERROR
    2013,  # CR_SERVER_LOST
    2055,  # CR_SERVER_LOST_EXTENDED
    4031,  # MySQL 8: ER_CLIENT_INTERACTION_TIMEOUT
})

# The server's storage failing under a statement: its disk full (MariaDB 10.11 with tmpdir on a
# full file system answers a sort with 3 "Error writing file ... (Errcode: 28 ...)" and a
# GROUP BY or DISTINCT with 126 "Index is corrupted" for its temporary table, logging "Disk got
# full"), or a table the engine calls corrupted. A correct prediction fails the same way, so
# these are outages, never the statement's own error.
STORAGE_FAILURE_CODES = frozenset({
    1021,  # ER_DISK_FULL
    126,  # HA_ERR_CRASHED: "Index is corrupted" (also a temporary table on a full disk)
    1194,  # ER_CRASHED_ON_USAGE: table marked as crashed
    1195,  # ER_CRASHED_ON_REPAIR
})

# Codes whose message carries the operating system's error number: ENOSPC (28) and EDQUOT
# (122) there mean the server's disk is full. Only these codes: a statement's own error
# message may quote any text, e.g. a value in a failed cast.
OS_ERROR_CODES = frozenset({
    3,  # EE_WRITE: Error writing file '...' (Errcode: 28 "No space left on device")
    1026,  # ER_ERROR_ON_WRITE
    1030,  # ER_GET_ERRNO: Got error 28 from storage engine
})
_DISK_FULL_ERRNO = re.compile(r"(?:errcode|errno|got error)\W{0,3}(?:28|122)\b", re.IGNORECASE)


def storage_failure(code: int | None, message: str) -> bool:
    """Whether the server failed for want of disk or a sound table, not because of the SQL."""
    if code in STORAGE_FAILURE_CODES:
        return True
    return code in OS_ERROR_CODES and _DISK_FULL_ERRNO.search(message) is not None


# Errors after which the connection cannot be trusted for the next statement.
CONNECTION_LOST_CODES = frozenset({1053, 1152, 1927, 2002, 2003, 2005, 2006, 2013, 2055, 4031})


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection is gone (the server died or dropped it), rather
    than that the statement failed."""
    return isinstance(exc, pymysql.err.InterfaceError) or error_code(exc) in CONNECTION_LOST_CODES


def error_code(exc: BaseException) -> int | None:
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def classify(code: int | None, *, deadline_passed: bool, message: str = "") -> ErrorKind:
    """The ``ExecError.kind`` for a server or client error code and the server's message."""
    if deadline_passed and (code in TIMEOUT_CODES or code in CONNECTION_LOST_CODES):
        # A lost connection after the backstop fired is the backstop doing its job.
        return "timeout"
    if code in TIMEOUT_CODES:
        # KILL QUERY (1317) from anyone but our own backstop, before the deadline, is not a
        # timeout of this statement; it still stopped it, and only the engine can say why.
        return "runtime" if code == 1317 else "timeout"
    if code in SYNTAX_CODES:
        return "syntax"
    if code in FORBIDDEN_CODES:
        return "forbidden"
    if code in TOO_LARGE_CODES:
        return "too_large"
    if code in UNAVAILABLE_CODES or storage_failure(code, message):
        return "unavailable"
    return "runtime"
