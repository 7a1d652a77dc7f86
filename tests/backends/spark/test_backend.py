"""Spark SQL backend specifics: URLs, load fidelity and idempotency, the statement screen and the
session lock-down (each proved on its own), timeouts, ANSI labelling, Spark Connect.

Runs on an embedded session (one per test process, shared with the conformance suite). The Spark
Connect tests use POLYSQL_SPARK_CONNECT_URL when set, else start a Connect server from pyspark's
own distribution; the standalone-cluster test needs POLYSQL_SPARK_STANDALONE_URL (a running
master with a worker). Without pyspark or Java everything skips, unless POLYSQL_REQUIRE lists
"spark".
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, NoReturn

import pytest
from polysql_testkit import availability
from sqlalchemy.engine import make_url

from polysql.core.errors import ConfigError, EngineUnavailableError, LoadError
from polysql.core.model import Result
from polysql.engines.registry import connect

pytestmark = pytest.mark.spark
ENGINE = "spark"

SOURCE_SQL = """
CREATE TABLE "Mixed Case" ("Id" INTEGER PRIMARY KEY, "Amount" DECIMAL(12,3), "Ratio" REAL,
  "Label" TEXT, "Payload" BLOB, "Day" DATE, "At" DATETIME, "Flag" BOOLEAN, "Big" INTEGER);
INSERT INTO "Mixed Case" VALUES (1, 1234.567, 0.25, 'Zoë ', x'00ff10', '2020-02-29',
  '2021-03-01 10:15:00.123456', 1, 4611686018427387904);
INSERT INTO "Mixed Case" VALUES (2, -0.001, -1e300, '', x'', '1999-12-31', '1970-01-01 00:00:00',
  0, -9223372036854775808);
INSERT INTO "Mixed Case" VALUES (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
CREATE TABLE "order" ("select" TEXT, "a.b" INTEGER, "Zoë col" TEXT);
INSERT INTO "order" VALUES ('from', 7, 'x');
CREATE TABLE "order items" (x INTEGER);
INSERT INTO "order items" VALUES (1), (2);
CREATE TABLE order_items (x INTEGER);
INSERT INTO order_items VALUES (3);
CREATE TABLE "Ünïcode" (v TEXT);
INSERT INTO "Ünïcode" VALUES ('ok');
CREATE VIEW "big spenders" AS SELECT "Id" FROM "Mixed Case" WHERE "Amount" > 100;
"""
TABLES = ["Mixed Case", "order", "order items", "order_items", "Ünïcode"]
# Spark's names of the types the SQLite source's columns are loaded as.
MIXED_CASE_TYPES = ["bigint", "decimal(12,3)", "double", "string", "binary", "date",
                    "timestamp_ntz", "boolean", "bigint"]
SLOW_QUERY = "SELECT count(*) FROM range(1000000) a CROSS JOIN range(1000000) b"
# Slow, and one job with no shuffle stage: with adaptive execution a shuffle stage's job is
# submitted from a thread of its own, and a cancel that lands just before that submission leaves
# a job Spark Connect can no longer stop (see execute_settle.py). The Connect test times this
# one out, so its next statement depends on polysql's cancel alone, not on winning that race.
SLOW_SINGLE_STAGE_QUERY = ("SELECT id FROM range(0, 1000000000000, 1, 2) "
                           "WHERE sha2(CAST(id AS STRING), 256) = 'never'")
# Seconds of work inside each of two rows, one per task slot of local[2]: Spark checks for a
# cancel only between rows, so its tasks run on for seconds after the statement is cancelled
# (about 10 s on a quiet 2-core machine, 28 s on a slow one).
UNSTOPPABLE_QUERY = ("SELECT sum(aggregate(sequence(1, 25000 + CAST(id * 0 AS INT)), 0L, "
                     "(a, x) -> a + aggregate(sequence(1, 25000), 0L, (b, y) -> b + y))) "
                     "FROM range(0, 2, 1, 2)")


def unavailable(reason: str) -> NoReturn:
    availability.unavailable(ENGINE, reason)


def build_sqlite(path: Path, script: str = SOURCE_SQL) -> Path:
    conn = sqlite3.connect(path)
    try:
        conn.executescript(script)
        conn.commit()
    finally:
        conn.close()
    return path


def sqlite_rows(path: Path, table: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(f'SELECT * FROM "{table}"').fetchall()


def neutral(value: Any) -> Any:
    """One form for a value whatever type the engine gave it (as the conformance suite does)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float | Decimal):
        return Decimal(str(value)).normalize()
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def neutral_sorted(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted((tuple(neutral(v) for v in row) for row in rows), key=repr)


def folder_digest(folder: Path) -> dict[str, str]:
    """Every data file under ``folder`` (Spark's scratch space excluded) -> its sha256."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and ".spark" not in p.parts
            and ".locks" not in p.parts}


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# -- fixtures ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def spark_backend_class() -> type:
    backend_class = availability.require_client(ENGINE)
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        unavailable("no Java runtime (java on PATH or JAVA_HOME) for Spark")
    return backend_class


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spark_warehouse")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sqlite(tmp_path_factory.mktemp("spark_source") / "mixed.sqlite")


@pytest.fixture(scope="module")
def loaded(spark_backend_class: type, warehouse: Path, source: Path) -> str:
    """URL of the mixed source loaded into database ``mixed``."""
    url = f"spark://local[2]/mixed?warehouse={warehouse}"
    try:
        with connect(f"sqlite:///{source}") as src, \
                spark_backend_class.connect(url, read_only=False) as target:
            target.load(src)
    except EngineUnavailableError as exc:
        unavailable(str(exc))
    return url


@pytest.fixture(scope="module")
def backend(spark_backend_class: type, loaded: str) -> Iterator[Any]:
    with spark_backend_class.connect(loaded) as evaluation:
        yield evaluation


# -- URLs ----------------------------------------------------------------------------------------

def test_url_forms() -> None:
    from polysql.backends.spark.connect_url import DEFAULT_PARTITIONS, parse_target

    local = parse_target(make_url("spark://local[2]/db_1?warehouse=/tmp/w&ansi=false"))
    assert (local.connect, local.master, local.database) == (False, "local[2]", "db_1")
    assert local.warehouse == Path("/tmp/w") and local.ansi is False
    assert local.partitions == DEFAULT_PARTITIONS
    assert parse_target(make_url("spark://")).master == "local[2]"
    assert parse_target(make_url("spark://local[*]/x")).master == "local[*]"
    cluster = parse_target(make_url("spark://10.0.0.5:7077/Db"))
    assert cluster.master == "spark://10.0.0.5:7077" and cluster.database == "db"
    remote = parse_target(make_url("sc://host:15002/db?token=abc&partitions=8"))
    assert remote.connect and remote.master == "sc://host:15002/;token=abc"
    assert remote.warehouse is None and remote.partitions == 8
    assert parse_target(make_url("sc://host/db")).master == "sc://host:15002/"


@pytest.mark.parametrize("url", [
    "spark://local[2]/db?bogus=1", "spark://local[2]/db?ansi=maybe", "spark://local[2]/bad-name",
    "spark://local[2]/db?token=x", "sc://host:15002/db?warehouse=/tmp", "sc:///db",
])
def test_bad_urls_are_config_errors(url: str) -> None:
    from polysql.backends.spark.connect_url import parse_target

    with pytest.raises(ConfigError):
        parse_target(make_url(url))


def test_evaluation_url_names_database_and_warehouse(tmp_path: Path) -> None:
    from polysql.backends.spark.backend import SparkBackend

    url = SparkBackend.evaluation_url(make_url("spark://local[2]"), dataset="Bird Dev",
                                      db_id="california_schools", cache_dir=tmp_path)
    assert url.database.startswith("polysql_bird_dev_california_schools_")
    assert url.query["warehouse"] == str(tmp_path / "engines" / "spark")
    remote = SparkBackend.evaluation_url(make_url("sc://h:1"), dataset="demo", db_id="retail",
                                         cache_dir=tmp_path)
    assert remote.database == "polysql_demo_retail" and "warehouse" not in remote.query


# -- loading -------------------------------------------------------------------------------------

def test_types_follow_the_logical_types(backend: Any) -> None:
    result = backend.execute("SELECT * FROM `Mixed Case`")
    assert result.ok, result.error
    assert result.types == MIXED_CASE_TYPES


@pytest.mark.parametrize("table", TABLES)
def test_every_value_round_trips(backend: Any, source: Path, table: str) -> None:
    result = backend.execute(f"SELECT * FROM {quote(table)}")
    assert result.ok, result.error
    with sqlite3.connect(source) as conn:
        names = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
    assert result.columns == names
    expected = sqlite_rows(source, table)
    if table == "Mixed Case":  # SQLite keeps these as text; the copy holds dates and times
        expected = [(*row[:5], row[5] and dt.date.fromisoformat(row[5]),
                     row[6] and dt.datetime.fromisoformat(row[6]), *row[7:]) for row in expected]
    assert neutral_sorted(result.rows) == neutral_sorted(expected)


def test_values_keep_their_python_types(backend: Any) -> None:
    row = backend.execute('SELECT * FROM `Mixed Case` WHERE Id = 1').rows[0]
    assert row == (1, Decimal("1234.567"), 0.25, "Zoë ", b"\x00\xff\x10", dt.date(2020, 2, 29),
                   dt.datetime(2021, 3, 1, 10, 15, 0, 123456), True, 4611686018427387904)


def test_spark_only_types_come_back_as_python_values(backend: Any) -> None:
    result = backend.execute("SELECT 1 AS a, 2 AS a, INTERVAL 1 DAY AS d, INTERVAL '1' YEAR AS y, "
                             "array(1, 2) AS arr, named_struct('k', 'v') AS s, X'01' AS b")
    assert result.ok, result.error
    assert result.columns == ["a", "a", "d", "y", "arr", "s", "b"]
    assert result.types == ["int", "int", "interval day", "interval year", "array<int>",
                            "struct<k:string>", "binary"]
    # a year-month interval has no Python form: it comes back as Spark's text for it
    assert result.rows == [(1, 2, dt.timedelta(days=1), "INTERVAL '1' YEAR", [1, 2], {"k": "v"},
                            b"\x01")]


def test_tables_report_exact_names_keys_and_counts(backend: Any) -> None:
    tables = {t.name: t for t in backend.tables()}
    assert sorted(tables) == sorted(TABLES)
    assert tables["Mixed Case"].primary_key == ("Id",)
    assert tables["order items"].row_count == 2 and tables["order_items"].row_count == 1
    assert [c.name for c in tables["order"].columns] == ["select", "a.b", "Zoë col"]


def test_names_the_catalog_rejects_do_not_collide(backend: Any) -> None:
    assert backend.execute("SELECT x FROM `order items` ORDER BY x").rows == [(1,), (2,)]
    assert backend.execute("SELECT x FROM order_items").rows == [(3,)]
    assert backend.execute("SELECT `a.b`, `select` FROM `order`").rows == [(7, "from")]


def test_source_views_are_available(backend: Any) -> None:
    assert backend.execute("SELECT * FROM `big spenders`").rows == [(1,)]


def test_names_snake_mode(spark_backend_class: type, warehouse: Path, source: Path) -> None:
    url = f"spark://local[2]/snake?warehouse={warehouse}"
    with connect(f"sqlite:///{source}") as src, \
            spark_backend_class.connect(url, read_only=False) as target, \
            pytest.raises(LoadError, match="order items"):
        target.load(src, names="snake")  # "order items" and order_items both become order_items


def test_public_api_loads_and_connects(spark_backend_class: type, warehouse: Path,
                                       source: Path) -> None:
    import polysql

    url = f"spark://local[2]/public_api?warehouse={warehouse}"
    report = polysql.load(f"sqlite:///{source}", url)
    assert report.tables["order items"] == 2
    assert polysql.load(f"sqlite:///{source}", url).skipped
    with polysql.connect(url) as evaluation:
        assert isinstance(evaluation, spark_backend_class)
        assert evaluation.execute("SELECT count(*) FROM `Ünïcode`").rows == [(1,)]


FRESH_PROCESS_COUNT = (
    "import json, sys\n"
    "from polysql.backends.spark.backend import SparkBackend\n"
    "with SparkBackend.connect(sys.argv[1]) as b:\n"
    "    r = b.execute('SELECT count(*) FROM `order items`')\n"
    "    print(json.dumps([r.rows, r.error and r.error.message]))\n")


FRESH_PROCESS_FAILURE = (
    "import sys\n"
    "from polysql.backends.spark.backend import SparkBackend\n"
    "with SparkBackend.connect(sys.argv[1]) as b:\n"
    "    r = b.execute(\"SELECT if(x > 0, raise_error(concat('row ', x)), 0) FROM `order items`\")\n"
    "    print(r.error and r.error.message)\n")


def test_starting_the_driver_prints_no_log_lines_unless_the_user_configures_them(
        loaded: str, tmp_path: Path) -> None:
    """Spark's default log profile prints a banner and start-up warnings on stderr of every
    command that starts a driver, and a failing task its whole JVM stack; polysql's driver logs
    neither. A log4j2 file in the user's SPARK_CONF_DIR is theirs to keep."""
    # the machine's own Spark configuration, if any, is not the one under test
    clean = {name: value for name, value in os.environ.items() if name != "SPARK_CONF_DIR"}

    def run(**env: str) -> str:
        done = subprocess.run([sys.executable, "-c", FRESH_PROCESS_COUNT, loaded],
                              capture_output=True, text=True, timeout=300, env={**clean, **env})
        assert done.returncode == 0, done.stderr[-2000:]
        assert json.loads(done.stdout.strip().splitlines()[-1]) == [[[2]], None]
        return done.stderr

    quiet = run()
    for noise in ("log4j", "Setting default log level", " WARN ", " INFO "):
        assert noise not in quiet, quiet
    # a statement failing inside its tasks: the error is the Result's, not a JVM stack on stderr
    failing = subprocess.run([sys.executable, "-c", FRESH_PROCESS_FAILURE, loaded],
                             capture_output=True, text=True, timeout=300, env=clean)
    assert failing.returncode == 0, failing.stderr[-2000:]
    assert "row 1" in failing.stdout or "row 2" in failing.stdout, failing.stdout
    assert "Exception" not in failing.stderr and "\tat " not in failing.stderr, failing.stderr
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "log4j2.properties").write_text(
        "rootLogger.level = info\nrootLogger.appenderRef.console.ref = console\n"
        "appender.console.type = Console\nappender.console.name = console\n"
        "appender.console.target = SYSTEM_ERR\nappender.console.layout.type = PatternLayout\n"
        "appender.console.layout.pattern = %p %c{1}: %m%n\n"
        "logger.context.name = org.apache.spark.SparkContext\nlogger.context.level = info\n",
        encoding="utf-8")
    assert "INFO SparkContext: Running Spark version" in run(SPARK_CONF_DIR=str(conf))


def test_a_log_configuration_where_spark_looks_for_one_is_left_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark reads its configuration from SPARK_CONF_DIR, else SPARK_HOME/conf: a log4j2 file
    in either keeps polysql's own off the driver's command line."""
    from polysql.backends.spark.connect import _quiet_logging

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    home = tmp_path / "spark-home"
    (home / "conf").mkdir(parents=True)
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.setenv("SPARK_HOME", str(home))
    (option,) = _quiet_logging(scratch)  # no log file in SPARK_HOME/conf yet
    assert option == f"-Dlog4j2.configurationFile={(scratch / 'log4j2.properties').as_uri()}"
    (home / "conf" / "log4j2.properties").write_text("rootLogger.level = info\n")
    assert _quiet_logging(scratch) == []
    own = tmp_path / "conf"
    own.mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(own))  # SPARK_CONF_DIR wins over SPARK_HOME
    assert len(_quiet_logging(scratch)) == 1
    (own / "log4j2.xml").write_text("<Configuration/>\n")
    assert _quiet_logging(scratch) == []


def test_load_needs_a_database(spark_backend_class: type, warehouse: Path, source: Path) -> None:
    with connect(f"sqlite:///{source}") as src, \
            spark_backend_class.connect(f"spark://local[2]?warehouse={warehouse}",
                                        read_only=False) as target, \
            pytest.raises(LoadError, match="names no database"):
        target.load(src)


def test_unloaded_database_is_unavailable(spark_backend_class: type, warehouse: Path) -> None:
    with pytest.raises(EngineUnavailableError, match="has not been loaded"):
        spark_backend_class.connect(f"spark://local[2]/never_loaded?warehouse={warehouse}")


def test_a_fresh_process_reads_the_loaded_warehouse(loaded: str) -> None:
    """The catalog lives in memory: another process must rebuild it from the warehouse."""
    done = subprocess.run([sys.executable, "-c", FRESH_PROCESS_COUNT, loaded], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows, error = json.loads(done.stdout.strip().splitlines()[-1])
    assert error is None and rows == [[2]]


# -- evaluation: screening, lock-down, timeouts, errors --------------------------------------------

HOSTILE = {
    "insert": "INSERT INTO `order items` VALUES (9)",
    "insert_overwrite": "INSERT OVERWRITE TABLE `order_items` SELECT 9",
    "from_insert": "FROM order_items INSERT INTO order_items SELECT x",
    "write_directory": "INSERT OVERWRITE DIRECTORY '{tmp}/out' USING parquet SELECT 1",
    "ctas": "CREATE TABLE hacked AS SELECT * FROM order_items",
    "temp_view": "CREATE TEMPORARY VIEW hacked AS SELECT 1",
    "drop": "DROP TABLE order_items",
    "drop_database": "DROP DATABASE mixed CASCADE",
    "truncate": "TRUNCATE TABLE order_items",
    "cache": "CACHE TABLE order_items",
    "uncache": "UNCACHE TABLE order_items",
    "clear_cache": "CLEAR CACHE",
    "refresh": "REFRESH TABLE order_items",
    "repair": "MSCK REPAIR TABLE order_items",
    "analyze": "ANALYZE TABLE order_items COMPUTE STATISTICS",
    "set": "SET spark.sql.runSQLOnFiles=true",
    "reset": "RESET",
    "use": "USE default",
    "add_jar": "ADD JAR '{tmp}/evil.jar'",
    "create_function": "CREATE FUNCTION evil AS 'Evil' USING JAR '{tmp}/evil.jar'",
    "load_data": "LOAD DATA LOCAL INPATH '/etc/hostname' INTO TABLE order_items",
    "script_transform": "SELECT TRANSFORM(x) USING 'touch {tmp}/pwned' AS (y) FROM order_items",
    "transform_in_subquery": "SELECT (SELECT TRANSFORM(x) USING 'touch {tmp}/pwned' AS (y) "
                             "FROM order_items LIMIT 1)",
    "read_parquet_file": "SELECT * FROM parquet.`{tmp}`",
    "read_system_file": "SELECT * FROM text.`/etc/hostname`",
    "read_quoted_format": "SELECT * FROM `csv`.`/etc/passwd`",
    "reflect": "SELECT reflect('java.lang.System', 'getProperty', 'user.home')",
    "java_method": "SELECT `java_method`('java.lang.System', 'getProperty', 'user.home')",
    "try_reflect": "SELECT system.builtin.try_reflect('java.lang.Thread', 'sleep', 100000L)",
    "computed_function": "SELECT IDENTIFIER('ref' || 'lect')('java.lang.System', 'getenv')",
    "execute_immediate": "EXECUTE IMMEDIATE 'DROP TABLE order_items'",
    "declare": "DECLARE hacked INT",
    "explain_write": "EXPLAIN INSERT INTO order_items VALUES (9)",
    "write_in_cte": "WITH x AS (SELECT 1) INSERT INTO order_items SELECT * FROM x",
    "script_block": "BEGIN DROP TABLE order_items; END",
    "two_statements": "SELECT 1; DROP TABLE order_items",
    "comment_hidden": "/* SELECT */ DROP TABLE order_items",
}


def snapshot(backend: Any, warehouse: Path) -> Any:
    """The loaded files byte for byte (the only place data lives), and every table as the
    evaluation session sees it (row counts, in one statement)."""
    counts = backend.execute("SELECT " + ", ".join(
        f"(SELECT count(*) FROM {quote(table)})" for table in TABLES))
    assert counts.ok, counts.error
    return counts.rows, folder_digest(warehouse / "mixed")


@pytest.fixture(scope="module")
def original(backend: Any, warehouse: Path) -> Any:
    """The loaded database before any hostile statement ran."""
    return snapshot(backend, warehouse)


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_statement_is_refused_without_effect(backend: Any, warehouse: Path,
                                                     original: Any, tmp_path: Path,
                                                     case: str) -> None:
    result = backend.execute(HOSTILE[case].format(tmp=tmp_path))
    assert result.error is not None and result.error.kind == "forbidden", result
    assert snapshot(backend, warehouse) == original
    assert list(tmp_path.iterdir()) == []
    assert backend.execute("SELECT * FROM hacked").error is not None
    assert backend.execute("SELECT current_database()").rows == [("mixed",)]


@pytest.mark.parametrize("sql", [
    "SELECT transform(array(1, 2), v -> v + 1) AS t",
    "WITH c AS (SELECT x FROM `order items`) SELECT sum(x) FROM c",
    "SELECT * FROM (VALUES (1, 'a')) AS v(n, s)",
    "TABLE order_items",
    "FROM order_items SELECT x",
    "SELECT x FROM order_items WHERE x IN (SELECT x FROM `order items`)",
    "SELECT 'DROP TABLE t; INSERT INTO t' AS text_only",
    "SHOW TABLES",
    "DESCRIBE `Mixed Case`",
    "EXPLAIN SELECT * FROM order_items",
    "SELECT update FROM (SELECT 1 AS update)",
])
def test_read_only_statements_run(backend: Any, sql: str) -> None:
    result = backend.execute(sql)
    assert result.ok, result.error


def test_parser_layer_alone_refuses_writes(backend: Any) -> None:
    """The check of Spark's parsed plan, without the lexical screen in front of it."""
    from polysql.backends.spark.screen import plan_refusal

    for sql in ("SELECT TRANSFORM(x) USING 'cat' AS (y) FROM order_items",
                "SELECT * FROM order_items WHERE x IN (SELECT TRANSFORM(x) USING 'cat' AS (y) "
                "FROM order_items)",
                "WITH c AS (SELECT TRANSFORM(x) USING 'cat' AS (y) FROM order_items) "
                "SELECT * FROM c",
                "FROM order_items INSERT INTO order_items SELECT x",
                "WITH x AS (SELECT 1) DELETE FROM order_items",
                "INSERT OVERWRITE DIRECTORY '/tmp/x' SELECT 1",
                "EXPLAIN CREATE TABLE t AS SELECT 1",
                "SET a = b"):
        refusal = plan_refusal(backend.session, sql)
        assert refusal is not None and refusal.kind == "forbidden", sql
    # Spark 4 parses EXECUTE IMMEDIATE (refused); Spark 3.5 does not know it (a syntax error)
    immediate = plan_refusal(backend.session, "EXECUTE IMMEDIATE 'SELECT 1'")
    assert immediate is not None and immediate.kind in ("forbidden", "syntax")
    for sql in ("SELECT * FROM order_items", "SHOW TABLES", "EXPLAIN SELECT 1",
                "WITH c AS (SELECT 1 AS a) SELECT (SELECT max(a) FROM c)"):
        assert plan_refusal(backend.session, sql) is None, sql
    syntax = plan_refusal(backend.session, "SELEC 1")
    assert syntax is not None and (syntax.kind, syntax.sqlstate) == ("syntax", "42601")


def test_session_lock_down_alone_blocks_files_and_reflection(backend: Any) -> None:
    """Statements sent to the evaluation session directly, past both screens."""
    session = backend.session
    for sql in ("SELECT reflect('java.lang.System', 'getProperty', 'user.home')",
                "SELECT java_method('java.lang.System', 'getProperty', 'user.home')",
                "SELECT * FROM text.`/etc/hostname`"):
        with pytest.raises(Exception, match="UNRESOLVED_ROUTINE|TABLE_OR_VIEW_NOT_FOUND"):
            session.sql(sql).collect()


def test_timeout_cancels_the_job_and_the_session_recovers(backend: Any) -> None:
    result = backend.execute(SLOW_QUERY, timeout=1.0)
    assert result.error is not None and result.error.kind == "timeout"
    assert backend.execute("SELECT count(*) FROM `order items`").rows == [(2,)]
    statuses = backend.session.sparkContext.statusTracker()
    # Cancellation reaches the executors asynchronously; on a loaded machine the job may take a
    # moment to wind down. It must go away: a job left running would hold the slots forever.
    deadline = time.monotonic() + 180
    while statuses.getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert statuses.getActiveJobsIds() == []


def test_a_cancel_also_refuses_the_statements_later_jobs(backend: Any) -> None:
    """Adaptive execution submits a shuffle stage's job from a thread of its own, and that can
    happen just after the statement was cancelled: such a job must be refused, not left to run
    on (and hold its task slots) because the cancel came first."""
    from polysql.backends.spark.execute import _Tagging

    tag = "polysql-test-job-after-its-cancel"
    _Tagging(backend.session, connect=False).cancel(tag)
    context = backend.session.sparkContext
    context.setJobGroup(tag, "a job submitted after its group was cancelled", True)
    try:
        with pytest.raises(Exception, match="(?i)cancel"):
            backend.session.sql("SELECT count(*) FROM range(10)").collect()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert backend.session.sql("SELECT count(*) FROM range(10)").collect()[0][0] == 10


def test_ctrl_c_stops_the_statement_before_the_process_exits(loaded: str) -> None:
    """Ctrl-C while Spark runs a statement for the main thread: the statement is cancelled and
    the process exits cleanly. A worker left inside py4j while the interpreter shut down
    aborted the process ("Fatal Python error: PyGILState_Release"), after 'interrupted'."""
    script = (
        "import sys\n"
        "import polysql\n"
        "with polysql.connect(sys.argv[1]) as b:\n"
        "    print(b.execute('SELECT 1 AS x').rows, flush=True)\n"
        "    try:\n"
        "        b.execute(sys.argv[2], timeout=300)\n"
        "    except KeyboardInterrupt:\n"
        "        print('interrupted', flush=True)\n"
        "        sys.exit(130)\n")
    process = subprocess.Popen([sys.executable, "-c", script, loaded, SLOW_QUERY],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "[(1,)]"  # the session is up
        time.sleep(3)  # the slow statement running
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130, err[-2000:]
    assert out.strip() == "interrupted"
    assert "Fatal Python error" not in err
    assert time.monotonic() - started < 60


# An executor names the thread of a task after the task while it runs (and renames it after).
# Counted from the threads, since the status tracker's counts lag: a task's start reaches them
# when the status store flushes, which can be a heartbeat (10 s) later, and a test waiting for
# two running tasks then saw none until the statement was over.
TASK_THREAD_PREFIX = "Executor task launch worker for task"


def _running_tasks(backend: Any) -> int:
    """Tasks still running in the driver's executor, including killed ones that run on (the
    stage of a cancelled job is no longer active; its tasks may be)."""
    threads = backend.session.sparkContext._jvm.java.lang.Thread.getAllStackTraces().keySet()
    return sum(1 for thread in threads.toArray() if thread.getName().startswith(TASK_THREAD_PREFIX))


def _wait_for_idle_executors(backend: Any) -> None:
    deadline = time.monotonic() + 180
    while _running_tasks(backend) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _running_tasks(backend) == 0


def _stuck_statement(backend: Any) -> Result:
    """Runs UNSTOPPABLE_QUERY and cancels it once both its tasks are running: their rows go on
    for seconds after the cancel."""
    running: dict[str, Result] = {}
    worker = threading.Thread(
        target=lambda: running.setdefault("result", backend.execute(UNSTOPPABLE_QUERY,
                                                                    timeout=120.0)))
    worker.start()
    deadline = time.monotonic() + 120
    while _running_tasks(backend) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # past task set-up, into the row (set-up still notices a cancel)
    assert backend.cancel()
    worker.join(60)
    stuck = running["result"]
    assert stuck.error is not None and stuck.error.kind == "unavailable"  # cancelled
    assert _running_tasks(backend) == 2  # killed, and still running
    return stuck


def test_statement_after_an_unstoppable_one_waits_for_a_free_slot(
        backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cancelled statement whose tasks run on must not make the next, cheap statement time
    out: that would count the engine's backlog as the model's timeout. (The wait is widened past
    the production 60 s: how long the stuck tasks run on depends on the machine, and what is
    tested is that the statement waits for them, not the limit.)"""
    from polysql.backends.spark import execute_settle as settle

    monkeypatch.setattr(settle, "SETTLE_WAIT", 600.0)
    _wait_for_idle_executors(backend)
    _stuck_statement(backend)
    after = backend.execute("SELECT count(*) FROM `order items`", timeout=1.0)
    assert after.error is None and after.rows == [(2,)]
    assert after.elapsed < 1.0  # the wait for a slot is not the statement's time


RESTART_SCRIPT = """
import json, sys, threading, time
import polysql
from polysql.backends.spark import connect as sessions, execute_settle as settle
from polysql.backends.spark.screen import screen_statement

settle.SETTLE_WAIT = 0.5  # the tasks below run on for 10 s or more
url, query = sys.argv[1], sys.argv[2]
stuck_on, other, third = polysql.connect(url), polysql.connect(url), polysql.connect(url)
assert other.execute("SELECT 1").rows == [(1,)]

def running():  # as _running_tasks in the test module
    threads = stuck_on.session.sparkContext._jvm.java.lang.Thread.getAllStackTraces().keySet()
    return sum(1 for t in threads.toArray() if t.getName().startswith(sys.argv[3]))

out = {}
worker = threading.Thread(target=lambda: out.setdefault("stuck", stuck_on.execute(query, timeout=120)))
worker.start()
deadline = time.monotonic() + 120
while running() < 2 and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(0.5)  # past task set-up, into the row
stuck_on.cancel()
worker.join(60)
report = {"stuck": out["stuck"].error.kind, "held": running(), "before": sessions.driver_generation()}
old_session = stuck_on.session
after = stuck_on.execute("SELECT count(*) FROM `order items`", timeout=30)
report.update(after=[list(r) for r in after.rows], error=after.error and after.error.message,
              restarts=sessions.driver_generation() - report["before"], held_now=running(),
              other=[list(r) for r in other.execute("SELECT count(*) FROM `order items`").rows],
              old_screen=screen_statement(old_session, "SELECT 1", connect=False)[0].kind,
              third_version=third.version())
print(json.dumps(report))
"""


def test_a_driver_whose_tasks_never_free_is_restarted(loaded: str) -> None:
    """Tasks busy inside one row do not notice a cancel and keep their slots. When none frees in
    time, the driver of the process is restarted (its JVM killed, which ends those threads):
    the next statement runs on the new driver instead of being refused, and a backend opened on
    the old driver carries on too. In a process of its own, as the restart ends the driver every
    other test of this process uses."""
    done = subprocess.run([sys.executable, "-c", RESTART_SCRIPT, loaded, UNSTOPPABLE_QUERY,
                           TASK_THREAD_PREFIX],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["stuck"] == "unavailable"  # cancelled by the caller
    assert report["held"] == 2  # killed, and still running
    assert report["after"] == [[2]], report["error"]
    assert report["restarts"] == 1
    assert report["held_now"] == 0
    assert report["other"] == [[2]]
    # a session whose driver is gone cannot screen: an outage, never the statement's "forbidden"
    assert report["old_screen"] == "unavailable"
    assert report["third_version"].startswith("Spark ")  # asked first of the new driver


def test_error_kinds_and_sqlstates(backend: Any) -> None:
    cases = {"SELECT 1 +": ("syntax", "42601"),
             "SELECT * FROM no_such_table": ("runtime", "42P01"),
             "SELECT no_such_column FROM order_items": ("runtime", "42703")}
    if backend.version().endswith("(ANSI on)"):  # without ANSI mode the cast gives NULL
        cases["SELECT CAST('x' AS INT)"] = ("runtime", "22018")
    for sql, (kind, sqlstate) in cases.items():
        result = backend.execute(sql)
        assert result.error is not None, sql
        assert (result.error.kind, result.error.sqlstate) == (kind, sqlstate), result.error


def _spark_major() -> int:
    import pyspark

    return int(pyspark.__version__.split(".")[0])


def test_version_labels_the_ansi_mode(spark_backend_class: type, loaded: str,
                                      backend: Any) -> None:
    default = "on" if _spark_major() >= 4 else "off"
    assert backend.version().startswith("Spark ")
    assert backend.version().endswith(f"(ANSI {default})")
    with spark_backend_class.connect(f"{loaded}&ansi=false") as lenient:
        assert lenient.version().endswith("(ANSI off)")
        assert lenient.execute("SELECT 1 / 0").rows == [(None,)]
    with spark_backend_class.connect(f"{loaded}&ansi=true") as strict:
        failed = strict.execute("SELECT 1 / 0")
        assert failed.error.kind == "runtime" and failed.error.sqlstate == "22012"


def test_one_driver_per_process(spark_backend_class: type, backend: Any, warehouse: Path) -> None:
    with pytest.raises(ConfigError, match="only one Spark master"):
        spark_backend_class.connect(f"spark://127.0.0.1:1/mixed?warehouse={warehouse}")


# -- Spark Connect ---------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], deadline: float) -> bool:
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.5)
    return False


@pytest.fixture(scope="module")
def connect_url(spark_backend_class: type,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Spark Connect server: POLYSQL_SPARK_CONNECT_URL, else one started from pyspark."""
    configured = os.environ.get("POLYSQL_SPARK_CONNECT_URL")
    if configured:
        yield configured.rstrip("/")
        return
    from pyspark.find_spark_home import _find_spark_home

    home = Path(_find_spark_home())
    folder = tmp_path_factory.mktemp("spark_connect")
    port = _free_port()
    command = [str(home / "bin" / "spark-submit"), "--class",
               "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", "local[2]",
               "--conf", f"spark.connect.grpc.binding.port={port}",
               "--conf", "spark.ui.enabled=false",
               "--conf", f"spark.sql.warehouse.dir={folder / 'warehouse'}",
               "--conf", f"spark.local.dir={folder / 'tmp'}"]
    log = (folder / "server.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=folder,
                               env={**os.environ, "SPARK_HOME": str(home)})
    try:
        if not _wait_for_port(port, process, time.monotonic() + 120):
            unavailable(f"the Spark Connect server from {home} did not start; see "
                        f"{folder / 'server.log'}")
        yield f"sc://127.0.0.1:{port}"
    finally:
        # pyspark marks the whole process Connect-only once a remote session starts; later
        # tests use the embedded driver (one process mixing both is a known pyspark limit)
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def test_spark_connect_load_evaluate_and_drop(spark_backend_class: type, connect_url: str,
                                              source: Path, tmp_path: Path) -> None:
    from polysql.backends.spark.load import drop_database

    url = f"{connect_url}/connect_mixed"
    with connect(f"sqlite:///{source}") as src, \
            spark_backend_class.connect(url, read_only=False) as target:
        first = target.load(src)
        again = target.load(src)
    assert not first.skipped and again.skipped
    with spark_backend_class.connect(url) as evaluation:
        assert "via Spark Connect" in evaluation.version()
        result = evaluation.execute("SELECT * FROM `Mixed Case`")
        assert result.types == MIXED_CASE_TYPES
        assert neutral_sorted(result.rows)[0] == neutral_sorted(
            [(1, Decimal("1234.567"), 0.25, "Zoë ", b"\x00\xff\x10", dt.date(2020, 2, 29),
              dt.datetime(2021, 3, 1, 10, 15, 0, 123456), True, 4611686018427387904)])[0]
        assert evaluation.execute("SELECT x FROM `order items` ORDER BY x").rows == [(1,), (2,)]
        assert evaluation.execute("SELECT * FROM `big spenders`").rows == [(1,)]
        for case in ("drop", "insert", "script_transform", "reflect", "computed_function",
                     "read_system_file", "set"):
            refused = evaluation.execute(HOSTILE[case].format(tmp=tmp_path))
            assert refused.error is not None and refused.error.kind == "forbidden", case
        assert evaluation.execute("SELEC 1").error.kind == "syntax"
        assert evaluation.execute("SELECT * FROM no_such_table").error.kind == "runtime"
        timed_out = evaluation.execute(SLOW_SINGLE_STAGE_QUERY, timeout=1.0)
        assert timed_out.error is not None and timed_out.error.kind == "timeout"
        after = evaluation.execute("SELECT count(*) FROM order_items")
        # an error here (e.g. unavailable: the cancelled job's tasks kept the slots) is said as such
        assert after.error is None and after.rows == [(1,)], after.error
        assert list(tmp_path.iterdir()) == []
    with spark_backend_class.connect(url, read_only=False) as target:
        drop_database(target)
    with pytest.raises(EngineUnavailableError, match="has not been loaded"):
        spark_backend_class.connect(url)


def test_a_connect_server_whose_tasks_never_free_is_unavailable(
        spark_backend_class: type, connect_url: str, source: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """polysql cannot restart a Spark Connect server: when a cancelled statement's tasks keep the
    server's slots past the wait, the next statement is not run and reports the engine
    unavailable (an outage, never a timeout of the model), naming the cancelled statement; once
    the tasks end, statements run again."""
    from polysql.backends.spark import connect as sessions
    from polysql.backends.spark import execute_settle as settle

    url = f"{connect_url}/connect_stuck"
    with connect(f"sqlite:///{source}") as src, \
            spark_backend_class.connect(url, read_only=False) as target:
        target.load(src)
    with spark_backend_class.connect(url) as evaluation:
        driver = sessions.driver_generation()
        # the same shape with rows of no weight: the server has planned and compiled it once
        assert evaluation.execute(UNSTOPPABLE_QUERY.replace("25000", "2")).error is None
        # The server's task tracker is out of this process's reach, so the cancel comes after a
        # pause that should find the tasks inside their rows (seconds each). When it does not --
        # the tasks stop at the cancel and the next statement runs, or the statement is already
        # over -- the scene is set again with another pause, for as long as two minutes allow
        # (a loaded machine plans and starts the tasks later than an idle one).
        busy = None
        scene_deadline = time.monotonic() + 120
        for pause in itertools.cycle((4.0, 2.0, 6.0, 3.0, 8.0)):
            if time.monotonic() > scene_deadline:
                break
            worker = threading.Thread(
                target=lambda: evaluation.execute(UNSTOPPABLE_QUERY, timeout=120.0))
            worker.start()
            time.sleep(pause)
            cancelled = evaluation.cancel()
            worker.join(120)
            if not cancelled:
                continue
            monkeypatch.setattr(settle, "SETTLE_WAIT_CONNECT", 0.5)
            busy = evaluation.execute("SELECT count(*) FROM `order items`", timeout=30.0)
            if busy.error is not None:
                break
            monkeypatch.undo()
        assert busy is not None and busy.error is not None, busy
        assert busy.error.kind == "unavailable", busy
        assert "no free task slot" in busy.error.message
        assert "aggregate(sequence" in busy.error.message
        assert sessions.driver_generation() == driver  # nothing of this process was restarted
        monkeypatch.undo()  # the production wait outlasts the stuck rows
        deadline = time.monotonic() + 180
        recovered = evaluation.execute("SELECT count(*) FROM `order items`")
        while recovered.error is not None and time.monotonic() < deadline:
            recovered = evaluation.execute("SELECT count(*) FROM `order items`")
        assert recovered.rows == [(2,)], recovered.error


# -- standalone cluster ----------------------------------------------------------------------------

def test_standalone_cluster(source: Path, tmp_path: Path) -> None:
    """A driver on a standalone master needs a process of its own (this one drives local[2])."""
    master = os.environ.get("POLYSQL_SPARK_STANDALONE_URL")
    if not master:
        pytest.skip("set POLYSQL_SPARK_STANDALONE_URL=spark://HOST:PORT (a master with a worker "
                    "sharing this file system) to test a standalone cluster")
    url = f"{master.rstrip('/')}/standalone?warehouse={tmp_path / 'warehouse'}"
    script = (
        "import json, sys\n"
        "from polysql.engines.registry import connect\n"
        "from polysql.backends.spark.backend import SparkBackend\n"
        "with connect('sqlite:///' + sys.argv[2]) as s, "
        "SparkBackend.connect(sys.argv[1], read_only=False) as t:\n"
        "    t.load(s)\n"
        "with SparkBackend.connect(sys.argv[1]) as b:\n"
        "    r = b.execute('SELECT sum(x) FROM `order items`')\n"
        "    print(json.dumps([b.session.sparkContext.master, r.rows]))\n")
    done = subprocess.run([sys.executable, "-c", script, url, str(source)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    used, rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert used == master.rstrip("/") and rows == [[3]]
