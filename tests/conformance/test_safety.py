"""Untrusted SQL cannot change the evaluated database or reach outside it.

Each hostile statement must come back as a ``forbidden`` error, and afterwards the database must
be exactly as before: same content through SQL and, for file engines, the same file bytes.
Statements are written per engine where syntax differs; "*" is the default form.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from polysql.backends._fingerprint import file_digest
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

# Statements whose form (or existence) depends on the engine: (engine, case, sql).
HOSTILE_PER_ENGINE: list[tuple[str, str, str]] = [
    ("sqlite", "attach", "ATTACH DATABASE '{tmp}/attached.db' AS other"),
    ("sqlite", "pragma_write", "PRAGMA user_version = 7"),
    ("sqlite", "pragma_journal", "PRAGMA journal_mode = WAL"),
    ("sqlite", "load_extension", "SELECT load_extension('{tmp}/evil')"),
    ("sqlite", "vacuum_into", "VACUUM INTO '{tmp}/copy.db'"),
    ("sqlite", "schema_table", "UPDATE sqlite_master SET name = 'x'"),
    ("duckdb", "attach", "ATTACH '{tmp}/attached.db' AS other"),
    ("duckdb", "copy_to_file", "COPY \"Customers\" TO '{tmp}/stolen.csv'"),
    ("duckdb", "read_system_file", "SELECT * FROM read_csv('/etc/passwd')"),
    ("duckdb", "glob_files", "SELECT * FROM glob('/etc/*')"),
    ("duckdb", "pragma_write", "PRAGMA threads = 1"),
    ("duckdb", "set", "SET threads = 1"),
    ("duckdb", "install", "INSTALL sqlite"),
    ("duckdb", "load_extension", "LOAD sqlite"),
    ("duckdb", "export", "EXPORT DATABASE '{tmp}/dump'"),
    ("duckdb", "explain_analyze", "EXPLAIN ANALYZE DELETE FROM \"Customers\""),
]


def _snapshot(backend: Backend) -> Any:
    contents = []
    for table in ("Customers", "order items"):
        result = backend.execute(f'SELECT * FROM "{table}"')
        assert result.ok, result.error
        contents.append(sorted(map(repr, result.rows)))
    path = getattr(backend, "path", None)
    digest = file_digest(path) if isinstance(path, Path) else None
    return contents, digest


def _assert_refused_without_effect(backend: Backend, sql: str, tmp_path: Path) -> None:
    before = _snapshot(backend)
    result = backend.execute(sql)
    assert result.error is not None, f"{sql!r} was allowed on {backend.name}"
    assert result.error.kind == "forbidden", (sql, result.error)
    assert _snapshot(backend) == before
    assert list(tmp_path.iterdir()) == [], "a file was written outside the database"
    assert backend.execute("SELECT * FROM hacked").error is not None


@pytest.mark.parametrize("case", sorted(HOSTILE_EVERYWHERE))
def test_hostile_statement_is_forbidden(backend: Backend, case: str, tmp_path: Path) -> None:
    _assert_refused_without_effect(backend, HOSTILE_EVERYWHERE[case], tmp_path)


@pytest.mark.parametrize(
    ("backend", "sql"),
    [pytest.param(engine, sql, marks=getattr(pytest.mark, engine), id=f"{engine}-{case}")
     for engine, case, sql in HOSTILE_PER_ENGINE],
    indirect=["backend"])
def test_engine_specific_hostile_statement_is_forbidden(backend: Backend, sql: str,
                                                        tmp_path: Path) -> None:
    _assert_refused_without_effect(backend, sql.format(tmp=tmp_path), tmp_path)
