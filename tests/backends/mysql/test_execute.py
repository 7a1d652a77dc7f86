"""MySQL/MariaDB backend against the real local server: URLs, the reader login, the connection
pool, error kinds, timeouts (server-side and the client backstop), truncation, a dead connection,
and hostile statements that must be refused or cut off without changing the evaluation database
-- with the statement screen on, and off to prove the server-side barriers hold by themselves."""

from __future__ import annotations

import sqlite3
import ssl
import threading
import time
from collections.abc import Iterator
from datetime import time as time_of_day
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from polysql_testkit import mysql_fixtures
from polysql_testkit.interrupts import sigint_to_main_thread
from sqlalchemy.engine import URL, make_url

import polysql
from polysql.backends.mysql.backend import MySQLBackend, evaluation_database_name
from polysql.backends.mysql.connect import login_from_url, open_connection
from polysql.cli.main import EXIT_ENGINE, main
from polysql.core.errors import ConfigError, EngineError, EngineUnavailableError
from polysql.engines.registry import backend_class, connect

pytestmark = pytest.mark.mysql


fx = mysql_fixtures
admin_url, loader, make_sqlite = fx.admin_url, fx.loader, fx.make_sqlite

SOURCE = """
CREATE TABLE "Customer" (id INTEGER PRIMARY KEY, "Name" TEXT, balance DECIMAL(10,2));
INSERT INTO "Customer" VALUES (1, 'Zoë', 10.50), (2, 'Bob ', -3.25), (3, NULL, NULL);
CREATE TABLE "order" (id INTEGER PRIMARY KEY, customer INTEGER REFERENCES "Customer"(id),
                      placed DATE);
INSERT INTO "order" VALUES (10, 1, '2024-02-29'), (11, 2, NULL);
"""


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[URL, URL]]:
    """(evaluation database URL with admin credentials, admin server URL), loaded once."""
    server = fx.server_url()
    source = fx.build_sqlite(tmp_path_factory.mktemp("mysql_src") / "src.sqlite", SOURCE)
    url = server.set(database=fx.unique())
    with connect(f"sqlite:///{source}") as sqlite_source, \
            connect(url, read_only=False) as target:
        target.load(sqlite_source)
    yield url, server
    MySQLBackend.drop(url)


@pytest.fixture
def backend(evaluation: tuple[URL, URL]) -> Iterator[MySQLBackend]:
    with connect(evaluation[0]) as conn:
        assert isinstance(conn, MySQLBackend)
        yield conn


def _flavor(server: URL) -> str:
    conn = fx.admin_connection(server)
    try:
        return "MariaDB" if "mariadb" in conn.get_server_info().lower() else "MySQL"
    finally:
        conn.close()


# -- URLs and connecting ---------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "mysql://root@127.0.0.1:3306/shop",
    "mysql+pymysql://root@127.0.0.1:3306/shop",
    "mariadb://root@127.0.0.1:3306/shop",
    "mariadb+pymysql://root@127.0.0.1/shop",
])
def test_url_schemes_reach_the_mysql_backend(text: str) -> None:
    assert backend_class(text) is MySQLBackend
    login = login_from_url(make_url(text))
    assert (login.host, login.port, login.user, login.database) == ("127.0.0.1", 3306, "root",
                                                                   "shop")


def test_url_defaults_and_passwords() -> None:
    login = login_from_url(make_url("mysql:///shop"))
    assert (login.host, login.port, login.user, login.password) == ("127.0.0.1", 3306, "root", "")
    server = login_from_url(make_url("mysql://ann:s%40cret@db.example:3307/"))
    assert (server.user, server.password, server.host, server.port, server.database) == (
        "ann", "s@cret", "db.example", 3307, None)
    assert "s@cret" not in repr(server)


def test_bad_urls_are_config_errors() -> None:
    # an unknown connect option: tests/conformance/test_load_lifecycle.py
    with pytest.raises(ConfigError, match="PyMySQL"):
        login_from_url(make_url("mysql+mysqldb://root@127.0.0.1/x"))
    with pytest.raises(ConfigError, match="sslmode"):
        login_from_url(make_url("mysql://root@127.0.0.1/x?sslmode=require"))


def test_connections_share_one_preferred_tls_context(admin_url: URL) -> None:
    """PyMySQL tries TLS by default and builds a context for it per connection (most of a
    local login's time); polysql's connections share one, and still talk to a server without
    TLS, as this one may be."""
    login = login_from_url(admin_url)
    first, second = open_connection(login), open_connection(login)
    try:
        if not first.ssl:  # the pyproject floor, PyMySQL 1.1, has no "preferred" mode
            pytest.skip("this PyMySQL makes no TLS context unless TLS options are given")
        assert second.ssl
        assert first.ctx is second.ctx
        # It verifies nothing, as PyMySQL's own would not, so no certificate store is read.
        assert first.ctx.verify_mode == ssl.CERT_NONE and not first.ctx.check_hostname
        assert first.ctx.cert_store_stats()["x509_ca"] == 0
        for conn in (first, second):
            with conn.cursor() as cur:
                cur.execute("SELECT 1")
                assert cur.fetchone() == (1,)
    finally:
        first.close()
        second.close()


def test_version_names_the_product(admin_url: URL) -> None:
    with connect(admin_url, read_only=False) as server:
        version = server.version()
    conn = fx.admin_connection(admin_url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT VERSION()")
            raw = cur.fetchone()[0]
    finally:
        conn.close()
    product, number = version.split(" ")
    assert product == ("MariaDB" if "MariaDB" in raw else "MySQL")
    assert raw.startswith(number)


def test_evaluation_url_names_a_safe_database(tmp_path: Path) -> None:
    base = make_url("mysql://root@127.0.0.1/")
    url = MySQLBackend.evaluation_url(base, dataset="spider", db_id="concert_singer",
                                      cache_dir=tmp_path)
    assert url.database == "polysql_spider_concert_singer"
    assert url.host == "127.0.0.1" and url.username == "root"
    odd = evaluation_database_name("BIRD dev", "Student-Club")
    assert odd.startswith("polysql_bird_dev_student_club_") and len(odd) <= 64
    assert odd != evaluation_database_name("bird_dev", "student_club")
    long_one = evaluation_database_name("ds", "x" * 200)
    # as long as it may be: 64 characters once the GRANT escapes its underscores
    assert len(long_one) + long_one.count("_") == 64
    assert long_one != evaluation_database_name("ds", "x" * 199)


# -- who evaluated SQL runs as ---------------------------------------------------------------

def test_evaluation_runs_as_the_select_only_reader(backend: MySQLBackend,
                                                   evaluation: tuple[URL, URL]) -> None:
    url, server = evaluation
    assert backend.evaluation_user is not None
    assert backend.evaluation_user.startswith("polysql_r_")
    who = backend.execute("SELECT CURRENT_USER()")
    assert who.ok and who.rows[0][0].startswith(backend.evaluation_user + "@")
    conn = fx.admin_connection(server)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SHOW GRANTS FOR '{backend.evaluation_user}'@'%'")
            grants = [r[0] for r in cur.fetchall()]
    finally:
        conn.close()
    privileges = [g.split(" ON ")[0].removeprefix("GRANT ") for g in grants]
    assert sorted(privileges) == ["SELECT", "USAGE"]
    # "_" is a wildcard in database-level grants, so the name is granted escaped.
    escaped = url.database.replace("_", "\\_")
    assert [g for g in grants if g.startswith("GRANT SELECT")] == [
        f"GRANT SELECT ON `{escaped}`.* TO `{backend.evaluation_user}`@`%`"]


def test_reader_sees_only_its_database(backend: MySQLBackend,
                                       evaluation: tuple[URL, URL]) -> None:
    schemas = backend.execute("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA")
    assert sorted(r[0] for r in schemas.rows) == sorted(["information_schema",
                                                          evaluation[0].database])
    meta = backend.execute("SELECT * FROM polysql_meta.loads")
    assert meta.error is not None and meta.error.kind == "forbidden"


def test_compare_on_a_server_url_is_an_engine_error_not_a_verdict(admin_url: URL,
                                                                  tmp_path: Path) -> None:
    """``polysql compare --pred-db mysql://root@host/``: nothing may run as root, which is the
    engine's configuration, so compare exits 3 with the reason -- it used to print 'mismatch:
    prediction failed' (exit 1), counting the refusal against the prediction."""
    gold_db = tmp_path / "gold.sqlite"
    sqlite3.connect(gold_db).close()
    server = admin_url.render_as_string(hide_password=False)
    result = CliRunner().invoke(main, ["compare", "--db", f"sqlite:///{gold_db}", "--gold",
                                       "SELECT 1", "--pred-db", server, "--pred", "SELECT 1"])
    assert result.exit_code == EXIT_ENGINE, result.output
    assert "could not run the predicted query" in result.output and "never runs as" in result.output
    assert "mismatch" not in result.output


def test_privileged_login_without_a_reader_is_refused(admin_url: URL) -> None:
    database = fx.unique()
    conn = fx.admin_connection(admin_url)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{database}`")
        with pytest.raises(EngineError, match="never runs as 'root'"):
            connect(admin_url.set(database=database))
        # A server URL may be opened (version, loading), but runs nothing as root: the engine
        # is unusable as given, which is no statement's fault.
        with connect(admin_url) as server:
            refused = server.execute("SELECT 1")
        assert refused.error is not None and refused.error.kind == "unavailable"
        assert "never runs as 'root'" in refused.error.message
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
        conn.close()


def test_a_select_only_login_is_used_as_given(evaluation: tuple[URL, URL]) -> None:
    url, server = evaluation
    user, password = fx.unique("ro"), "pw-" + fx.unique()
    conn = fx.admin_connection(server)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'")
            cur.execute(f"GRANT SELECT ON `{url.database}`.* TO '{user}'@'%'")
        with connect(url.set(username=user, password=password)) as own:
            assert own.evaluation_user == user
            assert own.execute("SELECT count(*) FROM `Customer`").rows == [(3,)]
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{user}'@'%'")
        conn.close()


def test_a_missing_reader_fails_at_connect(loader: fx.Loader, make_sqlite: Path,
                                           admin_url: URL) -> None:
    url, _ = loader(make_sqlite("CREATE TABLE t (x INTEGER);"))
    with connect(url) as backend:
        reader = backend.evaluation_user
    conn = fx.admin_connection(admin_url)
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP USER '{reader}'@'%'")
    finally:
        conn.close()
    with pytest.raises(EngineUnavailableError, match="load the database again"):
        connect(url)
    _, report = loader(make_sqlite("CREATE TABLE t (x INTEGER);"), database=url.database)
    assert report.skipped  # same source: nothing to copy, but the reader is back
    with connect(url) as backend:
        assert backend.execute("SELECT count(*) FROM t").rows == [(0,)]


def test_loading_connection_also_evaluates_as_the_reader(evaluation: tuple[URL, URL]) -> None:
    with connect(evaluation[0], read_only=False) as admin:
        result = admin.execute("SELECT CURRENT_USER()")
        assert result.ok and result.rows[0][0].startswith("polysql_r_")


# -- results, errors, pool -------------------------------------------------------------------

def test_rows_columns_and_engine_types(backend: MySQLBackend) -> None:
    result = backend.execute(
        'SELECT id, `Name`, balance, CAST(\'2024-01-02\' AS DATE) AS d, '
        'CAST(\'2024-01-02 03:04:05.5\' AS DATETIME(6)) AS ts, 0.5e0 AS f, NULL AS n, '
        'X\'00FF\' AS b FROM `Customer` ORDER BY id')
    assert result.ok, result.error
    assert result.columns == ["id", "Name", "balance", "d", "ts", "f", "n", "b"]
    assert result.types == ["BIGINT", "VARCHAR", "DECIMAL", "DATE", "DATETIME", "DOUBLE", "NULL",
                            "VARBINARY"]
    first = result.rows[0]
    assert first[:3] == (1, "Zoë", Decimal("10.50"))
    assert str(first[3]) == "2024-01-02" and first[4].microsecond == 500000
    assert first[5] == 0.5 and first[6] is None and first[7] == b"\x00\xff"
    assert result.rows[1][1] == "Bob "  # trailing space kept


def test_a_statement_without_a_result_set_is_judged_as_such(evaluation: tuple[URL, URL],
                                                            backend: MySQLBackend) -> None:
    """DO evaluates its expressions and returns nothing: the verdict says no result set came
    back, rather than that zero columns could not be aligned. (The statement screen refuses DO;
    the server alone runs it.)"""
    gold = backend.execute("SELECT id FROM `Customer`")
    with connect(evaluation[0], screen=False) as unscreened:
        pred = unscreened.execute("DO 1")
    assert pred.ok and pred.columns == [] and pred.rows == []
    verdict = polysql.compare(gold, pred)
    assert not verdict.match
    assert verdict.reason == "the prediction returned no result set (no columns); gold has " \
        "1 column ['id']"


@pytest.mark.parametrize(("sql", "kind", "sqlstate"), [
    ("SELEC 1", "syntax", "42000"),
    ("SELECT * FROM `Customer` WHERE", "syntax", "42000"),
    ("SELECT nope FROM `Customer`", "runtime", "42S22"),
    ("SELECT * FROM missing_table", "runtime", "42S02"),
    ("SELECT (SELECT id FROM `Customer`)", "runtime", "21000"),
    ("SELECT * FROM mysql.user", "forbidden", "42000"),
])
def test_error_kinds_and_sqlstates(backend: MySQLBackend, sql: str, kind: str,
                                   sqlstate: str) -> None:
    result = backend.execute(sql)
    assert result.error is not None, result
    assert (result.error.kind, result.error.sqlstate) == (kind, sqlstate), result.error
    assert result.rows == [] and result.columns == []


def test_unknown_function_is_runtime_but_a_routine_the_reader_may_not_run_is_forbidden(
        evaluation: tuple[URL, URL]) -> None:
    url, server = evaluation
    other = fx.unique("rt")
    function = fx.unique("f")
    conn = fx.admin_connection(server)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{other}`")
            for database in (url.database, other):
                cur.execute(f"CREATE FUNCTION `{database}`.`{function}`(x INT) RETURNS INT "
                            f"DETERMINISTIC RETURN x + 1")
        with connect(url) as backend:
            unknown = backend.execute("SELECT no_such_function_xyz(1)")
            assert unknown.error is not None and unknown.error.kind == "runtime", unknown.error
            assert "for routine" in unknown.error.message  # the server's own words are kept
            assert "does not exist" in unknown.error.message
            assert backend.execute(f"SELECT `{other}`.no_such_function_xyz(1)").error.kind \
                == "runtime"
            # routines that exist but the SELECT-only reader may not execute: refusals
            for call in (f"SELECT {function}(1)", f"SELECT `{other}`.{function}(1)"):
                refused = backend.execute(call)
                assert refused.error is not None and refused.error.kind == "forbidden", \
                    (call, refused.error)
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP FUNCTION IF EXISTS `{url.database}`.`{function}`")
            cur.execute(f"DROP DATABASE IF EXISTS `{other}`")
        conn.close()


def test_unknown_function_stays_forbidden_when_no_login_can_look_routines_up(
        evaluation: tuple[URL, URL]) -> None:
    """Opened with the reader's own login, nothing here may see the database's routines, so
    an unknown function cannot be told from a refused one: the server's answer stands."""
    url, server = evaluation
    user, password = fx.unique("ro"), "pw-" + fx.unique()
    conn = fx.admin_connection(server)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'")
            cur.execute(f"GRANT SELECT ON `{url.database}`.* TO '{user}'@'%'")
        with connect(url.set(username=user, password=password)) as own:
            result = own.execute("SELECT no_such_function_xyz(1)")
            assert result.error is not None, result
            if "for routine" in result.error.message:  # MariaDB; MySQL 8 says it does not exist
                assert result.error.kind == "forbidden", result.error
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{user}'@'%'")
        conn.close()


def test_max_rows_truncates_without_reading_everything(backend: MySQLBackend) -> None:
    huge = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000000) "
            "SELECT i FROM n")
    started = time.perf_counter()
    result = backend.execute(huge, max_rows=10, timeout=60)
    assert result.ok and result.truncated
    assert [r[0] for r in result.rows] == list(range(1, 11))
    exact = backend.execute("SELECT id FROM `Customer`", max_rows=3)
    assert exact.ok and not exact.truncated and len(exact.rows) == 3
    assert time.perf_counter() - started < 30


def test_pool_reuses_a_few_connections(evaluation: tuple[URL, URL]) -> None:
    url, server = evaluation
    with connect(url, pool_size=3) as backend:
        assert isinstance(backend, MySQLBackend)
        for i in range(50):
            assert backend.execute(f"SELECT {i}").rows == [(i,)]
        assert backend.connections_opened == 1
        errors: list[object] = []

        def worker() -> None:
            for _ in range(10):
                result = backend.execute("SELECT SLEEP(0.01)")
                if not result.ok:
                    errors.append(result.error)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert backend.connections_opened <= 3
        assert _sessions(server, backend.evaluation_user) <= 3


def _sessions(server: URL, user: str | None) -> int:
    conn = fx.admin_connection(server)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM information_schema.PROCESSLIST WHERE USER = %s",
                        (user,))
            return int(cur.fetchone()[0])
    finally:
        conn.close()


def test_dead_connection_is_unavailable_then_reconnects(backend: MySQLBackend,
                                                        evaluation: tuple[URL, URL]) -> None:
    assert backend.execute("SELECT 1").ok
    conn = fx.admin_connection(evaluation[1])
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = %s",
                        (backend.evaluation_user,))
            for (thread_id,) in cur.fetchall():
                cur.execute(f"KILL CONNECTION {thread_id}")
    finally:
        conn.close()
    broken = backend.execute("SELECT 2")
    assert broken.error is not None and broken.error.kind == "unavailable", broken
    assert backend.execute("SELECT 3").rows == [(3,)]


def test_session_state_does_not_outlive_the_statement(evaluation: tuple[URL, URL]) -> None:
    url, server = evaluation
    lock = fx.unique("lock")
    # The screen refuses GET_LOCK outright; without it the server-side barrier must still hold.
    with connect(url, pool_size=1) as screened:
        refused = screened.execute(f"SELECT GET_LOCK('{lock}', 0)")
        assert refused.error is not None and refused.error.kind == "forbidden", refused
    with connect(url, pool_size=1, screen=False) as backend:
        assert backend.execute(f"SELECT GET_LOCK('{lock}', 0)").rows == [(1,)]
        assert backend.execute("SELECT @polysql_v := 5").rows == [(5,)]
        # One pooled connection: had it been reused, the variable would still be set.
        assert backend.execute("SELECT @polysql_v").rows == [(None,)]
        conn = fx.admin_connection(server)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT IS_FREE_LOCK(%s)", (lock,))
                assert cur.fetchone()[0] == 1
        finally:
            conn.close()


# -- timeouts --------------------------------------------------------------------------------

def test_server_timeout_stops_a_long_statement(backend: MySQLBackend) -> None:
    started = time.perf_counter()
    result = backend.execute("SELECT SLEEP(600)", timeout=1)
    assert result.error is not None and result.error.kind == "timeout", result
    assert time.perf_counter() - started < 1 + backend.backstop_grace
    heavy = backend.execute(
        "SELECT count(*) FROM information_schema.COLUMNS a, information_schema.COLUMNS b, "
        "information_schema.COLUMNS c", timeout=1)
    assert heavy.error is not None and heavy.error.kind == "timeout", heavy
    assert backend.execute("SELECT 1", timeout=1).rows == [(1,)]


def _running(server: URL, user: str, marker: str) -> int:
    """How many statements of ``user`` whose text holds ``marker`` the server still runs."""
    conn = fx.admin_connection(server)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT count(*) FROM information_schema.PROCESSLIST "
                        "WHERE USER = %s AND INFO LIKE %s", (user, f"%{marker}%"))
            return int(cur.fetchone()[0])
    finally:
        conn.close()


def test_backstop_cancels_what_the_server_timeout_misses(evaluation: tuple[URL, URL]) -> None:
    url, server = evaluation
    # Both statements lift the server-side limit for themselves; only the backstop is left.
    escape = ("SET STATEMENT max_statement_time = 0 FOR SELECT SLEEP(600)"
              if _flavor(server) == "MariaDB" else "SELECT /*+ MAX_EXECUTION_TIME(0) */ SLEEP(600)")
    with connect(url, screen=False, backstop_grace=0.5) as backend:
        assert isinstance(backend, MySQLBackend)
        started = time.perf_counter()
        result = backend.execute(escape, timeout=1)
        elapsed = time.perf_counter() - started
        assert result.error is not None and result.error.kind == "timeout", result
        assert 1.4 < elapsed < 5
        assert backend.execute("SELECT 1").rows == [(1,)]
        assert _running(server, backend.evaluation_user, "SLEEP(600)") == 0



def test_ctrl_c_stops_the_statement_on_the_server_too(evaluation: tuple[URL, URL]) -> None:
    """KeyboardInterrupt reaches the caller at once, and the statement does not run on in the
    server until its timeout; the connection is not lost to the pool (more Ctrl-Cs than the
    pool has connections, then a query)."""
    url, server = evaluation
    with connect(url, pool_size=2) as backend:
        assert isinstance(backend, MySQLBackend)
        for _ in range(3):
            started = time.perf_counter()
            with sigint_to_main_thread(0.5), pytest.raises(KeyboardInterrupt):
                backend.execute("SELECT SLEEP(600) AS ctrl_c_probe", timeout=900)
            assert time.perf_counter() - started < 10
        time.sleep(0.5)  # KILL QUERY is asynchronous on the server
        assert _running(server, backend.evaluation_user, "ctrl_c_probe") == 0
        started = time.perf_counter()
        assert backend.execute("SELECT 1", timeout=5).rows == [(1,)]
        assert time.perf_counter() - started < 5


# -- hostile statements ----------------------------------------------------------------------

HOSTILE = [
    "DROP TABLE `Customer`",
    "DROP DATABASE {db}",
    "DELETE FROM `Customer`",
    "UPDATE `Customer` SET balance = 0",
    "INSERT INTO `Customer` (id) VALUES (99)",
    "REPLACE INTO `Customer` (id) VALUES (1)",
    "TRUNCATE TABLE `order`",
    "CREATE TABLE evil (x INT)",
    "CREATE DATABASE polysql_evil",
    "ALTER TABLE `Customer` ADD COLUMN evil INT",
    "RENAME TABLE `Customer` TO gone",
    "CREATE USER evil IDENTIFIED BY 'x'",
    "GRANT ALL ON *.* TO CURRENT_USER()",
    "SET GLOBAL max_connections = 3",
    "SET GLOBAL read_only = 1",
    "SELECT LOAD_FILE('/etc/passwd')",
    "SELECT * FROM `Customer` INTO OUTFILE '/tmp/polysql_evil_{tag}.txt'",
    "SELECT 'x' INTO DUMPFILE '/tmp/polysql_evil_{tag}.bin'",
    "LOAD DATA INFILE '/etc/passwd' INTO TABLE `Customer`",
    "LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE `Customer`",
    "SELECT 1; DROP TABLE `Customer`",
    "LOCK TABLES `Customer` WRITE",
    "FLUSH TABLES",
    "SHUTDOWN",
    "SELECT SLEEP(600)",
    "DO SLEEP(600)",
]


@pytest.mark.parametrize(("sql", "reason"), [
    ("DO GET_LOCK('polysql_evil', 1)", "this is a DO statement"),
    ("HANDLER `Customer` OPEN", "this is a HANDLER statement"),
    ("/* plain */ do sleep(1)", "this is a DO statement"),
    ("/*!50000 DROP TABLE `Customer`*/", "only queries may run; this is a DROP statement"),
    ("/*M!100100 DELETE FROM `Customer`*/", "this is a DELETE statement"),
    ("SELECT 1 /*!50000 , GET_LOCK('polysql_evil', 1) */", "function get_lock()"),
])
def test_statements_the_parser_cannot_see_are_screened(backend: MySQLBackend, sql: str,
                                                       reason: str) -> None:
    """DO and HANDLER, which the parser cannot read, and code inside executable comments, which
    the server runs but every parser skips: the screen refuses them like any other."""
    result = backend.execute(sql)
    assert result.error is not None and result.error.kind == "forbidden", result
    assert reason in result.error.message
    assert backend.execute("SELECT count(*) FROM `Customer`").rows == [(3,)]


def test_executable_comments_that_hold_a_query_still_run(backend: MySQLBackend) -> None:
    result = backend.execute("SELECT 1 AS one /*!50000 , 2 AS two */")
    assert result.ok, result.error
    assert result.rows == [(1, 2)]


def _hostile(db: str, tag: str) -> list[str]:
    return [s.replace("{db}", f"`{db}`").replace("{tag}", tag) for s in HOSTILE]


@pytest.mark.parametrize("screen", [True, False], ids=["screened", "server-only"])
def test_hostile_statements_change_nothing(evaluation: tuple[URL, URL], screen: bool) -> None:
    url, server = evaluation
    tag = fx.unique("h")
    with connect(url) as probe:
        reader = probe.evaluation_user
    before = fx.checksum(server, url.database, reader)
    assert "<grants>" in before
    outcomes: dict[str, str] = {}
    with connect(url, screen=screen, backstop_grace=1.0) as backend:
        for sql in _hostile(url.database, tag):
            started = time.perf_counter()
            result = backend.execute(sql, timeout=1)
            assert time.perf_counter() - started < 6, sql
            if result.error is not None:
                outcomes[sql] = result.error.kind
            else:
                # Only LOAD_FILE may "succeed" without the screen: without the FILE privilege
                # the server answers NULL, so nothing is read.
                assert "LOAD_FILE" in sql and result.rows == [(None,)], (sql, result)
                outcomes[sql] = "nothing read"
        assert backend.execute("SELECT count(*) FROM `Customer`").rows == [(3,)]
    allowed = {"forbidden", "timeout"} if screen else {"forbidden", "timeout", "syntax",
                                                        "nothing read"}
    assert {sql: kind for sql, kind in outcomes.items() if kind not in allowed} == {}
    sleeps = [sql for sql in outcomes if "SLEEP(600)" in sql]
    assert all(outcomes[sql] in ("timeout", "forbidden") for sql in sleeps)
    if screen:
        assert set(outcomes.values()) <= {"forbidden", "timeout"}
        assert outcomes["SELECT SLEEP(600)"] == "timeout"
    else:
        assert outcomes["SELECT SLEEP(600)"] == "timeout"
        assert outcomes["DROP TABLE `Customer`"] == "forbidden"
        assert outcomes["SET GLOBAL max_connections = 3"] == "forbidden"
    assert fx.checksum(server, url.database, reader) == before
    assert not Path(f"/tmp/polysql_evil_{tag}.txt").exists()
    assert not Path(f"/tmp/polysql_evil_{tag}.bin").exists()
    assert not fx.database_exists(server, "polysql_evil")
    assert not fx.account_exists(server, "evil")


def test_read_only_transaction_alone_refuses_writes(evaluation: tuple[URL, URL]) -> None:
    """The transaction barrier by itself: even a login allowed to write cannot, inside the
    read-only transaction execute wraps every statement in."""
    from polysql.backends.mysql.connect import open_connection
    from polysql.backends.mysql.execute import Backstop, Flavor, run_statement

    url, server = evaluation
    before = fx.checksum(server, url.database)
    login = login_from_url(url)
    conn = open_connection(login)
    backstop = Backstop(login, 1.0)
    try:
        flavor = Flavor(_flavor(server))
        for sql in ("DELETE FROM `Customer`", "UPDATE `Customer` SET balance = 0",
                    "INSERT INTO `Customer` (id) VALUES (99)"):
            outcome = run_statement(conn, sql, timeout=5, max_rows=10, flavor=flavor,
                                    backstop=backstop, engine="mysql")
            assert outcome.result.error is not None
            assert (outcome.result.error.kind, outcome.result.error.sqlstate) == (
                "forbidden", "25006"), outcome.result
    finally:
        backstop.close()
        conn.close()
    assert fx.checksum(server, url.database) == before


def test_division_keeps_its_digits_so_it_compares_with_other_engines(backend: MySQLBackend) -> None:
    # With MySQL's default div_precision_increment of 4, 7/3 would be 2.3333 and miss SQLite's
    # 2.3333333333333335 by more than the comparison tolerance.
    import polysql

    mysql = backend.execute("SELECT 7/3 AS q")
    with polysql.connect("sqlite://", read_only=False) as lite:
        gold = lite.execute("SELECT 7.0/3 AS q")
    verdict = polysql.compare(gold, mysql)
    assert verdict.match, verdict.reason


def test_a_time_within_a_day_is_a_time_of_day_and_a_longer_one_its_text(
        backend: MySQLBackend) -> None:
    result = backend.execute(
        "SELECT TIME('2024-01-02 12:30:00.5') AS t, CAST('07:08:09' AS TIME) AS plain, "
        "CAST('23:59:59.999999' AS TIME(6)) AS last, CAST('-01:00:00' AS TIME) AS negative, "
        "CAST('838:59:59' AS TIME) AS longest, CAST(NULL AS TIME) AS missing")
    assert result.ok, result.error
    assert result.types == ["TIME"] * 6
    assert result.rows == [(time_of_day(12, 30, 0, 500000), time_of_day(7, 8, 9),
                            time_of_day(23, 59, 59, 999999),
                            "-01:00:00", "838:59:59", None)]


def test_a_time_compares_with_the_text_sqlite_gives_for_it(backend: MySQLBackend) -> None:
    # SQLite's time() is text without fractional digits; MySQL's TIME() of a DATETIME(6) has six
    mysql = backend.execute("SELECT TIME(CAST('2024-01-02 08:15:00' AS DATETIME(6))) AS t, "
                            "TIME(CAST('2024-01-02 08:15:00.25' AS DATETIME(6))) AS f")
    with polysql.connect("sqlite://", read_only=False) as lite:
        gold = lite.execute("SELECT time('2024-01-02 08:15:00') AS t, "
                            "strftime('%H:%M:%f', '2024-01-02 08:15:00.250') AS f")
        other = lite.execute("SELECT time('2024-01-02 08:15:01') AS t, "
                             "strftime('%H:%M:%f', '2024-01-02 08:15:00.250') AS f")
    verdict = polysql.compare(gold, mysql)
    assert verdict.match, verdict.reason
    assert not polysql.compare(other, mysql).match


def test_the_servers_own_limit_lies_past_the_deadline(backend: MySQLBackend) -> None:
    """A statement the server interrupts may still end "normally" (DO SLEEP answers 1); with
    the server's limit past polysql's deadline, such a result always arrives late enough to be
    counted a timeout rather than an empty answer."""
    variable = ("@@SESSION.max_statement_time" if "mariadb" in backend.version().lower()
                else "@@SESSION.max_execution_time / 1000")
    result = backend.execute(f"SELECT {variable}", timeout=2)
    assert result.error is None
    (limit,) = result.rows[0]
    assert 2 < float(limit) <= 2.1


def test_sessions_do_not_take_the_servers_zone_or_month_names(
        evaluation: tuple[URL, URL]) -> None:
    """The server's defaults are moved for the length of the test (SET GLOBAL reaches only
    sessions opened afterwards): a zone far from UTC and German month names. Evaluation sessions
    still read a naive DATETIME as UTC and name months in English, as every other engine does."""
    url, server = evaluation
    admin = fx.admin_connection(server)
    with admin.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.time_zone, @@GLOBAL.lc_time_names")
        zone_before, names_before = cur.fetchone()
        cur.execute("SET GLOBAL time_zone = '+05:45', GLOBAL lc_time_names = 'de_DE'")
    try:
        plain = fx.admin_connection(server)
        with plain.cursor() as cur:
            cur.execute("SELECT @@SESSION.time_zone, MONTHNAME('2021-03-02')")
            plain_view = cur.fetchone()
        plain.close()
        with connect(url) as backend:
            result = backend.execute("SELECT UNIX_TIMESTAMP(CAST('2021-03-02 08:00:00' AS "
                                     "DATETIME)), @@SESSION.time_zone, MONTHNAME('2021-03-02')")
    finally:
        with admin.cursor() as cur:
            cur.execute("SET GLOBAL time_zone = %s, GLOBAL lc_time_names = %s",
                        (zone_before, names_before))
        admin.close()
    assert plain_view == ("+05:45", "März")  # the server's defaults really moved
    assert result.ok, result.error
    assert [(int(epoch), zone, month) for epoch, zone, month in result.rows] == [
        (1614672000, "+00:00", "March")]
