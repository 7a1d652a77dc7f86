"""Lower-case views on the real local server: unquoted SQL reaches mixed-case tables loaded with
exact names, quoted SQL still reaches the tables, and a view is left out wherever it would take a
name that is not free or merge two columns (SQLite itself forbids such clashes among its tables and
columns, so those cases are planned from names directly)."""

from __future__ import annotations

from pathlib import Path

import pytest
from polysql_testkit import pg_fixtures

from polysql.backends.postgres.load_views import folded, planned_views
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
CREATE TABLE singer ("Name" TEXT);
INSERT INTO singer VALUES ('Ann');
CREATE TABLE "CaféMenu" ("ÖId" INTEGER, "Label" TEXT);
INSERT INTO "CaféMenu" VALUES (7, 'x');
"""


@pytest.fixture(scope="module")
def copy(loader, make_sqlite) -> str:
    target_url, _report = loader.load(make_sqlite("views", SOURCE))
    return target_url


def _rows(backend, statement: str) -> list[tuple]:
    result = backend.execute(statement)
    assert result.ok, (statement, result.error)
    return sorted(result.rows, key=repr)


def test_unquoted_and_quoted_sql_read_the_same_rows(loader, copy):
    with loader.evaluation(copy) as backend:
        quoted = _rows(backend, 'SELECT t."Name", a."Title" FROM "Track" t '
                                'JOIN "Album" a ON a."AlbumId" = t."AlbumId"')
        unquoted = _rows(backend, "SELECT t.Name, a.Title FROM Track t "
                                  "JOIN Album a ON a.AlbumId = t.AlbumId")
        lower = _rows(backend, "select t.name, a.title from track t join album a "
                               "on a.albumid = t.albumid")
        assert quoted == unquoted == lower == [("One", "Rock"), ("Three", "Jazz"), ("Two", "Rock")]
        # a name that needs quotes anyway is reachable quoted in its folded form
        assert _rows(backend, 'SELECT "unit price" FROM track WHERE trackid = 10') == [(0.99,)]
        # a whole row through the view is the table's row, column for column
        assert (_rows(backend, "SELECT * FROM track") == _rows(backend, 'SELECT * FROM "Track"'))


def test_only_ascii_letters_fold_as_the_server_folds_them(loader, copy):
    with loader.evaluation(copy) as backend:
        assert _rows(backend, "SELECT ÖId FROM CaféMenu") == [(7,)]
        assert _rows(backend, 'SELECT "ÖId" FROM "CaféMenu"') == [(7,)]
        assert _rows(backend, 'SELECT "Öid" FROM cafémenu') == [(7,)]  # not "öid"
    assert folded("CaféMenu") == "cafémenu"


def test_only_mixed_case_tables_get_a_view(loader, copy):
    database = copy.rsplit("/", 1)[1]
    with fx.admin_connection(fx.server_url(), database) as conn:
        views = {row[0] for row in conn.execute(
            "SELECT viewname FROM pg_views WHERE schemaname = 'public'").fetchall()}
    assert views == {"album", "track", "cafémenu"}  # singer is lower case already
    with loader.evaluation(copy) as backend:
        assert _rows(backend, 'SELECT "Name" FROM singer') == [("Ann",)]
        assert not backend.execute("SELECT Name FROM singer").ok


def test_views_are_not_tables_and_cannot_be_written(loader, copy):
    with loader.evaluation(copy) as backend:
        names = {table.name for table in backend.tables()}
        assert "track" not in names and "Track" in names
        assert not backend.execute("UPDATE track SET name = 'x'").ok
    database = copy.rsplit("/", 1)[1]
    with fx.admin_connection(fx.server_url(), database) as conn:
        assert conn.execute('SELECT count(*) FROM "Track" WHERE "Name" = \'x\'').fetchone() == (0,)


def test_a_replacing_load_builds_the_views_again(loader, copy, make_sqlite):
    source: Path = make_sqlite("views_again", SOURCE)
    database = copy.rsplit("/", 1)[1]
    loader.load(source, database=database, replace=True)
    with loader.evaluation(copy) as backend:
        assert _rows(backend, "SELECT count(*) FROM track") == [(3,)]


def _plan(name: str, *columns: str) -> TablePlan:
    table = Table(name, [Column(c, ColumnType("integer")) for c in columns])
    return TablePlan(table, name, {c: c for c in columns})


def test_planned_views_leave_out_every_clash():
    plans = [_plan("Orders", "Id"), _plan("orders_archive", "Id"), _plan("Item", "A", "a"),
             _plan("X", "v"), _plan("x", "v"), _plan("Foo", "v"), _plan("FOO", "v"),
             _plan("Taken", "v")]
    assert sorted(planned_views(plans, taken={"X", "x", "taken"})) == ["orders"]
