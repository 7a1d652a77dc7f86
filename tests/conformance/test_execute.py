"""execute(): results, limits and error classification, identical in shape on every engine."""

from __future__ import annotations

from collections.abc import Callable

from polysql.backends.base import Backend
from polysql.core.model import Result


def test_returns_columns_rows_and_types(backend: Backend, q: Callable[[str], str]) -> None:
    result = backend.execute(
        q('SELECT "CustomerID", "Name" FROM "Customers" WHERE "CustomerID" IN (1, 3) '
        'ORDER BY "CustomerID"'))
    assert result.ok, result.error
    assert result.columns == ["CustomerID", "Name"]
    assert result.rows == [(1, "Zoë"), (3, "Ann  ")]
    assert len(result.types) == 2 and all(result.types)
    assert result.engine == backend.name
    assert not result.truncated
    assert result.elapsed >= 0


def test_null_and_aggregate(backend: Backend, q: Callable[[str], str]) -> None:
    result = backend.execute(q('SELECT count(*), count("City") FROM "Customers"'))
    assert result.ok, result.error
    assert result.rows == [(4, 3)]


def test_duplicate_rows_are_kept(backend: Backend, q: Callable[[str], str]) -> None:
    result = backend.execute(q('SELECT "OrderID" FROM "order items" WHERE "OrderID" = 10'))
    assert result.rows == [(10,), (10,)]


def test_max_rows_truncates(backend: Backend, q: Callable[[str], str]) -> None:
    result = backend.execute(q('SELECT "CustomerID" FROM "Customers" ORDER BY "CustomerID"'),
                             max_rows=2)
    assert result.ok, result.error
    assert result.rows == [(1,), (2,)]
    assert result.truncated


def test_exactly_max_rows_is_not_truncated(backend: Backend, q: Callable[[str], str]) -> None:
    result = backend.execute(q('SELECT "CustomerID" FROM "Customers"'), max_rows=4)
    assert len(result.rows) == 4 and not result.truncated


# 4^4 = 256 rows from the fixture alone, in an order every engine agrees on: more than a few rows
# fetched at once, so truncation is not just "the engine happened to send few rows".
CROSS_JOIN = ('SELECT a."CustomerID" AS w, b."CustomerID" AS x, c."CustomerID" AS y, '
              'd."CustomerID" AS z FROM "Customers" AS a CROSS JOIN "Customers" AS b '
              'CROSS JOIN "Customers" AS c CROSS JOIN "Customers" AS d ORDER BY w, x, y, z')


def test_max_rows_truncates_a_larger_result_in_order(backend: Backend,
                                                     q: Callable[[str], str]) -> None:
    result = backend.execute(q(CROSS_JOIN), max_rows=10)
    assert result.ok, result.error
    assert result.rows == [(1, 1, a, b) for a in (1, 2, 3, 4) for b in (1, 2, 3, 4)][:10]
    assert result.truncated
    whole = backend.execute(q(CROSS_JOIN), max_rows=256)
    assert whole.ok, whole.error
    assert len(whole.rows) == 256 and not whole.truncated
    assert whole.rows[-1] == (4, 4, 4, 4)


def test_empty_result_keeps_columns(backend: Backend, q: Callable[[str], str]) -> None:
    result = backend.execute(q('SELECT "Name" FROM "Customers" WHERE 1 = 0'))
    assert result.ok and result.columns == ["Name"] and result.rows == []


def _assert_error(result: Result, kind: str) -> None:
    assert result.error is not None, f"expected a {kind} error, got {result!r}"
    assert result.error.kind == kind, result.error
    assert result.error.message
    assert result.columns == [] and result.rows == []


def test_syntax_error(backend: Backend, q: Callable[[str], str]) -> None:
    _assert_error(backend.execute(q("SELEC 1 FROM")), "syntax")


def test_unknown_table_is_runtime(backend: Backend, q: Callable[[str], str]) -> None:
    _assert_error(backend.execute(q("SELECT * FROM no_such_table")), "runtime")


def test_unknown_column_is_runtime(backend: Backend, q: Callable[[str], str]) -> None:
    _assert_error(backend.execute(q('SELECT no_such_column FROM "Customers"')), "runtime")


def test_timeout(backend: Backend, slow_query: str) -> None:
    result = backend.execute(slow_query, timeout=0.5)
    _assert_error(result, "timeout")
    assert result.elapsed < 5


def test_connection_usable_after_timeout(backend: Backend, q: Callable[[str], str],
                                         slow_query: str) -> None:
    backend.execute(slow_query, timeout=0.2)
    assert backend.execute(q('SELECT count(*) FROM "Customers"')).rows == [(4,)]


def test_multiple_statements_refused(backend: Backend, q: Callable[[str], str]) -> None:
    _assert_error(backend.execute(q('SELECT 1; SELECT 2')), "forbidden")


def test_trailing_semicolon_is_fine(backend: Backend, q: Callable[[str], str]) -> None:
    assert backend.execute(q('SELECT count(*) FROM "Customers";')).rows == [(4,)]


def test_version_is_reported(backend: Backend) -> None:
    version = backend.version()
    assert isinstance(version, str) and any(ch.isdigit() for ch in version)


def test_timeout_leaves_fast_queries_alone(backend: Backend, q: Callable[[str], str]) -> None:
    assert backend.execute(q("SELECT 1"), timeout=5.0).ok


def test_writable_scratch_database_takes_setup_statements(writable_backend: Backend) -> None:
    assert writable_backend.execute('CREATE TABLE "Scratch" ("K" INTEGER, v TEXT)').ok
    assert writable_backend.execute("INSERT INTO \"Scratch\" VALUES (1, 'a'), (2, NULL)").ok
    result = writable_backend.execute('SELECT "K", v FROM "Scratch" ORDER BY "K"')
    assert result.rows == [(1, "a"), (2, None)]
