"""End-to-end sweeps through the CLI, on real SQLite and DuckDB engines."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from polysql_testkit.cli_runs import run_sweep as sweep

from polysql.cli.main import EXIT_CONFIG, EXIT_STORE, main
from polysql.core.store import ResultsStore

pytestmark = pytest.mark.usefixtures("isolated_cache")


def records(run: Path) -> list[dict[str, object]]:
    return list(ResultsStore(run).records())


def test_demo_sweep_gold_is_perfect_on_sqlite_and_worse_on_duckdb(tmp_path: Path) -> None:
    run = tmp_path / "run"
    code, output = sweep("--out", str(run))
    assert code == 0, output
    rows = records(run)
    n_questions = len({r["question_id"] for r in rows})
    assert n_questions >= 80
    assert len(rows) == n_questions * 2 * 2  # predictors x engines
    summary = json.loads((run / "summary.json").read_text())
    cells = {(c["predictor"], c["engine"]): c for c in summary["cells"]}
    assert cells[("gold", "sqlite")]["accuracy"] == 1.0
    assert cells[("gold", "duckdb")]["accuracy"] < 1.0
    assert cells[("transpile", "sqlite")]["accuracy"] == 1.0
    for name in ("summary.csv", "report.md", "report.html"):
        assert (run / name).stat().st_size > 0
    assert "gold" in output and "duckdb" in output
    # every failing duckdb record says why
    for r in rows:
        if r["engine"] == "duckdb" and r["status"] != "match":
            assert r["reason"]


def test_rerun_resumes_and_an_interrupted_run_finishes_only_the_rest(tmp_path: Path) -> None:
    run = tmp_path / "run"
    code, _ = sweep("--out", str(run), "--limit", "10")
    assert code == 0
    first = records(run)
    assert len(first) == 40
    code, output = sweep("--out", str(run), "--limit", "10")
    assert code == 0 and "0 new records, 40 resumed" in output
    # simulate Ctrl-C mid-way: keep 15 whole records and half of the 16th
    lines = (run / "results.jsonl").read_text().splitlines(keepends=True)
    (run / "results.jsonl").write_text("".join(lines[:15]) + lines[15][:30])
    code, output = sweep("--out", str(run), "--limit", "10")
    assert code == 0, output
    assert "25 new records, 15 resumed" in output
    again = {(r["question_id"], r["predictor"], r["engine"]): r["status"] for r in records(run)}
    assert again == {(r["question_id"], r["predictor"], r["engine"]): r["status"] for r in first}


def test_changed_verdict_settings_refuse_to_mix_into_an_old_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert sweep("--out", str(run), "--limit", "2")[0] == 0
    code, output = sweep("--out", str(run), "--limit", "2", "--timeout", "5")
    assert code == EXIT_STORE
    assert "different timeout (timeout: 30.0 there, 5.0 now)" in " ".join(output.split())
    assert "--fresh" in output
    code, output = sweep("--out", str(run), "--limit", "2", "--timeout", "5", "--fresh")
    assert code == 0, output


def test_prediction_file_with_bad_lines_and_missing_questions(tmp_path: Path) -> None:
    preds = tmp_path / "preds.jsonl"
    preds.write_text("\n".join([
        json.dumps({"question_id": "demo-001", "dialect": "duckdb", "sql": "SELECT 1 AS x"}),
        "{broken",
        json.dumps({"question_id": "demo-002", "sql": "SELEC nonsense"}),
    ]) + "\n")
    run = tmp_path / "run"
    code, output = sweep("--out", str(run), "--limit", "3", "--engines", "duckdb",
                         "--predictor", f"mine={preds}")
    assert code == 0, output
    assert f"{preds}:2: not valid JSON" in output
    by_q = {r["question_id"]: r for r in records(run)}
    assert by_q["demo-001"]["status"] in ("match", "mismatch")
    assert by_q["demo-002"]["status"] == "exec_error"
    assert by_q["demo-002"]["pred"]["error"]["kind"] == "syntax"
    assert by_q["demo-003"]["status"] == "generation_failure"
    assert by_q["demo-003"]["prediction_failure"] == "missing_prediction"


def test_timeouts_are_counted_per_engine_beside_the_table_and_in_the_report(tmp_path: Path) -> None:
    # 'errors' alone does not say that these are timeouts, which an engine short of memory
    # causes as readily as slow SQL
    runaway = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"
    preds = tmp_path / "preds.jsonl"
    preds.write_text("\n".join(json.dumps({"question_id": q, "sql": sql}) for q, sql in [
        ("demo-001", runaway), ("demo-002", runaway), ("demo-003", "SELECT 1")]) + "\n")
    run = tmp_path / "run"
    code, output = sweep("--out", str(run), "--limit", "3", "--engines", "sqlite",
                         "--predictor", f"mine={preds}", "--timeout", "0.5")
    assert code == 0, output
    assert [r["pred"]["error"]["kind"] for r in records(run) if r["status"] == "exec_error"] == \
        ["timeout", "timeout"]
    note = "2 prediction(s) ran past the timeout of 0.5 s (sqlite 2) and count as wrong answers"
    assert note in " ".join(output.split())
    assert note in (run / "report.md").read_text()
    assert note in (run / "report.html").read_text()
    code, output = sweep("--out", str(tmp_path / "other"), "--limit", "3", "--engines", "sqlite")
    assert code == 0 and "ran past the timeout" not in output


def test_invalid_gold_is_reported_as_such(tmp_path: Path) -> None:
    # a Spider-layout fixture whose second gold query references a missing table
    root = tmp_path / "spider"
    db_dir = root / "database" / "shop"
    db_dir.mkdir(parents=True)
    con = sqlite3.connect(db_dir / "shop.sqlite")
    con.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT)")
    con.executemany("INSERT INTO item VALUES (?, ?)", [(1, "a"), (2, "b")])
    con.commit()
    con.close()
    (root / "dev.json").write_text(json.dumps([
        {"db_id": "shop", "question": "how many items", "query": "SELECT count(*) FROM item"},
        {"db_id": "shop", "question": "broken", "query": "SELECT * FROM no_such_table"},
    ]))
    run = tmp_path / "run"
    code, output = sweep("--dataset", f"spider:{root}", "--out", str(run), "--predictor", "gold")
    assert code == 0, output
    statuses = sorted((r["question_id"], r["engine"], r["status"]) for r in records(run))
    assert [s for _, _, s in statuses].count("invalid_gold") == 2
    assert [s for _, _, s in statuses].count("match") == 2


def test_usage_errors_are_one_clear_line_with_a_stable_exit_code(tmp_path: Path) -> None:
    code, output = sweep("--out", str(tmp_path / "r"), "--engines", "oracle")
    assert code == EXIT_CONFIG
    assert "unknown engine 'oracle'" in output and "Traceback" not in output
    code, output = sweep("--out", str(tmp_path / "r"), "--engines", "nosuch://x")
    assert code == EXIT_CONFIG and "no backend for engine URL scheme 'nosuch'" in output
    code, output = sweep("--out", str(tmp_path / "r"), "--dataset", "nope")
    assert code != 0 and "nope" in output and "Traceback" not in output


def test_up_without_docker_says_what_is_missing_and_how_to_proceed() -> None:
    """This machine has no Docker engine: `polysql up` must say so (or name the missing
    extra) in one line, with the way to use existing servers instead."""
    result = CliRunner().invoke(main, ["up"])
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output
    assert ("pip install 'polysql[containers]'" in result.output
            or "no Docker engine is reachable" in result.output)


def test_an_unreachable_engine_is_abandoned_without_recording_anything_for_it(tmp_path: Path) -> None:
    run = tmp_path / "run"
    code, output = sweep("--out", str(run), "--limit", "3", "--predictor", "gold",
                         "--engines", "sqlite,down=postgresql://postgres@127.0.0.1:1/")
    assert code == 6, output
    assert "engine down was abandoned" in output and "re-run the same command to resume" in output
    assert {r["engine"] for r in records(run)} == {"sqlite"}  # nothing recorded as wrong for it


def test_a_bad_policy_option_fails_before_any_work(tmp_path: Path) -> None:
    run = tmp_path / "run"
    code, output = sweep("--out", str(run), "--limit", "1", "--policy", "rel_tol=2")
    assert code == EXIT_CONFIG, output
    assert "rel_tol" in output and "Traceback" not in output
    code, output = sweep("--out", str(run), "--limit", "1", "--policy", "no_such_rule=1")
    assert code == EXIT_CONFIG and "valid options are" in output
    assert not (run / "results.jsonl").exists()


def test_a_database_named_in_an_engine_url_that_the_sweep_does_not_use_is_warned_about(
        tmp_path: Path) -> None:
    """A sweep builds its own copies; a file or database named in an engine URL (other than a
    {db_id} template) is not used, and the output says so, with where the copy is instead."""
    mine = tmp_path / "mine.duckdb"
    run = tmp_path / "run"
    code, output = sweep("--out", str(run), "--limit", "2", "--predictor", "gold",
                         "--engines", f"sqlite,duckdb:///{mine}")
    assert code == 0, output
    flat = " ".join(output.split())
    assert f"engine duckdb: '{mine}' in its URL is not used" in flat
    assert "write {db_id} in its place" in flat and "retail.duckdb" in flat
    assert not mine.exists()
    code, output = sweep("--out", str(tmp_path / "plain"), "--limit", "2", "--predictor", "gold",
                         "--engines", "sqlite:///,duckdb://")
    assert code == 0 and "is not used" not in output
