"""PostgreSQL backend against the real local server: URLs, the reader login, the connection pool,
error kinds, timeouts, and hostile statements that must be refused or cut off without changing
the evaluation database."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from polysql_testkit import pg_fixtures
from polysql_testkit.interrupts import sigint_to_main_thread
from sqlalchemy.engine import make_url

from polysql.backends.postgres.backend import (
    PostgresBackend,
    evaluation_database_name,
    format_version,
)
from polysql.backends.postgres.connect import SESSION_OPTIONS, connection_params
from polysql.core.errors import ConfigError, EngineError, EngineUnavailableError
from polysql.engines.registry import backend_class, connect

pytestmark = pytest.mark.postgres


fx = pg_fixtures
admin_url, loader, make_sqlite = fx.admin_url, fx.loader, fx.make_sqlite

SOURCE = """
CREATE TABLE "Customer" (id INTEGER PRIMARY KEY, "Name" TEXT, balance DECIMAL(10,2));
INSERT INTO "Customer" VALUES (1, 'Ann', 10.5), (2, 'Bob', NULL), (3, 'Zoë', 7.25);
CREATE TABLE "order" (id INTEGER PRIMARY KEY, "user" INTEGER REFERENCES "Customer"(id), qty INTEGER);
INSERT INTO "order" VALUES (1, 1, 5), (2, 3, 1);
"""


@pytest.fixture(scope="module")
def evaluation_url(loader, make_sqlite) -> str:
    target_url, _ = loader.load(make_sqlite("execute", SOURCE))
    return target_url


@pytest.fixture()
def backend(loader, evaluation_url):
    with loader.evaluation(evaluation_url) as backend:
        yield backend


# -- URLs and names ------------------------------------------------------------------------------

def test_url_forms_parse_to_libpq_parameters() -> None:
    full = connection_params(make_url("postgresql+psycopg://ann:s%40cret@db.example:6543/sales"
                                      "?sslmode=require"))
    assert (full["host"], full["port"], full["user"], full["password"], full["dbname"],
            full["sslmode"]) == ("db.example", 6543, "ann", "s@cret", "sales", "require")
    server = connection_params(make_url("postgres://"))
    assert (server["host"], server["port"], server["user"], server["dbname"]) == (
        "127.0.0.1", 5432, "postgres", "postgres")
    assert "password" not in server
    # sessions start in UTC; a URL's own options follow, so they can still set anything
    assert server["options"] == SESSION_OPTIONS
    own = connection_params(make_url("postgresql://h/db?options=-c%20search_path%3Dsales"))
    assert own["options"] == f"{SESSION_OPTIONS} -c search_path=sales"
    for scheme in ("postgresql", "postgres", "postgresql+psycopg", "postgresql+psycopg2"):
        assert backend_class(f"{scheme}://u@h/db") is PostgresBackend


def test_url_query_cannot_smuggle_the_login() -> None:
    with pytest.raises(ConfigError, match="user"):
        connection_params(make_url("postgresql://h/db?user=postgres"))


def test_an_option_libpq_does_not_know_is_a_config_error_before_connecting() -> None:
    """Not 'cannot connect' (exit 3, read as an outage): the URL is wrong, and says how."""
    with pytest.raises(ConfigError, match="unknown PostgreSQL connection option.*sslmod"):
        connection_params(make_url("postgresql://h/db?sslmod=require"))
    assert connection_params(make_url("postgresql://h/db?sslmode=require&keepalives=1"))[
        "sslmode"] == "require"


def test_server_url_connects_for_administration(admin_url) -> None:
    with connect(admin_url.set(database=None), read_only=False) as backend:
        assert backend.version().startswith("PostgreSQL ")
        with fx.admin_connection(admin_url, "postgres") as conn:
            shown = conn.execute("SHOW server_version").fetchone()[0]
        assert backend.version() == f"PostgreSQL {shown.split()[0]}"


def test_format_version_spells_old_and_new_numbering() -> None:
    assert format_version(150020) == "PostgreSQL 15.20"
    assert format_version(90624) == "PostgreSQL 9.6.24"


def test_evaluation_database_names_are_safe_and_distinct() -> None:
    plain = evaluation_database_name("bird", "california_schools")
    assert plain == "polysql_bird_california_schools"
    spaced = evaluation_database_name("Bird", "california-schools")
    assert spaced != plain and spaced.startswith("polysql_bird_california_schools_")
    long = evaluation_database_name("spider", "x" * 200)
    assert len(long.encode()) <= 63
    assert long != evaluation_database_name("spider", "x" * 199)
    assert PostgresBackend.evaluation_url(
        make_url("postgresql://u:p@h:1/"), dataset="bird", db_id="california_schools",
        cache_dir=Path("unused")).render_as_string(hide_password=False) == (
        "postgresql://u:p@h:1/polysql_bird_california_schools")


# -- the reader login ----------------------------------------------------------------------------

def test_evaluation_logs_in_as_the_unprivileged_reader(backend, loader) -> None:
    result = backend.execute(
        "SELECT current_user, rolsuper, rolcreaterole, rolcreatedb, rolbypassrls "
        "FROM pg_roles WHERE rolname = current_user")
    assert result.ok, result.error
    assert result.rows == [(loader.reader, False, False, False, False)]


def test_read_only_connect_without_a_reader_role_refuses(admin_url, evaluation_url) -> None:
    with pytest.raises(EngineUnavailableError, match="no evaluation role 'polysql_never_created'"):
        connect(evaluation_url, reader_role="polysql_never_created")


def test_url_naming_the_reader_logs_in_directly(admin_url, loader, evaluation_url) -> None:
    with fx.admin_connection(admin_url, "polysql_meta") as conn:
        password = conn.execute("SELECT password FROM readers WHERE role = %s",
                                (loader.reader,)).fetchone()[0]
    url = make_url(evaluation_url).set(username=loader.reader, password=password)
    with connect(url, reader_role=loader.reader) as backend:
        assert backend.execute("SELECT current_user").rows == [(loader.reader,)]


def test_reader_cannot_reach_the_metadata_database(loader, admin_url, backend) -> None:
    params = dict(backend.login, dbname="polysql_meta")
    with pytest.raises(psycopg.OperationalError, match="permission denied"):
        psycopg.connect(**params).close()


def test_a_superuser_url_is_never_used_for_evaluation(admin_url, evaluation_url) -> None:
    su = fx.unique("polysql_test_su")
    with fx.admin_connection(admin_url, "postgres") as conn:
        conn.execute(f"CREATE ROLE {su} SUPERUSER LOGIN")
    try:
        url = make_url(evaluation_url).set(username=su)
        with pytest.raises(EngineError, match="administrative attributes"):
            connect(url, reader_role=su)
    finally:
        with fx.admin_connection(admin_url, "postgres") as conn:
            conn.execute(f"DROP ROLE {su}")


# -- pool ------------------------------------------------------------------------------------------

def _server_sessions(admin_url, role: str) -> int:
    with fx.admin_connection(admin_url, "postgres") as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = %s",
                            (role,)).fetchone()[0]


def test_pool_reuses_connections_across_queries(loader, evaluation_url, admin_url) -> None:
    with loader.evaluation(evaluation_url, pool_size=3) as backend:
        for n in range(50):
            assert backend.execute(f"SELECT {n}").rows == [(n,)]
        assert backend.pool.opened == 1
        assert _server_sessions(admin_url, loader.reader) == 1


def test_pool_bounds_server_sessions_under_concurrency(loader, evaluation_url, admin_url) -> None:
    peak: list[int] = []
    with loader.evaluation(evaluation_url, pool_size=3) as backend:
        def work() -> None:
            for _ in range(5):
                result = backend.execute("SELECT pg_sleep(0.02), count(*) FROM \"Customer\"")
                assert result.ok, result.error

        threads = [threading.Thread(target=work) for _ in range(10)]
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads):
            peak.append(_server_sessions(admin_url, loader.reader))
        for thread in threads:
            thread.join()
        assert 1 < backend.pool.opened <= 3
        assert max(peak) <= 3


def test_dead_connection_is_unavailable_then_replaced(loader, evaluation_url, admin_url) -> None:
    with loader.evaluation(evaluation_url, pool_size=1) as backend:
        assert backend.execute("SELECT 1").ok
        with fx.admin_connection(admin_url, "postgres") as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE usename = %s", (loader.reader,))
            conn.execute(f'ALTER ROLE "{loader.reader}" NOLOGIN')
        try:
            dead = backend.execute("SELECT 1")
            assert dead.error is not None and dead.error.kind == "unavailable"
            refused = backend.execute("SELECT 1")  # reconnecting fails: still no exception
            assert refused.error is not None and refused.error.kind == "unavailable"
        finally:
            with fx.admin_connection(admin_url, "postgres") as conn:
                conn.execute(f'ALTER ROLE "{loader.reader}" LOGIN')
        assert backend.execute("SELECT 2").rows == [(2,)]


# -- results and error kinds -------------------------------------------------------------------------

def test_rows_columns_and_engine_types(backend) -> None:
    result = backend.execute(
        'SELECT "Name", balance, 1.5::double precision AS f, DATE \'2020-01-02\' AS d '
        'FROM "Customer" ORDER BY id')
    assert result.ok, result.error
    assert result.columns == ["Name", "balance", "f", "d"]
    assert result.types == ["text", "numeric(10,2)", "float8", "date"]
    assert [r[0] for r in result.rows] == ["Ann", "Bob", "Zoë"]
    assert str(result.rows[0][1]) == "10.50"


def test_empty_result_keeps_its_columns(backend) -> None:
    result = backend.execute('SELECT id, "Name" FROM "Customer" WHERE id < 0')
    assert result.ok and result.rows == [] and result.columns == ["id", "Name"]


def test_huge_result_is_not_materialized(backend) -> None:
    endless = ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 1e9) "
               "SELECT i FROM r")
    result = backend.execute(endless, max_rows=5, timeout=20)
    assert result.ok, result.error
    assert result.truncated and len(result.rows) == 5
    assert result.elapsed < 5


@pytest.mark.parametrize(("sql", "kind", "sqlstate"), [
    ("SELEC 1", "syntax", "42601"),
    ("SELECT 1 / 0", "runtime", "22012"),
    ("SELECT * FROM no_such_table", "runtime", "42P01"),
    ("SELECT repeat('x', 1100000000)", "too_large", "54000"),
])
def test_error_kinds_carry_sqlstate(backend, sql, kind, sqlstate) -> None:
    result = backend.execute(sql)
    assert result.error is not None, result
    assert (result.error.kind, result.error.sqlstate) == (kind, sqlstate)
    assert result.rows == [] and result.columns == []


def test_values_python_cannot_hold_are_a_runtime_error_not_an_exception(backend) -> None:
    result = backend.execute("SELECT 'infinity'::date")
    assert result.error is not None and result.error.kind == "runtime"
    assert backend.execute("SELECT 1").ok


def test_guard_refusals_are_forbidden_with_a_reason(backend) -> None:
    result = backend.execute('DELETE FROM "Customer"')
    assert result.error is not None and result.error.kind == "forbidden"
    assert "DELETE" in result.error.message
    # the connection is still good afterwards
    assert backend.execute("SELECT 1").ok


# -- timeouts ----------------------------------------------------------------------------------------

def test_server_side_timeout(backend) -> None:
    result = backend.execute("SELECT pg_sleep(600)", timeout=1)
    assert result.error is not None
    assert (result.error.kind, result.error.sqlstate) == ("timeout", "57014")
    assert "stopped by the server" in result.error.message
    assert result.elapsed < 5
    assert backend.execute("SELECT 1").rows == [(1,)]


def test_client_backstop_cancels_when_the_server_does_not(loader, evaluation_url) -> None:
    with loader.evaluation(evaluation_url, server_timeout=False) as backend:
        result = backend.execute("SELECT pg_sleep(600)", timeout=1)
        assert result.error is not None and result.error.kind == "timeout"
        assert "cancelled by the client" in result.error.message
        assert result.elapsed < 5
        assert backend.execute("SELECT 1").rows == [(1,)]



def test_ctrl_c_stops_the_statement_on_the_server_too(loader, evaluation_url, admin_url) -> None:
    """KeyboardInterrupt reaches the caller at once, the statement does not run on in the server,
    and the pool keeps its connections (more Ctrl-Cs than it has, then a query)."""
    with loader.evaluation(evaluation_url, pool_size=2) as backend:
        for _ in range(3):
            started = time.perf_counter()
            with sigint_to_main_thread(0.5), pytest.raises(KeyboardInterrupt):
                backend.execute("SELECT pg_sleep(600) AS ctrl_c_probe", timeout=900)
            assert time.perf_counter() - started < 10
        time.sleep(0.5)
        with fx.admin_connection(admin_url, "postgres") as conn:
            running = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                                   "AND query LIKE %s AND pid <> pg_backend_pid()",
                                   ("%ctrl_c_probe%",)).fetchone()[0]
        assert running == 0
        started = time.perf_counter()
        assert backend.execute("SELECT 1", timeout=5).rows == [(1,)]
        assert time.perf_counter() - started < 5


def test_statement_cannot_lift_its_own_timeout(loader, evaluation_url) -> None:
    with loader.evaluation(evaluation_url, screen=False) as backend:
        result = backend.execute(
            "SELECT set_config('statement_timeout', '0', true), pg_sleep(600)", timeout=1)
        assert result.error is not None and result.error.kind == "timeout"
        assert result.elapsed < 5


def _cancel_after(delay: float, admin_url, database: str) -> threading.Thread:
    """A thread that, after ``delay`` seconds, cancels from an administrator's session the
    running statements on ``database`` (the text shown is the cursor's FETCH, not the query),
    trying again for a while if none has started yet."""

    def cancel() -> None:
        time.sleep(delay)
        deadline = time.monotonic() + 10
        with fx.admin_connection(admin_url, "postgres") as conn:
            while time.monotonic() < deadline:
                done = conn.execute(
                    "SELECT count(*) FILTER (WHERE pg_cancel_backend(pid)) FROM pg_stat_activity "
                    "WHERE state = 'active' AND datname = %s AND pid <> pg_backend_pid()",
                    (database,)).fetchone()
                if done and done[0]:
                    return
                time.sleep(0.1)

    thread = threading.Thread(target=cancel)
    thread.start()
    return thread


def test_a_cancel_from_another_session_is_not_a_timeout(backend, admin_url,
                                                       evaluation_url) -> None:
    """Cancelled long before its timeout, by neither the server's statement_timeout nor
    polysql: the statement did not time out, and saying so would be false."""
    canceller = _cancel_after(1.0, admin_url, make_url(evaluation_url).database)
    result = backend.execute("SELECT pg_sleep(20)", timeout=30)
    canceller.join()
    assert result.error is not None and result.error.sqlstate == "57014"
    assert result.error.kind == "runtime"
    assert "not by polysql" in result.error.message and "exceeded" not in result.error.message


def test_a_prediction_cannot_cancel_another_running_statement(loader, evaluation_url) -> None:
    """Every statement runs as the same reader role, which PostgreSQL lets cancel its own
    sessions: a prediction calling pg_cancel_backend would stop a statement running beside it
    (another question's, another model's) and make it fail. Refused however the call is
    written, including in text sqlglot cannot parse."""
    others = " FROM pg_stat_activity WHERE usename = current_user AND pid <> pg_backend_pid()"
    hostile = [
        "SELECT pg_cancel_backend(pid)" + others,
        'SELECT "pg_cancel_backend"(pid)' + others,
        'SELECT "pg_catalog"."pg_terminate_backend"(pid)' + others,
        "SELECT pg_cancel_backend(pid), collation for ('a')" + others,
    ]
    with loader.evaluation(evaluation_url, pool_size=2) as backend:
        outcome: list[object] = []
        victim = threading.Thread(target=lambda: outcome.append(
            backend.execute("SELECT pg_sleep(2)", timeout=30)))
        victim.start()
        time.sleep(0.5)
        for statement in hostile:
            refused = backend.execute(statement, timeout=5)
            assert refused.error is not None and refused.error.kind == "forbidden", statement
        victim.join()
    (slept,) = outcome
    assert slept.ok, slept.error


# -- hostile statements ------------------------------------------------------------------------------

HOSTILE = [
    'DROP TABLE "Customer"',
    'DELETE FROM "Customer"',
    'UPDATE "Customer" SET "Name" = \'x\'',
    'INSERT INTO "Customer" VALUES (9, \'Eve\', 1)',
    'TRUNCATE "order"',
    "CREATE TABLE evil (a int)",
    "CREATE TEMP TABLE evil (a int)",
    'WITH gone AS (DELETE FROM "Customer" RETURNING *) SELECT * FROM gone',
    'SELECT 1; DELETE FROM "Customer"',
    "COPY \"Customer\" TO PROGRAM 'touch /tmp/polysql_pwned'",
    "COPY \"Customer\" FROM PROGRAM 'echo 9'",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT lo_import('/etc/passwd')",
    "ALTER SYSTEM SET work_mem = '1GB'",
    "SET ROLE postgres",
    "SET SESSION AUTHORIZATION postgres",
    "SELECT set_config('role', 'postgres', false)",
    "SELECT set_config('default_transaction_read_only', 'off', false)",
    "GRANT ALL ON \"Customer\" TO PUBLIC",
    "DO $$ BEGIN DELETE FROM \"Customer\"; END $$",
    "VACUUM \"Customer\"",
    "CREATE EXTENSION IF NOT EXISTS dblink",
    "DROP VIEW polysql_fold.customer",
    "CREATE OR REPLACE VIEW polysql_fold.customer AS SELECT 1 AS id",
    "UPDATE polysql_fold.customer SET name = 'x'",
    "UPDATE customer SET name = 'x'",
    "SET search_path = polysql_fold",
]


@pytest.mark.parametrize("screened", [True, False], ids=["guard-on", "server-only"])
def test_hostile_statements_are_refused_and_change_nothing(loader, evaluation_url, admin_url,
                                                           screened) -> None:
    database = make_url(evaluation_url).database
    before = fx.checksum(admin_url, database)
    assert set(before) == {"Customer", "order", "polysql_fold.customer"}
    outcomes = {}
    with loader.evaluation(evaluation_url, screen=screened) as backend:
        for statement in HOSTILE:
            result = backend.execute(statement, timeout=5)
            outcomes[statement] = result.error.kind if result.error else "ran"
            if not screened and result.error is not None:
                assert result.error.sqlstate, statement  # the server's own refusal
        sleep = backend.execute("SELECT pg_sleep(600)", timeout=1)
        outcomes["pg_sleep(600)"] = sleep.error.kind if sleep.error else "ran"
        # set_config(..., false) above must not have leaked into the pooled session
        still = backend.execute('DELETE FROM "Customer"' if not screened else "SELECT 1")
        if not screened:
            assert still.error is not None and still.error.kind == "forbidden"
    allowed = {statement: kind for statement, kind in outcomes.items()
               if kind not in ("forbidden", "timeout")}
    if not screened:
        # without the screen these run, harmlessly: the transaction around them is rolled back;
        # the UPDATE names a relation public does not have (the view is in polysql_fold)
        assert allowed == {
            "SELECT set_config('default_transaction_read_only', 'off', false)": "ran",
            "SET search_path = polysql_fold": "ran",
            "UPDATE customer SET name = 'x'": "runtime"}, allowed
    else:
        assert allowed == {}
    assert outcomes["pg_sleep(600)"] == "timeout"
    assert fx.checksum(admin_url, database) == before
    assert not Path("/tmp/polysql_pwned").exists()


@pytest.mark.parametrize("statement", [
    'DELETE FROM "Customer"',
    'INSERT INTO "Customer" VALUES (9, \'Eve\', 1)',
    'UPDATE "Customer" SET "Name" = \'x\'',
    "CREATE TABLE evil (a int)",
    "CREATE TEMP TABLE evil (a int)",
    'DROP TABLE "order"',
])
def test_reader_role_alone_cannot_write(backend, statement, admin_url, evaluation_url) -> None:
    """The role barrier without the read-only transaction: a read-write session as the reader."""
    before = fx.checksum(admin_url, make_url(evaluation_url).database)
    with psycopg.connect(**backend.login, autocommit=True) as conn:
        conn.execute("SET default_transaction_read_only = off")
        conn.execute("BEGIN READ WRITE")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(statement)
        conn.execute("ROLLBACK")
    assert fx.checksum(admin_url, make_url(evaluation_url).database) == before


# -- time zone and styles --------------------------------------------------------------------------

SESSION_VIEW = ("SELECT CAST(EXTRACT(EPOCH FROM CAST(TIMESTAMP '2021-03-02 08:00:00' AS "
                "timestamptz)) AS bigint), current_setting('TimeZone'), "
                "CAST(DATE '2021-03-02' AS text), INTERVAL '1 day 2 hours'")
ROLE_DEFAULTS = {"timezone": "Asia/Kathmandu", "DateStyle": "SQL, DMY",
                 "IntervalStyle": "iso_8601"}


def test_sessions_do_not_take_the_servers_zone_or_styles(loader, evaluation_url,
                                                        admin_url) -> None:
    """The reader's own defaults are moved away from PostgreSQL's, as a server or database set up
    elsewhere would have them; evaluation sessions still read a naive timestamp as UTC, write
    dates as ISO text and hand intervals back in the style psycopg reads (and no evaluated
    statement may change that: set_config and SET are refused)."""
    admin = fx.admin_connection(admin_url, "postgres")
    for name, value in ROLE_DEFAULTS.items():
        admin.execute(f"ALTER ROLE \"{loader.reader}\" SET {name} = '{value}'")
    try:
        with loader.evaluation(evaluation_url) as backend:
            result = backend.execute(SESSION_VIEW)
    finally:
        admin.execute(f"ALTER ROLE \"{loader.reader}\" RESET ALL")
        admin.close()
    assert result.ok, result.error
    assert result.rows == [(1614672000, "UTC", "2021-03-02", timedelta(days=1, hours=2))]


def test_the_users_environment_does_not_change_answers(loader, evaluation_url,
                                                     monkeypatch) -> None:
    """libpq sends PGTZ and PGDATESTYLE after polysql's options, so a shell that sets them would
    change what dates cast to text read: polysql's settings are set again, on a new connection
    and after the DISCARD ALL between pooled statements. A URL's own options still win."""
    monkeypatch.setenv("PGTZ", "Asia/Kathmandu")
    monkeypatch.setenv("PGDATESTYLE", "SQL, DMY")
    expected = [(1614672000, "UTC", "2021-03-02", timedelta(days=1, hours=2))]
    with loader.evaluation(evaluation_url) as backend:
        first, second = backend.execute(SESSION_VIEW), backend.execute(SESSION_VIEW)
    assert first.rows == expected, first
    assert second.rows == expected, second
    url = make_url(evaluation_url).update_query_dict(
        {"options": "-c TimeZone=Asia/Tokyo -c DateStyle=ISO,\\ DMY"})  # libpq's escaped space
    with loader.evaluation(url.render_as_string(hide_password=False)) as backend:
        zone = backend.execute("SELECT current_setting('TimeZone'), "
                               "current_setting('DateStyle')")
    assert zone.rows == [("Asia/Tokyo", "ISO, DMY")], zone


def test_a_value_the_driver_cannot_read_is_the_statements_error(loader, evaluation_url) -> None:
    """A URL's own options come after polysql's and may set an interval style psycopg cannot
    parse: the interval result is then this statement's error, saying why, not a crash of the run."""
    url = make_url(evaluation_url).update_query_dict({"options": "-c IntervalStyle=iso_8601"})
    with loader.evaluation(url.render_as_string(hide_password=False)) as backend:
        failed = backend.execute("SELECT INTERVAL '1 day'")
        plain = backend.execute("SELECT 1")
    assert failed.error is not None and "IntervalStyle" in failed.error.message, failed
    assert plain.rows == [(1,)]  # the connection serves the next statement
