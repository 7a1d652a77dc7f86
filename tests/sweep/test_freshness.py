"""A report says when a run's records were judged on inputs that have changed since the sweep:
a predictions file fixed afterwards, an edited gold query, a replaced database, a newer
comparison contract. Real SQLite and DuckDB engines, hand-made BIRD folders, the CLI in-process."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from polysql_testkit.bird_layout import GOLD, make_bird
from polysql_testkit.cli_runs import run_sweep as sweep

from polysql.cli.main import main
from polysql.core.store import RESULTS_FILE
from polysql.sweep.freshness import check_freshness

pytestmark = pytest.mark.usefixtures("isolated_cache")

def write_predictions(path: Path, sql_by_question: dict[str, str]) -> Path:
    path.write_text("".join(json.dumps({"question_id": q, "sql": sql}) + "\n"
                            for q, sql in sql_by_question.items()), encoding="utf-8")
    return path


def report(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["report", *args], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def swept(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A finished run (predictors m and gold on sqlite and duckdb: 16 records) from relative
    paths inside ``tmp_path/work``; returns (run folder, dataset folder, predictions file)."""
    work = tmp_path / "work"
    work.mkdir()
    root = make_bird(work / "bird")
    preds = write_predictions(work / "preds.jsonl", {str(q): GOLD for q in range(4)})
    previous = Path.cwd()
    os.chdir(work)
    try:
        code, output = sweep("--dataset", "bird:bird", "--out", "run", "--engines",
                             "sqlite,duckdb", "--predictor", "m=preds.jsonl,gold")
    finally:
        os.chdir(previous)
    assert code == 0, output
    return work / "run", root, preds


def test_a_run_whose_inputs_are_unchanged_is_current(swept: tuple[Path, Path, Path]) -> None:
    run, _, _ = swept
    freshness = check_freshness(run)
    assert (freshness.checked, freshness.stale, freshness.problem) == (16, 0, None)
    assert freshness.message() is None
    code, output = report(str(run), "--resamples", "100")
    assert code == 0, output
    assert "STALE" not in output


def test_a_predictions_file_fixed_after_the_sweep_makes_its_records_stale(
        swept: tuple[Path, Path, Path]) -> None:
    run, _, preds = swept
    write_predictions(preds, {"0": "SELECT 42", "1": GOLD, "2": GOLD, "3": GOLD})
    freshness = check_freshness(run)  # checked from another folder than the sweep ran in
    assert (freshness.checked, freshness.stale) == (16, 2)  # question 0 on both engines
    assert dict(freshness.changed) == {"prediction": 2} and freshness.predictors == {"m"}
    code, output = report(str(run), "--resamples", "100")
    assert code == 0, output
    assert "STALE:" in output and "2 of 16 records" in output and "predictions" in output
    assert f"--out {run}" in output
    assert output.count("2 of 16 records") == 1  # said once on screen...
    assert "STALE:" in (run / "analysis" / "report.md").read_text()  # ...and in the report
    # the sweep re-evaluates exactly those, after which the report is current again
    code, output = sweep("--dataset", f"bird:{swept[1]}", "--out", str(run), "--engines",
                         "sqlite,duckdb", "--predictor", f"m={preds},gold")
    assert code == 0 and "2 re-evaluated" in output, output
    assert check_freshness(run).stale == 0


def test_an_edited_gold_query_and_a_replaced_database_are_seen(
        swept: tuple[Path, Path, Path]) -> None:
    run, root, _ = swept
    questions = json.loads((root / "dev.json").read_text())
    questions[3]["SQL"] = "SELECT count(*) FROM item WHERE id > 1"
    (root / "dev.json").write_text(json.dumps(questions))
    freshness = check_freshness(run)
    # gold's own prediction is its gold query: both digests changed for predictor gold
    assert freshness.stale == 4 and freshness.changed == {"gold": 4, "prediction": 2}
    with sqlite3.connect(root / "dev_databases" / "shop" / "shop.sqlite") as con:
        con.execute("INSERT INTO item VALUES (3, 'c')")
    freshness = check_freshness(run)
    assert freshness.stale == 4 + 8 and freshness.changed["database"] == 8


def test_records_of_an_older_comparison_contract_are_stale(swept: tuple[Path, Path, Path]) -> None:
    run, _, _ = swept
    results = run / RESULTS_FILE
    records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    records[0]["inputs"]["contract"] = "compare-1"
    results.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    freshness = check_freshness(run)
    assert freshness.stale == 1 and freshness.changed == {"contract": 1}


def test_a_predictions_file_gone_since_is_said_not_guessed(swept: tuple[Path, Path, Path]) -> None:
    run, _, preds = swept
    preds.unlink()
    freshness = check_freshness(run)
    assert freshness.problem is not None and "does not exist" in freshness.problem
    code, output = report(str(run), "--resamples", "100")
    assert code == 0, output
    assert "UNCHECKED:" in output and "cannot tell whether its records are current" in output
    assert "STALE" not in output


def test_a_database_gone_since_is_said_not_guessed(swept: tuple[Path, Path, Path]) -> None:
    run, root, _ = swept
    (root / "dev_databases" / "zoo" / "zoo.sqlite").unlink()
    freshness = check_freshness(run)
    assert freshness.stale == 0 and freshness.problem is not None
    assert "zoo.sqlite" in freshness.problem
    assert freshness.message() is not None and "cannot tell" in freshness.message()


def test_stale_records_are_not_packed_for_a_leaderboard(swept: tuple[Path, Path, Path]) -> None:
    run, _, preds = swept
    result = CliRunner().invoke(main, ["leaderboard", "pack", str(run), "--out",
                                       str(run.parent / "fresh-bundle")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    write_predictions(preds, {"0": GOLD, "1": "SELECT 1", "2": GOLD, "3": GOLD})
    bundle = run.parent / "stale-bundle"
    result = CliRunner().invoke(main, ["leaderboard", "pack", str(run), "--out", str(bundle)],
                                catch_exceptions=False)
    assert result.exit_code != 0
    assert "refusing to pack stale records" in result.output and "2 of 16 records" in result.output
    assert not bundle.exists()
