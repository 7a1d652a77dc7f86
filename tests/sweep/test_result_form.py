"""Results fetched in an older form are fetched and judged again.

When an engine's values start coming back in another Python form (MySQL's TIME became a time of
day instead of its text), what the execution cache and the sweep records hold from before would be
judged by the old form. The engine's ``result_form`` is part of both keys, so a sweep fetches those
results again and re-judges their records. Real SQLite and MariaDB/MySQL.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from polysql_testkit import mysql_fixtures
from polysql_testkit.jsonl_dataset import write_questions

from polysql.backends.mysql import INFO
from polysql.backends.mysql.backend import MySQLBackend
from polysql.core.store import ResultsStore
from polysql.sweep.config import SweepConfig
from polysql.sweep.outcome import SweepOutcome
from polysql.sweep.runner import Sweep

pytestmark = [pytest.mark.mysql, pytest.mark.usefixtures("isolated_cache")]

GOLD = {
    "q1": "SELECT id, time(seen) FROM visit ORDER BY id",
    "q2": "SELECT count(*) FROM visit WHERE time(seen) > '12:00:00'",
}


def dataset(root: Path) -> str:
    (root / "databases").mkdir(parents=True)
    con = sqlite3.connect(root / "databases" / "site.sqlite")
    con.execute("CREATE TABLE visit (id INTEGER PRIMARY KEY, seen DATETIME)")
    con.executemany("INSERT INTO visit VALUES (?, ?)", [
        (1, "2024-03-01 08:15:00"), (2, "2024-03-01 12:30:45"), (3, "2024-03-02 23:59:59")])
    con.commit()
    con.close()
    return write_questions(root, "site", GOLD)


def sweep(name: str, run: Path) -> SweepOutcome:
    mysql = mysql_fixtures.server_url().render_as_string(hide_password=False)
    return Sweep(SweepConfig(dataset=name, engines=f"sqlite,mysql={mysql}", predictors="gold",
                             out=run)).run()


def test_a_new_result_form_refetches_and_rejudges_that_engine_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name, run = dataset(tmp_path / "site"), tmp_path / "run"
    first = sweep(name, run)
    records = {(r["engine"], r["question_id"]): r for r in _records(run)}
    # MySQL's TIME() of the copied DATETIME(6) has six fractional digits; as a time of day it
    # equals SQLite's text
    assert all(r["status"] == "match" for r in records.values()), records
    assert "target" in records[("mysql", "q1")]["inputs"]  # the form the results were read in
    assert "target" not in records[("sqlite", "q1")]["inputs"]  # no form change: as before
    assert first.written == 4

    again = sweep(name, run)
    assert (again.written, again.resumed, again.reevaluated) == (0, 4, 0)

    # the same engine with its values read in another form from now on
    monkeypatch.setattr(MySQLBackend, "info", dataclasses.replace(INFO, result_form="later"))
    changed = sweep(name, run)
    assert (changed.written, changed.reevaluated) == (2, 2)
    assert {r["engine"] for r in _records(run) if r["inputs"] != records[
        (r["engine"], r["question_id"])]["inputs"]} == {"mysql"}
    # only the gold runs on SQLite came from the cache: MySQL's were fetched again
    assert changed.cache_hits == len(GOLD)


def _records(run: Path) -> list[dict[str, Any]]:
    return list(ResultsStore(run).records())
