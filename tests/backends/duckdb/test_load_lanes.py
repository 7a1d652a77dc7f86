"""Loading into DuckDB fills several tables at once (one lane per core the source can be read
on): the copy must be exactly the one a single lane makes, a table that fails must stop the
others, and Ctrl-C must stop every lane."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest
from polysql_testkit.interrupts import SLOW as SLOW_STATEMENTS
from polysql_testkit.interrupts import sigint_to_main_thread

import polysql
from polysql.backends.duckdb.load import _lanes, copy_tables
from polysql.backends.duckdb.load_lanes import fill_in_lanes
from polysql.core.errors import LoadError

SLOW = SLOW_STATEMENTS["duckdb"]


def _source(path: Path) -> Path:
    """Tables of several sizes, with what a load reports: a primary key the rows break, a
    UNIQUE index they break, an ordinary index and a view."""
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE big (id INTEGER PRIMARY KEY, label TEXT, amount REAL);
        CREATE TABLE middle (k INTEGER, v TEXT, PRIMARY KEY (k, v));
        CREATE TABLE broken_key (code TEXT PRIMARY KEY, n INTEGER);
        CREATE TABLE small (x INTEGER, y);
        CREATE UNIQUE INDEX small_y ON small (y);
        CREATE INDEX big_label ON big (label);
        CREATE VIEW big_view AS SELECT id, label FROM big WHERE amount > 10;
    """)
    con.executemany("INSERT INTO big VALUES (?, ?, ?)",
                    [(i, f"label {i % 97}", i * 0.5) for i in range(20_000)])
    con.executemany("INSERT INTO middle VALUES (?, ?)", [(i // 3, f"v{i}") for i in range(6_000)])
    # SQLite lets a TEXT PRIMARY KEY hold NULLs: DuckDB's key cannot be created over them
    con.executemany("INSERT INTO broken_key VALUES (?, ?)",
                    [(None if i % 50 == 0 else f"c{i}", i) for i in range(1_000)])
    # 1 and '1' differ in SQLite's untyped column; as DuckDB text they are one key
    con.executemany("INSERT INTO small VALUES (?, ?)", [(i, 1 if i == 0 else str(i))
                                                        for i in range(10)])
    con.commit()
    con.close()
    return path


def _catalog(conn: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    tables = [name for (name,) in conn.execute(
        "SELECT table_name FROM duckdb_tables() ORDER BY table_oid").fetchall()]
    return {
        "tables": tables,
        "columns": conn.execute("SELECT table_name, column_name, data_type, is_nullable "
                                "FROM duckdb_columns() ORDER BY table_name, column_index").fetchall(),
        "constraints": sorted(map(str, conn.execute(
            "SELECT table_name, constraint_type, constraint_column_names "
            "FROM duckdb_constraints()").fetchall())),
        "indexes": sorted(conn.execute(
            "SELECT table_name, index_name, is_unique FROM duckdb_indexes()").fetchall()),
        "views": conn.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall(),
        # rows in each table's own order: insertion order is part of the copy
        "rows": {name: conn.execute(f'SELECT * FROM "{name}"').fetchall() for name in tables},
    }


def test_lanes_make_exactly_the_copy_one_lane_makes(tmp_path: Path) -> None:
    path = _source(tmp_path / "source.sqlite")
    copies = {}
    for lanes in (1, 3):
        source = polysql.connect(f"sqlite:///{path}")
        target = duckdb.connect()
        try:
            counts, coercions = copy_tables(target, source, replace=False, lanes=lanes)
            copies[lanes] = (counts, [str(c) for c in coercions], _catalog(target))
        finally:
            target.close()
            source.close()
    assert copies[1] == copies[3]
    counts, coercions, catalog = copies[3]
    # the source's order, whichever lane filled which table
    assert catalog["tables"] == ["big", "middle", "broken_key", "small"]
    assert list(counts) == catalog["tables"]
    assert counts == {"big": 20_000, "middle": 6_000, "broken_key": 1_000, "small": 10}
    assert any("primary key not created" in c and "broken_key" in c for c in coercions)
    assert any("created as a plain index" in c for c in coercions)
    assert ("small", "small_y", False) in catalog["indexes"]
    assert catalog["views"] == [("big_view",)]


def test_outcomes_come_back_in_the_jobs_order() -> None:
    conn = duckdb.connect()
    try:
        jobs = [1, 500_000, 10, 200_000]
        filled = fill_in_lanes(
            conn, jobs, lambda cur, n: cur.execute(f"SELECT count(*) FROM range({n})").fetchone()[0],
            lanes=2, size=lambda n: n)
        assert filled == jobs
    finally:
        conn.close()


def test_a_failing_table_stops_the_table_still_loading() -> None:
    conn = duckdb.connect()

    def fill(cur: duckdb.DuckDBPyConnection, job: str) -> Any:
        if job == "slow":
            return cur.execute(SLOW).fetchall()
        time.sleep(0.5)  # the slow statement is running by now
        raise LoadError("table 'bad' broke")

    try:
        started = time.perf_counter()
        with pytest.raises(LoadError, match="table 'bad' broke"):
            fill_in_lanes(conn, ["slow", "bad"], fill, lanes=2, size=lambda job: len(job))
        assert time.perf_counter() - started < 30  # interrupted, not run to its end
        assert conn.execute("SELECT 42").fetchall() == [(42,)]
    finally:
        conn.close()


def test_ctrl_c_stops_every_lane() -> None:
    conn = duckdb.connect()
    try:
        started = time.perf_counter()
        # a real SIGINT to the main thread while both lanes run a long statement
        with sigint_to_main_thread(), pytest.raises(KeyboardInterrupt):
            fill_in_lanes(conn, ["a", "b"], lambda cur, _: cur.execute(SLOW).fetchall(),
                          lanes=2, size=lambda job: 1)
        assert time.perf_counter() - started < 30
        assert conn.execute("SELECT 42").fetchall() == [(42,)]
    finally:
        conn.close()


def test_a_target_limited_to_one_thread_fills_one_table_at_a_time(tmp_path: Path) -> None:
    path = _source(tmp_path / "source.sqlite")
    with polysql.connect(f"sqlite:///{path}") as source:
        with polysql.connect("duckdb://", read_only=False, threads=1) as limited:
            assert _lanes(limited, source) == 1  # type: ignore[arg-type]
        with polysql.connect("duckdb://", read_only=False) as free:
            # one lane per core (a SQLite source reads on several threads), four at most
            assert _lanes(free, source) == min(4, os.cpu_count() or 1)  # type: ignore[arg-type]
