"""What untrusted SQL may do on a DuckDB evaluation connection.

Two barriers besides the read-only file: the configuration every connection gets (no file or
network access, no extensions, locked) and a statement screen that lets exactly one statement
through, on an evaluation connection only a SELECT, which also keeps an in-memory database (DuckDB
cannot open one read-only) unchanged.
"""

from __future__ import annotations

from typing import Any

import duckdb

from polysql.backends.duckdb.errors import classify
from polysql.core.model import Result

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


def refusal(sql: str, *, read_only: bool, engine: str) -> Result | None:
    """A failed Result if ``sql`` is not exactly one statement a connection (``read_only``: an
    evaluation connection) may run; None when it may run."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        return Result.failed(classify(exc, interrupted=False), str(exc), engine=engine)
    if not statements:
        return Result.failed("syntax", "no SQL statement found", engine=engine)
    if len(statements) > 1:
        return Result.failed(
            "forbidden", f"exactly one statement is evaluated, got {len(statements)}",
            engine=engine)
    kind = statements[0].type
    if read_only and kind not in ALLOWED_STATEMENTS:
        return Result.failed(
            "forbidden", f"{kind.name} statements are not allowed on a read-only connection",
            engine=engine)
    return None
