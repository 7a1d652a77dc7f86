"""Loading SQLite files into PostgreSQL on the real local server: value fidelity, types, keys,
names, coercions, idempotence and atomic reloads."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from polysql_testkit import engine_postgres, pg_fixtures
from sqlalchemy.engine import URL, make_url

from polysql.backends.sqlite.backend import SQLiteBackend
from polysql.core.errors import EngineUnavailableError, LoadError
from polysql.core.schema import Table
from polysql.engines.registry import connect

pytestmark = pytest.mark.postgres


fx = pg_fixtures
admin_url, loader, make_sqlite = fx.admin_url, fx.loader, fx.make_sqlite

FIDELITY = """
CREATE TABLE "Customer" (id INTEGER PRIMARY KEY, "FullName" TEXT, balance DECIMAL(10,2),
                         ratio REAL, born DATE, "lastSeen" TIMESTAMP, vip BOOLEAN, photo BLOB);
INSERT INTO "Customer" VALUES
  (1, 'Zoë Ångström', 12345678.91, 0.1, '2001-02-03', '2020-01-01 10:00:00.123456', 1, x'00ff10'),
  (2, '東京 🚀', -0.01, 1e300, '1999-12-31', '2020-02-29 23:59:59', 0, x''),
  (3, 'trailing   ', 0, -2.5, '0001-01-01', '9999-12-31 23:59:59.999999', NULL, NULL),
  (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
CREATE TABLE "order" ("group" INTEGER PRIMARY KEY, "user" INTEGER REFERENCES "Customer"(id),
                      "select" TEXT);
INSERT INTO "order" VALUES (10, 1, 'a'), (11, 2, 'b'), (12, NULL, 'c');
CREATE TABLE "group" ("user" TEXT, "order" INTEGER);
INSERT INTO "group" VALUES ('x', 1), ('a' || char(0) || 'b', 2);
CREATE TABLE "user" (id INTEGER);
CREATE TABLE "Empty Table" (a TEXT, b INTEGER);
CREATE TABLE mixed (id INTEGER PRIMARY KEY, amount INTEGER, note TEXT);
INSERT INTO mixed VALUES (1, 10, 'ok'), (2, 'n/a', 'text in an integer column'), (3, 20, NULL);
CREATE TABLE orphan (id INTEGER, customer_id INTEGER REFERENCES "Customer"(id));
INSERT INTO orphan VALUES (1, 1), (2, 99);
CREATE TABLE dupkey (code TEXT PRIMARY KEY, v INTEGER);
INSERT INTO dupkey VALUES (NULL, 1), (NULL, 2), ('a', 3);
"""

SOURCE_TABLES = {"Customer", "order", "group", "user", "Empty Table", "mixed", "orphan", "dupkey"}


@pytest.fixture(scope="module")
def fidelity_source(make_sqlite) -> Path:
    return make_sqlite("fidelity", FIDELITY)


@pytest.fixture(scope="module")
def fidelity(loader, fidelity_source):
    target_url, report = loader.load(fidelity_source)
    return target_url, report


@pytest.fixture()
def evaluation(loader, fidelity) -> Iterator:
    with loader.evaluation(fidelity[0]) as backend:
        yield backend


def _rows(backend, sql: str) -> list[tuple]:
    result = backend.execute(sql)
    assert result.ok, result.error
    return result.rows


def _coercions(report, table: str, column: str) -> list[str]:
    return [c.message for c in report.coercions if (c.table, c.column) == (table, column)]


# -- fidelity -------------------------------------------------------------------------------------

def test_every_table_and_row_arrives(fidelity) -> None:
    _, report = fidelity
    assert not report.skipped
    assert report.tables == {"Customer": 4, "order": 3, "group": 2, "user": 0, "Empty Table": 0,
                             "mixed": 3, "orphan": 2, "dupkey": 3}


def test_values_round_trip(evaluation) -> None:
    rows = _rows(evaluation, 'SELECT * FROM "Customer" ORDER BY id')
    assert rows[0] == (1, "Zoë Ångström", Decimal("12345678.91"), 0.1, dt.date(2001, 2, 3),
                       dt.datetime(2020, 1, 1, 10, 0, 0, 123456), True, b"\x00\xff\x10")
    assert rows[1] == (2, "東京 🚀", Decimal("-0.01"), 1e300, dt.date(1999, 12, 31),
                       dt.datetime(2020, 2, 29, 23, 59, 59), False, b"")
    assert rows[2] == (3, "trailing   ", Decimal("0.00"), -2.5, dt.date(1, 1, 1),
                       dt.datetime(9999, 12, 31, 23, 59, 59, 999999), None, None)
    assert rows[3] == (4, None, None, None, None, None, None, None)


def test_trailing_spaces_and_accents_are_kept_byte_for_byte(evaluation) -> None:
    assert _rows(evaluation, 'SELECT length("FullName"), "FullName" = \'trailing\' '
                             'FROM "Customer" WHERE id = 3') == [(11, False)]
    assert _rows(evaluation, 'SELECT octet_length("FullName") FROM "Customer" WHERE id = 1') == [
        (len("Zoë Ångström".encode()),)]


def test_reserved_words_and_mixed_case_names_stay_exact(evaluation) -> None:
    assert _rows(evaluation, 'SELECT "group", "user", "select" FROM "order" ORDER BY "group"') == [
        (10, 1, "a"), (11, 2, "b"), (12, None, "c")]
    assert _rows(evaluation, 'SELECT "user", "order" FROM "group" ORDER BY "order"')[0] == ("x", 1)
    assert _rows(evaluation, 'SELECT count(*) FROM "user"') == [(0,)]
    assert _rows(evaluation, 'SELECT a, b FROM "Empty Table"') == []


def test_physical_types_and_logical_types(evaluation, fidelity_source) -> None:
    loaded = {t.name: t for t in evaluation.tables()}
    assert set(loaded) == SOURCE_TABLES  # no metadata tables in the evaluation database
    customer = loaded["Customer"]
    assert [c.declared_type for c in customer.columns] == [
        "bigint", "text", "numeric(10,2)", "double precision", "date",
        "timestamp without time zone", "boolean", "bytea"]
    with connect(f"sqlite:///{fidelity_source}") as source:
        source_tables: dict[str, Table] = {t.name: t for t in source.tables()}
    for name, table in source_tables.items():
        assert [(c.name, c.type) for c in loaded[name].columns] == [
            (c.name, c.type) for c in table.columns], name
        assert loaded[name].row_count == table.row_count


def test_keys_are_carried(evaluation) -> None:
    loaded = {t.name: t for t in evaluation.tables()}
    assert loaded["Customer"].primary_key == ("id",)
    assert loaded["order"].primary_key == ("group",)
    assert [(k.columns, k.ref_table, k.ref_columns) for k in loaded["order"].foreign_keys] == [
        (("user",), "Customer", ("id",))]


def test_violated_keys_are_left_out_and_reported(fidelity, evaluation) -> None:
    _, report = fidelity
    loaded = {t.name: t for t in evaluation.tables()}
    assert loaded["orphan"].foreign_keys == []
    assert any("1 rows reference a missing row" in m
               for m in _coercions(report, "orphan", "customer_id"))
    assert loaded["dupkey"].primary_key == ()
    assert any("2 rows have a NULL key" in m for m in _coercions(report, "dupkey", "code"))
    assert _rows(evaluation, "SELECT count(*) FROM dupkey") == [(3,)]
    assert _rows(evaluation, "SELECT count(*) FROM orphan") == [(2,)]


def test_declared_type_disagreement_is_reported_and_no_row_dropped(fidelity, evaluation) -> None:
    _, report = fidelity
    assert _coercions(report, "mixed", "amount"), report.coercions
    assert _rows(evaluation, "SELECT id, amount FROM mixed ORDER BY id") == [
        (1, "10"), (2, "n/a"), (3, "20")]


def test_nul_characters_are_removed_and_reported(fidelity, evaluation) -> None:
    _, report = fidelity
    assert any("NUL" in m for m in _coercions(report, "group", "user"))
    assert _rows(evaluation, 'SELECT "user" FROM "group" WHERE "order" = 2') == [("ab",)]


def test_metadata_lives_outside_the_evaluation_database(fidelity, admin_url, loader) -> None:
    target_url, report = fidelity
    database = make_url(target_url).database
    # public holds the tables, polysql_fold the views under pgloader's names (load_views.py)
    assert set(fx.schemas(admin_url, database)) == {"public", "polysql_fold"}
    with fx.admin_connection(admin_url, "polysql_meta") as conn:
        row = conn.execute("SELECT fingerprint, reader, report->'tables' FROM loads "
                           "WHERE database = %s", (database,)).fetchone()
    assert row == (report.fingerprint, loader.reader, report.tables)


# -- names ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("mode", "customer", "full_name", "empty"), [
    ("snake", "customer", "full_name", "empty_table"),
    ("lower", "customer", "fullname", "empty table"),
])
def test_name_modes(loader, fidelity_source, mode, customer, full_name, empty) -> None:
    target_url, report = loader.load(fidelity_source, names=mode)
    assert customer in report.tables and empty in report.tables
    with loader.evaluation(target_url) as backend:
        names = {t.name: t for t in backend.tables()}
        assert set(names) == {customer, "order", "group", "user", empty, "mixed", "orphan",
                              "dupkey"}
        assert names[customer].columns[1].name == full_name
        query = f"SELECT {full_name} FROM {customer} WHERE id = 1"  # unquoted names now work
        assert _rows(backend, query) == [("Zoë Ångström",)]
        assert [(k.ref_table, k.ref_columns) for k in names["order"].foreign_keys] == [
            (customer, ("id",))]


def test_unknown_name_mode_is_refused(loader, fidelity_source) -> None:
    with pytest.raises(Exception, match="unknown name mode"):
        loader.load(fidelity_source, names="camel")


# -- idempotence and atomic reload ----------------------------------------------------------------

def test_unchanged_source_is_skipped(loader, fidelity, fidelity_source, admin_url) -> None:
    target_url, first = fidelity
    database = make_url(target_url).database
    before = fx.schemas(admin_url, database)
    _, again = loader.load(fidelity_source, database=database)
    assert again.skipped
    assert again.fingerprint == first.fingerprint and again.tables == first.tables
    assert [(c.table, c.column, c.count) for c in again.coercions] == [
        (c.table, c.column, c.count) for c in first.coercions]
    assert fx.schemas(admin_url, database) == before  # nothing was rebuilt


# One row in ``item``, a thousand in ``big``: the sources below act up on ``big``.
ITEM_AND_BIG = """
    CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT);
    INSERT INTO item VALUES (1, 'first');
    CREATE TABLE big (n INTEGER);
    WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 1000)
    INSERT INTO big SELECT i FROM r;"""


class _FailingSource(SQLiteBackend):
    """A real SQLite source whose copy breaks down halfway through one table."""

    def read_table(self, table: Table, *, batch_size: int = 65_536) -> Iterator[pa.RecordBatch]:
        for batch in super().read_table(table, batch_size=batch_size):
            yield batch
            if table.name == "big":
                raise OSError("source disk vanished")


def test_changed_source_reloads_atomically(loader, make_sqlite, admin_url) -> None:
    path = make_sqlite("reload", ITEM_AND_BIG)
    target_url, first = loader.load(path)
    database = make_url(target_url).database
    reader_before = loader.evaluation(target_url)
    try:
        assert _rows(reader_before, "SELECT label FROM item") == [("first",)]
        loaded_state = fx.checksum(admin_url, database)
        schemas_before = fx.schemas(admin_url, database)

        with sqlite3.connect(path) as conn:
            conn.execute("INSERT INTO item VALUES (2, 'second')")
        # A load that dies mid-copy leaves the evaluation database exactly as it was.
        with _FailingSource.connect(f"sqlite:///{path}") as failing, \
                loader.admin(target_url) as target, pytest.raises(OSError, match="vanished"):
            target.load(failing)
        assert fx.checksum(admin_url, database) == loaded_state
        assert fx.schemas(admin_url, database) == schemas_before
        assert _rows(reader_before, "SELECT count(*) FROM item") == [(1,)]

        _, second = loader.load(path, database=database)
        assert not second.skipped and second.fingerprint != first.fingerprint
        assert second.tables == {"item": 2, "big": 1000}
        after = fx.schemas(admin_url, database)
        assert set(after) == {"public", "polysql_fold"}
        assert after["public"] != schemas_before["public"]
        assert after["polysql_fold"] != schemas_before["polysql_fold"]
        # connections opened before the reload read the new content without reconnecting
        assert _rows(reader_before, "SELECT label FROM item ORDER BY id") == [
            ("first",), ("second",)]
    finally:
        reader_before.close()


class _ConnectionDroppingSource(SQLiteBackend):
    """A real SQLite source that, as the load starts reading table ``big``, has the server end
    every client connection opened since ``watch()`` (the load's own): what a server that
    shuts down or crashes mid-load does to them."""

    admin: URL
    before: set[int] = set()

    def watch(self, admin: URL) -> None:
        self.admin = admin
        with fx.admin_connection(admin, "postgres") as conn:
            self.before = self._others(conn)

    @staticmethod
    def _others(conn: Any) -> set[int]:
        """The client connections other than ``conn`` itself."""
        return {row[0] for row in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' "
            "AND pid <> pg_backend_pid()")}

    def read_table(self, table: Table, *, batch_size: int = 65_536) -> Iterator[pa.RecordBatch]:
        if table.name == "big":
            with fx.admin_connection(self.admin, "postgres") as conn:
                for pid in self._others(conn) - self.before:
                    conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        yield from super().read_table(table, batch_size=batch_size)


def test_a_server_dropping_the_load_is_an_outage_and_keeps_the_old_copy(
        loader, make_sqlite, admin_url) -> None:
    """Not an internal error from the driver, nor a cleanup failure hiding the cause: the
    engine is reported unavailable (a sweep abandons it rather than scoring it), and the
    previous copy is untouched."""
    path = make_sqlite("dropped", ITEM_AND_BIG)
    target_url, first = loader.load(path)
    database = make_url(target_url).database
    before = fx.checksum(admin_url, database)
    with _ConnectionDroppingSource.connect(f"sqlite:///{path}") as dropping, \
            loader.admin(target_url) as target:
        dropping.watch(admin_url)
        with pytest.raises(EngineUnavailableError,
                           match="stopped answering while database .* was being loaded"):
            target.load(dropping, replace=True)
    # What readers see is untouched; the staging schema the cut-off load could not drop (its
    # connection was gone) is invisible to them, and the next load drops it.
    after = fx.checksum(admin_url, database)
    assert {k: v for k, v in after.items() if not k.startswith("polysql_staging_")} == before
    _, again = loader.load(path, database=database)
    assert not again.skipped and again.tables == first.tables
    assert set(fx.schemas(admin_url, database)) == {"public", "polysql_fold"}


def test_a_staging_schema_a_crash_left_behind_is_dropped_by_the_next_load(
        loader, make_sqlite, admin_url) -> None:
    """Tables are filled over several connections before the swap; a process killed meanwhile
    leaves its staging schema, which the next load of the database removes."""
    path = make_sqlite("leftover", "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);")
    target_url, _ = loader.load(path)
    database = make_url(target_url).database
    with fx.admin_connection(admin_url, database) as conn:
        conn.execute("CREATE SCHEMA polysql_staging_deadbeef0000")
        conn.execute("CREATE TABLE polysql_staging_deadbeef0000.t (a INTEGER)")
    assert "polysql_staging_deadbeef0000" in fx.schemas(admin_url, database)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO t VALUES (2)")
    _, report = loader.load(path, database=database)
    assert report.tables == {"t": 2}
    assert set(fx.schemas(admin_url, database)) == {"public", "polysql_fold"}


def test_load_needs_an_admin_connection_and_a_database(loader, fidelity_source,
                                                       admin_url) -> None:
    with connect(f"sqlite:///{fidelity_source}") as source:
        with loader.admin(admin_url.set(database=None).render_as_string(False)) as server, \
                pytest.raises(LoadError, match="names no database"):
            server.load(source)
        target_url, _ = loader.load(fidelity_source)
        with loader.evaluation(target_url) as evaluation, \
                pytest.raises(LoadError, match="read-only"):
            evaluation.load(source)


# -- volume ---------------------------------------------------------------------------------------

def test_one_million_rows(loader, make_sqlite) -> None:
    path = make_sqlite("million", """
        CREATE TABLE facts (id INTEGER PRIMARY KEY, amount REAL, label TEXT);
        WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 1000000)
        INSERT INTO facts SELECT i, i * 0.25, 'row ' || i FROM r;""")
    with sqlite3.connect(path) as conn:
        expected = conn.execute("SELECT count(*), sum(amount), max(label) FROM facts").fetchone()
    target_url, report = loader.load(path)
    assert report.tables == {"facts": 1_000_000}
    with loader.evaluation(target_url) as backend:
        assert _rows(backend, "SELECT count(*), sum(amount), max(label) FROM facts") == [
            expected]
        assert backend.tables()[0].primary_key == ("id",)


# -- the conformance suite's hook -----------------------------------------------------------------

def test_provision_and_cleanup(admin_url, make_sqlite) -> None:
    engine = engine_postgres
    tag = fx.unique("Provision-Tag")
    database, reader = engine.names(tag)
    path = make_sqlite("provision", "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2);")
    try:
        backend = engine.provision(path, tag)
        with backend:
            assert backend.execute("SELECT sum(x), current_user FROM t").rows == [(2 + 1, reader)]
    finally:
        engine.cleanup(tag)
    with fx.admin_connection(admin_url, "postgres") as conn:
        assert conn.execute("SELECT count(*) FROM pg_database WHERE datname = %s",
                            (database,)).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s",
                            (reader,)).fetchone() == (0,)


def test_provision_reports_an_unreachable_server(monkeypatch, make_sqlite) -> None:
    engine = engine_postgres
    monkeypatch.setenv("POLYSQL_POSTGRES_URL", "postgresql://postgres@127.0.0.1:1/")
    path = make_sqlite("unreachable", "CREATE TABLE t (x INTEGER);")
    with pytest.raises(engine.ServerUnavailable, match="127.0.0.1:1"):
        engine.provision(path, "unreachable")
