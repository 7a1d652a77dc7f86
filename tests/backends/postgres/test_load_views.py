"""Views under a table's second spelling on the real local server. With exact names, unquoted SQL
reaches mixed-case tables through lower-case views; with folded names (the copies tasks evaluate
on), SQL that quotes the source's spelling reaches them through views under the exact names. A
view is left out wherever it would take a name that is not free or merge two columns (SQLite
itself forbids such clashes among its tables and columns, so those cases are planned from names
directly)."""

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
JOINED = [("One", "Rock"), ("Three", "Jazz"), ("Two", "Rock")]


@pytest.fixture(scope="module")
def copies(loader, make_sqlite) -> dict[str, str]:
    source = make_sqlite("views", SOURCE)
    return {mode: loader.load(source, names=mode)[0] for mode in ("exact", "fold")}


def _rows(backend, statement: str) -> list[tuple]:
    result = backend.execute(statement)
    assert result.ok, (statement, result.error)
    return sorted(result.rows, key=repr)


def _relations(url: str, kind: str) -> set[str]:
    with fx.admin_connection(fx.server_url(), url.rsplit("/", 1)[1]) as conn:
        return {row[0] for row in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = %s", (kind,)).fetchall()}


@pytest.mark.parametrize("mode", ["exact", "fold"])
def test_unquoted_and_quoted_sql_read_the_same_rows(loader, copies, mode):
    with loader.evaluation(copies[mode]) as backend:
        quoted = _rows(backend, 'SELECT t."Name", a."Title" FROM "Track" t '
                                'JOIN "Album" a ON a."AlbumId" = t."AlbumId"')
        unquoted = _rows(backend, "SELECT t.Name, a.Title FROM Track t "
                                  "JOIN Album a ON a.AlbumId = t.AlbumId")
        lower = _rows(backend, "select t.name, a.title from track t join album a "
                               "on a.albumid = t.albumid")
        assert quoted == unquoted == lower == JOINED
        # a name that needs quotes anyway keeps its spelling on the table and the view
        assert _rows(backend, 'SELECT "Unit Price" FROM "Track" WHERE "TrackId" = 10') == [(0.99,)]
        # a whole row through the view is the table's row, column for column
        assert _rows(backend, "SELECT * FROM track") == _rows(backend, 'SELECT * FROM "Track"')


def test_exact_names_get_lower_case_views(loader, copies):
    assert _relations(copies["exact"], "r") == {"Album", "Track", "singer", "CaféMenu"}
    assert _relations(copies["exact"], "v") == {"album", "track", "cafémenu"}
    with loader.evaluation(copies["exact"]) as backend:
        assert _rows(backend, 'SELECT "unit price" FROM track WHERE trackid = 10') == [(0.99,)]
        # only ASCII letters fold, as the server folds them: not "öid"
        assert _rows(backend, "SELECT ÖId FROM CaféMenu") == [(7,)]
        assert _rows(backend, 'SELECT "Öid" FROM cafémenu') == [(7,)]
        # a lower-case table cannot have a view of its own name: its columns need quotes
        assert _rows(backend, 'SELECT "Name" FROM singer') == [("Ann",)]
        assert not backend.execute("SELECT Name FROM singer").ok
    assert folded("CaféMenu") == "cafémenu"


def test_folded_names_get_views_under_the_exact_names(loader, copies):
    assert _relations(copies["fold"], "r") == {"album", "track", "singer", "CaféMenu"}
    assert _relations(copies["fold"], "v") == {"Album", "Track"}
    with loader.evaluation(copies["fold"]) as backend:
        tables = {t.name: [c.name for c in t.columns] for t in backend.tables()}
        assert tables["track"] == ["trackid", "name", "albumid", "Unit Price"]
        assert tables["CaféMenu"] == ["ÖId", "label"]  # a name that needs quotes is kept
        # SQL written for SQLite, Spider-style: any case, unquoted
        assert _rows(backend, "SELECT NAME FROM Singer") == [("Ann",)]
        assert _rows(backend, 'SELECT Label FROM "CaféMenu" WHERE "ÖId" = 7') == [("x",)]
        # the quoted source spelling of a column works only where the table has a view
        assert not backend.execute('SELECT "Name" FROM singer').ok


@pytest.mark.parametrize("mode", ["exact", "fold"])
def test_views_are_not_tables_and_cannot_be_written(loader, copies, mode):
    with loader.evaluation(copies[mode]) as backend:
        names = {table.name for table in backend.tables()}
        assert ("track" in names) != ("Track" in names)
        assert not backend.execute("UPDATE track SET name = 'x'").ok
        assert not backend.execute('UPDATE "Track" SET "Name" = \'x\'').ok
        assert _rows(backend, "SELECT count(*) FROM track WHERE name = 'x'") == [(0,)]


def test_a_replacing_load_builds_the_views_again(loader, copies, make_sqlite):
    source: Path = make_sqlite("views_again", SOURCE)
    database = copies["fold"].rsplit("/", 1)[1]
    loader.load(source, database=database, names="fold", replace=True)
    assert _relations(copies["fold"], "v") == {"Album", "Track"}


def _plan(name: str, *columns: str, stored: str | None = None) -> TablePlan:
    table = Table(name, [Column(c, ColumnType("integer")) for c in columns])
    store = (lambda n: n) if stored is None else (lambda n: n.lower())
    return TablePlan(table, store(name), {c: store(c) for c in columns})


def test_planned_views_leave_out_every_clash():
    exact = [_plan("Orders", "Id"), _plan("orders_archive", "Id"), _plan("Item", "A", "a"),
             _plan("X", "v"), _plan("x", "v"), _plan("Foo", "v"), _plan("FOO", "v"),
             _plan("Taken", "v")]
    assert sorted(planned_views(exact, "exact", taken={"X", "x", "taken"})) == ["orders"]
    fold = [_plan("Orders", "Id", stored="lower"), _plan("singer", "Name", stored="lower"),
            _plan("Taken", "v", stored="lower")]
    views = planned_views(fold, "fold", taken={"orders", "singer", "taken", "Taken"})
    assert {name: columns for name, (_plan_, columns) in views.items()} == {"Orders": ["Id"]}
    assert planned_views(fold, "lower", taken=set()) == {}
