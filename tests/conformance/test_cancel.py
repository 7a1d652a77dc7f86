"""Backend.cancel(): another thread stops the statement running in execute() promptly -- long
before its timeout -- and the backend goes on answering afterwards."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from polysql.backends._common.cancel import REPEAT, Flights
from polysql.backends.base import Backend
from polysql.core.model import Result

# Far longer than the test may take: only a cancel can end the statement in time.
LONG_TIMEOUT = 60.0
CANCEL_AFTER = 1.0
# How soon after the cancel execute() must have returned.
PROMPTLY = 8.0
# The query after the cancel must answer within this: a statement the cancel did not reach would
# hold the engine past it (LONG_TIMEOUT is larger by far). Not shorter: Spark cannot interrupt a
# statement still being planned and compiled on the driver, which takes seconds on a cold session
# and slows the next statement down, although the cancelled one's jobs never run.
AFTER_TIMEOUT = 30.0


def _run_in_thread(backend: Backend, sql: str, timeout: float) -> tuple[threading.Thread,
                                                                      dict[str, object]]:
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["result"] = backend.execute(sql, timeout=timeout)
        except BaseException as exc:  # execute must never raise; the test reports it
            outcome["raised"] = exc
        outcome["returned_at"] = time.perf_counter()

    thread = threading.Thread(target=run, name="cancel-test-statement", daemon=True)
    thread.start()
    return thread, outcome


@pytest.mark.notyet(["bigquery"], reason="the BigQuery emulator runs a query inside the "
                    "jobs.insert request, serving nothing else meanwhile, and has no job cancel; "
                    "execute() returns at once, but the emulator stays busy until jobTimeoutMs")
def test_cancel_stops_a_running_statement(backend: Backend, slow_query: str,
                                          q: Callable[[str], str]) -> None:
    thread, outcome = _run_in_thread(backend, slow_query, LONG_TIMEOUT)
    try:
        _cancel_and_check(backend, thread, outcome, q)
    finally:
        # an engine the cancel did not reach is busy until the statement's timeout: wait for it,
        # so the tests after this one find it free
        backend.execute(q("SELECT 1"), timeout=LONG_TIMEOUT)


def _cancel_and_check(backend: Backend, thread: threading.Thread, outcome: dict[str, object],
                      q: Callable[[str], str]) -> None:
    time.sleep(CANCEL_AFTER)
    assert thread.is_alive(), f"the slow query ended by itself: {outcome}"
    cancelled_at = time.perf_counter()
    assert backend.cancel() is True
    thread.join(PROMPTLY + 30)
    assert "raised" not in outcome, outcome["raised"]
    assert not thread.is_alive(), "execute() did not return after cancel()"
    took = float(outcome["returned_at"]) - cancelled_at  # type: ignore[arg-type]
    assert took < PROMPTLY, f"execute() returned {took:.1f}s after cancel()"
    result = outcome["result"]
    assert isinstance(result, Result)
    assert result.error is not None, f"a cancelled statement returned {result!r}"
    assert result.error.kind == "unavailable" and "cancelled" in result.error.message, result.error
    assert result.rows == [] and result.columns == []
    # the engine is free again: the next query answers
    after = backend.execute(q('SELECT count(*) FROM "Customers"'), timeout=AFTER_TIMEOUT)
    assert after.rows == [(4,)], after


def test_cancel_with_nothing_running_is_a_no_op(backend: Backend,
                                                q: Callable[[str], str]) -> None:
    assert backend.cancel() is False
    assert backend.execute(q('SELECT count(*) FROM "Customers"')).rows == [(4,)]


def test_cancel_after_close_is_a_no_op(writable_backend: Backend) -> None:
    writable_backend.close()
    assert writable_backend.cancel() is False


def test_a_statement_cancelled_before_it_reaches_the_engine_never_runs() -> None:
    flights = Flights()
    sent: list[str] = []
    with flights.track() as flight:
        assert flights.cancel() is True
        assert flight.arm(lambda: sent.append("interrupt")) is False
    assert sent == []
    assert flights.cancel() is False


def test_interrupts_repeat_until_the_statement_ends_and_never_after() -> None:
    flights = Flights()
    sent: list[float] = []
    with flights.track() as flight:
        assert flight.arm(lambda: sent.append(time.monotonic()))
        assert flights.cancel() is True
        time.sleep(3 * REPEAT + 0.1)
        flight.disarm()
        count = len(sent)
        time.sleep(2 * REPEAT)
        assert len(sent) == count  # nothing once disarmed
    assert count >= 3  # the first interrupt and its repeats
