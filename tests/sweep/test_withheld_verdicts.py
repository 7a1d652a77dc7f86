"""A verdict that needs a re-run its engine cannot make is withheld (a real PostgreSQL database
the sweep did not load, read through a select-only login): the gold and the prediction are cut
at the row cap, so judging needs the prediction again under a higher cap, and the server ends
the session in that very re-run. The prediction stays pending, the sweep says where and why and
exits 6; once the engine answers again, the same command judges it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from polysql_testkit import pg_fixtures
from polysql_testkit.cli_runs import run_sweep
from sqlalchemy.engine import URL

from polysql.cli.main import EXIT_INCOMPLETE
from polysql.core.store import ResultsStore

pytestmark = [pytest.mark.postgres, pytest.mark.usefixtures("isolated_cache")]

ROWS = [("ann", 9), ("bob", 7), ("cy", 7), ("dee", 3), ("eve", 1)]
MAX_ROWS = 2
# The prediction's re-run under ten times the cap fetches that many rows and one more at once.
DYING_FETCH = f"FETCH FORWARD {MAX_ROWS * 10 + 1} "
# A function of the prediction that ends its own session in that re-run, and only there; or
# (the engine back) does nothing.
KEY = """
CREATE OR REPLACE FUNCTION k(x bigint) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    IF {dies} AND strpos(current_query(), '{fetch}') = 1 THEN
        PERFORM pg_terminate_backend(pg_backend_pid());
        PERFORM pg_sleep(5);  -- where the termination is noticed, at once
    END IF;
    RETURN x;
END $$
"""


@dataclass(frozen=True)
class Server:
    admin: URL
    db_id: str
    reader: str

    def engine(self) -> str:
        return self.admin.set(username=self.reader, password=None, database="{db_id}") \
            .render_as_string(hide_password=False)

    def key_dies(self, dies: bool) -> None:
        with pg_fixtures.admin_connection(self.admin, self.db_id) as conn:
            conn.execute(KEY.format(dies="true" if dies else "false", fetch=DYING_FETCH))


@pytest.fixture
def server() -> Iterator[Server]:
    admin = pg_fixtures.server_url()
    db_id = pg_fixtures.unique("withheld").lower()
    reader = pg_fixtures.unique("withheld_ro").lower()
    with pg_fixtures.admin_connection(admin, "postgres") as conn:
        conn.execute(f'CREATE DATABASE "{db_id}"')
        conn.execute(f'CREATE ROLE "{reader}" LOGIN')
    try:
        with pg_fixtures.admin_connection(admin, db_id) as conn:
            conn.execute("CREATE TABLE scores (name text, points bigint)")
            for row in ROWS:
                conn.execute("INSERT INTO scores VALUES (%s, %s)", row)
            conn.execute(f'GRANT SELECT ON scores TO "{reader}"')
        found = Server(admin, db_id, reader)
        found.key_dies(True)
        yield found
    finally:
        with pg_fixtures.admin_connection(admin, "postgres") as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db_id}" WITH (FORCE)')
            conn.execute(f'DROP ROLE IF EXISTS "{reader}"')


@pytest.fixture
def dataset(tmp_path: Path, server: Server) -> Path:
    root = tmp_path / "bird"
    folder = root / "dev_databases" / server.db_id
    folder.mkdir(parents=True)
    pg_fixtures.build_sqlite(folder / f"{server.db_id}.sqlite", (
        "CREATE TABLE scores (name TEXT, points INTEGER); INSERT INTO scores VALUES "
        + ", ".join(f"('{name}', {points})" for name, points in ROWS)))
    (root / "dev.json").write_text(json.dumps([
        {"question_id": 0, "db_id": server.db_id, "question": "who scored?",
         "SQL": "SELECT name FROM scores", "evidence": "", "difficulty": "simple"}]))
    (tmp_path / "preds.jsonl").write_text(json.dumps(
        {"question_id": 0, "sql": "SELECT name FROM scores WHERE k(1) = 1"}) + "\n")
    return root


def sweep(tmp_path: Path, dataset: Path, server: Server) -> tuple[int, str]:
    return run_sweep("--dataset", f"bird:{dataset}", "--engines", f"pg={server.engine()}",
                     "--predictor", f"m={tmp_path / 'preds.jsonl'}",
                     "--max-rows", str(MAX_ROWS), "--out", str(tmp_path / "run"))


def test_a_verdict_whose_re_run_meets_an_outage_is_withheld_then_judged(
        tmp_path: Path, dataset: Path, server: Server) -> None:
    code, output = sweep(tmp_path, dataset, server)
    assert code == EXIT_INCOMPLETE, output
    flat = " ".join(output.split())
    assert "1 verdict(s) on pg withheld" in flat, output
    assert f"re-run of the prediction under a row cap of {MAX_ROWS * 10} could not run" in flat
    assert list(ResultsStore(tmp_path / "run").records()) == []  # pending, not wrong

    server.key_dies(False)  # the engine answers again
    code, output = sweep(tmp_path, dataset, server)
    assert code == 0, output
    (record,) = ResultsStore(tmp_path / "run").records()
    assert record["match"] is True, record["reason"]
    assert record["details"]["row_cap"] == MAX_ROWS * 10
