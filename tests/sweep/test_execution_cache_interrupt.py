"""An interrupted sweep (Ctrl-C, a real `polysql sweep` subprocess on SQLite) still commits the
execution cache entries it made: the next run serves them instead of executing again."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from polysql.core.store import RESULTS_FILE

# runs until the timeout: surely still running when Ctrl-C arrives
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


def test_ctrl_c_commits_the_cache_entries_made_so_far(tmp_path: Path) -> None:
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        json.dumps({"question_id": "demo-001", "sql": "SELECT 1 AS made_by_the_prediction"}) + "\n"
        + json.dumps({"question_id": "demo-002", "sql": ENDLESS}) + "\n", encoding="utf-8")
    run = tmp_path / "run"
    cache = tmp_path / "cache"
    env = {**os.environ, "POLYSQL_CACHE": str(cache), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "polysql.cli", "sweep", "--engines", "sqlite", "--limit", "2",
         "--predictor", f"m={preds}", "--out", str(run), "--timeout", "120"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 90
        while not ((run / RESULTS_FILE).exists() and (run / RESULTS_FILE).read_text().strip()):
            if process.poll() is not None:
                pytest.fail(f"sweep ended early: {process.communicate()}")
            if time.monotonic() > deadline:
                pytest.fail("the sweep wrote no record in 90 s")
            time.sleep(0.05)
        time.sleep(1.0)  # the endless statement starts right after the first record
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)  # cancel the endless statement
        _out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    with sqlite3.connect(cache / "executions.sqlite") as conn:
        stored = conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    # the two gold statements and the first prediction, put within moments of each other (so
    # left to the batch's next commit), were committed when the sweep stopped
    assert stored >= 3
