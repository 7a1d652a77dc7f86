"""What untrusted SQL may do on a SQLite evaluation connection.

The authorizer is the enforcement point: SQLite asks it about every action while *preparing* a
statement, so a refused statement never starts running. Read-only file access (``mode=ro``) is a
second, independent barrier for file databases.
"""

from __future__ import annotations

import sqlite3

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

# Functions a query must not call although calling functions is allowed: fts3_tokenizer hands
# out a pointer into the process and, where the build enables it (Debian's does), registers a
# tokenizer at any address a query names -- a crash of the evaluator at best; load_extension
# loads a shared library (extension loading is off on every connection as well).
_DENIED_FUNCTIONS = frozenset({"fts3_tokenizer", "load_extension"})

_SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_schema", "sqlite_temp_master"})


def read_only_authorizer(action: int, arg1: str | None, arg2: str | None,
                         db_name: str | None, trigger: str | None) -> int:
    """Allow reads and introspection; deny writes, schema changes, ATTACH/DETACH, transactions
    and state-changing pragmas."""
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
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
