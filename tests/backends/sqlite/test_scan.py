"""The SQLite type scan: packed storage-class counts, the second pass that measures dates only
when numeric columns hold text, the shortcuts in date and decimal checks, and scanning tables
on several connections -- each must give the answers a plain count would."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from polysql.backends.sqlite.introspect import introspect
from polysql.backends.sqlite.types import _class_counts, _class_expressions, scan_table


def _db(path: Path | str, script: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    return conn


MIXED = """
CREATE TABLE m (v);
INSERT INTO m VALUES (1), (2), (2.5), ('x'), ('y'), ('z'), (x'00'), (NULL), (NULL);
"""


@pytest.mark.parametrize("rows", [9, 2**16, 2**25, 2**40])
def test_packed_class_counts_match_plain_counts_for_any_table_size(rows: int) -> None:
    # ``rows`` chooses how many counts share one sum; the answer must not depend on it.
    conn = _db(":memory:", MIXED)
    expressions = _class_expressions('"v"', rows)
    packed = list(conn.execute(f"SELECT {', '.join(expressions)} FROM m").fetchone())
    assert _class_counts(packed, rows) == (2, 1, 3, 1)


def test_numeric_column_holding_dates_is_measured_in_a_second_pass() -> None:
    conn = _db(":memory:", """
        CREATE TABLE t (n INTEGER, f REAL);
        INSERT INTO t VALUES ('2020-01-02', 1.5), ('2021-03-04 05:06:07', 2.5), (NULL, NULL);
    """)
    rows, (n, f) = scan_table(conn, "t", [("n", "INTEGER"), ("f", "REAL")])
    assert rows == 3
    assert (n.texts, n.dates, n.datetimes) == (2, 1, 1)
    assert (f.reals, f.texts, f.dates, f.datetimes) == (2, 0, 0, 0)


@pytest.mark.parametrize(("value", "is_date"), [
    ("2020-02-29", True), ("2021-02-29", False), ("2021-04-31", False), ("2021-04-30", True),
    ("2021-13-01", False), ("2021-00-10", False), ("0000-01-01", False), ("0001-01-01", True),
    ("2021-12-28", True), ("2021-12-32", False)])
def test_dates_are_validated_exactly(value: str, is_date: bool) -> None:
    conn = _db(":memory:", "CREATE TABLE t (d DATE);")
    conn.execute("INSERT INTO t VALUES (?)", (value,))
    _, (stats,) = scan_table(conn, "t", [("d", "DATE")])
    assert stats.dates == int(is_date)


@pytest.mark.parametrize(("value", "is_datetime"), [
    ("2020-01-01 10:00", True), ("2020-01-01T10:00:59", True),
    ("2020-01-01 10:00:00.123456789", True), ("2020-01-01 10:00:0", False),
    ("2020-01-01 10:00:00.", False), ("2020-01-01 10:00:00.12a", False),
    ("2020-01-01 24:00:00", False), ("2020-01-01 10:60:00", False),
    ("2021-02-29 10:00:00", False), ("2020-01-01 10:00:00Z", False)])
def test_datetimes_are_validated_exactly(value: str, is_datetime: bool) -> None:
    conn = _db(":memory:", "CREATE TABLE t (d DATETIME);")
    conn.execute("INSERT INTO t VALUES (?)", (value,))
    _, (stats,) = scan_table(conn, "t", [("d", "DATETIME")])
    assert stats.datetimes == int(is_datetime)


def test_decimal_digits_beyond_the_declared_scale_are_measured() -> None:
    conn = _db(":memory:", """
        CREATE TABLE t (a NUMERIC(10,2), b NUMERIC(10,2), c NUMERIC);
        INSERT INTO t VALUES (1.25, 0.125, 0.125), (0.1 + 0.2, 3, 1.5);
    """)
    tables = {t.table.name: t for t in introspect(conn)}
    a, b, c = tables["t"].table.columns
    # 0.1 + 0.2 prints as 0.3 with SQLite's 15 digits: no widening for binary noise
    assert (str(a.type), str(b.type), str(c.type)) == (
        "decimal(10,2)", "decimal(10,3)", "decimal(18,3)")
    (widened,) = tables["t"].coercions
    assert widened.column == "b" and "scale widened" in widened.message


def test_parallel_scan_of_a_file_matches_a_scan_on_one_connection(tmp_path: Path) -> None:
    script = "".join(
        f"CREATE TABLE t{i} (id INTEGER PRIMARY KEY, d DATE, v NUMERIC(8,3), s TEXT, x);"
        f"INSERT INTO t{i} VALUES (1, '2020-01-0{i + 1}', {i}.5, 'a', 1), "
        f"(2, 'nope', 2, NULL, 'b'), (3, NULL, NULL, 'c', 2.5);"
        for i in range(5))
    on_file = _db(tmp_path / "many.sqlite", script)
    in_memory = _db(":memory:", script)
    from_file, from_memory = introspect(on_file), introspect(in_memory)
    assert [t.table for t in from_file] == [t.table for t in from_memory]
    assert [t.coercions for t in from_file] == [t.coercions for t in from_memory]
    assert [t.table.name for t in from_file] == [f"t{i}" for i in range(5)]
