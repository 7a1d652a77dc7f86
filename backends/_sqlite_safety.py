"""What untrusted SQL may do on a SQLite evaluation connection, and how its failures are named.

The authorizer is the enforcement point: SQLite asks it about every action while *preparing* a
statement, so a refused statement never starts running. Read-only file access (``mode=ro``) is a
second, independent barrier for file databases.
"""

from __future__ import annotations

import sqlite3

from polysql.model import ErrorKind

# Actions a query needs: reading tables, calling functions, recursive CTEs, and the SELECT itself.
_READ_ACTIONS = frozenset({
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
})

# Pragmas that only report on the schema or the build; safe with or without an argument.
_INTROSPECTION_PRAGMAS = frozenset({
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
    "foreign_key_list", "database_list", "collation_list", "function_list", "module_list",
    "pragma_list", "compile_options",
})

# Pragmas that are harmless to *read* (no argument); with an argument they change state.
_READABLE_PRAGMAS = frozenset({
    "user_version", "schema_version", "application_id", "encoding", "page_size", "page_count",
    "freelist_count", "foreign_keys", "journal_mode", "auto_vacuum", "data_version",
})

_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master"})


def read_only_authorizer(action: int, arg1: str | None, arg2: str | None,
                         db_name: str | None, trigger: str | None) -> int:
    """Allow reads and introspection; deny writes, schema changes, ATTACH/DETACH, transactions
    and state-changing pragmas."""
    if action in _READ_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_UPDATE and arg1 in _SCHEMA_TABLES:
        # The pragma table-valued functions (pragma_table_info(...)) ask for UPDATE on the schema
        # table the first time they run. Denying it makes them return no rows *silently*;
        # IGNORE lets them work and still means "do not change anything".
        return sqlite3.SQLITE_IGNORE
    if action == sqlite3.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        if name in _INTROSPECTION_PRAGMAS or (name in _READABLE_PRAGMAS and arg2 is None):
            return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


_SYNTAX_MARKERS = ("syntax error", "incomplete input", "unrecognized token")
_FORBIDDEN_NAMES = ("SQLITE_AUTH", "SQLITE_READONLY", "SQLITE_PERM")
_FORBIDDEN_MARKERS = ("not authorized", "readonly", "may not be modified")
_TOO_LARGE_NAMES = ("SQLITE_NOMEM", "SQLITE_TOOBIG", "SQLITE_FULL")
_UNAVAILABLE_NAMES = ("SQLITE_CANTOPEN", "SQLITE_NOTADB", "SQLITE_CORRUPT", "SQLITE_BUSY",
                      "SQLITE_LOCKED", "SQLITE_IOERR")


def classify(exc: Exception, *, deadline_passed: bool) -> ErrorKind:
    """Map a sqlite3 exception raised by untrusted SQL to an ``ExecError.kind``."""
    if isinstance(exc, MemoryError):
        return "too_large"
    message = str(exc).lower()
    errorname = getattr(exc, "sqlite_errorname", "") or ""
    base = errorname.split("_")[0:2]
    base_name = "_".join(base)
    if base_name == "SQLITE_INTERRUPT" or "interrupted" in message:
        return "timeout" if deadline_passed else "runtime"
    if base_name in _FORBIDDEN_NAMES or any(m in message for m in _FORBIDDEN_MARKERS):
        return "forbidden"
    if isinstance(exc, sqlite3.ProgrammingError) and "one statement at a time" in message:
        # polysql evaluates exactly one statement per prediction; more is a policy refusal.
        return "forbidden"
    if base_name in _TOO_LARGE_NAMES or "too big" in message:
        return "too_large"
    if base_name in _UNAVAILABLE_NAMES:
        return "unavailable"
    if any(marker in message for marker in _SYNTAX_MARKERS):
        return "syntax"
    return "runtime"
