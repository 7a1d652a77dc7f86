"""BigQuery backend: load fidelity on both bulk paths, idempotency, names BigQuery restricts,
timeouts, hostile SQL contained, error classes and emulated labelling.

Runs the real google-cloud-bigquery client against bqemulator (started by polysql_testkit) or
the service POLYSQL_BIGQUERY_URL names. What the tests read back for comparison is read with the
plain client, not through the backend. Skipped when neither can be used, unless POLYSQL_REQUIRE
lists "bigquery" (then they fail).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from polysql_testkit.availability import is_required, require_client
from sqlalchemy.engine import URL, make_url

require_client("bigquery")  # skips the module (names the extra) before the imports that need it

from google.api_core import exceptions as api_exceptions  # noqa: E402
from google.cloud import bigquery  # noqa: E402
from polysql_testkit import bigquery_emulator, engine_bigquery  # noqa: E402

from polysql.backends.bigquery.backend import BigQueryBackend, evaluation_dataset_name  # noqa: E402
from polysql.backends.bigquery.connect import make_client, parse_target  # noqa: E402
from polysql.backends.bigquery.errors import classify  # noqa: E402
from polysql.backends.bigquery.load_bulk import load_rows  # noqa: E402
from polysql.backends.bigquery.types import plan_tables, standard_type_name  # noqa: E402
from polysql.core.errors import ConfigError, LoadError  # noqa: E402
from polysql.engines.registry import connect  # noqa: E402

pytestmark = pytest.mark.bigquery

TYPES_SQL = """
CREATE TABLE "Everything" (
    "Id" INTEGER PRIMARY KEY,
    "Ratio" REAL,
    "Money" NUMERIC(12, 3),
    "Label" TEXT,
    "Raw" BLOB,
    "Day" DATE,
    "At" DATETIME,
    "Flag" BOOLEAN
);
INSERT INTO "Everything" VALUES
    (1, 0.1, 1234.5, 'Zoë  ', X'00FF10', '2020-02-29', '2021-03-01 10:15:00.123456', 1),
    (2, -1e300, -0.001, '', X'', '1999-12-31', '1970-01-01 00:00:00', 0),
    (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    (4, 2.5, 999999999.999, 'line
break', X'0A0D', '2000-01-01', '2000-01-01 23:59:59', 1);
CREATE TABLE "order items" ("OrderID" INTEGER, "qty" INTEGER);
INSERT INTO "order items" VALUES (10, 2), (10, 2), (11, NULL);
CREATE INDEX "ix_qty" ON "order items" ("qty");
"""


def _required() -> bool:
    return is_required("bigquery")


def _unavailable(reason: str) -> None:
    if _required():
        pytest.fail(f"{reason} (POLYSQL_REQUIRE lists bigquery)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def base() -> URL:
    try:
        return engine_bigquery.base_url()
    except engine_bigquery.ServerUnavailable as exc:
        _unavailable(f"BigQuery emulator unavailable: {exc}")
        raise


@pytest.fixture(scope="module")
def emulated_base(base: URL) -> URL:
    if not BigQueryBackend.is_emulated(base):
        pytest.skip("this test needs the emulator (POLYSQL_BIGQUERY_URL names the real service)")
    return base


@pytest.fixture(scope="module")
def plain_client(base: URL) -> Iterator[Any]:
    """The google client on its own, for reading back what the backend wrote."""
    client = make_client(parse_target(base))
    yield client
    client.close()


@pytest.fixture(scope="module")
def datasets(base: URL) -> Iterator[Callable[..., URL]]:
    made: list[URL] = []

    def new(**query: str) -> URL:
        url = base.set(database=f"polysql_test_{uuid.uuid4().hex[:10]}").update_query_dict(query)
        made.append(url)
        return url

    yield new
    for url in made:
        BigQueryBackend.drop(url)


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Path]:
    folder = tmp_path_factory.mktemp("bq_sources")

    def make(name: str, script: str) -> Path:
        path = folder / f"{name}.sqlite"
        conn = sqlite3.connect(path)
        try:
            conn.executescript(script)
            conn.commit()
        finally:
            conn.close()
        return path

    return make


def _load(source: Path, url: URL, **options: Any) -> Any:
    with connect(f"sqlite:///{source}") as src, BigQueryBackend.connect(url, read_only=False) as t:
        report = t.load(src, **options)
        return report, list(t.load_notes)


def _rows(client: Any, url: URL, table: str) -> list[tuple[Any, ...]]:
    ref = f"{url.host}.{url.database}.{table}"
    return sorted((tuple(row.values()) for row in client.list_rows(ref)), key=repr)


def _expected_everything() -> list[tuple[Any, ...]]:
    return sorted([
        (1, 0.1, Decimal("1234.5"), "Zoë  ", b"\x00\xff\x10", dt.date(2020, 2, 29),
         dt.datetime(2021, 3, 1, 10, 15, 0, 123456), True),
        (2, -1e300, Decimal("-0.001"), "", b"", dt.date(1999, 12, 31),
         dt.datetime(1970, 1, 1), False),
        (3, None, None, None, None, None, None, None),
        (4, 2.5, Decimal("999999999.999"), "line\nbreak", b"\n\r", dt.date(2000, 1, 1),
         dt.datetime(2000, 1, 1, 23, 59, 59), True),
    ], key=repr)


# -- URLs, names, labelling (no service needed) ----------------------------------------------

def test_url_options_are_parsed() -> None:
    target = parse_target(make_url(
        "bigquery://my-project/my_data?location=EU&maximum_bytes_billed=1000000&load=dml"))
    assert (target.project, target.dataset, target.location) == ("my-project", "my_data", "EU")
    assert target.maximum_bytes_billed == 1_000_000 and target.load_method == "dml"
    assert target.emulator is None


@pytest.mark.parametrize("url", ["bigquery:///data", "bigquery://p/bad-name",
                                 "bigquery://p/d?load=fast", "bigquery://p/d?nope=1",
                                 "bigquery://p/d?emulator=127.0.0.1:9050"])
def test_bad_urls_are_config_errors(url: str) -> None:
    with pytest.raises(ConfigError):
        parse_target(make_url(url))


def test_is_emulated_follows_the_url() -> None:
    assert BigQueryBackend.is_emulated(make_url("bigquery://p/d?emulator=http://127.0.0.1:9050"))
    assert not BigQueryBackend.is_emulated(make_url("bigquery://p/d"))


def test_evaluation_dataset_names_are_legal_and_distinct(tmp_path: Path) -> None:
    assert evaluation_dataset_name("bird", "california_schools") == \
        "polysql_bird_california_schools"
    one, two = evaluation_dataset_name("spider", "a-b"), evaluation_dataset_name("spider", "a.b")
    assert one != two and all(ch.isalnum() or ch == "_" for ch in one + two)
    url = BigQueryBackend.evaluation_url(make_url("bigquery://proj?location=EU"), dataset="d",
                                         db_id="x", cache_dir=tmp_path)
    assert url.database == "polysql_d_x" and url.query["location"] == "EU"


def test_names_bigquery_refuses_are_renamed_and_reported() -> None:
    from polysql.core.schema import Column, ColumnType, Table

    tables = [Table("a/b", [Column("id", ColumnType("integer")), Column("ID", ColumnType("text")),
                            Column("x.y", ColumnType("text")),
                            Column("_TABLE_x", ColumnType("text"))])]
    plans, notes = plan_tables(tables, emulated=False)
    assert plans[0].name == "a_b"
    assert list(plans[0].columns.values()) == ["id", "ID_2", "x_y", "c_TABLE_x"]
    assert len(notes) == 4 and all("renamed" in n.message for n in notes)


@pytest.mark.parametrize(("error", "kind"), [
    (api_exceptions.BadRequest("x", errors=[{"reason": "invalidQuery",
                                             "message": "Syntax error: Unexpected end"}]),
     "syntax"),
    (api_exceptions.BadRequest("x", errors=[{"reason": "invalidQuery",
                                             "message": "Unrecognized name: nope at [1:8]"}]),
     "runtime"),
    (api_exceptions.NotFound("x", errors=[{"reason": "notFound",
                                           "message": "Not found: Table p:d.t"}]), "runtime"),
    (api_exceptions.Forbidden("x", errors=[{"reason": "accessDenied", "message": (
        "Access Denied: Table p:d.t: User does not have permission to query table p:d.t, or "
        "perhaps it does not exist.")}]), "runtime"),
    (api_exceptions.Forbidden("x", errors=[{"reason": "accessDenied",
                                            "message": "Access Denied: Project p"}]),
     "forbidden"),
    (api_exceptions.BadRequest("x", errors=[{"reason": "bytesBilledLimitExceeded",
                                             "message": "Query exceeded limit for bytes billed"}]),
     "too_large"),
    (api_exceptions.InternalServerError("x", errors=[{"reason": "timeout",
                                                      "message": "Job timed out after 1s"}]),
     "timeout"),
    (api_exceptions.ServiceUnavailable("x", errors=[{"reason": "backendError",
                                                     "message": "try again"}]), "unavailable"),
])
def test_service_errors_are_classified(error: Exception, kind: str) -> None:
    """Error shapes as the real service reports them (documented reasons and messages)."""
    assert classify(error, timed_out=False)[0] == kind


# -- against the emulator or the service -----------------------------------------------------

def test_version_says_emulated(emulated_base: URL, datasets: Callable[..., URL],
                               sources: Callable[[str, str], Path]) -> None:
    url = datasets()
    _load(sources("tiny", "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);"), url)
    with BigQueryBackend.connect(url) as backend:
        assert backend.emulated
        assert backend.version().startswith("bqemulator ")
        assert backend.version().endswith("(emulated BigQuery)")
        assert backend.execute("SELECT a FROM t").engine == "bigquery"


def test_missing_dataset_is_unavailable(base: URL) -> None:
    from polysql.core.errors import EngineUnavailableError

    with pytest.raises(EngineUnavailableError, match="does not exist"):
        BigQueryBackend.connect(base.set(database="polysql_no_such_dataset"))


@pytest.mark.parametrize("method", ["dml", "job"])
def test_every_type_round_trips(method: str, datasets: Callable[..., URL],
                                sources: Callable[[str, str], Path], plain_client: Any) -> None:
    url = datasets(load=method)
    report, notes = _load(sources(f"types_{method}", TYPES_SQL), url)
    assert report.tables == {"Everything": 4, "order items": 3}
    assert any(method.upper()[:3] in note.upper() or "Parquet" in note for note in notes), notes
    assert _rows(plain_client, url, "Everything") == _expected_everything()
    assert _rows(plain_client, url, "order items") == sorted(
        [(10, 2), (10, 2), (11, None)], key=repr)
    schema = plain_client.get_table(f"{url.host}.{url.database}.Everything").schema
    assert [standard_type_name(f) for f in schema] == ["INT64", "FLOAT64", "NUMERIC", "STRING",
                                                       "BYTES", "DATE", "DATETIME", "BOOL"]
    index_notes = [c for c in report.coercions if "ix_qty" in c.message]
    assert len(index_notes) == 1 and index_notes[0].table == "order items"


def test_results_carry_values_and_types(datasets: Callable[..., URL],
                                        sources: Callable[[str, str], Path]) -> None:
    url = datasets()
    _load(sources("types_read", TYPES_SQL), url)
    with BigQueryBackend.connect(url) as backend:
        result = backend.execute('SELECT * FROM Everything ORDER BY Id')
        assert result.ok, result.error
        assert result.types == ["INT64", "FLOAT64", "NUMERIC", "STRING", "BYTES", "DATE",
                                "DATETIME", "BOOL"]
        assert sorted(result.rows, key=repr) == _expected_everything()
        assert backend.last_stats["job_id"]
        assert backend.last_bytes_processed is not None
        # results carry the job's statistics, so sweep records keep the bytes processed
        assert result.stats["bytes_processed"] == backend.last_bytes_processed
        assert result.stats["job_id"] == backend.last_stats["job_id"]
        tables = {t.name: t for t in backend.tables()}
        assert tables["Everything"].primary_key == ("Id",)
        assert tables["order items"].row_count == 3


def test_load_job_failure_falls_back_to_dml(sources: Callable[[str, str], Path],
                                            emulated_base: URL) -> None:
    """The emulator refuses uploads above BQEMU_UPLOAD_MAX_BYTES: a real load-job failure."""
    with bigquery_emulator.running_emulator(settings={"BQEMU_UPLOAD_MAX_BYTES": "1024"}) as ep:
        url = make_url(f"bigquery://polysql-test/capped?emulator={ep}")
        client = make_client(parse_target(url))
        client.create_dataset("capped")
        rows = ",".join(f"({i}, '{'x' * 50}')" for i in range(200))
        path = sources("capped", f"CREATE TABLE t (k INTEGER, v TEXT); INSERT INTO t VALUES {rows};")
        with connect(f"sqlite:///{path}") as source:
            (plan,), _ = plan_tables(source.tables(), emulated=False)
            client.create_table(bigquery.Table("polysql-test.capped.t", schema=plan.schema()))
            count, how = load_rows(client, "polysql-test.capped.t", plan, source,
                                   method="auto", emulated=False)
            with pytest.raises(LoadError, match="load job"):
                load_rows(client, "polysql-test.capped.t", plan, source, method="job",
                          emulated=False)
        assert count == 200 and how.startswith("INSERT DML (the Parquet load job failed")
        assert sorted(r.values()[0] for r in client.list_rows("polysql-test.capped.t")) == \
            list(range(200))
        client.close()


def test_reload_drops_tables_the_source_lost(datasets: Callable[..., URL],
                                             sources: Callable[[str, str], Path],
                                             plain_client: Any) -> None:
    url = datasets()
    _load(sources("two", "CREATE TABLE a (x INTEGER); CREATE TABLE b (y INTEGER);"), url)
    _load(sources("one", "CREATE TABLE a (x INTEGER);"), url)
    tables = [t.table_id for t in plain_client.list_tables(f"{url.host}.{url.database}")]
    assert tables == ["a"]


def test_column_names_bigquery_refuses_are_renamed(datasets: Callable[..., URL],
                                                  sources: Callable[[str, str], Path]) -> None:
    url = datasets()
    report, _ = _load(sources("dots", 'CREATE TABLE "Prices (EUR)" ("a.b" INTEGER, "Zoë #" TEXT);'
                                      " INSERT INTO \"Prices (EUR)\" VALUES (1, 'one');"), url)
    renamed = sorted((c.table, c.column) for c in report.coercions if "renamed" in c.message)
    assert renamed == [("Prices _EUR_", ""), ("Prices _EUR_", "a_b")]
    with BigQueryBackend.connect(url) as backend:
        result = backend.execute("SELECT * FROM `Prices _EUR_`")
        assert result.columns == ["a_b", "Zoë #"] and result.rows == [(1, "one")]


def test_timeout_stops_the_job_and_the_backend_recovers(datasets: Callable[..., URL],
                                                        sources: Callable[[str, str], Path]
                                                        ) -> None:
    url = datasets()
    _load(sources("slow", "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);"), url)
    with BigQueryBackend.connect(url) as backend:
        result = backend.execute(engine_bigquery.SLOW_QUERY, timeout=1.0)
        assert result.error is not None and result.error.kind == "timeout", result.error
        assert result.elapsed < 1.0 + 5
        assert backend.execute("SELECT a FROM t").rows == [(1,)]


HOSTILE = [
    "DELETE FROM t WHERE TRUE",
    "TRUNCATE TABLE t",
    "MERGE t USING (SELECT 2 AS a) s ON FALSE WHEN NOT MATCHED THEN INSERT (a) VALUES (s.a)",
    "INSERT t (a) VALUES (2)",
    "UPDATE t SET a = 5 WHERE TRUE",
    "CREATE TABLE hacked AS SELECT 1 AS a",
    "CREATE OR REPLACE TABLE t AS SELECT 9 AS a",
    "CREATE TEMP FUNCTION f() AS (1); SELECT f()",
    "DROP TABLE t",
    "ALTER TABLE t ADD COLUMN b INT64",
    "EXECUTE IMMEDIATE 'DELETE FROM t WHERE TRUE'",
    "DECLARE x INT64 DEFAULT 1; DELETE FROM t WHERE TRUE",
    "BEGIN TRANSACTION; DELETE FROM t WHERE TRUE; COMMIT TRANSACTION",
    "EXPORT DATA OPTIONS (uri = 'gs://bucket/x-*.csv', format = 'CSV') AS SELECT * FROM t",
    "LOAD DATA INTO t FROM FILES (format = 'CSV', uris = ['gs://bucket/x.csv'])",
    "SELECT * FROM EXTERNAL_QUERY('us.conn', 'SELECT 1')",
    "SELECT * FROM ML.PREDICT(MODEL m, (SELECT 1 AS a))",
    "SELECT * FROM `region-us`.INFORMATION_SCHEMA.JOBS",
    "SELECT * FROM `bigquery-public-data.samples.shakespeare`",
    "WITH x AS (SELECT 1) DELETE FROM t WHERE TRUE",
    "CALL ds.proc()",
]


@pytest.fixture(scope="module")
def hostile_target(datasets: Callable[..., URL], sources: Callable[[str, str], Path]) -> URL:
    url = datasets()
    _load(sources("hostile", "CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);"), url)
    return url


@pytest.mark.parametrize("sql", HOSTILE)
def test_hostile_sql_is_forbidden_without_effect(sql: str, hostile_target: URL,
                                                 plain_client: Any) -> None:
    dataset = f"{hostile_target.host}.{hostile_target.database}"
    before = ([t.table_id for t in plain_client.list_tables(dataset)],
              _rows(plain_client, hostile_target, "t"),
              [f.name for f in plain_client.get_table(f"{dataset}.t").schema])
    with BigQueryBackend.connect(hostile_target) as backend:
        result = backend.execute(sql)
    assert result.error is not None and result.error.kind == "forbidden", (sql, result)
    after = ([t.table_id for t in plain_client.list_tables(dataset)],
             _rows(plain_client, hostile_target, "t"),
             [f.name for f in plain_client.get_table(f"{dataset}.t").schema])
    assert after == before


def test_other_datasets_are_out_of_reach(hostile_target: URL, datasets: Callable[..., URL],
                                         sources: Callable[[str, str], Path]) -> None:
    other = datasets()
    _load(sources("other", "CREATE TABLE secret (s TEXT); INSERT INTO secret VALUES ('x');"),
          other)
    with BigQueryBackend.connect(hostile_target) as backend:
        for sql in (f"SELECT * FROM {other.database}.secret",
                    f"SELECT * FROM `{other.host}.{other.database}.secret`",
                    f"SELECT * FROM `{other.host}`.{other.database}.secret"):
            result = backend.execute(sql)
            assert result.error is not None and result.error.kind == "forbidden", sql
        # its own dataset, however written, is fine
        for sql in (f"SELECT a FROM {hostile_target.database}.t",
                    f"SELECT a FROM `{hostile_target.host}.{hostile_target.database}.t`"):
            assert backend.execute(sql).rows == [(1,)], sql


def test_dry_run_alone_refuses_writes(emulated_base: URL, hostile_target: URL,
                                      plain_client: Any) -> None:
    """With the statement screen off, BigQuery's own dry-run classification still refuses DML
    (bqemulator's dry run classifies DML without running it, as the service does)."""
    with BigQueryBackend.connect(hostile_target, screen=False, dry_run=True) as backend:
        result = backend.execute("DELETE FROM t WHERE TRUE")
        assert result.error is not None and result.error.kind == "forbidden"
        assert "DELETE" in result.error.message
        assert backend.execute("SELECT a FROM t").rows == [(1,)]
    assert _rows(plain_client, hostile_target, "t") == [(1,)]


def test_division_by_zero_is_a_runtime_error(hostile_target: URL) -> None:
    """BigQuery raises where SQLite, MySQL and ClickHouse answer NULL or infinity, so this is not a
    conformance case; syntax errors, unknown tables and unknown columns are
    (tests/conformance/test_execute.py)."""
    with BigQueryBackend.connect(hostile_target) as backend:
        assert backend.execute("SELECT 1 / 0").error.kind == "runtime"  # type: ignore[union-attr]


def test_maximum_bytes_billed_reaches_the_backend(hostile_target: URL) -> None:
    url = hostile_target.update_query_dict({"maximum_bytes_billed": "10485760"})
    with BigQueryBackend.connect(url) as backend:
        assert backend.target.maximum_bytes_billed == 10_485_760
        assert backend.execute("SELECT a FROM t").rows == [(1,)]


