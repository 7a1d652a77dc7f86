"""A float column holding integers too large for a double still loads, and says what it rounded."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polysql


def test_huge_integers_in_a_float_column_are_rounded_and_reported(tmp_path: Path) -> None:
    source = tmp_path / "src.sqlite"
    con = sqlite3.connect(source)
    con.execute("CREATE TABLE t (a, b INTEGER)")  # no affinity for a; b gets a REAL it cannot hold
    con.executemany("INSERT INTO t VALUES (?, ?)", [(1.5, 2.5), (2**60 + 1, 2**60 + 1), (None, 3)])
    con.commit()
    con.close()
    target = tmp_path / "copy.duckdb"
    report = polysql.load(f"sqlite:///{source}", f"duckdb:///{target}")
    assert report.tables == {"t": 3}
    rounded = {c.column: c.count for c in report.coercions if "beyond 2^53" in c.message}
    assert rounded == {"a": 1, "b": 1}
    with polysql.connect(f"duckdb:///{target}") as duck:
        rows = duck.execute("SELECT a, b FROM t ORDER BY b").rows
    assert rows == [(1.5, 2.5), (None, 3.0), (float(2**60), float(2**60))]


def test_mysql_reports_what_reading_the_rows_found(tmp_path: Path) -> None:
    """Coercions found while the rows are read (not only while the types are chosen) reach the
    MySQL load report too."""
    import os
    import uuid

    import pytest

    from polysql.backends.mysql.backend import MySQLBackend
    from polysql.core.errors import EngineUnavailableError

    source = tmp_path / "src.sqlite"
    con = sqlite3.connect(source)
    con.execute("CREATE TABLE t (a)")
    con.executemany("INSERT INTO t VALUES (?)", [(1.5,), (2**60 + 1,)])
    con.commit()
    con.close()
    url = f"mysql://root@127.0.0.1:3306/polysql_t_{uuid.uuid4().hex[:10]}"
    try:
        report = polysql.load(f"sqlite:///{source}", url)
    except EngineUnavailableError as exc:
        if "mysql" in os.environ.get("POLYSQL_REQUIRE", ""):
            raise
        pytest.skip(f"MySQL/MariaDB unavailable: {exc}")
    try:
        assert {(c.column, c.count) for c in report.coercions if "beyond 2^53" in c.message} == {("a", 1)}
    finally:
        MySQLBackend.drop(url)
