"""Logical types of SQLite columns: declared type plus what is actually stored.

Each case builds a one-table SQLite database with plain sqlite3, then checks the type polysql
chooses, the coercions it records, and that every row survives the trip to Arrow.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import polysql
from polysql.backends.sqlite.backend import SQLiteBackend
from polysql.core.schema import Coercion, ColumnType


@pytest.fixture
def make_source(tmp_path: Path) -> Iterator[Any]:
    opened: list[SQLiteBackend] = []

    def make(declared: str, values: list[Any]) -> SQLiteBackend:
        path = tmp_path / f"db{len(opened)}.sqlite"
        with sqlite3.connect(path) as conn:
            conn.execute(f"CREATE TABLE t (c {declared})")
            conn.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values])
        backend = polysql.connect(f"sqlite:///{path}")
        assert isinstance(backend, SQLiteBackend)
        opened.append(backend)
        return backend

    yield make
    for backend in opened:
        backend.close()


def resolved(source: SQLiteBackend) -> tuple[ColumnType, list[Coercion], list[Any]]:
    """(type of t.c, coercions, values as read into Arrow) -- asserting no row was lost."""
    (table,) = source.tables()
    values = [v for batch in source.read_table(table) for v in batch.column(0).to_pylist()]
    assert len(values) == table.row_count
    return table.columns[0].type, source.coercions(), values


def test_numeric_with_declared_scale(make_source: Any) -> None:
    kind, coercions, values = resolved(make_source("NUMERIC(10,2)", [12.5, 3, None]))
    assert kind == ColumnType("decimal", 10, 2)
    assert coercions == []
    assert values == [Decimal("12.50"), Decimal("3.00"), None]


def test_numeric_scale_inferred_from_values(make_source: Any) -> None:
    kind, coercions, values = resolved(make_source("NUMERIC", [1.5, 2.25, 3]))
    assert kind.kind == "decimal" and kind.scale == 2
    assert coercions == []
    assert values == [Decimal("1.50"), Decimal("2.25"), Decimal("3.00")]


def test_values_beyond_declared_scale_widen_it(make_source: Any) -> None:
    kind, coercions, values = resolved(make_source("DECIMAL(5,1)", [12.345, 1.5]))
    assert kind.kind == "decimal" and kind.scale == 3
    assert [c.column for c in coercions] == ["c"]
    assert values == [Decimal("12.345"), Decimal("1.500")]


def test_scientific_notation_reals_get_enough_scale(make_source: Any) -> None:
    kind, _, values = resolved(make_source("NUMERIC", [1e-7, 2.5]))
    assert kind.kind == "decimal" and kind.scale == 7
    assert values == [Decimal("0.0000001"), Decimal("2.5")]


def test_numbers_too_wide_for_decimal_become_float(make_source: Any) -> None:
    kind, coercions, values = resolved(make_source("NUMERIC", [1.5e40, 0.125]))
    assert kind == ColumnType("float")
    assert coercions and coercions[0].count == 2
    assert values == [1.5e40, 0.125]


@pytest.mark.parametrize("stored", [[0, 1, None], ["true", "FALSE", "True"]])
def test_boolean_honoured_for_flags(make_source: Any, stored: list[Any]) -> None:
    kind, coercions, values = resolved(make_source("BOOLEAN", stored))
    assert kind == ColumnType("boolean")
    assert coercions == []
    expected = {0: False, 1: True, None: None, "true": True, "FALSE": False, "True": True}
    assert values == [expected[v] for v in stored]


def test_boolean_with_other_integers_becomes_integer(make_source: Any) -> None:
    kind, coercions, values = resolved(make_source("BOOLEAN", [0, 1, 2]))
    assert kind == ColumnType("integer")
    assert len(coercions) == 1 and coercions[0].count == 1
    assert values == [0, 1, 2]


def test_valid_dates_become_date(make_source: Any) -> None:
    kind, coercions, values = resolved(make_source("DATE", ["2020-02-29", None, "1999-12-31"]))
    assert kind == ColumnType("date")
    assert coercions == []
    assert values == [dt.date(2020, 2, 29), None, dt.date(1999, 12, 31)]


def test_unparseable_dates_fall_back_to_text_and_are_counted(make_source: Any) -> None:
    stored = ["2021-02-28", "2021-02-30", "soon", "2021/03/01", None]
    kind, coercions, values = resolved(make_source("DATE", stored))
    assert kind == ColumnType("text")
    assert len(coercions) == 1 and coercions[0].count == 3
    assert values == stored


def test_dates_with_times_become_timestamp(make_source: Any) -> None:
    kind, coercions, values = resolved(make_source("DATE", ["2021-02-28", "2021-03-01 12:30:00"]))
    assert kind == ColumnType("timestamp")
    assert len(coercions) == 1 and coercions[0].count == 1
    assert values == [dt.datetime(2021, 2, 28), dt.datetime(2021, 3, 1, 12, 30)]


def test_datetime_forms(make_source: Any) -> None:
    stored = ["2021-03-01T12:30", "2021-03-01 23:59:59.250", "2021-03-02"]
    kind, coercions, values = resolved(make_source("DATETIME", stored))
    assert kind == ColumnType("timestamp")
    assert coercions == []
    assert values == [dt.datetime(2021, 3, 1, 12, 30), dt.datetime(2021, 3, 1, 23, 59, 59, 250000),
                      dt.datetime(2021, 3, 2)]


def test_impossible_clock_is_not_a_timestamp(make_source: Any) -> None:
    kind, coercions, _ = resolved(make_source("TIMESTAMP", ["2021-03-01 24:00:00"]))
    assert kind == ColumnType("text") and coercions[0].count == 1


def test_integer_column_with_fractions_becomes_float(make_source: Any) -> None:
    kind, coercions, values = resolved(make_source("INTEGER", [1, 3.5]))
    assert kind == ColumnType("float")
    assert coercions[0].count == 1
    assert values == [1.0, 3.5]


def test_integer_column_with_text_becomes_text(make_source: Any) -> None:
    kind, coercions, values = resolved(make_source("INT", [7, "n/a", 8]))
    assert kind == ColumnType("text")
    assert sum(c.count for c in coercions if "declared" in c.message) == 1
    assert values == ["7", "n/a", "8"]


def test_declared_real_is_float(make_source: Any) -> None:
    kind, _, values = resolved(make_source("DOUBLE PRECISION", [1, 2.5]))
    assert kind == ColumnType("float") and values == [1.0, 2.5]


@pytest.mark.parametrize(("stored", "expected"), [
    ([1, 2, None], ColumnType("integer")),
    ([1, 2.5], ColumnType("float")),
    (["2020-01-01", "2020-01-02"], ColumnType("date")),
    (["2020-01-01", "2020-01-02 10:00"], ColumnType("timestamp")),
    (["x", "y"], ColumnType("text")),
    ([None, None], ColumnType("text")),
])
def test_undeclared_columns_resolved_from_values(make_source: Any, stored: list[Any],
                                                 expected: ColumnType) -> None:
    kind, coercions, _ = resolved(make_source("", stored))
    assert kind == expected
    assert coercions == []


def test_undeclared_mixed_text_and_numbers_is_text(make_source: Any) -> None:
    kind, coercions, values = resolved(make_source("", [1, "two", 3.5]))
    assert kind == ColumnType("text")
    assert coercions[0].count == 2
    assert values == ["1", "two", "3.5"]


def test_blobs_stay_bytes(make_source: Any) -> None:
    kind, coercions, values = resolved(make_source("BLOB", [b"\x00\xff", None]))
    assert kind == ColumnType("blob") and coercions == []
    assert values == [b"\x00\xff", None]


def test_text_with_trailing_spaces_and_accents_is_untouched(make_source: Any) -> None:
    stored = ["Zoë ", "  x", ""]
    kind, coercions, values = resolved(make_source("VARCHAR(10)", stored))
    assert kind == ColumnType("text") and coercions == [] and values == stored


def test_primary_key_and_not_null_are_read(tmp_path: Path) -> None:
    path = tmp_path / "keys.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute('CREATE TABLE "P" (a INTEGER NOT NULL, "B" TEXT, c REAL, PRIMARY KEY ("B", a))')
        conn.execute('CREATE TABLE "Q" (x INTEGER REFERENCES "P" (a), y)')
    with polysql.connect(f"sqlite:///{path}") as source:
        p, q = source.tables()
    assert p.primary_key == ("B", "a")
    assert [c.nullable for c in p.columns] == [False, True, True]
    assert q.foreign_keys[0].ref_table == "P" and q.foreign_keys[0].columns == ("x",)


def test_precision_follows_what_sqlite_prints(make_source: Any) -> None:
    # 99.99999999999999 prints as 100.0 with SQLite's 15 significant digits: three integer digits.
    kind, _, values = resolved(make_source("NUMERIC(4,2)", [99.99999999999999, 0.1 + 0.2]))
    assert kind == ColumnType("decimal", 5, 2)
    assert values == [Decimal("100.00"), Decimal("0.30")]


def test_many_scientific_notation_values(make_source: Any) -> None:
    # SQLite prints these as 1.0e-09 ... 2.0e-06; binary noise beyond 15 digits does not count.
    stored = [k * 1e-9 for k in range(1, 2001)]
    kind, coercions, values = resolved(make_source("DECIMAL", stored))
    assert kind.kind == "decimal" and kind.scale == 9 and coercions == []
    assert values == [Decimal(k).scaleb(-9) for k in range(1, 2001)]
