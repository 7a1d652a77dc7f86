"""The demo dataset end to end on all eight engines in one sweep, by their short names:
SQLite, DuckDB, PostgreSQL, MySQL/MariaDB, Spark, ClickHouse, and Snowflake and BigQuery through
their emulators (which must be labelled as such everywhere)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from polysql_testkit import (
    availability,
    engine_bigquery,
    engine_snowflake,
    mysql_fixtures,
    pg_fixtures,
)
from sqlalchemy.engine import URL

from polysql.cli import main
from polysql.core.store import ResultsStore

ENGINES = "sqlite,duckdb,postgres,mysql,spark,snowflake,bigquery,clickhouse"


def _service(name: str, url: Callable[[], URL]) -> str:
    try:
        return url().render_as_string(hide_password=False)
    except (engine_snowflake.ServerUnavailable, engine_bigquery.ServerUnavailable) as exc:
        availability.unavailable(name, str(exc))


@pytest.mark.slow
def test_demo_sweep_on_every_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for engine in ENGINES.split(","):
        availability.require_client(engine)  # before any server or emulator is started
    monkeypatch.setenv("POLYSQL_CACHE", str(tmp_path / "cache"))
    # the local servers by their default short names; hosted services from the environment
    pg, my = pg_fixtures.server_url(), mysql_fixtures.server_url()
    assert pg.host in ("127.0.0.1", "localhost") and my.host in ("127.0.0.1", "localhost")
    monkeypatch.setenv("POLYSQL_SNOWFLAKE_URL", _service("snowflake", engine_snowflake.base_url))
    monkeypatch.setenv("POLYSQL_BIGQUERY_URL", _service("bigquery", engine_bigquery.base_url))

    run = tmp_path / "run"
    result = CliRunner().invoke(main, ["sweep", "--engines", ENGINES, "--predictor", "gold",
                                       "--out", str(run)], catch_exceptions=False)
    assert result.exit_code == 0, result.output

    records = list(ResultsStore(run).records())
    engines = {r["engine"] for r in records}
    assert engines == {"sqlite", "duckdb", "postgres", "mysql", "spark", "clickhouse",
                       "snowflake-emulated", "bigquery-emulated"}
    questions = {r["question_id"] for r in records}
    assert len(records) == len(questions) * len(engines)  # nothing abandoned, nothing missing
    for record in records:
        emulated = record["engine"].endswith("-emulated")
        assert record["emulated"] is emulated
        assert ("emulated" in record["engine_version"]) is emulated, record["engine_version"]
        if record["engine"] == "bigquery-emulated" and record["status"] in ("match", "mismatch"):
            assert "bytes_processed" in record["pred"]["stats"]  # BigQuery's cost is recorded
    statuses = Counter((r["engine"], r["status"]) for r in records)
    assert statuses[("sqlite", "match")] == len(questions)  # the gold is written for SQLite
    for engine in engines - {"sqlite"}:
        # the verbatim SQLite gold runs on every engine: some of it, not all of it
        assert 0 < statuses[(engine, "match")] < len(questions), engine

    summary = json.loads((run / "summary.json").read_text())
    assert {c["engine"] for c in summary["cells"]} == engines
    report = CliRunner().invoke(main, ["report", str(run), "--resamples", "200"],
                                catch_exceptions=False)
    assert report.exit_code == 0, report.output
    assert "snowflake-emulated" in (run / "analysis" / "report.md").read_text()
