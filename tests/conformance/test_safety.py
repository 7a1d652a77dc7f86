"""Untrusted SQL cannot change the evaluated database or reach outside it.

Each hostile statement must come back as a ``forbidden`` error, and afterwards the database must
be exactly as before: same content through SQL and, for file engines, the same file bytes.
Statements are written per engine where syntax differs; "*" is the default form.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from polysql.backends._common.fingerprint import file_digest
from polysql.backends.base import Backend

# The same statement on every engine.
HOSTILE_EVERYWHERE: dict[str, str] = {
    "drop": 'DROP TABLE "Customers"',
    "delete": 'DELETE FROM "Customers"',
    "update": 'UPDATE "Customers" SET "Name" = \'x\'',
    "insert": 'INSERT INTO "Customers" ("CustomerID", "Name") VALUES (99, \'x\')',
    "create": "CREATE TABLE hacked (a INTEGER)",
    "create_view": 'CREATE VIEW hacked AS SELECT * FROM "Customers"',
    "alter": 'ALTER TABLE "Customers" ADD COLUMN hacked INTEGER',
    "write_in_cte": 'WITH x AS (SELECT 1) DELETE FROM "Customers"',
    "transaction": "BEGIN",
}

# Nested deeper than sqlglot, which the statement screens parse with, can follow (it gives up
# near 500 parentheses): such a statement is left to the engine, which must refuse a write in it
# as firmly as the screen would have.
DEEP = "(" * 600 + "1" + ")" * 600

# Statements whose form (or existence) depends on the engine: (engine, case, sql).
HOSTILE_PER_ENGINE: list[tuple[str, str, str]] = [
    ("postgres", "deep_write_in_cte",
     f'WITH d AS (DELETE FROM "Customers" RETURNING 1) SELECT {DEEP} FROM d'),
    ("mysql", "deep_delete", f"DELETE FROM `Customers` WHERE `CustomerID` = {DEEP}"),
    ("sqlite", "attach", "ATTACH DATABASE '{tmp}/attached.db' AS other"),
    ("sqlite", "pragma_write", "PRAGMA user_version = 7"),
    ("sqlite", "pragma_journal", "PRAGMA journal_mode = WAL"),
    ("sqlite", "load_extension", "SELECT load_extension('{tmp}/evil')"),
    ("sqlite", "vacuum_into", "VACUUM INTO '{tmp}/copy.db'"),
    ("sqlite", "schema_table", "UPDATE sqlite_master SET name = 'x'"),
    ("duckdb", "attach", "ATTACH '{tmp}/attached.db' AS other"),
    ("duckdb", "copy_to_file", "COPY \"Customers\" TO '{tmp}/stolen.csv'"),
    ("duckdb", "read_system_file", "SELECT * FROM read_csv('/etc/passwd')"),
    ("duckdb", "path_after_from", "SELECT * FROM '/etc/passwd'"),
    ("duckdb", "file_after_from", "SELECT count(*) FROM '{tmp}/stolen.csv' AS t"),
    ("duckdb", "glob_files", "SELECT * FROM glob('/etc/*')"),
    ("duckdb", "pragma_write", "PRAGMA threads = 1"),
    ("duckdb", "set", "SET threads = 1"),
    ("duckdb", "install", "INSTALL sqlite"),
    ("duckdb", "load_extension", "LOAD sqlite"),
    ("duckdb", "export", "EXPORT DATABASE '{tmp}/dump'"),
    ("duckdb", "explain_analyze", "EXPLAIN ANALYZE DELETE FROM \"Customers\""),
    ("postgres", "copy_to_program", "COPY \"Customers\" TO PROGRAM 'touch {tmp}/pwned'"),
    ("postgres", "copy_from_program", "COPY \"Customers\" FROM PROGRAM 'echo 1'"),
    ("postgres", "copy_to_file", "COPY \"Customers\" TO '{tmp}/stolen.csv'"),
    ("postgres", "read_server_file", "SELECT pg_read_file('/etc/passwd')"),
    ("postgres", "list_server_dir", "SELECT pg_ls_dir('/')"),
    ("postgres", "set_role", "SELECT set_config('role', 'postgres', false)"),
    ("postgres", "alter_system", "ALTER SYSTEM SET work_mem = '1GB'"),
    ("postgres", "select_into", "SELECT * INTO hacked FROM \"Customers\""),
    ("mysql", "load_file", "SELECT LOAD_FILE('/etc/passwd')"),
    ("mysql", "into_outfile", "SELECT * FROM `Customers` INTO OUTFILE '{tmp}/stolen.csv'"),
    ("mysql", "into_dumpfile", "SELECT 1 INTO DUMPFILE '{tmp}/stolen.bin'"),
    ("mysql", "set_global", "SET GLOBAL max_connections = 1"),
    ("mysql", "load_data", "LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE `Customers`"),
    ("mysql", "create_user", "CREATE USER hacker IDENTIFIED BY 'x'"),
    ("mysql", "get_lock", "SELECT GET_LOCK('polysql', 10)"),
]


def _snapshot(backend: Backend, q: Callable[[str], str]) -> Any:
    contents = []
    for table in ("Customers", "order items"):
        result = backend.execute(q(f'SELECT * FROM "{table}"'))
        assert result.ok, result.error
        contents.append(sorted(map(repr, result.rows)))
    path = getattr(backend, "path", None)
    digest = file_digest(path) if isinstance(path, Path) else None
    return contents, digest


def _assert_refused_without_effect(backend: Backend, sql: str, tmp_path: Path,
                                   q: Callable[[str], str]) -> None:
    before = _snapshot(backend, q)
    result = backend.execute(sql)
    assert result.error is not None, f"{sql!r} was allowed on {backend.name}"
    assert result.error.kind == "forbidden", (sql, result.error)
    assert _snapshot(backend, q) == before
    assert list(tmp_path.iterdir()) == [], "a file was written outside the database"
    assert backend.execute("SELECT * FROM hacked").error is not None


@pytest.mark.parametrize("case", sorted(HOSTILE_EVERYWHERE))
def test_hostile_statement_is_forbidden(backend: Backend, case: str, tmp_path: Path,
                                       q: Callable[[str], str]) -> None:
    _assert_refused_without_effect(backend, q(HOSTILE_EVERYWHERE[case]), tmp_path, q)


@pytest.mark.parametrize(
    ("backend", "sql"),
    [pytest.param(engine, sql, marks=getattr(pytest.mark, engine), id=f"{engine}-{case}")
     for engine, case, sql in HOSTILE_PER_ENGINE],
    indirect=["backend"])
def test_engine_specific_hostile_statement_is_forbidden(backend: Backend, sql: str,
                                                        tmp_path: Path,
                                                        q: Callable[[str], str]) -> None:
    _assert_refused_without_effect(backend, sql.format(tmp=tmp_path), tmp_path, q)


@pytest.mark.parametrize(
    "backend", [pytest.param(engine, marks=getattr(pytest.mark, engine), id=engine)
                for engine in ("postgres", "mysql")], indirect=True)
def test_a_query_nested_past_the_screens_parser_runs_on_the_engine(backend: Backend) -> None:
    """The screen cannot parse it, so the engine judges it -- and these two answer it."""
    result = backend.execute(f"SELECT {DEEP} AS x")
    assert result.ok, result.error
    assert [tuple(row) for row in result.rows] == [(1,)]
