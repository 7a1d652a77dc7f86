"""Snowflake backend specifics, against the fakesnow emulator through the real connector over HTTP:
URL handling, load fidelity and idempotency, atomic replacement, timeouts, hostile SQL, labels.

The emulator is POLYSQL_SNOWFLAKE_URL when set, otherwise one this process starts (see
polysql_testkit.snowflake_emulator). When it cannot be had the server tests skip, unless
POLYSQL_REQUIRE lists "snowflake": then they fail.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import signal
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from polysql_testkit import engine_snowflake, snowflake_emulator
from polysql_testkit.availability import is_required, require_client
from sqlalchemy.engine import URL, make_url


def _required() -> bool:
    return is_required("snowflake")


require_client("snowflake")  # skips the module (names the extra) before the imports that need it

from polysql.backends.snowflake import execute as snowflake_exec  # noqa: E402
from polysql.backends.snowflake.backend import SnowflakeBackend, evaluation_database_name  # noqa: E402
from polysql.backends.snowflake.connect import (  # noqa: E402
    PASSWORD_ENV,
    PRIVATE_KEY_PASSPHRASE_ENV,
    PRIVATE_KEY_PATH_ENV,
    connection_params,
    describe,
)
from polysql.backends.snowflake.load import SnowflakeLoadReport  # noqa: E402
from polysql.core.errors import ConfigError  # noqa: E402
from polysql.engines.registry import connect  # noqa: E402

pytestmark = pytest.mark.snowflake


# -- URL handling (no server needed) -------------------------------------------------------------

def test_real_account_url_becomes_connector_parameters() -> None:
    url = make_url("snowflake://alice@xy12345.eu-west-1/SALES/PUBLIC?warehouse=WH&role=LOADER")
    params = connection_params(url, environ={PASSWORD_ENV: "s3cret"})
    assert params["account"] == "xy12345.eu-west-1" and params["user"] == "alice"
    assert (params["database"], params["schema"]) == ("SALES", "PUBLIC")
    assert (params["warehouse"], params["role"]) == ("WH", "LOADER")
    assert params["password"] == "s3cret"
    assert "protocol" not in params
    assert "s3cret" not in describe(params)
    # sessions read naive timestamps as UTC (the account's own default is America/Los_Angeles)
    assert params["session_parameters"]["TIMEZONE"] == "UTC"


def test_case_sensitive_names_are_quoted_for_the_login() -> None:
    params = connection_params(make_url("snowflake://a@acct/My%20Db/sales"), environ={})
    assert (params["database"], params["schema"]) == ('"My Db"', '"sales"')


def test_key_pair_from_the_environment_wins_over_a_password() -> None:
    env = {PRIVATE_KEY_PATH_ENV: "/keys/rsa.p8", PRIVATE_KEY_PASSPHRASE_ENV: "pp",
           PASSWORD_ENV: "unused"}
    params = connection_params(make_url("snowflake://a@acct/DB"), environ=env)
    assert params["private_key_file"] == "/keys/rsa.p8"
    assert params["private_key_file_pwd"] == "pp"
    assert params["authenticator"] == "SNOWFLAKE_JWT"
    assert "password" not in params and "pp" not in describe(params)


def test_reader_role_replaces_the_login_role_for_evaluation() -> None:
    url = make_url("snowflake://a@acct/DB/PUBLIC?role=ADMIN&reader_role=READER")
    assert connection_params(url, role="READER", environ={})["role"] == "READER"


def test_emulator_url_speaks_plain_http_to_its_host_and_port() -> None:
    url = make_url("snowflake://fake:snow@127.0.0.1:4444/DB?emulator=fakesnow")
    params = connection_params(url, environ={})
    assert (params["host"], params["port"], params["protocol"]) == ("127.0.0.1", 4444, "http")
    assert SnowflakeBackend.is_emulated(url)
    assert not SnowflakeBackend.is_emulated(make_url("snowflake://a@acct/DB"))


@pytest.mark.parametrize("url", [
    "snowflake://a@acct/DB?wharehouse=WH",  # a typo is refused, not ignored
    "snowflake://a@acct/DB/S/extra",
    "snowflake://fake:snow@127.0.0.1:1/DB?emulator=localstack",
    "snowflake://@acct/DB",
])
def test_bad_urls_are_config_errors(url: str) -> None:
    with pytest.raises(ConfigError):
        connection_params(make_url(url), environ={})


def test_evaluation_url_names_a_database_per_dataset_and_db() -> None:
    base = make_url("snowflake://a@acct/?warehouse=WH")
    url = SnowflakeBackend.evaluation_url(base, dataset="spider", db_id="concert_singer",
                                          cache_dir=Path("/unused"))
    assert url.database == "POLYSQL_SPIDER_CONCERT_SINGER/PUBLIC"
    assert url.query["warehouse"] == "WH"
    odd = evaluation_database_name("bird dev", "db-1")
    assert odd.startswith("POLYSQL_BIRD_DEV_DB_1_") and odd != evaluation_database_name(
        "bird_dev", "db_1")


# -- the emulator ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server() -> URL:
    try:
        return engine_snowflake.base_url()
    except engine_snowflake.ServerUnavailable as exc:
        if _required():
            pytest.fail(f"{exc} (POLYSQL_REQUIRE lists snowflake)")
        pytest.skip(str(exc))


class Databases:
    """Fresh databases on the emulator for one test module, dropped afterwards."""

    def __init__(self, server: URL) -> None:
        self.server = server
        self.names: list[str] = []

    def url(self, schema: str = "PUBLIC") -> URL:
        name = f"POLYSQL_TEST_{uuid.uuid4().hex[:10].upper()}"
        self.names.append(name)
        return self.server.set(database=f"{name}/{schema}")

    def drop_all(self) -> None:
        for name in self.names:
            engine_snowflake.drop_database(self.server, name)


@pytest.fixture(scope="module")
def databases(server: URL) -> Iterator[Databases]:
    made = Databases(server)
    try:
        yield made
    finally:
        made.drop_all()


def _sqlite(path: Path, script: str, rows: dict[str, list[tuple[Any, ...]]] | None = None) -> Path:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(script)
        for table, values in (rows or {}).items():
            marks = ", ".join("?" * len(values[0]))
            conn.executemany(f'INSERT INTO "{table}" VALUES ({marks})', values)
        conn.commit()
    finally:
        conn.close()
    return path


def _load(sqlite_path: Path, url: URL, **options: Any) -> SnowflakeLoadReport:
    with connect(f"sqlite:///{sqlite_path}") as source, \
            SnowflakeBackend.connect(url, read_only=False, **options) as target:
        report = target.load(source)
    assert isinstance(report, SnowflakeLoadReport)
    return report


def _admin_rows(url: URL, sql: str) -> list[tuple[Any, ...]]:
    """Rows read on an administrator connection (no screen), independent of the evaluation one."""
    with SnowflakeBackend.connect(url, read_only=False) as admin:
        result = admin.execute(sql)
    assert result.ok, result.error
    return result.rows


# Every logical type, with the values that most often go wrong on the way. (No NaN: SQLite
# stores a NaN as NULL.)
TYPES_SCRIPT = """
CREATE TABLE "Typed Values" (
    "id" INTEGER PRIMARY KEY, "big" INTEGER, "ratio" REAL, "money" NUMERIC(12,4),
    "label" TEXT, "raw" BLOB, "day" DATE, "at" DATETIME, "flag" BOOLEAN
);
"""
TYPED_ROWS = [
    (1, 2**63 - 1, 0.1, Decimal("-12345678.1234"), "it's \\ \"q\" \n\t zoë 😀",
     b"\x00\xff'\\", "0001-01-01", "0001-01-01 00:00:00", 1),
    (2, -2**63, float("inf"), Decimal("0.0001"), "", b"", "9999-12-31",
     "9999-12-31 23:59:59.999999", 0),
    (3, 0, -2.5, None, None, None, None, None, None),
    (4, None, float("-inf"), Decimal("100"), "  padded  ", b"abc", "2020-02-29",
     "2020-02-29 12:00:00.000001", None),
    (5, 7, 1e-300, Decimal("5.5"), "?", b"?", "1970-01-01", "1970-01-01 00:00:00", 1),
]


def _expected_typed() -> list[tuple[Any, ...]]:
    """What Snowflake should hand back for TYPED_ROWS, written out independently."""
    def when(text: str | None) -> Any:
        if text is None:
            return None
        return dt.datetime.fromisoformat(text) if " " in text else dt.date.fromisoformat(text)

    return [(i, big, ratio, money, label, raw, when(day), when(at),
             None if flag is None else bool(flag))
            for i, big, ratio, money, label, raw, day, at, flag in TYPED_ROWS]


def _same(found: Any, wanted: Any) -> bool:
    if isinstance(wanted, float) and isinstance(found, float):
        return found == wanted and math.copysign(1, found) == math.copysign(1, wanted)
    if isinstance(wanted, Decimal):
        return isinstance(found, Decimal) and found == wanted
    return type(found) is type(wanted) and found == wanted


@pytest.fixture(scope="module")
def typed(databases: Databases, tmp_path_factory: pytest.TempPathFactory) -> URL:
    source = _sqlite(tmp_path_factory.mktemp("typed") / "typed.sqlite", TYPES_SCRIPT,
                     {"Typed Values": [
                         (*r[:3], None if r[3] is None else str(r[3]), *r[4:]) for r in TYPED_ROWS
                     ]})
    url = databases.url()
    report = _load(source, url)
    assert report.tables == {"Typed Values": len(TYPED_ROWS)} and not report.coercions
    return url


def test_every_type_round_trips_exactly(typed: URL) -> None:
    with SnowflakeBackend.connect(typed) as backend:
        result = backend.execute('SELECT * FROM "Typed Values" ORDER BY "id"')
    assert result.ok, result.error
    assert result.types == ["NUMBER(38,0)", "NUMBER(38,0)", "DOUBLE", "NUMBER(12,4)", "VARCHAR",
                            "BINARY", "DATE", "TIMESTAMP_NTZ", "BOOLEAN"]
    for found, wanted in zip(result.rows, _expected_typed(), strict=True):
        mismatched = [(f, w) for f, w in zip(found, wanted, strict=True) if not _same(f, w)]
        assert not mismatched, (wanted[0], mismatched)


def test_a_float_result_is_compared_as_the_64_bit_number_it_is(reader: SnowflakeBackend) -> None:
    """Snowflake's FLOAT is 64 bits: two short decimals 4e-6 apart stay different answers, as
    they would from any other engine's DOUBLE (a 32-bit reading would let them match)."""
    import polysql

    gold_result = polysql.Result(["x"], [(2.5,)], types=["REAL"])  # as SQLite returns it
    near = reader.execute("SELECT CAST(2.50001 AS FLOAT) AS x")
    same = reader.execute("SELECT CAST(2.5 AS FLOAT) AS x")
    assert near.ok and same.ok, (near.error, same.error)
    assert near.types == ["DOUBLE"]
    assert not polysql.compare(gold_result, near).match
    assert polysql.compare(gold_result, same).match


def test_tables_are_described_with_their_types_and_key(typed: URL) -> None:
    with SnowflakeBackend.connect(typed) as backend:
        (table,) = backend.tables()
    assert table.name == "Typed Values" and table.row_count == len(TYPED_ROWS)
    assert table.primary_key == ("id",)
    assert [str(c.type) for c in table.columns] == [
        "integer", "integer", "float", "decimal(12,4)", "text", "blob", "date", "timestamp",
        "boolean"]


def test_version_labels_the_emulator(typed: URL) -> None:
    with SnowflakeBackend.connect(typed) as backend:
        assert backend.emulated
        version = backend.version()
    assert version.startswith(f"fakesnow {snowflake_emulator.EMULATOR_LABEL} (emulated Snowflake")
    assert "DuckDB" in version


def test_put_copy_path_is_recorded_and_never_costs_fidelity(
        databases: Databases, tmp_path: Path) -> None:
    source = _sqlite(tmp_path / "s.sqlite", TYPES_SCRIPT, {"Typed Values": [
        (*r[:3], None if r[3] is None else str(r[3]), *r[4:]) for r in TYPED_ROWS]})
    url = databases.url()
    report = _load(source, url, bulk="put_copy")
    path = report.bulk["Typed Values"]
    # fakesnow's COPY from Parquet loads NULLs for some columns: the check after COPY sees it
    # and the table is filled by INSERT instead, which the report says
    assert path == "put_copy" or path.startswith("insert (COPY was not faithful")
    assert report.publish == "transaction"
    with SnowflakeBackend.connect(url) as backend:
        rows = backend.execute('SELECT * FROM "Typed Values" ORDER BY "id"').rows
    assert all(_same(f, w) for got, want in zip(rows, _expected_typed(), strict=True)
               for f, w in zip(got, want, strict=True))


# -- keys ----------------------------------------------------------------------------------------
# (idempotent and atomic loads, foreign schemas, truncation and an unreachable server are checked
# on every engine in tests/conformance/test_load_lifecycle.py and test_execute.py)

def test_keys_the_rows_violate_are_reported_not_forced(databases: Databases,
                                                       tmp_path: Path) -> None:
    # SQLite lets a (non-INTEGER) primary key hold NULL and a foreign key dangle
    source = _sqlite(tmp_path / "s.sqlite",
                     'CREATE TABLE "P" ("id" TEXT PRIMARY KEY, "n" TEXT); '
                     'CREATE TABLE "C" ("pid" TEXT REFERENCES "P" ("id"));',
                     {"P": [("a", "x"), (None, "y")], "C": [("a",), ("zz",)]})
    report = _load(source, databases.url())
    assert report.tables == {"P": 2, "C": 2}  # no row is ever dropped
    notes = {(c.table, c.message.split(":")[0]) for c in report.coercions}
    assert ("P", "primary key not declared") in notes
    assert ("C", "foreign key to 'P' not declared") in notes


# -- timeouts ------------------------------------------------------------------------------------

def test_timeout_cancels_the_statement_on_the_server(typed: URL,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # the backstop waits long enough here that only the server's cancel can end the statement
    monkeypatch.setattr(snowflake_exec, "BACKSTOP_GRACE", 60.0)
    with SnowflakeBackend.connect(typed) as backend:
        result = backend.execute(engine_snowflake.SLOW_QUERY, timeout=0.5)
        assert result.error is not None and result.error.kind == "timeout"
        assert result.error.sqlstate == "57014"  # cancelled by the server, not abandoned
        assert backend.execute("SELECT 1").rows == [(1,)]
        assert backend.pool.opened == 1  # the connection was reusable


def test_client_backstop_holds_on_its_own(typed: URL) -> None:
    # server_timeout=False: no session timeout and no abort request; only the client gives up
    with SnowflakeBackend.connect(typed, server_timeout=False, pool_size=1) as backend:
        result = backend.execute("SELECT pg_sleep(3)", timeout=0.3)
        assert result.error is not None and result.error.kind == "timeout"
        assert "abandoned" in result.error.message
        assert backend.execute("SELECT 2").rows == [(2,)]
        assert backend.pool.opened == 2  # the busy connection was not handed out again


# -- hostile SQL ---------------------------------------------------------------------------------

HOSTILE = [
    'DROP TABLE "Typed Values"',
    'DELETE FROM "Typed Values"',
    'UPDATE "Typed Values" SET "label" = \'x\'',
    'INSERT INTO "Typed Values" ("id") VALUES (99)',
    'TRUNCATE TABLE "Typed Values"',
    'MERGE INTO "Typed Values" t USING (SELECT 1 AS id) s ON t."id" = s.id WHEN MATCHED THEN DELETE',
    'CREATE TABLE hacked AS SELECT * FROM "Typed Values"',
    'CREATE OR REPLACE TABLE "Typed Values" CLONE "Typed Values"',
    'ALTER TABLE "Typed Values" RENAME TO hacked',
    'SELECT * INTO hacked FROM "Typed Values"',
    'WITH x AS (SELECT 1) DELETE FROM "Typed Values"',
    "USE ROLE ACCOUNTADMIN",
    "ALTER SESSION SET QUERY_TAG = 'x'",
    "SET x = 1",
    "BEGIN",
    "CALL SYSTEM$WAIT(1)",
    "SELECT SYSTEM$CANCEL_ALL_QUERIES(1)",
    "EXECUTE IMMEDIATE $$DROP TABLE \"Typed Values\"$$",
    "CREATE STAGE hacked",
    "PUT 'file:///etc/passwd' @~",
    "GET @~ 'file://{tmp}/'",
    "COPY INTO @~/stolen FROM \"Typed Values\"",
    "SELECT $1 FROM @~/stolen",
    "LIST @~",
    "GRANT ROLE ACCOUNTADMIN TO USER fake",
    "UNDROP TABLE hacked",
    "EXPLAIN DELETE FROM \"Typed Values\"",
    'SELECT 1; DROP TABLE "Typed Values"',
    # DuckDB underneath the emulator
    "ATTACH '{tmp}/attached.db' AS other",
    "INSTALL httpfs",
    "LOAD httpfs",
    "COPY \"Typed Values\" TO '{tmp}/stolen.csv'",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM glob('/etc/*')",
    "PRAGMA threads = 1",
    "EXPLAIN ANALYZE DELETE FROM \"Typed Values\"",
    "EXPORT DATABASE '{tmp}/dump'",
    "CHECKPOINT",
]


@pytest.fixture(scope="module")
def reader(typed: URL) -> Iterator[SnowflakeBackend]:
    with SnowflakeBackend.connect(typed) as backend:
        yield backend


@pytest.fixture(scope="module")
def admin(typed: URL) -> Iterator[SnowflakeBackend]:
    """An administrator connection (no screen), independent of the evaluation one."""
    with SnowflakeBackend.connect(typed, read_only=False) as backend:
        yield backend


def _content(admin: SnowflakeBackend) -> list[str]:
    result = admin.execute('SELECT * FROM "Typed Values"')
    assert result.ok, result.error
    return sorted(map(repr, result.rows))


@pytest.mark.parametrize("sql", HOSTILE)
def test_hostile_sql_is_refused_and_changes_nothing(reader: SnowflakeBackend,
                                                     admin: SnowflakeBackend, sql: str,
                                                     tmp_path: Path) -> None:
    before = _content(admin)
    result = reader.execute(sql.format(tmp=tmp_path))
    assert result.error is not None and result.error.kind == "forbidden", (sql, result)
    assert reader.execute("SELECT * FROM hacked").error is not None
    assert _content(admin) == before
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("sql", [
    "SHOW TABLES", 'DESCRIBE TABLE "Typed Values"', "EXPLAIN SELECT 1",
    'WITH x AS (SELECT "id" FROM "Typed Values") SELECT COUNT(*) FROM x'])
def test_read_only_statements_pass_the_screen(reader: SnowflakeBackend, sql: str) -> None:
    result = reader.execute(sql)
    # the emulator may lack the statement (EXPLAIN); it must never be refused as forbidden
    assert result.ok or result.error.kind != "forbidden", result.error


def test_serve_command_runs_an_emulator_until_stopped(server: URL) -> None:
    """The command .ci/run and sweeps use: it prints the URL, serves, and stops on SIGTERM."""
    port = snowflake_emulator.free_port()
    lib = Path(snowflake_emulator.__file__).parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(lib), *filter(None, [os.environ.get("PYTHONPATH")])])}
    process = subprocess.Popen(
        [sys.executable, "-m", "polysql_testkit.snowflake_emulator", "serve", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url == snowflake_emulator.polysql_url("127.0.0.1", port)
        # the server URL: a database URL is refused for evaluation until a load fills it
        with SnowflakeBackend.connect(url) as backend:
            assert backend.execute("SELECT 40 + 2").rows == [(42,)]
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    assert not snowflake_emulator.answers("127.0.0.1", port)
