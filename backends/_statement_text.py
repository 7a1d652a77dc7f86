"""Statement text no engine should be asked to run: empty or comment-only SQL, and SQL holding a
NUL character. Every backend checks this first, so all engines answer it the same way.

Left to the engines, they disagree: an empty or comment-only statement is an empty result on one
(SQLite, DuckDB), a syntax error on another (PostgreSQL, MySQL's "Query was empty") and a crash or
an odd driver message on a third; a NUL ends the statement early in SQLite's C API (the rest is
silently ignored) and is refused by PostgreSQL's protocol. Both are reported as one ``syntax``
error with a fixed message instead.

The comment scanner is deliberately conservative. Text counts as empty only when it is nothing
but ASCII whitespace, semicolons and comments the dialect certainly treats as comments; anything
else -- a string literal (even one holding ``--``), a MySQL executable comment ``/*! ... */``, a
block comment that nests or is never closed -- is left to the engine to judge.
"""

from __future__ import annotations

from polysql.model import Result

EMPTY_STATEMENT = ("empty statement: the SQL holds no statement (only whitespace, comments or "
                   "semicolons)")

_WHITESPACE = frozenset(" \t\n\r\f\v")
# Line comments beyond "--", by sqlglot dialect name.
_HASH_COMMENTS = frozenset({"mysql", "bigquery"})
_SLASH_COMMENTS = frozenset({"snowflake", "clickhouse"})
# SQLite ends an unclosed block comment at the end of the input instead of failing.
_BLOCK_COMMENT_MAY_RUN_TO_END = frozenset({"sqlite"})


def nul_offset(sql: str) -> int | None:
    offset = sql.find("\x00")
    return None if offset < 0 else offset


def _line_comment_at(sql: str, i: int, dialect: str) -> bool:
    two = sql[i:i + 2]
    if two == "--":
        # MySQL reads "--" as a comment only when whitespace (or the end) follows: "--1" is 1.
        return dialect != "mysql" or i + 2 >= len(sql) or sql[i + 2] in _WHITESPACE
    if sql[i] == "#":
        if dialect in _HASH_COMMENTS:
            return True
        # ClickHouse: "# " and "#!" start a comment, a bare "#" does not
        return dialect == "clickhouse" and sql[i + 1:i + 2] in (" ", "!")
    return two == "//" and dialect in _SLASH_COMMENTS


def _block_comment_end(sql: str, i: int, dialect: str) -> int | None:
    """Index after the block comment opening at ``i``, or None when its extent is not certain
    for ``dialect`` (never closed, nested, or a MySQL/MariaDB executable comment)."""
    body_start = i + 2
    if sql.startswith(("!", "M!"), body_start):
        return None
    close = sql.find("*/", body_start)
    if close < 0:
        return len(sql) if dialect in _BLOCK_COMMENT_MAY_RUN_TO_END else None
    if "/*" in sql[body_start:close]:
        return None  # PostgreSQL, DuckDB, Spark and ClickHouse nest comments; MySQL does not
    return close + 2


def holds_no_statement(sql: str, dialect: str) -> bool:
    """True when ``sql`` is only whitespace, semicolons and comments of ``dialect``."""
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in _WHITESPACE or ch == ";":
            i += 1
        elif _line_comment_at(sql, i, dialect):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            end = _block_comment_end(sql, i, dialect)
            if end is None:
                return False
            i = end
        else:
            return False
    return True


def text_problem(sql: str, dialect: str) -> str | None:
    """Why ``sql`` cannot be run as a statement at all, or None."""
    offset = nul_offset(sql)
    if offset is not None:
        return (f"the SQL contains a NUL character (\\x00) at offset {offset}; engines refuse it "
                f"or silently stop reading there, so it was not run: remove the NUL")
    if holds_no_statement(sql, dialect):
        return EMPTY_STATEMENT
    return None


def refuse_text(sql: str, *, dialect: str, engine: str) -> Result | None:
    """The failed Result every backend returns for such text, or None to go on."""
    problem = text_problem(sql, dialect)
    return None if problem is None else Result.failed("syntax", problem, engine=engine)
