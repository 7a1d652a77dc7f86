"""sqlglot's warnings about loosely parsed statements stay off stderr while polysql screens and
inspects evaluated SQL, and only then: a user's own sqlglot calls, on any thread, still log."""

from __future__ import annotations

import logging
import threading

import pytest
import sqlglot

from polysql.backends._common.guard import screen
from polysql.core.sqlglot_quiet import quietly
from polysql.normalizers.ordering import infer_order

LOOSE = "SHOW ALL"  # sqlglot parses it only as a Command, with a warning


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("sqlglot")]


def test_screening_a_statement_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="sqlglot")
    assert "SHOW" in (screen(LOOSE, "postgres") or "")
    infer_order(LOOSE, "postgres", ["x"])
    assert _warnings(caplog) == []


def test_a_users_own_parse_still_warns(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="sqlglot")
    screen(LOOSE, "postgres")  # the filter is installed by now
    sqlglot.parse(LOOSE, read="postgres")
    assert any("unsupported syntax" in m for m in _warnings(caplog))


def test_only_the_parsing_thread_is_quiet(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="sqlglot")
    inside, done = threading.Event(), threading.Event()

    def polysql_parse() -> None:
        with quietly():
            inside.set()
            done.wait(10)

    worker = threading.Thread(target=polysql_parse)
    worker.start()
    try:
        assert inside.wait(10)
        sqlglot.parse(LOOSE, read="postgres")  # this thread is not inside quietly()
    finally:
        done.set()
        worker.join()
    assert any("unsupported syntax" in m for m in _warnings(caplog))
