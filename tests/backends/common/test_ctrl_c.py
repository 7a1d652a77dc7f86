"""Ctrl-C while an embedded engine runs a statement for the main thread (``polysql compare``,
the Python API): the statement stops at once and the caller gets KeyboardInterrupt -- not, as
before, a wait until the statement ended (DuckDB holds the thread in C++), an 'internal error'
(DuckDB's RuntimeError) or the gold query 'failing' with a runtime error (SQLite swallowed the
interrupt in its progress handler)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from polysql_testkit.interrupts import SLOW, sigint_to_main_thread

import polysql


@pytest.mark.parametrize("engine", sorted(SLOW))
def test_ctrl_c_stops_the_statement_and_raises_keyboard_interrupt(engine: str) -> None:
    backend = polysql.connect(f"{engine}://")
    try:
        started = time.perf_counter()
        with sigint_to_main_thread(), pytest.raises(KeyboardInterrupt):
            backend.execute(SLOW[engine], timeout=300)
        assert time.perf_counter() - started < 30  # stopped, not run to its end
        assert backend.execute("SELECT 1 AS x").rows == [(1,)]  # the backend still works
    finally:
        backend.close()


@pytest.mark.parametrize("engine", sorted(SLOW))
def test_ctrl_c_stops_polysql_compare_as_interrupted(engine: str) -> None:
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "polysql.cli", "compare", "--db", f"{engine}://",
         "--gold", SLOW[engine], "--pred", "SELECT 1", "--timeout", "300"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(2)  # start-up done, the gold query running
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, output
    assert output.strip() == "interrupted; re-run the same command to resume"
    assert time.perf_counter() - started < 30
