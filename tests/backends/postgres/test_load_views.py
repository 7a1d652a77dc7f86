"""The fold schema on the real local server: a copy keeps the source's exact names, and SQL
written for pgloader's names (unquoted, in any case) is read through views in ``polysql_fold``
when it names a table or column the exact names do not have. Each statement is read in one
layout; one that mixes both in one table fails. Clashes that leave a table without a view are
planned from names directly (SQLite itself forbids them among its tables and columns)."""

from __future__ import annotations

import pytest
from polysql_testkit import pg_fixtures

from polysql.backends.postgres.load_views import FOLD_SCHEMA, planned_views
from polysql.core.schema import Column, ColumnType, Table, TablePlan

pytestmark = pytest.mark.postgres

fx = pg_fixtures
admin_url, loader, make_sqlite = fx.admin_url, fx.loader, fx.make_sqlite

SOURCE = """
CREATE TABLE "Album" ("AlbumId" INTEGER PRIMARY KEY, "Title" TEXT);
INSERT INTO "Album" VALUES (1, 'Rock'), (2, 'Jazz');
CREATE TABLE "Track" ("TrackId" INTEGER PRIMARY KEY, "Name" TEXT,
                      "AlbumId" INTEGER REFERENCES "Album"("AlbumId"), "Unit Price" REAL);
INSERT INTO "Track" VALUES (10, 'One', 1, 0.99), (11, 'Two', 1, 1.99), (12, 'Three', 2, NULL);
CREATE TABLE singer ("Singer_ID" INTEGER, "Name" TEXT);
INSERT INTO singer VALUES (1, 'Ann'), (2, 'Bo');
CREATE TABLE plain (id INTEGER, note TEXT);
INSERT INTO plain VALUES (1, 'n');
CREATE TABLE "CaféMenu" ("ÖId" INTEGER, "Label" TEXT);
INSERT INTO "CaféMenu" VALUES (7, 'x');
"""
JOINED = [("One", "Rock"), ("Three", "Jazz"), ("Two", "Rock")]


@pytest.fixture(scope="module")
def copy(loader, make_sqlite) -> str:
    return loader.load(make_sqlite("fold", SOURCE))[0]


def _rows(backend, statement: str) -> list[tuple]:
    result = backend.execute(statement)
    assert result.ok, (statement, result.error)
    return sorted(result.rows, key=repr)


def _relations(url: str, schema: str, kind: str) -> set[str]:
    with fx.admin_connection(fx.server_url(), url.rsplit("/", 1)[1]) as conn:
        return {row[0] for row in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = %s", (schema, kind)).fetchall()}


def test_the_tables_keep_exact_names_and_the_fold_schema_has_pgloaders(copy):
    assert _relations(copy, "public", "r") == {"Album", "Track", "singer", "plain", "CaféMenu"}
    assert _relations(copy, "public", "v") == set()
    # plain needs no view; CaféMenu keeps its name (not plain) but folds a column
    assert _relations(copy, FOLD_SCHEMA, "v") == {"album", "track", "singer", "CaféMenu"}


def test_sql_in_either_layout_reads_the_same_rows(loader, copy):
    with loader.evaluation(copy) as backend:
        quoted = _rows(backend, 'SELECT t."Name", a."Title" FROM "Track" t '
                                'JOIN "Album" a ON a."AlbumId" = t."AlbumId"')
        unquoted = _rows(backend, "SELECT t.Name, a.Title FROM Track t "
                                  "JOIN Album a ON a.AlbumId = t.AlbumId")
        lower = _rows(backend, "select t.name, a.title from track t join album a "
                               "on a.albumid = t.albumid")
        assert quoted == unquoted == lower == JOINED
        # Spider style: a lower-case table, its columns unquoted in any case
        assert _rows(backend, "SELECT T1.name FROM singer AS T1 WHERE T1.SINGER_ID = 2") == [
            ("Bo",)]
        assert _rows(backend, 'SELECT "Name" FROM singer WHERE "Singer_ID" = 2') == [("Bo",)]
        # BIRD style: a name that needs quotes keeps its spelling beside folded ones
        assert _rows(backend, 'SELECT "Unit Price" FROM Track WHERE TrackId = 10') == [(0.99,)]
        assert _rows(backend, 'SELECT Label FROM "CaféMenu" WHERE "ÖId" = 7') == [("x",)]
        # a whole row through a view is the table's row, column for column
        assert _rows(backend, "SELECT * FROM track") == _rows(backend, 'SELECT * FROM "Track"')


def test_a_statement_mixing_both_layouts_in_one_table_fails_with_the_first_error(loader, copy):
    with loader.evaluation(copy) as backend:
        mixed = backend.execute('SELECT "Name", name FROM singer')
        assert mixed.error is not None and mixed.error.sqlstate == "42703"
        missing = backend.execute("SELECT nope FROM singer")
        assert missing.error is not None and 'column "nope" does not exist' in missing.error.message


def test_a_statement_that_fails_past_its_names_reports_that_failure(loader, copy):
    """Read in pgloader's layout, the statement finds its tables and then fails for another
    reason: that reason is the result, not the names the exact layout could not find."""
    with loader.evaluation(copy) as backend:
        operator = backend.execute("SELECT TrackId // 2 FROM Track")
        assert operator.error is not None and operator.error.sqlstate == "42883"
        assert "operator does not exist" in operator.error.message
        zero = backend.execute("SELECT count(*) / 0 FROM track t JOIN album a "
                               "ON a.albumid = t.albumid")
        assert zero.error is not None and zero.error.sqlstate == "22012", zero.error
        unknown = backend.execute("SELECT nope FROM track")
        assert unknown.error is not None and 'relation "track"' in unknown.error.message


def test_views_are_not_tables_and_cannot_be_written(loader, copy):
    with loader.evaluation(copy) as backend:
        assert {table.name for table in backend.tables()} == {
            "Album", "Track", "singer", "plain", "CaféMenu"}
        for statement in ("UPDATE track SET name = 'x'", f"DROP VIEW {FOLD_SCHEMA}.track",
                          f"CREATE VIEW {FOLD_SCHEMA}.evil AS SELECT 1"):
            assert not backend.execute(statement).ok, statement
        assert _rows(backend, "SELECT count(*) FROM track WHERE name = 'x'") == [(0,)]


def test_converted_names_get_no_fold_schema_and_a_reload_rebuilds_it(loader, copy, make_sqlite):
    lower, _ = loader.load(make_sqlite("fold_lower", SOURCE), names="lower")
    with fx.admin_connection(fx.server_url(), lower.rsplit("/", 1)[1]) as conn:
        assert conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                            (FOLD_SCHEMA,)).fetchone() is None
    database = copy.rsplit("/", 1)[1]
    loader.load(make_sqlite("fold_again", SOURCE), database=database, replace=True)
    assert _relations(copy, FOLD_SCHEMA, "v") == {"album", "track", "singer", "CaféMenu"}
    with loader.evaluation(copy) as backend:
        assert _rows(backend, "SELECT count(*) FROM Track") == [(3,)]


def _plan(name: str, *columns: str) -> TablePlan:
    table = Table(name, [Column(c, ColumnType("integer")) for c in columns])
    return TablePlan(table, name, {c: c for c in columns})


def test_planned_views_leave_out_every_clash():
    plans = [_plan("Orders", "Id", "Total Sum"), _plan("orders_archive", "id"),
             _plan("Item", "A", "a"), _plan("Foo", "v"), _plan("FOO", "v")]
    views = planned_views(plans)
    assert {name: columns for name, (_table, columns) in views.items()} == {
        "orders": ["id", "Total Sum"]}


def test_a_writable_connection_reads_both_layouts_too(loader, copy):
    """Its first connection goes to the maintenance database; the fold schema is still found."""
    with loader.admin(copy) as backend:
        assert _rows(backend, "SELECT T1.name FROM singer AS T1 WHERE T1.singer_id = 1") == [
            ("Ann",)]
