"""Ctrl-C while an embedded engine runs a statement for the main thread (``polysql compare``,
the Python API): the statement stops at once and the caller gets KeyboardInterrupt -- not, as
before, a wait until the statement ended (DuckDB holds the thread in C++), an 'internal error'
(DuckDB's RuntimeError) or the gold query 'failing' with a runtime error (SQLite swallowed the
interrupt in its progress handler)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from polysql_testkit.interrupts import INTERRUPTED, SLOW, ctrl_c_compare, sigint_to_main_thread

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
def test_ctrl_c_stops_polysql_compare_as_interrupted(engine: str, tmp_path: Path) -> None:
    database = tmp_path / f"empty.{engine}"
    with polysql.connect(f"{engine}:///{database}", read_only=False) as writer:
        writer.execute("SELECT 1")  # creates the file: the compare below opens it
    assert database.exists()
    started = time.perf_counter()
    code, output = ctrl_c_compare(f"{engine}:///{database}", SLOW[engine], after=1,
                                  opens=database)
    assert code == 130, output
    assert output.strip() == INTERRUPTED
    assert time.perf_counter() - started < 30
