"""What untrusted SQL may do on a DuckDB evaluation connection.

Two barriers besides the read-only file: the configuration every connection gets (no file or
network access, no extensions, locked) and a statement screen that lets exactly one statement
through, on an evaluation connection only a SELECT, which also keeps an in-memory database (DuckDB
cannot open one read-only) unchanged.

One exception: a PIVOT whose IN list DuckDB works out itself runs as several statements (DuckDB
creates an ENUM type of the pivoted values, then runs the query), of the statement kind MULTI. It
is admitted when DuckDB's tokenizer finds a plain query (it begins as one and names no keyword
that writes), and then runs inside a transaction that is always rolled back, so the type it
creates, or anything else, never outlives it.
"""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class Screened:
    """The screen's decision: ``refused`` (a failed Result) or admitted; an admitted statement
    with ``rolled_back`` must run inside a transaction that is rolled back afterwards."""

    refused: Result | None = None
    rolled_back: bool = False


def screen(sql: str, *, read_only: bool, engine: str) -> Screened:
    """Whether ``sql`` is exactly one statement a connection (``read_only``: an evaluation
    connection) may run, and how."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        return Screened(Result.failed(classify(exc, interrupted=False), str(exc), engine=engine))
    if not statements:
        return Screened(Result.failed("syntax", "no SQL statement found", engine=engine))
    if len(statements) > 1:
        return Screened(Result.failed(
            "forbidden", f"exactly one statement is evaluated, got {len(statements)}",
            engine=engine))
    kind = statements[0].type
    if not read_only or kind in ALLOWED_STATEMENTS:
        return Screened()
    if kind == duckdb.StatementType.MULTI:
        if is_plain_query(sql):
            return Screened(rolled_back=True)
        return Screened(Result.failed(
            "forbidden", "a PIVOT without an IN list runs as several statements, admitted only "
            "when the whole text is a plain query (it begins as one and names no keyword that "
            "writes); this one is not: list the pivoted values with IN (...)", engine=engine))
    return Screened(Result.failed(
        "forbidden", f"{kind.name} statements are not allowed on a read-only connection",
        engine=engine))


# How a plain query begins, and the keywords that make a statement write however it begins
# (WITH ... INSERT/UPDATE/DELETE; the rest lead statements of their own).
_QUERY_LEADS = frozenset({"SELECT", "WITH", "FROM", "PIVOT", "PIVOT_WIDER", "UNPIVOT", "VALUES",
                          "TABLE"})
_WRITES = frozenset({"INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "TRUNCATE", "CREATE",
                     "DROP", "ALTER", "COPY", "ATTACH", "DETACH", "CHECKPOINT", "VACUUM",
                     "EXPORT", "IMPORT", "INSTALL", "LOAD", "PRAGMA", "CALL", "USE"})


def is_plain_query(sql: str) -> bool:
    """Whether ``sql``, by DuckDB's own tokenizer, begins as a query and names no keyword that
    writes (text inside strings, quoted names and comments is not a keyword)."""
    try:
        tokens = duckdb.tokenize(sql)
    except duckdb.Error:
        return False
    words: list[str] = []
    for index, (start, kind) in enumerate(tokens):
        if kind == duckdb.token_type.comment:
            continue
        end = tokens[index + 1][0] if index + 1 < len(tokens) else len(sql)
        text = sql[start:end].strip()
        if not words and kind == duckdb.token_type.operator and text == "(":
            continue
        if not words and kind != duckdb.token_type.keyword:
            return False
        if kind == duckdb.token_type.keyword:
            words.append(text.upper())
    return bool(words) and words[0] in _QUERY_LEADS and _WRITES.isdisjoint(words)
