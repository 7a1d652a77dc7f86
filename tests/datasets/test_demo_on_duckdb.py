"""Run every demo gold query verbatim on DuckDB: hazards must show, portable questions must agree.

The SQLite tables are copied into an in-memory DuckDB through Python rows, with each declared
SQLite type mapped to its natural DuckDB type. The comparison is deliberately loose (unordered,
floats rounded, booleans as 0/1): it is a sanity check of the dataset, not the normalizer.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from polysql.datasets.base import Question

# declared SQLite type -> (DuckDB type, Arrow type, convert a stored SQLite value)
COLUMN_TYPES: dict[str, tuple[str, pa.DataType, Callable[[Any], Any]]] = {
    "INTEGER": ("BIGINT", pa.int64(), int),
    "TEXT": ("VARCHAR", pa.string(), str),
    "REAL": ("DOUBLE", pa.float64(), float),
    "DATE": ("DATE", pa.date32(), dt.date.fromisoformat),
    "DATETIME": ("TIMESTAMP", pa.timestamp("us"), dt.datetime.fromisoformat),
    "BOOLEAN": ("BOOLEAN", pa.bool_(), bool),
    "NUMERIC(10,2)": ("DECIMAL(10,2)", pa.decimal128(10, 2),
                      lambda v: Decimal(str(v)).quantize(Decimal("0.01"))),
}


def column_type(declared: str) -> tuple[str, pa.DataType, Callable[[Any], Any]]:
    # DuckDB has no blank-padded CHAR(n); like most loaders, keep the padded text as VARCHAR.
    return COLUMN_TYPES["TEXT" if declared.startswith("CHAR(") else declared]


@pytest.fixture(scope="module")
def duck(demo_db: Path) -> duckdb.DuckDBPyConnection:
    source = sqlite3.connect(f"file:{demo_db}?mode=ro", uri=True)
    target = duckdb.connect()
    tables = [r[0] for r in source.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
    for table in tables:
        cols = source.execute(f'PRAGMA table_info("{table}")').fetchall()
        types = [column_type(c[2]) for c in cols]
        target.execute(f'CREATE TABLE "{table}" ('
                       + ", ".join(f'"{c[1]}" {t[0]}' for c, t in zip(cols, types, strict=True))
                       + ")")
        rows = source.execute(f'SELECT * FROM "{table}"').fetchall()
        arrays = [pa.array([None if row[i] is None else convert(row[i]) for row in rows], arrow)
                  for i, (_, arrow, convert) in enumerate(types)]
        target.register("batch", pa.table(arrays, names=[c[1] for c in cols]))
        target.execute(f'INSERT INTO "{table}" SELECT * FROM batch')
        target.unregister("batch")
    source.close()
    yield target
    target.close()


def loose(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (float, Decimal)):
        return round(float(value), 4)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def loose_rows(rows: list[tuple]) -> list[tuple]:
    return sorted((tuple(loose(v) for v in row) for row in rows), key=repr)


def same_on_duckdb(duck: duckdb.DuckDBPyConnection, demo_db: Path, q: Question) -> bool:
    gold = sqlite3.connect(f"file:{demo_db}?mode=ro", uri=True).execute(q.gold_sql).fetchall()
    try:
        other = duck.execute(q.gold_sql).fetchall()
    except duckdb.Error:
        return False
    return loose_rows(gold) == loose_rows(other)


def test_the_copy_is_faithful(duck: duckdb.DuckDBPyConnection, demo_db: Path) -> None:
    source = sqlite3.connect(f"file:{demo_db}?mode=ro", uri=True)
    tables = [t for (t,) in source.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        expected = source.execute(f'SELECT * FROM "{table}"').fetchall()
        assert loose_rows(duck.execute(f'SELECT * FROM "{table}"').fetchall()) == loose_rows(expected)


def test_many_gold_queries_break_or_change_on_duckdb(
        duck: duckdb.DuckDBPyConnection, demo_db: Path, demo_questions: list[Question]) -> None:
    differing = [q.id for q in demo_questions if not same_on_duckdb(duck, demo_db, q)]
    assert len(differing) >= 0.15 * len(demo_questions), differing


def test_portable_questions_agree_on_duckdb(
        duck: duckdb.DuckDBPyConnection, demo_db: Path, demo_questions: list[Question]) -> None:
    portable = [q for q in demo_questions if "portable" in q.tags]
    assert portable
    assert [q.id for q in portable if not same_on_duckdb(duck, demo_db, q)] == []


@pytest.mark.parametrize("tag", ["integer_division", "date_arithmetic", "bare_column_aggregate",
                                 "double_quoted_strings", "case_sensitive_like", "typeof"])
def test_hazard_tags_that_duckdb_trips_on(
        tag: str, duck: duckdb.DuckDBPyConnection, demo_db: Path,
        demo_questions: list[Question]) -> None:
    tagged = [q for q in demo_questions if tag in q.tags]
    assert any(not same_on_duckdb(duck, demo_db, q) for q in tagged), tag
