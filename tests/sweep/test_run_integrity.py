"""Run integrity through the CLI: every number a sweep prints is current, complete or says it is
not. Real SQLite and DuckDB engines, the bundled demo dataset and hand-made BIRD folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from polysql_testkit.bird_layout import make_bird
from polysql_testkit.cli_runs import run_sweep as sweep
from polysql_testkit.file_limits import needs_rlimits, run_cli_with_file_limit

from polysql.cli.main import EXIT_DATA, EXIT_INCOMPLETE, EXIT_STORE
from polysql.core.store import RESULTS_FILE, SUPERSEDED_FILE, ResultsStore

pytestmark = pytest.mark.usefixtures("isolated_cache")


def by_question(run: Path) -> dict[str, dict[str, object]]:
    return {str(r["question_id"]): r for r in ResultsStore(run).latest_records()}


def write_predictions(path: Path, sql_by_question: dict[str, str]) -> Path:
    path.write_text("".join(json.dumps({"question_id": q, "sql": sql}) + "\n"
                            for q, sql in sql_by_question.items()), encoding="utf-8")
    return path


GOLD_1 = "SELECT count(*) FROM customers"


def demo_gold(question_id: str) -> str:
    from polysql.datasets.registry import get_dataset

    return get_dataset("demo").question(question_id).gold_sql


def test_a_fixed_predictions_file_is_re_evaluated_and_the_old_verdict_set_aside(tmp_path: Path) -> None:
    run, preds = tmp_path / "run", tmp_path / "preds.jsonl"
    write_predictions(preds, {"demo-001": "SELECT 42", "demo-002": demo_gold("demo-002")})
    args = ["--out", str(run), "--engines", "sqlite", "--limit", "2", "--predictor", f"m={preds}"]
    code, output = sweep(*args)
    assert code == 0, output
    assert by_question(run)["demo-001"]["status"] == "mismatch"
    write_predictions(preds, {"demo-001": demo_gold("demo-001"), "demo-002": demo_gold("demo-002")})
    code, output = sweep(*args)
    assert code == 0, output
    assert "1 new records (1 re-evaluated: their inputs changed), 1 resumed" in output
    records = by_question(run)
    assert records["demo-001"]["status"] == "match"
    assert records["demo-002"]["status"] == "match"
    # one current record per key in results.jsonl; the replaced one kept aside, not lost
    assert len((run / RESULTS_FILE).read_text().splitlines()) == 2
    (old,) = [json.loads(line) for line in (run / SUPERSEDED_FILE).read_text().splitlines()]
    assert old["question_id"] == "demo-001" and old["sql"] == "SELECT 42"
    # unchanged inputs: everything resumes
    code, output = sweep(*args)
    assert code == 0 and "0 new records, 2 resumed" in output


def test_verdicts_judged_under_an_older_comparison_contract_are_judged_again(
        tmp_path: Path) -> None:
    """A release that changes what the comparison calls equal must not leave old verdicts
    standing in a resumed run: records carry the contract's version."""
    run, preds = tmp_path / "run", tmp_path / "preds.jsonl"
    write_predictions(preds, {"demo-001": demo_gold("demo-001"), "demo-002": "SELECT 42"})
    args = ["--out", str(run), "--engines", "sqlite", "--limit", "2", "--predictor", f"m={preds}"]
    code, output = sweep(*args)
    assert code == 0, output
    results = run / RESULTS_FILE
    lines = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert all(record["inputs"]["contract"] for record in lines)
    # as an older release wrote them: another contract, and (say) the other verdict on demo-001
    for record in lines:
        record["inputs"]["contract"] = "compare-1"
        if record["question_id"] == "demo-001":
            record["status"], record["match"] = "mismatch", False
    results.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    code, output = sweep(*args)
    assert code == 0, output
    assert "2 new records (2 re-evaluated: their inputs changed), 0 resumed" in output
    records = by_question(run)
    assert records["demo-001"]["status"] == "match"
    assert records["demo-002"]["status"] == "mismatch"


def test_a_reused_predictor_name_never_mixes_two_files(tmp_path: Path) -> None:
    run = tmp_path / "run"
    first = write_predictions(tmp_path / "a.jsonl", {f"demo-00{i}": demo_gold(f"demo-00{i}") for i in (1, 2, 3)})
    second = write_predictions(tmp_path / "b.jsonl", {"demo-001": demo_gold("demo-001"),
                                                     "demo-002": "SELECT 'other file'",
                                                     "demo-003": demo_gold("demo-003")})
    base = ["--out", str(run), "--engines", "sqlite,duckdb", "--limit", "3"]
    assert sweep(*base, "--predictor", f"m={first}")[0] == 0
    code, output = sweep(*base, "--predictor", f"m={second}")
    assert code == 0, output
    # only demo-002's SQL differs: its two records (one per engine) are redone, the rest kept
    assert "2 new records (2 re-evaluated: their inputs changed), 4 resumed" in output
    for record in ResultsStore(run).latest_records():
        expected = json.loads([line for line in second.read_text().splitlines()
                               if record["question_id"] in line][0])["sql"]
        assert record["sql"] == expected


def test_a_change_outside_the_selection_is_pending_not_stale(tmp_path: Path) -> None:
    run, preds = tmp_path / "run", tmp_path / "preds.jsonl"
    answers = {f"demo-00{i}": demo_gold(f"demo-00{i}") for i in (1, 2, 3)}
    write_predictions(preds, answers)
    base = ["--out", str(run), "--engines", "sqlite", "--predictor", f"m={preds}"]
    assert sweep(*base, "--limit", "3")[0] == 0
    write_predictions(preds, {**answers, "demo-003": "SELECT 'changed'"})
    code, output = sweep(*base, "--limit", "2")
    assert code == EXIT_INCOMPLETE, output
    assert "1 set aside" in output and "INCOMPLETE: 1 pending" in output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["complete"] is False and summary["pending"] == 1
    assert "INCOMPLETE" in (run / "report.md").read_text()
    assert "INCOMPLETE" in (run / "report.html").read_text()
    code, output = sweep(*base, "--limit", "3")
    assert code == 0, output
    assert by_question(run)["demo-003"]["status"] == "mismatch"
    assert json.loads((run / "summary.json").read_text())["complete"] is True


def test_damaged_lines_are_dropped_by_an_atomic_rewrite(tmp_path: Path) -> None:
    run = tmp_path / "run"
    base = ["--out", str(run), "--engines", "sqlite", "--predictor", "gold", "--limit", "4"]
    assert sweep(*base)[0] == 0
    path = run / RESULTS_FILE
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + '{"torn": tru\n' + "".join(lines[1:3]) + lines[3][:40])
    code, output = sweep(*base)
    assert code == 0, output
    assert "dropped 2 damaged line(s) (line 2, 5)" in output
    assert "2 new records" not in output and "1 new records, 3 resumed" in output
    rows = [json.loads(line) for line in path.read_text().splitlines()]  # every line is JSON
    assert sorted(r["question_id"] for r in rows) == ["demo-001", "demo-002", "demo-003", "demo-004"]


def test_an_empty_database_fails_the_run_and_no_accuracy_is_shown_over_nothing(tmp_path: Path) -> None:
    root = make_bird(tmp_path / "bird", empty_db="zoo")
    run = tmp_path / "run"
    code, output = sweep("--dataset", f"bird:{root}", "--out", str(run), "--engines", "sqlite",
                         "--predictor", "gold")
    assert code == EXIT_DATA, output
    assert "database zoo: all 2 gold queries failed" in output
    assert "no such table" in output
    summary = json.loads((run / "summary.json").read_text())
    (cell,) = summary["cells"]
    assert cell["invalid_gold"] == 2 and cell["total"] == 2 and cell["accuracy"] == 1.0
    # the same run over the broken database alone has nothing to count: no accuracy, never 0%
    only_zoo = tmp_path / "run-zoo"
    code, output = sweep("--dataset", f"bird:{root}", "--out", str(only_zoo), "--engines", "sqlite",
                         "--predictor", "gold", "--question", "2", "--question", "3")
    assert code == EXIT_DATA, output
    assert "0.0%" not in output and "—" in output
    (cell,) = json.loads((only_zoo / "summary.json").read_text())["cells"]
    assert cell["accuracy"] is None and cell["ci_low"] is None and cell["invalid_gold"] == 2
    csv_text = (only_zoo / "summary.csv").read_text().splitlines()
    header, row = csv_text[0].split(","), csv_text[1].split(",")
    assert row[header.index("accuracy")] == "" and row[header.index("invalid_gold")] == "2"
    assert "| — |" in (only_zoo / "report.md").read_text()


def test_a_complete_run_says_so_everywhere(tmp_path: Path) -> None:
    run = tmp_path / "run"
    code, output = sweep("--out", str(run), "--engines", "sqlite", "--predictor", "gold",
                         "--limit", "2")
    assert code == 0, output
    assert "INCOMPLETE" not in output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["complete"] is True and summary["status"] == "complete"
    assert summary["pending"] == 0
    assert "INCOMPLETE" not in (run / "report.md").read_text()


def test_a_second_sweep_into_a_folder_in_use_is_refused_at_once(tmp_path: Path) -> None:
    """Two sweeps writing one run folder would both run every item into one results file; the
    second is refused, naming the holder, and the folder is free again once the first ends."""
    import subprocess
    import sys

    from polysql.sweep.run_lock import LOCK_FILE, run_folder_lock

    run = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from polysql.sweep.run_lock import run_folder_lock\n"
         "with run_folder_lock(Path(sys.argv[1])):\n"
         "    print('held', flush=True); time.sleep(60)", str(run)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code, output = sweep("--out", str(run), "--engines", "sqlite", "--limit", "1",
                             "--predictor", "gold")
        assert code == EXIT_STORE, output
        assert f"run folder {run} is in use by another sweep (process {holder.pid}" in output
        assert not (run / RESULTS_FILE).exists()  # nothing was run or written
    finally:
        holder.kill()
        holder.wait()
    # a killed holder leaves no lock behind
    code, output = sweep("--out", str(run), "--engines", "sqlite", "--limit", "1",
                         "--predictor", "gold")
    assert code == 0, output
    assert (run / LOCK_FILE).exists()
    with run_folder_lock(run):  # and a finished sweep released it
        pass


def test_an_out_path_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    taken = tmp_path / "notes.txt"
    taken.write_text("mine")
    code, output = sweep("--out", str(taken), "--engines", "sqlite", "--limit", "1",
                         "--predictor", "gold")
    assert code == EXIT_STORE, output
    assert f"the run folder {taken} is a file; give --out the path of a folder" in output
    assert taken.read_text() == "mine"
    # a folder that does not exist yet is created, parents included
    code, output = sweep("--out", str(tmp_path / "a" / "b"), "--engines", "sqlite", "--limit", "1",
                         "--predictor", "gold")
    assert code == 0 and (tmp_path / "a" / "b" / RESULTS_FILE).exists(), output


@needs_rlimits
def test_a_results_file_that_cannot_grow_stops_the_run_and_the_next_run_resumes(
        tmp_path: Path) -> None:
    """A full disk, for real: the sweep runs in a process whose files may not grow past 64 KiB
    (see polysql_testkit.file_limits). The first record that cannot be written stops the run
    with one clear error (exit 5), not an internal error per record; the next run resumes."""
    engines = ["--engines", "sqlite,duckdb", "--predictor", "gold,transpile"]
    # the evaluation copies and the execution cache first, where files may grow
    code, output = sweep("--out", str(tmp_path / "warm"), *engines)
    assert code == 0, output
    run = tmp_path / "run"
    limit = 64 * 1024
    code, output = run_cli_with_file_limit(["sweep", "--out", str(run), *engines], limit,
                                           env={"POLYSQL_CACHE": str(tmp_path / "cache")})
    assert code == EXIT_STORE, output
    assert f"cannot write to results file {run / RESULTS_FILE}: File too large" in output
    assert "internal error" not in output
    written = (run / RESULTS_FILE).stat().st_size
    assert 0 < written <= limit
    code, output = sweep("--out", str(run), *engines)
    assert code == 0, output
    assert "resumed" in output and len(ResultsStore(run).latest_records()) == 560
