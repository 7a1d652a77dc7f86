"""Sweeping on databases polysql did not load: a PostgreSQL and a MySQL database built here from
plain SQL scripts by an administrator, reached through SELECT-only logins with an engine URL whose
database part is ``{db_id}``.

Nothing is loaded into them; the records are bound to what each database holds (its own schema,
row counts and the engine's record of row changes), so a change there re-evaluates the records
made on it."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from polysql_testkit import mysql_fixtures, pg_fixtures
from polysql_testkit.cli_runs import run_sweep as sweep
from sqlalchemy.engine import URL

import polysql
from polysql.cli.main import main
from polysql.core.store import ResultsStore

pytestmark = [pytest.mark.postgres, pytest.mark.mysql, pytest.mark.usefixtures("isolated_cache")]

SCRIPT = """
CREATE TABLE invoice (id integer PRIMARY KEY, customer varchar(20) NOT NULL, total decimal(10, 2));
INSERT INTO invoice VALUES (1, 'Ann', 10.50), (2, 'Bob', NULL), (3, 'Zoe', 7.25);
"""
QUESTIONS = [
    ("q1", "How many invoices are there?", "SELECT count(*) FROM invoice"),
    ("q2", "Total of all invoices?", "SELECT sum(total) FROM invoice"),
    ("q3", "Customers without a total?", "SELECT customer FROM invoice WHERE total IS NULL"),
]


@dataclass(frozen=True)
class Servers:
    db_id: str
    reader: str
    pg_admin: URL
    my_admin: URL

    def engines(self) -> str:
        pg = self.pg_admin.set(username=self.reader, password=None, database="{db_id}")
        my = self.my_admin.set(username=self.reader, password=None, database="{db_id}")
        # URLs as a user types them: the placeholder stays literal
        return (f"sqlite,pg={pg.render_as_string(hide_password=False).replace('%7Bdb_id%7D', '{db_id}')},"
                f"my={my.render_as_string(hide_password=False).replace('%7Bdb_id%7D', '{db_id}')}")


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    pg_admin, my_admin = pg_fixtures.server_url(), mysql_fixtures.server_url()
    db_id = pg_fixtures.unique("shop").lower()
    reader = pg_fixtures.unique("team_ro").lower()
    with pg_fixtures.admin_connection(pg_admin, "postgres") as server:
        server.execute(f'CREATE DATABASE "{db_id}"')
        server.execute(f'CREATE ROLE "{reader}" LOGIN')
    with pg_fixtures.admin_connection(pg_admin, db_id) as conn:
        conn.execute(SCRIPT)
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute(f'GRANT SELECT ON invoice TO "{reader}"')
    my = mysql_fixtures.admin_connection(my_admin)
    with my.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{db_id}`")
        cur.execute(f"USE `{db_id}`")
        for statement in filter(None, (part.strip() for part in SCRIPT.split(";"))):
            cur.execute(statement)
        cur.execute(f"CREATE USER '{reader}'@'%'")
        cur.execute(f"GRANT SELECT ON `{db_id}`.* TO '{reader}'@'%'")
    my.commit()
    try:
        yield Servers(db_id, reader, pg_admin, my_admin)
    finally:
        with pg_fixtures.admin_connection(pg_admin, "postgres") as server:
            server.execute(f'DROP DATABASE IF EXISTS "{db_id}" WITH (FORCE)')
            server.execute(f'DROP ROLE IF EXISTS "{reader}"')
        with my.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{db_id}`")
            cur.execute(f"DROP USER IF EXISTS '{reader}'@'%'")
        my.close()


@pytest.fixture()
def dataset(tmp_path: Path, servers: Servers) -> Path:
    """A BIRD-layout folder whose one SQLite database holds what the server databases hold."""
    root = tmp_path / "bird"
    folder = root / "dev_databases" / servers.db_id
    folder.mkdir(parents=True)
    with sqlite3.connect(folder / f"{servers.db_id}.sqlite") as conn:
        conn.executescript(SCRIPT)
    (root / "dev.json").write_text(json.dumps([
        {"question_id": qid, "db_id": servers.db_id, "question": text, "SQL": sql,
         "evidence": "", "difficulty": "simple"} for qid, text, sql in QUESTIONS]))
    return root


def test_existing_databases_are_swept_through_select_only_logins(
        tmp_path: Path, dataset: Path, servers: Servers) -> None:
    run = tmp_path / "run"
    code, output = sweep("--dataset", f"bird:{dataset}", "--engines", servers.engines(),
                         "--predictor", "gold", "--out", str(run))
    assert code == 0, output
    records = list(ResultsStore(run).records())
    by_engine: dict[str, list[str]] = {}
    for record in records:
        by_engine.setdefault(str(record["engine"]), []).append(str(record["status"]))
    assert by_engine == {engine: ["match"] * len(QUESTIONS) for engine in ("sqlite", "pg", "my")}
    # nothing was loaded: polysql made no database of its own on either server
    with pg_fixtures.admin_connection(servers.pg_admin, "postgres") as server:
        made = server.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                              (f"%{servers.db_id}%",)).fetchall()
    assert made == [(servers.db_id,)]


def _sessions(servers: Servers) -> int:
    """Sessions ever opened on the PostgreSQL database (the server's own count)."""
    with pg_fixtures.admin_connection(servers.pg_admin, "postgres") as server:
        server.execute("SELECT pg_stat_clear_snapshot()")
        row = server.execute("SELECT sessions FROM pg_stat_database WHERE datname = %s",
                             (servers.db_id,)).fetchone()
    assert row is not None
    return int(row[0])


def _sessions_settled(servers: Servers, before: int) -> int:
    """Sessions opened since ``before``, once the closed ones' statistics have reached the
    server (a backend reports them as it exits)."""
    deadline = time.monotonic() + 10
    count = _sessions(servers) - before
    while time.monotonic() < deadline:
        time.sleep(0.5)
        again = _sessions(servers) - before
        if again == count:
            return count
        count = again
    return count


def test_an_existing_database_is_opened_once_per_sweep(
        tmp_path: Path, dataset: Path, servers: Servers) -> None:
    """Planning reads the database (its tables and row counts) for the records' inputs; the work
    then evaluates on that same connection instead of opening the database, and counting its
    tables, a second time -- on a large warehouse database that count is the slow part."""
    pg = servers.pg_admin.set(username=servers.reader, password=None, database=servers.db_id)
    before = _sessions(servers)
    with polysql.connect(pg) as once:  # what opening it once and running a statement takes
        once.tables()
        assert once.execute("SELECT count(*) FROM invoice").rows == [(3,)]
    one_open = _sessions_settled(servers, before)
    assert one_open >= 1

    engines = servers.engines().split(",")
    before = _sessions(servers)
    code, output = sweep("--dataset", f"bird:{dataset}", "--engines", f"{engines[0]},{engines[1]}",
                         "--predictor", "gold", "--out", str(tmp_path / "run"))
    assert code == 0, output
    assert _sessions_settled(servers, before) == one_open


def test_a_changed_existing_database_re_evaluates_its_records(
        tmp_path: Path, dataset: Path, servers: Servers) -> None:
    run = tmp_path / "run"
    args = ("--dataset", f"bird:{dataset}", "--engines", servers.engines(),
            "--predictor", "gold", "--out", str(run))
    code, output = sweep(*args)
    assert code == 0, output
    code, output = sweep(*args)
    assert code == 0, output
    assert f"{3 * len(QUESTIONS)} resumed" in output

    with pg_fixtures.admin_connection(servers.pg_admin, servers.db_id) as conn:
        conn.execute("INSERT INTO invoice VALUES (4, 'Dan', 1.00)")
    try:
        code, output = sweep(*args)
        assert code == 0, output
        # the PostgreSQL records were made on other content: re-evaluated, and now they differ
        latest = {(r["engine"], r["question_id"]): r["status"]
                  for r in ResultsStore(run).records()}
        assert latest[("pg", "q1")] == "mismatch"
        assert latest[("my", "q1")] == "match"
        assert f"{2 * len(QUESTIONS)} resumed" in output
    finally:
        with pg_fixtures.admin_connection(servers.pg_admin, servers.db_id) as conn:
            conn.execute("DELETE FROM invoice WHERE id = 4")


def test_an_update_that_keeps_every_row_count_re_evaluates_too(
        tmp_path: Path, dataset: Path, servers: Servers) -> None:
    """Schema and row counts alone would call the database unchanged and serve the records (and
    cached results) made on the old values; each engine's own record of row changes tells."""
    run = tmp_path / "run"
    args = ("--dataset", f"bird:{dataset}", "--engines", servers.engines(),
            "--predictor", "gold", "--out", str(run))
    code, output = sweep(*args)
    assert code == 0, output
    time.sleep(1.1)  # MySQL keeps the time of a table's last change to the second
    with pg_fixtures.admin_connection(servers.pg_admin, servers.db_id) as conn:
        conn.execute("UPDATE invoice SET total = 99.00 WHERE id = 3")
    my = mysql_fixtures.admin_connection(servers.my_admin)
    try:
        with my.cursor() as cur:
            cur.execute(f"UPDATE `{servers.db_id}`.invoice SET total = 99.00 WHERE id = 3")
        my.commit()
        code, output = sweep(*args)
        assert code == 0, output
        latest = {(r["engine"], r["question_id"]): r["status"]
                  for r in ResultsStore(run).records()}
        # q2 sums the totals: re-evaluated on both servers, and no longer the SQLite answer
        assert latest[("pg", "q2")] == "mismatch" and latest[("my", "q2")] == "mismatch"
        assert latest[("sqlite", "q2")] == "match"
        assert f"{len(QUESTIONS)} resumed" in output  # only the SQLite records
    finally:
        with pg_fixtures.admin_connection(servers.pg_admin, servers.db_id) as conn:
            conn.execute("UPDATE invoice SET total = 7.25 WHERE id = 3")
        with my.cursor() as cur:
            cur.execute(f"UPDATE `{servers.db_id}`.invoice SET total = 7.25 WHERE id = 3")
        my.commit()
        my.close()


def test_a_login_from_polysql_reader_create_sweeps_the_existing_databases(
        tmp_path: Path, dataset: Path, servers: Servers) -> None:
    """The administrator makes the reader with `polysql reader create`; the sweep uses its URL
    with {db_id} for the database."""
    login = pg_fixtures.unique("team_made").lower()
    engines = ["sqlite"]
    try:
        for name, admin in (("pg", servers.pg_admin), ("my", servers.my_admin)):
            made = CliRunner().invoke(main, [
                "reader", "create", admin.render_as_string(hide_password=False),
                "--database", servers.db_id, "--login", login], catch_exceptions=False)
            assert made.exit_code == 0, made.stderr
            url = made.stdout.strip()
            assert f"/{servers.db_id}" in url
            engines.append(f"{name}={url.replace(f'/{servers.db_id}', '/{db_id}')}")
        run = tmp_path / "run"
        code, output = sweep("--dataset", f"bird:{dataset}", "--engines", ",".join(engines),
                             "--predictor", "gold", "--out", str(run))
        assert code == 0, output
        statuses = {(r["engine"], r["question_id"]): r["status"]
                    for r in ResultsStore(run).records()}
        assert set(statuses.values()) == {"match"}
        assert {engine for engine, _ in statuses} == {"sqlite", "pg", "my"}
    finally:
        for admin in (servers.pg_admin, servers.my_admin):
            CliRunner().invoke(main, ["reader", "drop", admin.render_as_string(hide_password=False),
                                      "--login", login])
