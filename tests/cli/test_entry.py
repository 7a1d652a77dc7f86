"""The console script: ``polysql`` runs through :func:`polysql.cli.entry.run`, which collects
young garbage less often while the command runs and leaves the process's objects out of the
interpreter's last garbage collections, and changes nothing else."""

from __future__ import annotations

import gc
import sqlite3
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

from click.testing import CliRunner

from polysql.cli.entry import YOUNG_COLLECTION
from polysql.cli.main import EXIT_MISMATCH, main

# atexit handlers run after run() froze the heap: they report what a shell would not see
PROBE = """
import atexit, gc, sys
atexit.register(lambda: print("at exit, frozen:", gc.get_freeze_count() > 0, flush=True))
atexit.register(lambda: print("threshold:", gc.get_threshold(), flush=True))
sys.argv = ["polysql", *sys.argv[1:]]
from polysql.cli.entry import run
run()
"""


def test_the_installed_command_goes_through_run() -> None:
    (script,) = entry_points(group="console_scripts", name="polysql")
    assert script.value == "polysql.cli.entry:run"


def _shop(tmp_path: Path) -> str:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3);")
    conn.close()
    return f"sqlite:///{path}"


def test_run_keeps_exit_codes_output_and_exit_handlers(tmp_path: Path) -> None:
    db = _shop(tmp_path)
    done = subprocess.run([sys.executable, "-c", PROBE, "compare", "--db", db,
                           "--gold", "SELECT x FROM t", "--pred", "SELECT x FROM t WHERE x > 1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_MISMATCH, done.stdout + done.stderr
    assert done.stdout.startswith("mismatch: gold has 3 rows, predicted 2"), done.stdout
    # atexit runs handlers last-registered first
    assert done.stdout.rstrip().endswith(
        f"threshold: {(YOUNG_COLLECTION, *gc.get_threshold()[1:])}\nat exit, frozen: True"), \
        done.stdout

    done = subprocess.run([sys.executable, "-c", PROBE, "compare", "--no-such-option"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "No such option" in done.stderr, done.stdout + done.stderr

    copy = tmp_path / "copy.duckdb"  # a written file is complete when the process has ended
    done = subprocess.run([sys.executable, "-c", PROBE, "load", db, f"duckdb:///{copy}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    check = subprocess.run([sys.executable, "-c", PROBE, "compare", "--db", db,
                            "--gold", "SELECT x FROM t", "--pred-db", f"duckdb:///{copy}",
                            "--pred", "SELECT x FROM t"],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0 and check.stdout.startswith("match: same 3 rows"), check.stdout


def test_calling_main_in_a_process_that_goes_on_freezes_nothing(tmp_path: Path) -> None:
    before, threshold = gc.get_freeze_count(), gc.get_threshold()
    result = CliRunner().invoke(main, ["compare", "--db", _shop(tmp_path),
                                       "--gold", "SELECT 1", "--pred", "SELECT 1"])
    assert result.exit_code == 0, result.output
    assert gc.get_freeze_count() == before
    assert gc.get_threshold() == threshold  # the host program's collector settings stay its own
