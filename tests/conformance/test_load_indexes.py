"""Secondary indexes and UNIQUE constraints travel with a load: read from SQLite, created after
the rows on DuckDB, PostgreSQL and MySQL; a UNIQUE index the rows break becomes a plain index,
an index with no engine-neutral form is reported, and no row is ever dropped."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import duckdb
import pytest
from polysql_testkit import mysql_fixtures, pg_fixtures

import polysql
from polysql.backends.sqlite.backend import SQLiteBackend
from polysql.core.schema import Index

SOURCE = """
CREATE TABLE person (id INTEGER PRIMARY KEY, email TEXT UNIQUE, city TEXT, age INTEGER,
                     nick TEXT, UNIQUE (city, age));
CREATE INDEX person_city ON person (city DESC, nick);
CREATE UNIQUE INDEX person_nick ON person (nick);
CREATE INDEX person_lower ON person (lower(email));
CREATE INDEX person_adults ON person (age) WHERE age >= 18;
INSERT INTO person VALUES
  (1, 'a@x', 'Zürich', 30, 'al'), (2, 'b@x', 'Zürich', 31, 'bo'), (3, NULL, NULL, NULL, NULL),
  (4, NULL, 'Paris', 30, 'Al');
CREATE TABLE pair (a TEXT, b INTEGER, PRIMARY KEY (a, b));
INSERT INTO pair VALUES ('x', 1);
"""

EXPECTED = [Index("sqlite_autoindex_person_1", ("email",), True),
            Index("sqlite_autoindex_person_2", ("city", "age"), True),
            Index("person_city", ("city", "nick"), False),
            Index("person_nick", ("nick",), True)]

# SQLite's UNIQUE index tells the integer 1 from the text '1'; loaded as text they are one key.
BROKEN = """
CREATE TABLE tag (id INTEGER PRIMARY KEY, label TEXT, code);
CREATE UNIQUE INDEX tag_label ON tag (label);
CREATE UNIQUE INDEX tag_code ON tag (code);
INSERT INTO tag VALUES (1, 'x', 1), (2, 'y', '1'), (3, 'z', 'c1'), (4, NULL, NULL),
                       (5, NULL, NULL);
"""


def _sqlite(path: Path, script: str) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return _sqlite(tmp_path / "people.sqlite", SOURCE)


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    return _sqlite(tmp_path / "tags.sqlite", BROKEN)


def _skipped(coercions: list[Any]) -> dict[str, str]:
    return {c.column: c.message for c in coercions if "not carried" in c.message}


def test_sqlite_reports_plain_column_indexes_and_skips_the_rest(source: Path) -> None:
    with SQLiteBackend.connect(f"sqlite:///{source}") as backend:
        tables = {t.name: t for t in backend.tables()}
        coercions = backend.coercions()
    assert tables["person"].indexes == EXPECTED
    assert tables["pair"].indexes == []  # the primary key's own index is the key
    skipped = _skipped(coercions)
    assert set(skipped) == {"person_lower", "person_adults"}
    assert "expression" in skipped["person_lower"] and "partial" in skipped["person_adults"]


# -- DuckDB ------------------------------------------------------------------------------------

def _duckdb_indexes(path: Path) -> dict[str, tuple[bool, str]]:
    conn = duckdb.connect(str(path), read_only=True)
    try:
        rows = conn.execute("SELECT index_name, is_unique, sql FROM duckdb_indexes()").fetchall()
    finally:
        conn.close()
    return {name: (unique, sql) for name, unique, sql in rows}


def test_duckdb_creates_the_indexes(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "people.duckdb"
    report = polysql.load(f"sqlite:///{source}", f"duckdb:///{target}")
    indexes = _duckdb_indexes(target)
    assert {name: unique for name, (unique, _) in indexes.items()} == {
        ix.name: ix.unique for ix in EXPECTED}
    assert set(_skipped(report.coercions)) == {"person_lower", "person_adults"}
    assert report.tables == {"person": 4, "pair": 1}


def test_duckdb_makes_a_broken_unique_index_plain(broken: Path, tmp_path: Path) -> None:
    target = tmp_path / "tags.duckdb"
    report = polysql.load(f"sqlite:///{broken}", f"duckdb:///{target}")
    indexes = _duckdb_indexes(target)
    assert {name: unique for name, (unique, _) in indexes.items()} == {
        "tag_label": True, "tag_code": False}
    (note,) = [c for c in report.coercions if "tag_code" in c.message]
    assert "plain index" in note.message and note.count == 2
    assert report.tables == {"tag": 5}


# -- PostgreSQL --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pg() -> Any:
    return pg_fixtures


@pytest.fixture(scope="module")
def pg_loader(pg: Any) -> Any:
    loader = pg.Loader(pg.server_url(), pg.unique("polysql_reader_ix"))
    try:
        yield loader
    finally:
        loader.cleanup()


def _pg_indexes(pg: Any, target: str) -> dict[str, tuple[str, bool, list[str]]]:
    database = target.rsplit("/", 1)[1]
    with pg.admin_connection(pg.server_url(), database) as conn:
        rows = conn.execute(
            "SELECT i.relname, t.relname, x.indisunique, array_agg(a.attname ORDER BY k.n) "
            "FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
            "JOIN pg_class t ON t.oid = x.indrelid "
            "JOIN pg_namespace s ON s.oid = t.relnamespace AND s.nspname = 'public' "
            "CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, n) "
            "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum "
            "WHERE NOT x.indisprimary GROUP BY 1, 2, 3").fetchall()
    return {name: (table, unique, list(columns)) for name, table, unique, columns in rows}


@pytest.mark.postgres
def test_postgres_creates_the_indexes(pg: Any, pg_loader: Any, source: Path) -> None:
    target, report = pg_loader.load(source)
    assert _pg_indexes(pg, target) == {
        ix.name: ("person", ix.unique, list(ix.columns)) for ix in EXPECTED}
    assert set(_skipped(report.coercions)) == {"person_lower", "person_adults"}
    assert report.tables == {"person": 4, "pair": 1}


@pytest.mark.postgres
def test_postgres_indexes_follow_snake_names(pg: Any, pg_loader: Any, tmp_path: Path) -> None:
    path = _sqlite(tmp_path / "mixed.sqlite", """
        CREATE TABLE "OrderLine" ("LineNo" INTEGER, "ProductCode" TEXT);
        CREATE INDEX "ByProduct" ON "OrderLine" ("ProductCode", "LineNo");
        INSERT INTO "OrderLine" VALUES (1, 'p');
    """)
    target, _ = pg_loader.load(path, names="snake")
    assert _pg_indexes(pg, target) == {"by_product": ("order_line", False,
                                                      ["product_code", "line_no"])}


@pytest.mark.postgres
def test_postgres_makes_a_broken_unique_index_plain(pg: Any, pg_loader: Any,
                                                    broken: Path) -> None:
    target, report = pg_loader.load(broken)
    assert _pg_indexes(pg, target) == {"tag_label": ("tag", True, ["label"]),
                                       "tag_code": ("tag", False, ["code"])}
    (note,) = [c for c in report.coercions if "tag_code" in c.message]
    assert "plain index" in note.message and note.count == 2
    assert report.tables == {"tag": 5}


# -- MySQL / MariaDB ---------------------------------------------------------------------------

@pytest.fixture
def my() -> Any:
    return mysql_fixtures


@pytest.fixture
def my_loader(my: Any) -> Any:
    from polysql.backends.mysql.backend import MySQLBackend

    url = my.server_url()
    created = []

    def load(path: Path, **options: Any) -> tuple[Any, Any]:
        target = url.set(database=my.unique())
        created.append(target)
        with polysql.connect(f"sqlite:///{path}") as src, \
                polysql.connect(target, read_only=False) as dst:
            return target, dst.load(src, **options)

    yield load
    for target in created:
        MySQLBackend.drop(target)


def _my_indexes(my: Any, url: Any) -> dict[str, tuple[str, bool, list[tuple[str, Any]]]]:
    conn = my.admin_connection(url.set(database=None), url.database)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT INDEX_NAME, TABLE_NAME, NON_UNIQUE, COLUMN_NAME, SUB_PART "
                        "FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s "
                        "AND INDEX_NAME <> 'PRIMARY' ORDER BY INDEX_NAME, SEQ_IN_INDEX",
                        (url.database,))
            rows = cur.fetchall()
    finally:
        conn.close()
    found: dict[str, tuple[str, bool, list[tuple[str, Any]]]] = {}
    for name, table, non_unique, column, sub_part in rows:
        found.setdefault(name, (table, not non_unique, []))[2].append((column, sub_part))
    return found


def _my_column_types(my: Any, url: Any, table: str) -> dict[str, str]:
    conn = my.admin_connection(url.set(database=None), url.database)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
                        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s", (url.database, table))
            return dict(cur.fetchall())
    finally:
        conn.close()


@pytest.mark.mysql
def test_mysql_creates_the_indexes_on_sized_text(my: Any, my_loader: Any, source: Path) -> None:
    url, report = my_loader(source)
    indexes = _my_indexes(my, url)
    # 'al' and 'Al' are one key under MySQL's case-insensitive collation
    assert {name: (table, unique, [c for c, _ in cols])
            for name, (table, unique, cols) in indexes.items()} == {
        "sqlite_autoindex_person_1": ("person", True, ["email"]),
        "sqlite_autoindex_person_2": ("person", True, ["city", "age"]),
        "person_city": ("person", False, ["city", "nick"]),
        "person_nick": ("person", False, ["nick"])}
    (note,) = [c for c in report.coercions if "person_nick" in c.message]
    assert "plain index" in note.message and note.count == 2
    types = _my_column_types(my, url, "person")
    assert types["city"].startswith("varchar") and types["nick"].startswith("varchar")
    assert set(_skipped(report.coercions)) == {"person_lower", "person_adults"}
    assert report.tables == {"person": 4, "pair": 1}


@pytest.mark.mysql
def test_mysql_indexes_long_text_by_prefix(my: Any, my_loader: Any, tmp_path: Path) -> None:
    path = _sqlite(tmp_path / "long.sqlite", """
        CREATE TABLE doc (id INTEGER PRIMARY KEY, body TEXT, title TEXT);
        CREATE INDEX doc_body ON doc (body);
        CREATE UNIQUE INDEX doc_title ON doc (title, body);
    """)
    conn = sqlite3.connect(path)
    conn.executemany("INSERT INTO doc VALUES (?, ?, ?)",
                     [(1, "é" * 5000, "a"), (2, "é" * 4999 + "x", "a")])
    conn.commit()
    conn.close()
    url, report = my_loader(path)
    indexes = _my_indexes(my, url)
    assert indexes["doc_body"] == ("doc", False, [("body", 255)])
    table, unique, columns = indexes["doc_title"]
    assert not unique and columns[0] == ("title", None) and columns[1][1] is not None
    (note,) = [c for c in report.coercions if "doc_title" in c.message]
    assert "plain index" in note.message
    assert report.tables == {"doc": 2}


@pytest.mark.mysql
def test_mysql_makes_a_broken_unique_index_plain(my: Any, my_loader: Any, broken: Path) -> None:
    url, report = my_loader(broken)
    indexes = _my_indexes(my, url)
    assert {name: unique for name, (_, unique, _) in indexes.items()} == {
        "tag_label": True, "tag_code": False}
    (note,) = [c for c in report.coercions if "tag_code" in c.message]
    assert note.count == 2
    assert report.tables == {"tag": 5}


@pytest.mark.postgres
def test_postgres_copy_loaded_before_indexes_were_carried_is_reloaded(
        pg: Any, pg_loader: Any, source: Path) -> None:
    target, first = pg_loader.load(source)
    database = target.rsplit("/", 1)[1]
    assert pg_loader.load(source, database=database)[1].skipped
    with pg.admin_connection(pg.server_url(), "polysql_meta") as conn:
        # what a load recorded before secondary indexes were carried
        conn.execute("UPDATE loads SET report = report - 'load_format' WHERE database = %s",
                     (database,))
    again = pg_loader.load(source, database=database)[1]
    assert not again.skipped and again.tables == first.tables
    assert pg_loader.load(source, database=database)[1].skipped
