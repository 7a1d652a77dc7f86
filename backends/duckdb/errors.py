"""How failures of untrusted SQL on DuckDB are named (``ExecError.kind``): by exception class,
and for refusals of the locked configuration, by message."""

from __future__ import annotations

import re

import duckdb
import pyarrow as pa

from polysql.core.model import ErrorKind


def classify(exc: Exception, *, interrupted: bool) -> ErrorKind:
    """Map a duckdb (or Arrow stream) exception raised by untrusted SQL to an
    ``ExecError.kind``."""
    if isinstance(exc, duckdb.InterruptException | pa.ArrowException):
        # an Arrow error carries DuckDB's own, met while the rows streamed: after our timer
        # fired it is the interrupt, else the statement's failure
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


# DuckDB's answer to a FROM naming a table it does not hold
_NO_TABLE = re.compile(r"Table with name (.+?) does not exist")


def file_read_refusal(exc: Exception, sql: str) -> str | None:
    """Why a statement that names a file after FROM (``FROM '/etc/passwd'``, ``FROM 'x.csv'``)
    failed, or None for any other failure. DuckDB reads such a quoted path as a file through a
    replacement scan; with file access off it looks for a table of that name instead, and fails
    with a catalog error that reads like a typo. It was a file read, refused."""
    if not isinstance(exc, duckdb.CatalogException):
        return None
    missing = _NO_TABLE.search(str(exc))
    if missing is None:
        return None
    name = missing.group(1)
    quoted = re.escape("'" + name.replace("'", "''") + "'")
    if re.search(r"\b(?:FROM|JOIN)\s+" + quoted, sql, re.IGNORECASE) is None:
        return None
    return (f"statement reads the file {name!r}: DuckDB reads a quoted path after FROM as a "
            "file, and evaluation connections have no file access")


def interrupted_by_user(exc: BaseException) -> bool:
    """Whether ``exc`` is DuckDB's answer to Ctrl-C: its Python client notices SIGINT while a
    statement runs on the main thread and raises a plain RuntimeError, not KeyboardInterrupt.
    (Queries never meet it: they run off the main thread, see _common/interruptible.py; a load
    runs its statements on the main thread.)"""
    return type(exc) is RuntimeError and str(exc) == "Query interrupted"
