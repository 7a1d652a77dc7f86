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

from dataclasses import dataclass
from typing import Literal

from polysql.core.model import Result

EMPTY_STATEMENT = ("empty statement: the SQL holds no statement (only whitespace, comments or "
                   "semicolons)")

_WHITESPACE = frozenset(" \t\n\r\f\v")


@dataclass(frozen=True, slots=True)
class CommentSyntax:
    """Which comments an engine's SQL certainly has beyond ``--`` and ``/* */`` (its
    ``EngineInfo.comments``)."""

    #: "--" starts a comment only when whitespace (or the end) follows: MySQL reads "--1" as 1
    dash_needs_space: bool = False
    #: "#" line comments: never, always, or only as "# " and "#!" (ClickHouse)
    hash: Literal["never", "always", "space_or_bang"] = "never"
    #: "//" line comments
    double_slash: bool = False
    #: an unclosed block comment ends at the end of the input instead of failing (SQLite)
    block_may_run_to_end: bool = False


STANDARD_COMMENTS = CommentSyntax()


def nul_offset(sql: str) -> int | None:
    offset = sql.find("\x00")
    return None if offset < 0 else offset


def _line_comment_at(sql: str, i: int, syntax: CommentSyntax) -> bool:
    two = sql[i:i + 2]
    if two == "--":
        return not syntax.dash_needs_space or i + 2 >= len(sql) or sql[i + 2] in _WHITESPACE
    if sql[i] == "#":
        if syntax.hash == "always":
            return True
        return syntax.hash == "space_or_bang" and sql[i + 1:i + 2] in (" ", "!")
    return two == "//" and syntax.double_slash


def _block_comment_end(sql: str, i: int, syntax: CommentSyntax) -> int | None:
    """Index after the block comment opening at ``i``, or None when its extent is not certain
    (never closed, nested, or a MySQL/MariaDB executable comment)."""
    body_start = i + 2
    if sql.startswith(("!", "M!"), body_start):
        return None
    close = sql.find("*/", body_start)
    if close < 0:
        return len(sql) if syntax.block_may_run_to_end else None
    if "/*" in sql[body_start:close]:
        return None  # some engines nest comments, others do not: leave it to the engine
    return close + 2


def holds_no_statement(sql: str, syntax: CommentSyntax = STANDARD_COMMENTS) -> bool:
    """True when ``sql`` is only whitespace, semicolons and comments of ``syntax``."""
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in _WHITESPACE or ch == ";":
            i += 1
        elif _line_comment_at(sql, i, syntax):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif sql.startswith("/*", i):
            end = _block_comment_end(sql, i, syntax)
            if end is None:
                return False
            i = end
        else:
            return False
    return True


def text_problem(sql: str, syntax: CommentSyntax = STANDARD_COMMENTS) -> str | None:
    """Why ``sql`` cannot be run as a statement at all, or None."""
    offset = nul_offset(sql)
    if offset is not None:
        return (f"the SQL contains a NUL character (\\x00) at offset {offset}; engines refuse it "
                f"or silently stop reading there, so it was not run: remove the NUL")
    if holds_no_statement(sql, syntax):
        return EMPTY_STATEMENT
    return None


def refuse_text(sql: str, *, comments: CommentSyntax, engine: str) -> Result | None:
    """The failed Result every backend returns for such text, or None to go on."""
    problem = text_problem(sql, comments)
    return None if problem is None else Result.failed("syntax", problem, engine=engine)
