"""DuckDB backend specifics: URL forms, the locked configuration, types after a load."""

from __future__ import annotations

import sqlite3
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

import polysql
from polysql.backends.duckdb.backend import DuckDBBackend
from polysql.core.errors import ConfigError, EngineUnavailableError


@pytest.mark.parametrize("url", ["duckdb://", "duckdb:///:memory:"])
def test_in_memory_urls(url: str) -> None:
    with polysql.connect(url, read_only=False) as backend:
        assert isinstance(backend, DuckDBBackend) and backend.path is None
        assert backend.execute("CREATE TABLE t AS SELECT 42 AS a").ok
        assert backend.execute("SELECT a FROM t").rows == [(42,)]


def test_in_memory_read_only_runs_queries_only() -> None:
    with polysql.connect("duckdb://") as backend:
        assert backend.execute("SELECT 1").rows == [(1,)]
        refused = backend.execute("CREATE TABLE t (a INTEGER)")
        assert refused.error.kind == "forbidden" and "CREATE" in refused.error.message


def test_file_url_opens_read_only(tmp_path: Path) -> None:
    path = tmp_path / "d.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute('CREATE TABLE "T" ("A" INTEGER)')
    conn.execute('INSERT INTO "T" VALUES (1)')
    conn.close()
    with polysql.connect(f"duckdb:///{path}") as backend:
        assert backend.execute('SELECT "A" FROM "T"').rows == [(1,)]
        assert backend.execute('DELETE FROM "T"').error.kind == "forbidden"


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.duckdb"
    with pytest.raises(EngineUnavailableError, match="nope.duckdb"):
        polysql.connect(f"duckdb:///{missing}")
    assert not missing.exists()


def test_configuration_cannot_be_unlocked() -> None:
    with polysql.connect("duckdb://", read_only=False) as backend:
        result = backend.execute("SET enable_external_access = true")
        assert result.error.kind == "forbidden"
        assert backend.execute("SELECT * FROM read_csv('/etc/passwd')").error.kind == "forbidden"


def test_a_quoted_path_after_from_is_a_refused_file_read(tmp_path: Path) -> None:
    """DuckDB reads ``FROM 'some/file'`` as a file. With file access off, a path with a known
    extension is refused as such, but one without (``/etc/passwd``) is looked up as a table and
    reported missing. Either way it is a refused file read, and is said so."""
    secret = tmp_path / "secret's"
    secret.write_text("a,b\n1,2\n", encoding="utf-8")
    (tmp_path / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    quoted = str(secret).replace("'", "''")
    with polysql.connect("duckdb://", read_only=False) as backend:
        backend.execute("CREATE TABLE t (a INTEGER)")
        assert backend.execute(f"SELECT * FROM '{tmp_path}/data.csv'").error.kind == "forbidden"
        for sql in (f"SELECT * FROM '{quoted}'", f"select a from t join '{quoted}' as s on true"):
            error = backend.execute(sql).error
            assert error is not None and error.kind == "forbidden", (sql, error)
            assert f"reads the file {str(secret)!r}" in error.message
        # a missing table is still the statement's own mistake, quoted elsewhere or not at all
        for sql in ("SELECT * FROM nosuch", "SELECT * FROM nosuch WHERE 'nosuch' = 'x'"):
            error = backend.execute(sql).error
            assert error is not None and error.kind == "runtime", (sql, error)


def test_no_progress_bar_is_drawn_and_the_configuration_stays_locked(tmp_path: Path) -> None:
    """DuckDB draws a progress bar on stdout for slow statements, which corrupted --json output."""
    with polysql.connect("duckdb://", read_only=False) as backend:
        assert backend.execute("SELECT current_setting('enable_progress_bar')").rows == [(False,)]
        assert backend.execute("SELECT current_setting('lock_configuration')").rows == [(True,)]
        assert backend.execute("SET enable_progress_bar = true").error is not None


def test_threads_option_reaches_the_engine() -> None:
    with polysql.connect("duckdb://", threads=1) as backend:
        assert backend.execute("SELECT current_setting('threads')").rows == [(1,)]


def test_types_come_from_the_engine() -> None:
    with polysql.connect("duckdb://") as backend:
        result = backend.execute("SELECT 1.25::DECIMAL(5,2) AS m, DATE '2020-01-01' AS d, "
                                 "[1, 2] AS l")
        assert result.types == ["DECIMAL(5,2)", "DATE", "INTEGER[]"]
        assert result.rows[0][0] == Decimal("1.25")


def test_loaded_types_follow_the_logical_types(tmp_path: Path) -> None:
    source = tmp_path / "s.sqlite"
    with sqlite3.connect(source) as conn:
        conn.execute('CREATE TABLE "Mixed Case" ("Id" INTEGER PRIMARY KEY, "Price" NUMERIC(8,2), '
                     '"On" BOOLEAN, "Day" DATE, "At" DATETIME, "Ratio" REAL, "Raw" BLOB, "Label" TEXT)')
        conn.execute("INSERT INTO \"Mixed Case\" VALUES (1, 9.99, 1, '2020-01-01', "
                     "'2020-01-01 10:00:00', 0.5, x'01', 'a')")
    target = tmp_path / "t.duckdb"
    polysql.load(f"sqlite:///{source}", f"duckdb:///{target}")
    conn = duckdb.connect(str(target), read_only=True)
    try:
        described = conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'Mixed Case' ORDER BY ordinal_position").fetchall()
        constraints = conn.execute(
            "SELECT constraint_type, constraint_column_names FROM duckdb_constraints() "
            "WHERE table_name = 'Mixed Case' AND constraint_type = 'PRIMARY KEY'").fetchall()
    finally:
        conn.close()
    assert described == [("Id", "BIGINT"), ("Price", "DECIMAL(8,2)"), ("On", "BOOLEAN"),
                         ("Day", "DATE"), ("At", "TIMESTAMP"), ("Ratio", "DOUBLE"),
                         ("Raw", "BLOB"), ("Label", "VARCHAR")]
    assert constraints == [("PRIMARY KEY", ["Id"])]


def test_tables_are_read_back_from_the_engine(tmp_path: Path) -> None:
    path = tmp_path / "d.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute('CREATE TABLE "Orders" ("Id" BIGINT PRIMARY KEY, "Total" DECIMAL(9,3) NOT NULL, '
                 '"Tags" VARCHAR[], "When" TIMESTAMP)')
    conn.execute("INSERT INTO \"Orders\" VALUES (1, 2.5, ['a'], NULL), (2, 3, NULL, NULL)")
    conn.close()
    with polysql.connect(f"duckdb:///{path}") as backend:
        (table,) = backend.tables()
        assert table.name == "Orders" and table.row_count == 2
        assert table.primary_key == ("Id",)
        assert [(c.name, c.declared_type, str(c.type), c.nullable) for c in table.columns] == [
            ("Id", "BIGINT", "integer", False), ("Total", "DECIMAL(9,3)", "decimal(9,3)", False),
            ("Tags", "VARCHAR[]", "text", True), ("When", "TIMESTAMP", "timestamp", True)]
        (batch,) = list(backend.read_table(table))
        assert batch.to_pylist()[0] == {"Id": 1, "Total": Decimal("2.500"), "Tags": "[a]",
                                        "When": None}


def test_memory_limit_turns_a_huge_result_into_too_large() -> None:
    with polysql.connect("duckdb://", memory_limit="50MB", threads=1) as backend:
        result = backend.execute("SELECT list(range) FROM range(100000000)")
        assert result.error is not None and result.error.kind == "too_large"
        assert backend.execute("SELECT 1").rows == [(1,)]


def test_a_url_query_gives_the_settings_and_code_options_win() -> None:
    """The URL is all a sweep's --engines can pass: its settings take effect, on the copies a
    sweep opens too (their URL keeps the query)."""
    settings = "SELECT current_setting('memory_limit'), current_setting('threads')"
    with polysql.connect("duckdb://?memory_limit=50MB&threads=1") as backend:
        ((memory, threads),) = backend.execute(settings).rows
        assert threads == 1 and memory.endswith("MiB") and float(memory.split()[0]) < 50
        result = backend.execute("SELECT list(range) FROM range(100000000)")
        assert result.error is not None and result.error.kind == "too_large"
    with polysql.connect("duckdb://?memory_limit=50MB&threads=1", threads=2) as backend:
        assert backend.execute(settings).rows[0][1] == 2


@pytest.mark.parametrize(("url", "says"), [
    ("duckdb://?mode=ro", "unknown setting(s) in the DuckDB URL: mode"),
    ("duckdb://?threads=two", "threads='two' in the DuckDB URL is not a whole number"),
    ("duckdb://?threads=1&threads=2", "threads is given more than once"),
])
def test_a_url_setting_that_would_not_apply_is_refused(url: str, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        polysql.connect(url)
    assert says in str(refused.value)


def test_explain_analyze_cannot_smuggle_a_write_into_memory() -> None:
    with polysql.connect("duckdb://") as backend:
        result = backend.execute("EXPLAIN ANALYZE CREATE TABLE hacked AS SELECT 1 AS a")
        assert result.error is not None and result.error.kind == "forbidden"
        assert backend.execute("SELECT * FROM hacked").error.kind == "runtime"


_PIVOTED = "(SELECT * FROM (VALUES ('a', 1, 1), ('b', 1, 2), ('a', 2, 3)) AS v(k, y, n))"


@pytest.mark.parametrize("sql", [
    f"PIVOT {_PIVOTED} ON k USING sum(n) ORDER BY y",
    f"SELECT * FROM (PIVOT {_PIVOTED} ON k USING sum(n)) ORDER BY y",
    f"WITH p AS (PIVOT {_PIVOTED} ON k USING sum(n)) SELECT * FROM p ORDER BY y",
    f"-- the 'delete' column stays\n(FROM (PIVOT {_PIVOTED} ON k USING sum(n)) SELECT *) "
    "ORDER BY \"y\""])
def test_a_pivot_without_an_in_list_runs_and_leaves_nothing_behind(sql: str,
                                                                   tmp_path: Path) -> None:
    """DuckDB runs such a PIVOT as several statements (it first creates an ENUM of the pivoted
    values); it is a query all the same and must not be refused as a write."""
    path = tmp_path / "p.duckdb"
    duckdb.connect(str(path)).close()
    for url in ("duckdb://", f"duckdb:///{path}"):
        with polysql.connect(url) as backend:
            result = backend.execute(sql)
            assert result.ok, (url, result.error)
            assert (result.columns, result.rows) == (["y", "a", "b"], [(1, 1, 2), (2, 3, None)])
            left = backend.execute("SELECT count(*) FROM duckdb_types() WHERE NOT internal")
            assert left.rows == [(0,)], url
            # the connection is out of the statement's transaction: a plain query still runs
            assert backend.execute("SELECT 1").rows == [(1,)]


@pytest.mark.parametrize("sql", [
    f"CREATE TEMP TABLE hacked AS PIVOT {_PIVOTED} ON k USING sum(n)",
    f"CREATE TABLE hacked AS SELECT * FROM (PIVOT {_PIVOTED} ON k USING sum(n))",
    f"WITH p AS (PIVOT {_PIVOTED} ON k USING sum(n)) INSERT INTO hacked SELECT * FROM p",
    f"WITH p AS (PIVOT {_PIVOTED} ON k USING sum(n)) DELETE FROM hacked USING p"])
def test_a_write_wrapped_around_such_a_pivot_is_refused(sql: str) -> None:
    with polysql.connect("duckdb://") as backend:
        result = backend.execute(sql)
        assert result.error is not None and result.error.kind == "forbidden", result
        assert "IN (" in result.error.message
        assert backend.execute("SELECT * FROM hacked").error.kind == "runtime"


def test_a_rolled_back_statement_changes_nothing_even_if_it_writes() -> None:
    """The second barrier behind the screen for such a PIVOT: whatever the statement does is
    undone with its transaction."""
    from polysql.backends._common.cancel import Flight
    from polysql.backends.duckdb.execute import run_statement

    conn = duckdb.connect()
    try:
        result = run_statement(conn, "CREATE TABLE hacked AS SELECT 1 AS a", timeout=10,
                               max_rows=10, flight=Flight(), engine="duckdb", started=0.0,
                               rolled_back=True)
        assert result.ok, result.error
        assert conn.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'hacked'"
                            ).fetchall() == [(0,)]
    finally:
        conn.close()


def test_such_a_pivot_that_times_out_leaves_the_connection_usable() -> None:
    with polysql.connect("duckdb://", threads=1) as backend:
        slow = backend.execute(
            "PIVOT (SELECT range % 3 AS k, range AS y, range AS n FROM range(300000000)) "
            "ON k USING sum(n)", timeout=0.3)
        assert slow.error is not None and slow.error.kind == "timeout", slow
        again = backend.execute(f"PIVOT {_PIVOTED} ON k USING sum(n) ORDER BY y")
        assert again.rows == [(1, 1, 2), (2, 3, None)], again
