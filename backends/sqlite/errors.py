"""How failures of untrusted SQL on SQLite are named (``ExecError.kind``).

SQLite reports most errors as ``OperationalError``; its extended result code
(``sqlite_errorname``) and, for the rest, the message tell them apart.
"""

from __future__ import annotations

import sqlite3

from polysql.core.model import ErrorKind

_SYNTAX_MARKERS = ("syntax error", "incomplete input", "unrecognized token")
_FORBIDDEN_NAMES = ("SQLITE_AUTH", "SQLITE_READONLY", "SQLITE_PERM")
_FORBIDDEN_MARKERS = ("not authorized", "readonly", "may not be modified")
_TOO_LARGE_NAMES = ("SQLITE_NOMEM", "SQLITE_TOOBIG", "SQLITE_FULL")
# How long a connection waits for another program's write lock on the file before it fails with
# "database is locked" (the sqlite3 module's default, made explicit so messages can quote it).
LOCK_WAIT_SECONDS = 5.0

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


def locked_hint(waited: float) -> str:
    """What to do about a source file another program holds a write lock on."""
    return (f"the database is locked: another program is writing to it (waited {waited:g} s); "
            "let that write finish, or close the program holding it, then retry")


def source_problem(exc: sqlite3.Error) -> str:
    """``exc`` from reading a load source, with what to do about the common causes."""
    message = str(exc)
    if "database is locked" in message:
        return locked_hint(LOCK_WAIT_SECONDS)
    if "malformed" in message:
        return f"{message}: the file is damaged (truncated or overwritten); restore it from its source"
    return message
