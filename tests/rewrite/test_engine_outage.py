"""A rewrite run whose engine goes away mid-run, on a real PostgreSQL server: the sessions on the
case's database are ended and new ones refused just before the rewrite runs. That outage is not
the method's ``execution_failure``: the method is left unscored (exit 6), and a method scored
before it keeps its rows."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from polysql_testkit import pg_fixtures
from sqlalchemy.engine import URL

from polysql.backends.postgres.backend import PostgresBackend
from polysql.backends.postgres.setup import drop_evaluation_database
from polysql.cli.main import EXIT_INCOMPLETE, main

CASE = "demo-pg"


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[URL, str, str]]:
    """The server, a pool name of this test's own, and the name of its case's database (let in
    again and dropped afterwards)."""
    monkeypatch.setenv("POLYSQL_CACHE", str(tmp_path / "cache"))
    url = pg_fixtures.server_url()
    pool = pg_fixtures.unique("outage").replace("_", "-")
    database = PostgresBackend.evaluation_url(url, dataset=f"rewrite-{pool}", db_id=CASE,
                                              cache_dir=tmp_path).database
    assert database
    yield url, pool, database
    with pg_fixtures.admin_connection(url, "postgres") as admin:
        if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone():
            admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
    drop_evaluation_database(url, database)


def cutting_method(folder: Path, url: URL, database: str) -> str:
    """A ``python:`` method that ends every session on ``database`` and refuses new ones, then
    answers a real rewrite of the input."""
    (folder / "outage_rewriters.py").write_text(textwrap.dedent(f"""\
        import psycopg

        def cut(request):
            with psycopg.connect(host={url.host or "127.0.0.1"!r}, port={url.port or 5432},
                                 user={url.username or "postgres"!r}, password={url.password!r},
                                 dbname="postgres", autocommit=True) as admin:
                admin.execute('ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                              "WHERE datname = %s AND pid <> pg_backend_pid()", ({database!r},))
            return "SELECT * FROM (" + request.sql.rstrip().rstrip(";") + ") AS wrapped"
    """), encoding="utf-8")
    return "python:outage_rewriters:cut"


def test_an_engine_gone_mid_run_leaves_the_method_unscored_not_failed(
        server: tuple[URL, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, pool, database = server
    root, out = tmp_path / "cases", tmp_path / "out"
    runner = CliRunner()
    made = runner.invoke(main, ["rewrite", "new-case", CASE, "--engine", "postgres", "--pool",
                                pool, "--root", str(root)], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    monkeypatch.syspath_prepend(str(tmp_path))
    method = cutting_method(tmp_path, url, database)
    engine = url.set(database=None).render_as_string(hide_password=False)
    run = runner.invoke(main, ["rewrite", "run", "--cases", str(root), "--runs", "1",
                               "--warmup", "0", "--engine", f"postgres={engine}",
                               "--out", str(out), "-m", "identity", "-m", method],
                        catch_exceptions=False)
    output = " ".join(run.output.split())
    assert run.exit_code == EXIT_INCOMPLETE, output
    assert f"method {method} was not scored" in output and "INCOMPLETE" in output
    assert f"the rewrite of case {CASE} could not run" in output
    ledger = json.loads((out / "ledger.json").read_text(encoding="utf-8"))
    assert [(row["method"], row["outcome"]) for row in ledger["rows"]] == [("identity", "no_op")]
    assert "engine is unavailable" in ledger["unscored"][method]
    report = (out / "rewrite_report.md").read_text(encoding="utf-8")
    assert "Not scored" in report and f"`{method}`" in report
