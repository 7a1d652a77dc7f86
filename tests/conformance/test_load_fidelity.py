"""Every engine's copy of the fixture database holds the source's names and values exactly.

Values are compared after mapping each to a representation-neutral form (a date and its ISO text
are the same date; 120.5 and Decimal('120.50') the same amount; True and 1 the same boolean), so
the test asks "is the data the same?" rather than "did the engine pick the same Python type?".
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from polysql.backends.base import Backend


def neutral(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float | Decimal):
        return Decimal(str(value)).normalize()
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def _source_rows(fixture_db: Path, table: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(fixture_db) as conn:
        return conn.execute(f'SELECT * FROM "{table}"').fetchall()


def _neutral_sorted(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted((tuple(neutral(v) for v in row) for row in rows), key=repr)


@pytest.mark.parametrize("table", ["Customers", "order items"])
def test_table_and_column_names_are_exact(backend: Backend, q: Callable[[str], str], table: str, fixture_db: Path) -> None:
    with sqlite3.connect(fixture_db) as conn:
        expected = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
    result = backend.execute(q(f'SELECT * FROM "{table}" WHERE 1 = 0'))
    assert result.ok, result.error
    assert result.columns == expected


@pytest.mark.parametrize("table", ["Customers", "order items"])
def test_every_row_and_value_round_trips(backend: Backend, q: Callable[[str], str], table: str, fixture_db: Path) -> None:
    result = backend.execute(q(f'SELECT * FROM "{table}"'))
    assert result.ok, result.error
    assert _neutral_sorted(result.rows) == _neutral_sorted(_source_rows(fixture_db, table))


def test_trailing_spaces_and_accents_survive(backend: Backend, q: Callable[[str], str]) -> None:
    result = backend.execute(q('SELECT "Name" FROM "Customers" WHERE "CustomerID" IN (1, 2, 3) '
                             'ORDER BY "CustomerID"'))
    assert result.rows == [("Zoë",), ("José ",), ("Ann  ",)]


def test_nulls_stay_null(backend: Backend, q: Callable[[str], str]) -> None:
    result = backend.execute(q('SELECT "City", "Joined", "IsActive", "Balance" FROM "Customers" '
                             'WHERE "CustomerID" = 3'))
    assert result.rows == [(None, None, None, None)]


def test_dates_compare_as_dates(backend: Backend, q: Callable[[str], str]) -> None:
    result = backend.execute(q('SELECT "CustomerID" FROM "Customers" '
                             "WHERE \"Joined\" >= '2020-01-01' ORDER BY \"CustomerID\""))
    assert result.rows == [(1,), (2,)]


def test_money_sums_exactly(backend: Backend, q: Callable[[str], str]) -> None:
    result = backend.execute(q('SELECT sum("Balance") FROM "Customers"'))
    assert neutral(result.rows[0][0]) == Decimal("105.25")


def test_booleans_filter(backend: Backend, q: Callable[[str], str]) -> None:
    result = backend.execute(q('SELECT "CustomerID" FROM "Customers" WHERE "IsActive" '
                             'ORDER BY "CustomerID"'))
    assert result.rows == [(1,), (4,)]


@pytest.mark.never(["sqlite"], reason="SQLite has no static result types: an all-NULL column "
                                      "has no storage class to report")
def test_types_known_for_all_null_column(backend: Backend, q: Callable[[str], str]) -> None:
    result = backend.execute(q('SELECT "City" FROM "Customers" WHERE "City" IS NULL'))
    assert result.rows == [(None,)]
    assert result.types[0] != ""


def test_tables_describe_the_copy(backend: Backend, fixture_db: Path) -> None:
    described = {t.name: t for t in backend.tables()}
    assert sorted(described) == ["Customers", "order items"]
    with sqlite3.connect(fixture_db) as conn:
        for name, table in described.items():
            source_columns = [r[1] for r in conn.execute(f'PRAGMA table_info("{name}")')]
            assert [c.name for c in table.columns] == source_columns
            assert table.row_count == len(_source_rows(fixture_db, name))
    assert described["Customers"].primary_key == ("CustomerID",)
