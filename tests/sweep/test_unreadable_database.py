"""A dataset database that cannot be read: another program is writing to it (it holds SQLite's
write lock), or the file is damaged. Reading it fails with what to do (a locked one after a few
seconds); a sweep leaves that database's questions pending (never judged without a gold, never
recorded as invalid gold) and scores the rest, and a re-run once the database can be read
finishes the run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from polysql_testkit.bird_layout import make_bird
from polysql_testkit.cli_runs import run_sweep
from polysql_testkit.sqlite_files import write_locked

import polysql
from polysql.core.errors import EngineError, LoadError
from polysql.core.store import RESULTS_FILE

pytestmark = pytest.mark.usefixtures("isolated_cache")

EXIT_INCOMPLETE = 6


def _records(run: Path) -> list[dict[str, object]]:
    path = run / RESULTS_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_copying_a_locked_sqlite_file_fails_with_the_reason_instead_of_waiting(
        tmp_path: Path) -> None:
    """SQLite's backup retries a locked source for as long as the lock lasts, out of reach of
    Ctrl-C: the copy gives up after the same wait as every other read, and says why."""
    source = make_bird(tmp_path / "bird") / "dev_databases" / "zoo" / "zoo.sqlite"
    target = tmp_path / "copy.sqlite"
    with write_locked(source), pytest.raises(LoadError) as failure:
        polysql.load(f"sqlite:///{source}", f"sqlite:///{target}")
    message = str(failure.value)
    assert "locked" in message and "another program is writing to it" in message, message
    assert not target.exists()
    # the lock gone, the same load works
    report = polysql.load(f"sqlite:///{source}", f"sqlite:///{target}")
    assert report.tables == {"item": 2}


def test_reading_the_tables_of_a_locked_file_says_what_to_do(tmp_path: Path) -> None:
    source = make_bird(tmp_path / "bird") / "dev_databases" / "zoo" / "zoo.sqlite"
    with write_locked(source), pytest.raises(EngineError) as failure:
        polysql.load(f"sqlite:///{source}", f"duckdb:///{tmp_path / 'copy.duckdb'}")
    assert "let that write finish" in str(failure.value), failure.value


def test_a_sweep_leaves_a_locked_database_pending_and_scores_the_rest(tmp_path: Path) -> None:
    root = make_bird(tmp_path / "bird")  # questions 0-1 on shop, 2-3 on zoo
    run = tmp_path / "run"
    args = ("--dataset", f"bird:{root}", "--engines", "sqlite,duckdb", "--predictor", "gold",
            "--out", str(run))
    with write_locked(root / "dev_databases" / "zoo" / "zoo.sqlite"):
        code, output = run_sweep(*args)
    assert code == EXIT_INCOMPLETE, output
    assert "database zoo" in output and "locked" in output, output
    written = _records(run)
    assert sorted((r["question_id"], r["engine"]) for r in written) == [
        ("0", "duckdb"), ("0", "sqlite"), ("1", "duckdb"), ("1", "sqlite")]
    assert all(r["status"] == "match" for r in written), written
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    assert summary["pending"] == 4 and summary["invalid_gold"] == 0, summary
    assert "could not run" in (run / "report.md").read_text(encoding="utf-8")

    code, output = run_sweep(*args)  # the writer is done: the pending work runs
    assert code == 0, output
    finished = _records(run)
    assert len(finished) == 8 and all(r["status"] == "match" for r in finished), finished


def test_a_damaged_database_is_named_and_its_questions_stay_pending(tmp_path: Path) -> None:
    root = make_bird(tmp_path / "bird")
    damaged = root / "dev_databases" / "zoo" / "zoo.sqlite"
    whole = damaged.read_bytes()
    # the second page cut off: the schema on page 1 names a table whose pages are gone
    with sqlite3.connect(damaged) as conn:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    damaged.write_bytes(whole[:page])
    run = tmp_path / "run"
    args = ("--dataset", f"bird:{root}", "--engines", "sqlite", "--predictor", "gold",
            "--out", str(run))
    code, output = run_sweep(*args)
    said = " ".join(output.split())
    assert code == EXIT_INCOMPLETE, output
    assert "database zoo" in said and "the file is damaged" in said, said
    written = _records(run)
    assert sorted(r["question_id"] for r in written) == ["0", "1"], written
    assert all(r["status"] == "match" for r in written), written

    damaged.write_bytes(whole)  # restored: the pending work runs
    code, output = run_sweep(*args)
    assert code == 0, output
    assert len(_records(run)) == 4
