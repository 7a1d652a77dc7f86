"""Text that holds no statement, or holds a NUL, gets the same answer from every engine: one
``syntax`` error with a fixed message, never an exception, an empty result or a driver oddity.
Comments are recognised by the engine's own rules, and never inside a string literal."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from polysql.backends import catalog
from polysql.backends._common.statement_text import (
    EMPTY_STATEMENT,
    CommentSyntax,
    holds_no_statement,
)
from polysql.backends.base import Backend
from polysql.core.model import Result


def comments_of(engine: str) -> CommentSyntax:
    info = catalog.find(engine)
    assert info is not None, engine
    return info.comments

NO_STATEMENT = [
    "",
    "   ",
    "\n\t \r\n",
    ";",
    " ; ;; ",
    "-- just a comment",
    "-- a comment\n-- and another\n",
    "/* c */ ;",
    "/* a comment\nover lines */",
    "/* c */ -- and a line comment\n;",
]

# Comments only in some dialects: (dialect -> texts that hold no statement there).
DIALECT_COMMENTS: dict[str, list[str]] = {
    "mysql": ["# a MySQL comment", "-- c\n# c\n;"],
    "bigquery": ["# a BigQuery comment"],
    "clickhouse": ["# a ClickHouse comment", "// another one"],
    "snowflake": ["// a Snowflake comment"],
}


def _assert_refused(result: Result, message_start: str) -> None:
    assert result.error is not None, f"expected a refusal, got {result!r}"
    assert result.error.kind == "syntax", result.error
    assert result.error.message.startswith(message_start), result.error.message
    assert result.columns == [] and result.rows == []


@pytest.mark.parametrize("sql", NO_STATEMENT, ids=repr)
def test_text_without_a_statement_is_one_syntax_error(backend: Backend, sql: str) -> None:
    result = backend.execute(sql)
    _assert_refused(result, EMPTY_STATEMENT)
    assert result.error is not None and result.error.message == EMPTY_STATEMENT


def test_the_engines_own_comment_styles_hold_no_statement(backend: Backend) -> None:
    for sql in DIALECT_COMMENTS.get(backend.dialect, []):
        _assert_refused(backend.execute(sql), EMPTY_STATEMENT)


@pytest.mark.parametrize("sql", ["SELECT 1\x00", "\x00", "SELECT '\x00'", "-- c\x00"], ids=repr)
def test_nul_character_is_one_syntax_error_naming_its_offset(backend: Backend, sql: str) -> None:
    result = backend.execute(sql)
    _assert_refused(result, "the SQL contains a NUL character (\\x00) at offset "
                            f"{sql.index(chr(0))};")


def test_backend_answers_normally_after_refused_text(backend: Backend,
                                                     q: Callable[[str], str]) -> None:
    backend.execute("")
    backend.execute("SELECT 1\x00")
    assert backend.execute(q('SELECT count(*) FROM "Customers"')).rows == [(4,)]


def test_comment_markers_inside_a_string_are_not_comments(backend: Backend) -> None:
    result = backend.execute("SELECT '-- not a comment /* nor this */ # nor this' AS t")
    assert result.ok, result.error
    assert result.rows == [("-- not a comment /* nor this */ # nor this",)]


def test_a_statement_after_comments_runs(backend: Backend) -> None:
    result = backend.execute("-- leading comment\n/* block */ SELECT 1 AS one -- trailing")
    assert result.ok, result.error
    assert result.rows == [(1,)]


@pytest.mark.parametrize(("dialect", "sql"), [
    ("mysql", "/*! SELECT 1 */"),  # executable comment: MySQL runs what is inside
    ("mysql", "/*M! SELECT 1 */"),  # MariaDB's form
    ("mysql", "--1"),  # "--" without a space after it is two minus signs in MySQL
    ("postgres", "# not a comment"),
    ("postgres", "/* nested /* comment */ still inside */ SELECT 1"),
    ("postgres", "/* never closed"),
    ("duckdb", "// not a comment"),
    ("clickhouse", "#not a comment"),
    ("postgres", "'-- a string'"),
    ("sqlite", "\u00a0"),  # not ASCII whitespace: left to the engine
])
def test_scanner_leaves_everything_uncertain_to_the_engine(dialect: str, sql: str) -> None:
    assert not holds_no_statement(sql, comments_of(dialect))


def test_sqlite_ends_an_unclosed_comment_at_the_end_of_the_text() -> None:
    assert holds_no_statement("/* never closed", comments_of("sqlite"))
