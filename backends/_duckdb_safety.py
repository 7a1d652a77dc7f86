"""What untrusted SQL may do on a DuckDB evaluation connection, and how its failures are named."""

from __future__ import annotations

from typing import Any

import duckdb

from polysql.model import ErrorKind

# Settings every connection opened by polysql gets. With external access off, DuckDB refuses to
# touch any file but the database itself (COPY TO, read_csv, ATTACH, INSTALL); extensions are
# never fetched or loaded behind our back; the lock stops SET/PRAGMA from undoing all of this.
SAFE_CONFIG: dict[str, Any] = {
    "enable_external_access": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "allow_community_extensions": False,
    "lock_configuration": True,
}

# Statement kinds an evaluation connection runs. Everything else (DDL, DML, SET, PRAGMA, CALL,
# ATTACH, COPY, LOAD, ...) is refused before execution, which also covers in-memory databases
# that DuckDB cannot open read-only. EXPLAIN is refused too: EXPLAIN ANALYZE runs the statement
# it explains, whatever that is.
ALLOWED_STATEMENTS = frozenset({duckdb.StatementType.SELECT})


def classify(exc: Exception, *, interrupted: bool) -> ErrorKind:
    """Map a duckdb exception raised by untrusted SQL to an ``ExecError.kind``."""
    if isinstance(exc, duckdb.InterruptException):
        return "timeout" if interrupted else "runtime"
    if isinstance(exc, (duckdb.OutOfMemoryException, MemoryError)):
        return "too_large"
    if isinstance(exc, duckdb.PermissionException):
        return "forbidden"
    message = str(exc)
    if "disabled by configuration" in message or "configuration has been locked" in message \
            or "read-only mode" in message:
        return "forbidden"
    if isinstance(exc, (duckdb.ParserException, duckdb.SyntaxException)):
        return "syntax"
    if isinstance(exc, (duckdb.IOException, duckdb.ConnectionException, duckdb.FatalException)):
        return "unavailable"
    return "runtime"
