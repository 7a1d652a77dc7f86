"""A dataset with mixed-case names swept on real SQLite and PostgreSQL. SQL written for SQLite
leaves names unquoted in any case (Spider's ``SELECT T1.name FROM singer`` for a column ``Name``)
or quotes them exactly (``"Name"``); PostgreSQL folds unquoted names to lower case. The copy keeps
the exact names and reads a statement that names what they lack through the fold schema, so both
styles run. Records on PostgreSQL copies carry the copy's layout, so records made on copies of
another layout are evaluated again on resume."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from polysql_testkit import pg_fixtures
from polysql_testkit.jsonl_dataset import write_questions

from polysql.cli.main import main
from polysql.core.store import ResultsStore

pytestmark = [pytest.mark.postgres, pytest.mark.usefixtures("isolated_cache")]

GOLD = {
    "q1": "SELECT count(*) FROM Track WHERE AlbumId = 1",
    "q2": "SELECT a.Title, sum(t.Milliseconds) FROM Album a JOIN Track t ON t.AlbumId = a.AlbumId "
          "GROUP BY a.Title",
    "q3": 'SELECT "Name" FROM "Track" WHERE "TrackId" = 3',
    "q4": "SELECT T1.name, T1.Country FROM singer AS T1 WHERE T1.SINGER_ID > 1",
    "q5": 'SELECT "Unit Price" FROM Track WHERE TrackId = 2',
    "q6": 'SELECT "Name" FROM singer WHERE "Country" = \'Peru\'',
}


def dataset(root: Path) -> str:
    (root / "databases").mkdir(parents=True)
    con = sqlite3.connect(root / "databases" / "music.sqlite")
    con.executescript("""
        CREATE TABLE Album (AlbumId INTEGER PRIMARY KEY, Title TEXT);
        CREATE TABLE Track (TrackId INTEGER PRIMARY KEY, Name TEXT,
                            AlbumId INTEGER REFERENCES Album(AlbumId), Milliseconds INTEGER);
        INSERT INTO Album VALUES (1, 'Rock'), (2, 'Jazz');
        INSERT INTO Track VALUES (1, 'One', 1, 1000), (2, 'Two', 1, 2000), (3, 'Three', 2, 500);
        ALTER TABLE Track ADD COLUMN "Unit Price" REAL;
        UPDATE Track SET "Unit Price" = TrackId * 0.5;
        CREATE TABLE singer (Singer_ID INTEGER PRIMARY KEY, Name TEXT, Country TEXT);
        INSERT INTO singer VALUES (1, 'Ann', 'France'), (2, 'Bo', 'Chile'), (3, 'Cy', 'Peru');
    """)
    con.commit()
    con.close()
    return write_questions(root, "music", GOLD)


def sweep(name: str, run: Path) -> list[dict[str, Any]]:
    pg = pg_fixtures.server_url().render_as_string(hide_password=False)
    result = CliRunner().invoke(main, ["sweep", "--dataset", name, "--engines",
                                       f"sqlite,postgres={pg}", "--predictor", "gold,transpile",
                                       "--out", str(run)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return list(ResultsStore(run).records())


def test_sqlite_gold_in_any_spelling_matches_on_postgres(tmp_path: Path) -> None:
    records = sweep(dataset(tmp_path / "music"), tmp_path / "run")
    assert len(records) == len(GOLD) * 2 * 2
    for record in records:
        assert record["status"] == "match", (record["engine"], record["sql"], record["pred"])
    by_engine = {r["engine"]: r["inputs"] for r in records}
    assert "target" in by_engine["postgres"]  # the copy's layout
    assert "target" not in by_engine["sqlite"]  # a plain copy: inputs as they always were


def test_records_made_without_the_layout_are_evaluated_again(tmp_path: Path) -> None:
    name, run = dataset(tmp_path / "music"), tmp_path / "run"
    sweep(name, run)
    # records as a copy without views left them: a failed statement, inputs without the layout
    results = run / "results.jsonl"
    stale = []
    for line in results.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["engine"] == "postgres":
            record["inputs"].pop("target")
            record["status"], record["match"] = "exec_error", False
        stale.append(json.dumps(record))
    results.write_text("\n".join(stale) + "\n", encoding="utf-8")
    records = sweep(name, run)
    assert len(records) == len(GOLD) * 2 * 2
    assert all(r["status"] == "match" for r in records), [
        (r["engine"], r["status"]) for r in records]
