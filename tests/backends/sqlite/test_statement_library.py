"""Which SQLite runs evaluated statements, and why its version reaches the verdicts.

SQLite 3.43 and later add floats with compensated summation; older releases add them one by one,
so the same rows can sum to 1.0 or to 0.9999999999999999. These tests build such rows and check
the sums, ranks and verdicts that depend on them, on real SQLite and DuckDB.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest
from polysql_testkit.sqlite_files import built_sqlite

import polysql
from polysql.backends.sqlite.connect import COMPENSATED_SUMS, statement_library

sqlean = pytest.importorskip("sqlean", reason="the 'sqlite' extra (sqlean.py) is not installed")

# Ten tenths: added one by one they make 0.9999999999999999; the correctly rounded sum is 1.0.
TENTHS = [0.1] * 10


def _prices(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE sale (shop TEXT, price NUMERIC(10, 2))")
    con.executemany("INSERT INTO sale VALUES ('a', ?)", [(v,) for v in TENTHS])
    con.execute("INSERT INTO sale VALUES ('b', 1.0)")


@pytest.fixture
def prices(tmp_path: Path) -> Path:
    return built_sqlite(tmp_path / "prices.sqlite", _prices)


def test_the_bundled_sqlite_runs_statements_with_its_extensions_off(prices: Path) -> None:
    assert statement_library() is sqlean
    assert sqlean.sqlite_version_info >= sqlite3.sqlite_version_info
    with polysql.connect(f"sqlite:///{prices}") as backend:
        assert backend.version() == sqlean.sqlite_version
        # What the bundled extensions would add is absent: no file access, no regexp.
        for sql in ("SELECT readfile('/etc/hostname')", "SELECT writefile('x', 'y')",
                    "SELECT 'a' REGEXP 'a'", "SELECT uuid4()"):
            failed = backend.execute(sql)
            assert failed.error is not None and "no such function" in failed.error.message, sql
        assert backend.execute("SELECT load_extension('x')").error.kind == "forbidden"
        assert backend.execute("DELETE FROM sale").error.kind == "forbidden"
        assert backend.execute("SELECT 1; SELECT 2").error.kind == "forbidden"
        assert backend.execute("SELEC 1").error.kind == "syntax"
    with sqlite3.connect(prices) as con:
        assert con.execute("SELECT COUNT(*) FROM sale").fetchone() == (11,)


def test_a_writable_or_in_memory_database_keeps_pythons_sqlite() -> None:
    with polysql.connect("sqlite://", read_only=False) as backend:
        assert backend.version() == sqlite3.sqlite_version
        backend.execute("CREATE TABLE t (x REAL)")
        backend.execute("INSERT INTO t VALUES (0.5)")
        assert backend.execute("SELECT SUM(x) FROM t").rows == [(0.5,)]


def test_float_sums_are_correctly_rounded(prices: Path) -> None:
    assert sum(TENTHS) != 1.0 and math.fsum(TENTHS) == 1.0  # the premise
    assert sqlean.sqlite_version_info[:2] >= COMPENSATED_SUMS
    with polysql.connect(f"sqlite:///{prices}") as backend:
        result = backend.execute("SELECT SUM(price), TOTAL(price), AVG(price) * 10 FROM sale "
                                 "WHERE shop = 'a'")
    assert result.error is None
    assert result.rows == [(1.0, 1.0, 1.0)]


def test_a_rank_over_sums_is_judged_as_exact_engines_compute_it(prices: Path,
                                                                 tmp_path: Path) -> None:
    """The gold ranks two shops whose sums are equal; DuckDB holds the prices as DECIMAL and
    ranks them equal too, so the same SQL there is a match, not a float-noise mismatch."""
    sql = ("SELECT shop, SUM(price) AS total, RANK() OVER (ORDER BY SUM(price) DESC) AS place "
           "FROM sale GROUP BY shop ORDER BY place, shop")
    copy = tmp_path / "prices.duckdb"
    polysql.load(f"sqlite:///{prices}", f"duckdb:///{copy}")
    with polysql.connect(f"sqlite:///{prices}") as gold_engine, \
            polysql.connect(f"duckdb:///{copy}") as engine:
        gold = gold_engine.execute(sql)
        pred = engine.execute(sql)
    assert gold.rows == [("a", 1.0, 1), ("b", 1.0, 1)]
    verdict = polysql.compare(gold, pred, gold_sql=sql)
    assert verdict.match, verdict.reason
