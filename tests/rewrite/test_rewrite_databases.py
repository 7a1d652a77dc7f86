"""Evaluation databases of rewrite cases, built on real engines.

DuckDB and SQLite always run; PostgreSQL and MySQL/MariaDB run against the servers named by
POLYSQL_POSTGRES_URL / POLYSQL_MYSQL_URL and skip when those cannot be reached (fail when
POLYSQL_REQUIRE lists them). Each server database made here is dropped afterwards.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest
from polysql_testkit.rewrite_engines import Engine, make_engine

from polysql.backends.base import Backend, SetupScript
from polysql.core.errors import ConfigError, LoadError
from polysql.engines.copies import EvaluationCopy
from polysql.engines.registry import backend_class
from polysql.rewrite.cases import load_case
from polysql.rewrite.databases import (
    method_schema,
    open_database,
    parse_engine_overrides,
    resolve_engine_url,
    setup_schema,
)
from polysql.rewrite.scaffold import scaffold_case

ENGINES = ("duckdb", "sqlite", "postgres", "mysql")
# The scaffolded case's rows, written out independently of its setup script.
SCAFFOLD_ROWS = [(1, "apple", Decimal("1.50")), (2, "banana", Decimal("0.25")),
                 (3, "cherry", Decimal("4.00"))]


@pytest.fixture(scope="module", params=[pytest.param(n, marks=getattr(pytest.mark, n), id=n)
                                        for n in ENGINES])
def engine(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    made = make_engine(request.param, tmp_path_factory.mktemp("cache"), "w")
    try:
        yield made
    finally:
        made.cleanup()


def _items(database: EvaluationCopy) -> list[tuple[Any, ...]]:
    """The items table, prices as exact decimals (SQLite hands back 1.5 and 4 for 1.50, 4.00)."""
    result = database.backend.execute("SELECT id, name, price FROM items ORDER BY id")
    assert result.ok, result.error
    return [(item, name, Decimal(str(price))) for item, name, price in result.rows]


# --- engines -------------------------------------------------------------------------------------

def test_engine_overrides_parse_and_resolve() -> None:
    overrides = parse_engine_overrides(["Postgres=postgresql://u@db:5433/", "mysql=mariadb"])
    assert overrides == {"postgres": "postgresql://u@db:5433/", "mysql": "mariadb"}
    assert resolve_engine_url("postgres", overrides).render_as_string() == \
        "postgresql://u@db:5433/"
    assert resolve_engine_url("MySQL", overrides).render_as_string() == "mysql://"
    assert resolve_engine_url("duckdb").render_as_string() == "duckdb://"
    assert resolve_engine_url("duckdb:///x.duckdb").database == "x.duckdb"
    for bad in (["postgres"], ["=postgresql://"], ["a=x", "A=y"]):
        with pytest.raises(ConfigError):
            parse_engine_overrides(bad)


def test_an_override_must_speak_the_cases_dialect(tmp_path: Path) -> None:
    case = load_case(scaffold_case(tmp_path, "c1", engine="postgres", pool="p"))
    with pytest.raises(ConfigError, match="speaks duckdb"):
        open_database(case, engines={"postgres": "duckdb://"}, cache_dir=tmp_path / "cache")


def test_every_engine_named_in_the_brief_builds_from_setup_scripts() -> None:
    for name in ENGINES:
        hook = backend_class(resolve_engine_url(name)).build_from_script
        assert hook.__func__ is not Backend.build_from_script.__func__, name


def test_engines_that_cannot_build_from_scripts_are_refused_by_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    duckdb_backend = backend_class("duckdb://")
    monkeypatch.delattr(duckdb_backend, "build_from_script")  # the Backend protocol's default
    case = load_case(scaffold_case(tmp_path, "c1", engine="duckdb", pool="p"))
    with pytest.raises(ConfigError,
                       match="case c1: the duckdb engine cannot host setup_sql cases yet"):
        open_database(case, cache_dir=tmp_path / "cache")
    assert not list((tmp_path / "cache").rglob("*.duckdb"))


def test_the_engine_builds_the_cases_setup_script(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    sqlite_backend = backend_class("sqlite://")
    original = sqlite_backend.build_from_script
    scripts: list[SetupScript] = []

    def counting(target: Any, script: SetupScript, **options: Any) -> Any:
        scripts.append(script)
        return original(target, script, **options)

    monkeypatch.setattr(sqlite_backend, "build_from_script", counting)
    case = load_case(scaffold_case(tmp_path, "c1", engine="sqlite", pool="p"))
    with open_database(case, cache_dir=tmp_path / "cache") as database:
        assert _items(database) == SCAFFOLD_ROWS
    assert len(scripts) == 1
    assert scripts[0].statements == case.setup_statements()
    text = (case.path / "schema" / "setup.sql").read_text(encoding="utf-8")
    assert scripts[0].fingerprint == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert scripts[0].origin == str(case.path / "schema" / "setup.sql")


# --- setup scripts on every engine ---------------------------------------------------------------

def test_setup_builds_once_and_rebuilds_when_the_script_changes(engine: Engine,
                                                                tmp_path: Path) -> None:
    case = engine.case(tmp_path, "idem")
    with engine.open(case) as first:
        assert not first.report.skipped
        assert first.report.tables == {"items": 3}
        assert _items(first) == SCAFFOLD_ROWS
    with engine.open(case) as second:
        assert second.report.skipped
        assert second.report.fingerprint == first.report.fingerprint
        assert _items(second) == SCAFFOLD_ROWS

    setup = case.path / "schema" / "setup.sql"
    setup.write_text(setup.read_text(encoding="utf-8") +
                     "\nINSERT INTO items (id, name, price) VALUES (4, 'date 50% off', 9.99);\n",
                     encoding="utf-8")
    changed = load_case(case.path)
    with engine.open(changed) as third:
        assert not third.report.skipped
        assert third.report.fingerprint != first.report.fingerprint
        assert _items(third) == [*SCAFFOLD_ROWS, (4, "date 50% off", Decimal("9.99"))]


def test_evaluated_sql_cannot_change_the_database(engine: Engine, tmp_path: Path) -> None:
    case = engine.case(tmp_path, "readonly")
    with engine.open(case) as database:
        for statement in ("DROP TABLE items",
                          "INSERT INTO items (id, name, price) VALUES (9, 'x', 1)",
                          "UPDATE items SET price = 0", "DELETE FROM items",
                          "CREATE TABLE other (x INTEGER)"):
            result = database.backend.execute(statement)
            assert not result.ok, statement
        assert _items(database) == SCAFFOLD_ROWS


def test_a_failing_setup_statement_is_named_and_the_next_build_runs(engine: Engine,
                                                                    tmp_path: Path) -> None:
    case = engine.case(tmp_path, "broken")
    setup = case.path / "schema" / "setup.sql"
    good = setup.read_text(encoding="utf-8")
    setup.write_text(good + "\nINSERT INTO no_such_table (id) VALUES (1);\n", encoding="utf-8")
    with pytest.raises(LoadError, match=r"(?s)case broken: statement 3 of 3 .*no_such_table"):
        engine.open(load_case(case.path))
    setup.write_text(good, encoding="utf-8")
    with engine.open(load_case(case.path)) as database:
        assert not database.report.skipped
        assert _items(database) == SCAFFOLD_ROWS


def test_a_rebuild_starts_from_an_empty_database(engine: Engine, tmp_path: Path) -> None:
    case = engine.case(tmp_path, "fresh")
    setup = case.path / "schema" / "setup.sql"
    original = setup.read_text(encoding="utf-8")
    setup.write_text(original + "\nCREATE TABLE leftover (x INTEGER);\n", encoding="utf-8")
    with engine.open(load_case(case.path)) as first:
        assert first.report.tables == {"items": 3, "leftover": 0}
    setup.write_text(original, encoding="utf-8")
    with engine.open(load_case(case.path)) as second:
        assert second.report.tables == {"items": 3}
        assert not second.backend.execute("SELECT count(*) FROM leftover").ok


def test_methods_see_the_scripts_ddl_without_its_rows(engine: Engine, tmp_path: Path) -> None:
    case = engine.case(tmp_path, "schema")
    with engine.open(case) as database:
        schema = method_schema(case, database.backend)
    assert "CREATE TABLE items" in schema
    assert "INSERT" not in schema.upper()
    assert "banana" not in schema


def test_setup_schema_keeps_ddl_statements_only() -> None:
    statements = ("CREATE TABLE a (x INT)", "INSERT INTO a VALUES (1)",
                  "-- the index\nCREATE INDEX a_x ON a (x)", "ALTER TABLE a ADD COLUMN y INT",
                  "UPDATE a SET y = 1", "COMMENT ON TABLE a IS 'rows'", "ANALYZE a")
    assert setup_schema(statements, "postgres") == (
        "CREATE TABLE a (x INT);\n\n-- the index\nCREATE INDEX a_x ON a (x);\n\n"
        "ALTER TABLE a ADD COLUMN y INT;\n\nCOMMENT ON TABLE a IS 'rows';\n")


# --- loaded sources --------------------------------------------------------------------------------

def _point_at(case_dir: Path, database_yaml: str) -> None:
    case_yaml = case_dir / "case.yaml"
    text = case_yaml.read_text(encoding="utf-8")
    case_yaml.write_text(text.replace("  setup_sql: schema/setup.sql\n", database_yaml),
                         encoding="utf-8")
    (case_dir / "schema" / "setup.sql").unlink()


@pytest.mark.parametrize("engine_name", ["duckdb", "sqlite"])
def test_a_sqlite_source_is_loaded_into_the_engine(engine_name: str, tmp_path: Path) -> None:
    case_dir = scaffold_case(tmp_path, "fromfile", engine=engine_name, pool="p")
    conn = sqlite3.connect(case_dir / "schema" / "source.sqlite")
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "price DECIMAL(10, 2) NOT NULL)")
    conn.executemany("INSERT INTO items VALUES (?, ?, ?)", [(1, "apple", 1.5), (3, "fig", 4)])
    conn.commit()
    conn.close()
    _point_at(case_dir, "  sqlite: schema/source.sqlite\n")
    case = load_case(case_dir)
    with open_database(case, cache_dir=tmp_path / "cache") as database:
        assert database.report.tables == {"items": 2}
        result = database.backend.execute("SELECT id, name FROM items ORDER BY id")
        assert result.rows == [(1, "apple"), (3, "fig")]
        schema = method_schema(case, database.backend)
        assert "CREATE TABLE" in schema and "items" in schema and "price" in schema
    with open_database(case, cache_dir=tmp_path / "cache") as again:
        assert again.report.skipped


def test_a_dataset_database_is_loaded_into_the_engine(tmp_path: Path) -> None:
    from polysql.datasets.registry import get_dataset

    case_dir = scaffold_case(tmp_path, "fromdemo", engine="duckdb", pool="p")
    _point_at(case_dir, "  dataset: demo\n  db_id: retail\n")
    (case_dir / "sql" / "benchmark_input.sql").write_text(
        "SELECT count(*) AS n FROM customers WHERE customer_id IN "
        "(SELECT customer_id FROM customers)\n", encoding="utf-8")
    (case_dir / "sql" / "reference_rewrite_01.sql").write_text(
        "SELECT count(*) AS n FROM customers\n", encoding="utf-8")
    case = load_case(case_dir)
    source = get_dataset("demo").database_path("retail")
    with sqlite3.connect(source) as conn:
        expected = conn.execute("SELECT count(*) FROM customers").fetchone()[0]
    with open_database(case, cache_dir=tmp_path / "cache") as database:
        assert database.report.tables["customers"] == expected
        assert database.backend.execute(case.input_sql).rows == [(expected,)]
        assert database.url.database is not None
        path = Path(database.url.database)
    assert path.parent.name == "rewrite-p" and path.name == "fromdemo.duckdb"
    with duckdb.connect(str(path), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM customers").fetchone() == (expected,)
