"""SQLite backend specifics: URL forms, what the read-only authorizer allows, result types."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

import polysql
from polysql.backends.sqlite.backend import SQLiteBackend
from polysql.backends.sqlite.connect import open_connection
from polysql.core.errors import ConfigError, EngineError, EngineUnavailableError


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    path = tmp_path / "s.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute('CREATE TABLE "T" (a INTEGER, b TEXT, c REAL, d BLOB)')
        conn.execute("INSERT INTO \"T\" VALUES (1, 'x', 1.5, x'00'), (NULL, NULL, NULL, NULL)")
    return path


def test_absolute_file_url_opens_read_only(db_file: Path) -> None:
    with polysql.connect(f"sqlite:///{db_file}") as backend:
        assert isinstance(backend, SQLiteBackend) and backend.read_only
        assert backend.execute('SELECT count(*) FROM "T"').rows == [(2,)]
        assert backend.execute("INSERT INTO \"T\" (a) VALUES (2)").error.kind == "forbidden"


def test_relative_file_url(db_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(db_file.parent)
    with polysql.connect(f"sqlite:///{db_file.name}") as backend:
        assert backend.execute('SELECT a FROM "T" WHERE a = 1').rows == [(1,)]


@pytest.mark.parametrize("query", ["mode=ro&uri=true", "timeout=5"])
def test_a_url_query_is_refused_not_ignored(db_file: Path, query: str) -> None:
    with pytest.raises(ConfigError, match="takes no query parameters") as refused:
        polysql.connect(f"sqlite:///{db_file}?{query}")
    assert query.split("=")[0] in str(refused.value)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.sqlite"
    with pytest.raises(EngineUnavailableError, match="nope.sqlite"):
        polysql.connect(f"sqlite:///{missing}")
    assert not missing.exists()


def test_in_memory_writable_then_queryable() -> None:
    with polysql.connect("sqlite://", read_only=False) as backend:
        assert backend.execute("CREATE TABLE t (a INTEGER)").ok
        assert backend.execute("INSERT INTO t VALUES (1), (2)").ok
        assert backend.execute("SELECT sum(a) FROM t").rows == [(3,)]


def test_in_memory_read_only_refuses_writes() -> None:
    with polysql.connect("sqlite://") as backend:
        assert backend.execute("CREATE TABLE t (a INTEGER)").error.kind == "forbidden"
        assert backend.execute("SELECT 1 + 1").rows == [(2,)]


def test_result_types_are_storage_classes_of_first_non_null(db_file: Path) -> None:
    with polysql.connect(f"sqlite:///{db_file}") as backend:
        result = backend.execute('SELECT a, b, c, d FROM "T" ORDER BY a IS NULL DESC')
        assert result.rows[0] == (None, None, None, None)
        assert result.types == ["INTEGER", "TEXT", "REAL", "BLOB"]
        assert backend.execute('SELECT a FROM "T" WHERE a IS NULL').types == [""]


@pytest.mark.parametrize("sql", [
    'PRAGMA table_info("T")',
    "SELECT name FROM pragma_table_info('T')",
    "PRAGMA user_version",
    "SELECT sql FROM sqlite_master",
])
def test_introspection_is_allowed(db_file: Path, sql: str) -> None:
    with polysql.connect(f"sqlite:///{db_file}") as backend:
        result = backend.execute(sql)
        assert result.ok, result.error
        assert result.rows


def test_runner_thread_may_use_the_connection(db_file: Path) -> None:
    backend = polysql.connect(f"sqlite:///{db_file}")
    results = []
    threads = [threading.Thread(target=lambda: results.append(backend.execute('SELECT count(*) FROM "T"')))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.rows for r in results] == [[(2,)]] * 4
    backend.close()


def test_fingerprint_tracks_content(db_file: Path) -> None:
    with polysql.connect(f"sqlite:///{db_file}") as backend:
        before = backend.fingerprint()
    assert before.startswith("sha256:")
    with sqlite3.connect(db_file) as conn:
        conn.execute('INSERT INTO "T" (a) VALUES (3)')
    with polysql.connect(f"sqlite:///{db_file}") as backend:
        assert backend.fingerprint() != before


def test_an_empty_in_memory_database_has_a_fingerprint() -> None:
    """SQLite refuses to serialize a database without pages; its digest is the empty image's."""
    with polysql.connect("sqlite://") as empty, polysql.connect("sqlite://") as other:
        assert empty.fingerprint() == other.fingerprint()
        assert empty.fingerprint().startswith("sha256:")


def test_text_that_is_not_utf8_midway_is_repaired_without_losing_or_repeating_rows(
        tmp_path: Path) -> None:
    path = tmp_path / "latin.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (n INTEGER, s TEXT)")
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"row {i}") for i in range(7)])
        conn.execute("UPDATE t SET s = CAST(x'436166e9' AS TEXT) WHERE n = 5")  # 'Café' in Latin-1
    with polysql.connect(f"sqlite:///{path}") as source:
        (table,) = source.tables()
        rows = [row for batch in source.read_table(table, batch_size=2) for row in batch.to_pylist()]
        assert [r["n"] for r in rows] == list(range(7))
        assert rows[5]["s"] == "Caf\ufffd" and rows[4]["s"] == "row 4"
        (repair,) = source.coercions()
        assert (repair.column, repair.count) == ("s", 1)


def test_repeated_loads_from_one_source_report_each_coercion_once(tmp_path: Path) -> None:
    path = tmp_path / "odd.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (d DATE, s TEXT)")
        conn.execute("INSERT INTO t VALUES ('soon', CAST(x'ff' AS TEXT))")
    with polysql.connect(f"sqlite:///{path}") as source:
        reports = []
        for _ in range(2):
            with polysql.connect("duckdb://", read_only=False) as target:
                reports.append(target.load(source))
    for report in reports:
        assert sorted((c.column, c.count) for c in report.coercions) == [("d", 1), ("s", 1)]


def test_a_file_that_is_not_a_database_is_named_with_how_to_fix(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_text("not a database, just text\n" * 10)
    with polysql.connect(f"sqlite:///{path}") as source, \
            pytest.raises(EngineError, match="is not a SQLite database: point the URL at"):
        source.tables()


def test_evaluation_reads_through_a_memory_map_that_evaluated_sql_cannot_change(
        db_file: Path) -> None:
    with polysql.connect(f"sqlite:///{db_file}") as backend:
        refused = backend.execute("PRAGMA mmap_size = 0")
        assert refused.error is not None and refused.error.kind == "forbidden"
        assert backend.execute('SELECT a FROM "T" WHERE a = 1').rows == [(1,)]
        conn = backend._connection()
        conn.set_authorizer(None)  # to read the setting; evaluated SQL may not
        assert conn.execute("PRAGMA mmap_size").fetchone()[0] > 0
    writer = open_connection(db_file, read_only=False)
    try:
        assert writer.execute("PRAGMA mmap_size").fetchone()[0] == 0  # loads write: no map
    finally:
        writer.close()


@pytest.mark.parametrize("sql", ["SELECT fts3_tokenizer('simple')",
                                 "SELECT hex(FTS3_TOKENIZER('x', X'0000000000000000'))",
                                 "SELECT load_extension('libc')"])
def test_functions_that_reach_into_the_process_are_refused(db_file: Path, sql: str) -> None:
    with polysql.connect(f"sqlite:///{db_file}") as backend:
        failed = backend.execute(sql)
    assert failed.error is not None and failed.error.kind == "forbidden", failed
