from __future__ import annotations

import sqlite3
from pathlib import Path

from click.testing import CliRunner

import polysql
from polysql.cli import main
from polysql.engines.ddl import quote, render_schema


def make_db(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE "Order" (id INTEGER PRIMARY KEY, "FirstName" TEXT NOT NULL, '
                "amount NUMERIC(10,2))")
    con.execute('CREATE TABLE line (order_id INTEGER REFERENCES "Order"(id), "group" TEXT)')
    con.execute("INSERT INTO \"Order\" VALUES (1, 'O''Brien', 1.5)")
    con.commit()
    con.close()
    return path


def test_quoting_follows_the_dialect() -> None:
    assert quote("orders", "postgres") == "orders"
    assert quote("FirstName", "postgres") == '"FirstName"'
    assert quote("order", "mysql") == "`order`"
    assert quote("my col", "duckdb") == '"my col"'


def test_rendered_schema_is_valid_ddl_that_recreates_the_tables(tmp_path: Path) -> None:
    src = make_db(tmp_path / "src.sqlite")
    with polysql.connect(f"sqlite:///{src}") as backend:
        ddl = render_schema(backend, sample_rows=2)
    assert 'CREATE TABLE "Order"' in ddl and '"FirstName" TEXT NOT NULL' in ddl
    assert 'FOREIGN KEY (order_id) REFERENCES "Order" (id)' in ddl
    assert "'O''Brien'" in ddl  # sample row, quoted as SQL
    # the DDL (comments included) runs on a fresh SQLite and yields the same columns
    fresh = sqlite3.connect(":memory:")
    fresh.executescript(ddl)
    cols = [r[1] for r in fresh.execute("PRAGMA table_info('Order')")]
    assert cols == ["id", "FirstName", "amount"]


def test_schema_command_prints_the_ddl(tmp_path: Path) -> None:
    src = make_db(tmp_path / "src.sqlite")
    result = CliRunner().invoke(main, ["schema", f"sqlite:///{src}"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith('CREATE TABLE "Order"')


def test_indexes_are_read_back_from_the_loaded_engine_and_rendered(tmp_path: Path) -> None:
    src = tmp_path / "ix.sqlite"
    con = sqlite3.connect(src)
    con.executescript('CREATE TABLE "Order" (id INTEGER PRIMARY KEY, code TEXT UNIQUE, amt REAL);'
                      'CREATE INDEX "by code" ON "Order"(code, amt);'
                      'CREATE INDEX by_expr ON "Order"(amt + 1);'
                      "INSERT INTO \"Order\" VALUES (1, 'a', 1.0), (2, 'b', 2.0);")
    con.close()
    target = tmp_path / "ix.duckdb"
    polysql.load(f"sqlite:///{src}", f"duckdb:///{target}")
    with polysql.connect(f"duckdb:///{target}") as duck:
        (table,) = duck.tables()
        ddl = render_schema(duck)
    assert {(ix.columns, ix.unique) for ix in table.indexes} == {(("code", "amt"), False),
                                                                  (("code",), True)}
    assert 'CREATE INDEX "by code" ON "Order" (code, amt);' in ddl
    assert "by_expr" not in ddl  # expression indexes are not carried over
