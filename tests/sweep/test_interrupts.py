"""Ctrl-C and kill during a real sweep (a subprocess running `polysql sweep` on SQLite): what
is printed, what is recorded, and what the summary files say afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from polysql.core.store import RESULTS_FILE

# runs until its timeout: a statement that is surely still running when the signal arrives
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
TIMEOUT = 120  # seconds; a test that waited for it would be far slower than the checks below


def start_sweep(tmp_path: Path, workers: int = 1) -> tuple[subprocess.Popen[str], Path]:
    """A sweep of three questions whose second prediction runs until its timeout; with one
    worker the third waits behind it, with two it runs beside it."""
    from polysql.datasets.registry import get_dataset

    preds = tmp_path / "preds.jsonl"
    demo = get_dataset("demo")
    preds.write_text(
        json.dumps({"question_id": "demo-001", "sql": demo.question("demo-001").gold_sql}) + "\n"
        + json.dumps({"question_id": "demo-002", "sql": ENDLESS}) + "\n"
        + json.dumps({"question_id": "demo-003", "sql": demo.question("demo-003").gold_sql}) + "\n",
        encoding="utf-8")
    run = tmp_path / "run"
    env = {**os.environ, "POLYSQL_CACHE": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "polysql.cli", "sweep", "--engines", "sqlite", "--limit", "3",
         "--predictor", f"m={preds}", "--out", str(run), "--timeout", str(TIMEOUT),
         "--workers", str(workers)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    return process, run


def wait_for_records(run: Path, count: int, process: subprocess.Popen[str]) -> None:
    """Until ``count`` records are written (then the endless statement is running)."""
    deadline = time.monotonic() + 90
    path = run / RESULTS_FILE
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= count:
            time.sleep(1.0)  # the next statement starts right after the record is written
            return
        if process.poll() is not None:
            pytest.fail(f"sweep ended early: {process.communicate()}")
        time.sleep(0.1)
    process.kill()
    pytest.fail("the sweep wrote no record in 90 s")


def finish(process: subprocess.Popen[str], within: float) -> tuple[int, str, str]:
    started = time.monotonic()
    out, err = process.communicate(timeout=within)
    assert time.monotonic() - started < within
    return process.returncode, out, err


def ctrl_c_twice(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    """Ctrl-C, which must wait for the running statement; then Ctrl-C again, which cancels it
    and ends the sweep with exit 130."""
    process.send_signal(signal.SIGINT)
    time.sleep(1.5)
    assert process.poll() is None, "the first Ctrl-C must wait for the running statement"
    process.send_signal(signal.SIGINT)
    code, out, err = finish(process, within=30)
    assert code == 130, err
    return code, out, err


def test_ctrl_c_twice_cancels_the_running_statement_and_counts_right(tmp_path: Path) -> None:
    process, run = start_sweep(tmp_path)
    wait_for_records(run, 1, process)
    code, out, err = ctrl_c_twice(process)
    assert f"stopping: waiting for 1 running statement(s) (up to {TIMEOUT} s); Ctrl-C again to " \
           "cancel them" in err
    assert "cancelling 1 running statement(s)" in err
    lines = (run / RESULTS_FILE).read_text().splitlines()
    assert len(lines) == 1  # the cancelled statement recorded nothing
    assert "1 new records" in err and "2 pending" in err
    summary = json.loads((run / "summary.json").read_text())
    assert summary["complete"] is False and summary["status"] == "interrupted"
    assert summary["pending"] == 2
    assert "INCOMPLETE" in (run / "report.md").read_text()
    assert "INCOMPLETE" in out  # the table's title


def test_ctrl_c_twice_beside_other_workers_cancels_only_what_runs(tmp_path: Path) -> None:
    """Two workers: the first question and the third are done while the second still runs;
    the cancel stops that one, and it alone is pending."""
    process, run = start_sweep(tmp_path, workers=2)
    wait_for_records(run, 2, process)
    code, out, err = ctrl_c_twice(process)
    assert "stopping: waiting for 1 running statement(s)" in err
    assert "cancelling 1 running statement(s)" in err
    records = [json.loads(line) for line in (run / RESULTS_FILE).read_text().splitlines()]
    assert sorted(r["question_id"] for r in records) == ["demo-001", "demo-003"]
    assert "2 new records" in err and "1 pending" in err
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["pending"] == 1
    assert "INCOMPLETE" in out


def test_kill_stops_cleanly_and_the_summary_is_marked_incomplete(tmp_path: Path) -> None:
    process, run = start_sweep(tmp_path)
    wait_for_records(run, 1, process)
    process.send_signal(signal.SIGTERM)
    code, _out, err = finish(process, within=30)
    assert code == 130, err
    summary = json.loads((run / "summary.json").read_text())
    assert summary["complete"] is False and summary["pending"] == 2
    assert all(json.loads(line) for line in (run / RESULTS_FILE).read_text().splitlines())


def test_a_hard_kill_leaves_summary_files_that_say_the_run_is_unfinished(tmp_path: Path) -> None:
    process, run = start_sweep(tmp_path)
    wait_for_records(run, 1, process)
    process.kill()  # SIGKILL: no handler runs
    process.communicate(timeout=30)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["complete"] is False and summary["status"] == "running"
    assert "sweep in progress" in (run / "report.md").read_text()
