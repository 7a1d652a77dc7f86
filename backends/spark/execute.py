"""Run one statement in a Spark session under a timeout, and turn its rows into Python values.

The statement runs in a worker thread tagged with a job group of its own (driver in this process:
``SparkContext.setJobGroup(..., interruptOnCancel=True)``; Spark Connect: a session tag). When
the timeout passes, the caller cancels that group (``cancelJobGroup`` / ``interruptTag``) and
Spark kills its tasks. As a backstop for work Spark cannot cancel (planning, a stuck driver), the
caller stops waiting a little later, abandons the worker and gets a fresh one: ``execute``
always returns.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from polysql.backends._common.cancel import Flight
from polysql.backends._common.cancel import cancelled as cancelled_result
from polysql.backends.spark import execute_settle as settle
from polysql.backends.spark.connect import restart_driver
from polysql.backends.spark.errors import classify, message_of
from polysql.core.model import Result

# How long after cancelling the statement to wait for Spark to stop it before giving up on it.
_BACKSTOP_MIN = 2.0
_BACKSTOP_SHARE = 0.25
# Cancelled again this often meanwhile: a query may start jobs after the first cancel.
_RECANCEL_EVERY = 0.25
# How long to go on cancelling a statement that was abandoned.
_KEEP_CANCELLING = 600.0
# Spark types read as their text (see _as_text_where_needed).
_READ_AS_TEXT = frozenset({"YearMonthIntervalType", "VariantType"})


class _Tagging:
    """How statements of one session are tagged and cancelled."""

    def __init__(self, session: Any, connect: bool) -> None:
        self.session = session
        self.connect = connect

    def start(self, tag: str) -> None:
        if self.connect:
            self.session.addTag(tag)
            return
        context = self.session.sparkContext
        context.setJobGroup(tag, "polysql evaluation", True)
        # Jobs a query starts on other threads (broadcasts) keep the tag even where they run
        # under a job group of their own.
        context.addJobTag(tag)

    def finish(self, tag: str) -> None:
        if self.connect:
            self.session.removeTag(tag)
        else:
            self.session.sparkContext.removeJobTag(tag)

    def cancel(self, tag: str) -> None:
        if self.connect:
            self.session.interruptTag(tag)
            return
        context = self.session.sparkContext
        _cancel_group_and_its_later_jobs(context, tag)
        context.cancelJobsWithTag(tag)


def _cancel_group_and_its_later_jobs(context: Any, tag: str) -> None:
    """Cancel the job group ``tag`` and refuse its jobs submitted from now on.

    With adaptive execution Spark submits a shuffle stage's job from a thread of its own, which
    can do so just after a cancel; a plain ``cancelJobGroup`` never stops that job, and it holds
    its task slots until it ends (see execute_settle.py). Spark 4 can also cancel the group's
    later jobs, through the Scala context only; every group is one statement's, so nothing else
    is refused. Spark 3.5 lacks it and keeps the plain cancel."""
    try:
        context._jsc.sc().cancelJobGroupAndFutureJobs(tag)
    except Exception:  # Spark 3.5 (no such method), or a driver already stopped
        context.cancelJobGroup(tag)


@dataclass(slots=True)
class _Job:
    statement: str
    tag: str
    max_rows: int
    done: threading.Event = field(default_factory=threading.Event)
    outcome: Any = None


class _Worker(threading.Thread):
    """The thread statements of one session run in. A daemon, so that a statement Spark never
    stops cannot keep the process from exiting; one that was given up on ends after its job."""

    def __init__(self, run: Callable[[_Job], Any]) -> None:
        super().__init__(name="polysql-spark", daemon=True)
        self._run = run
        self.jobs: queue.Queue[_Job | None] = queue.Queue()
        self.start()

    def run(self) -> None:
        while (job := self.jobs.get()) is not None:
            job.outcome = self._run(job)
            job.done.set()


class StatementRunner:
    """Runs statements of one session, one at a time, each under its own job group."""

    def __init__(self, session: Any, *, connect: bool, engine: str, engine_key: str) -> None:
        self._tagging = _Tagging(session, connect)
        self._session = session
        self._engine = engine
        self._engine_key = engine_key  # which Spark this is, for settle.UNSETTLED
        self._worker = _Worker(self._work)

    def close(self) -> None:
        self._worker.jobs.put(None)

    def run(self, statement: str, *, timeout: float, max_rows: int,
            started: float, flight: Flight | None = None) -> Result:
        """Run one statement. ``flight``: how ``Backend.cancel`` reaches it -- the timeout's own
        job-group cancel, then the same backstop."""
        job = _Job(statement, f"polysql-{uuid.uuid4().hex}", max_rows)
        if flight is not None and not flight.arm(lambda: self._cancel(job.tag), exclusive=False):
            return cancelled_result(self._engine, time.perf_counter() - started)
        try:
            if settle.UNSETTLED.pending(self._engine_key) is not None:
                busy = self._wait_until_settled(flight)
                if busy is not None:
                    return busy
                started = time.perf_counter()  # the wait is not the statement's time
            return self._run(job, timeout, started, flight)
        finally:
            if flight is not None:
                flight.disarm()

    def _wait_until_settled(self, flight: Flight | None) -> Result | None:
        """After a cancel on this engine: None once a one-task probe runs, else ``unavailable``
        (see settle.py). Cancelling the caller's flight stops the wait as it stops a statement."""
        cancelled_statement = settle.UNSETTLED.pending(self._engine_key)
        if cancelled_statement is None:
            return None
        started = time.perf_counter()
        # A driver in this process can be restarted, which frees every slot: wait less for it.
        wait = settle.SETTLE_WAIT_CONNECT if self._tagging.connect else settle.SETTLE_WAIT
        probe = _Job(settle.PROBE_STATEMENT, f"polysql-{uuid.uuid4().hex}", 1)
        outcome = self._run(probe, wait, started, flight)
        if outcome.error is None and outcome.rows == settle.PROBE_ROWS:
            settle.UNSETTLED.clear(self._engine_key)
            return None
        if flight is not None and flight.cancelled.is_set():
            return cancelled_result(self._engine, time.perf_counter() - started)
        if not self._tagging.connect:
            # Only ending the JVM stops tasks busy inside one row. The backend sees the new
            # driver and runs the statement again in a session of it.
            restart_driver()
            settle.UNSETTLED.clear(self._engine_key)
            return Result.failed("unavailable", settle.restarted_message(cancelled_statement, wait),
                                 elapsed=time.perf_counter() - started, engine=self._engine)
        return Result.failed("unavailable", settle.unsettled_message(cancelled_statement, wait),
                             elapsed=time.perf_counter() - started, engine=self._engine)

    def _run(self, job: _Job, timeout: float, started: float, flight: Flight | None) -> Result:
        self._worker.jobs.put(job)
        remaining = max(timeout - (time.perf_counter() - started), 0.0)
        try:
            finished = (job.done.wait(remaining) if flight is None
                        else flight.wait(job.done, remaining))
        except BaseException:
            # Ctrl-C (KeyboardInterrupt) while Spark works: stop the statement before the
            # interrupt goes on. A worker still inside py4j when the interpreter exits aborts
            # the process ("PyGILState_Release ... finalizing"), after "interrupted".
            self._stop(job, _BACKSTOP_MIN)
            raise
        stopped_by_caller = flight is not None and flight.cancelled.is_set()
        cancelled = not finished
        if cancelled:
            # a caller waiting on a cancel gets the short backstop: it wants to stop now
            backstop = (_BACKSTOP_MIN if stopped_by_caller
                        else max(_BACKSTOP_MIN, timeout * _BACKSTOP_SHARE))
            if not self._stop(job, backstop):
                if stopped_by_caller:
                    return cancelled_result(self._engine, time.perf_counter() - started,
                                            "Spark did not stop it; abandoned")
                return Result.failed(
                    "timeout", f"statement exceeded the {timeout:g}s timeout and did not stop "
                    f"within {backstop:g}s of being cancelled; abandoned",
                    elapsed=time.perf_counter() - started, engine=self._engine)
        elapsed = time.perf_counter() - started
        outcome = job.outcome
        if stopped_by_caller or (flight is not None and flight.cancelled.is_set()):
            detail = message_of(outcome) if isinstance(outcome, BaseException) else None
            return cancelled_result(self._engine, elapsed, detail)
        if isinstance(outcome, BaseException):
            kind, sqlstate = classify(outcome, cancelled=cancelled)
            message = message_of(outcome)
            if kind == "timeout":
                message = f"statement exceeded the {timeout:g}s timeout ({message[:300]})"
            return Result.failed(kind, message, sqlstate=sqlstate, elapsed=elapsed,
                                 engine=self._engine)
        columns, types, rows, truncated = outcome
        return Result(columns=columns, rows=rows, types=types, elapsed=elapsed,
                      truncated=truncated, engine=self._engine)

    def _stop(self, job: _Job, backstop: float) -> bool:
        """Cancel ``job`` until it ends or ``backstop`` seconds pass; True when it ended. One
        that did not is abandoned to its worker (and cancelled on, in the background)."""
        # its tasks may outlive the cancel: the next statement checks for a free slot first
        settle.UNSETTLED.mark(self._engine_key, job.statement)
        deadline = time.perf_counter() + backstop
        # Cancelled again and again: a query may start jobs after the first cancel
        while not job.done.is_set() and time.perf_counter() < deadline:
            self._cancel(job.tag)
            job.done.wait(min(_RECANCEL_EVERY, max(deadline - time.perf_counter(), 0.0)))
        if job.done.is_set():
            return True
        # Spark did not stop it: leave the worker to finish on its own
        self._worker.jobs.put(None)
        self._worker = _Worker(self._work)
        threading.Thread(target=self._keep_cancelling, args=(job,), daemon=True,
                         name="polysql-spark-cancel").start()
        return False

    def _keep_cancelling(self, job: _Job) -> None:
        """Go on cancelling an abandoned statement, so it does not hold the executors."""
        deadline = time.perf_counter() + _KEEP_CANCELLING
        while not job.done.wait(1.0) and time.perf_counter() < deadline:
            self._cancel(job.tag)

    def _cancel(self, tag: str) -> None:
        with contextlib.suppress(Exception):  # the backstop still bounds the wait
            self._tagging.cancel(tag)

    def _work(self, job: _Job) -> Any:
        try:
            self._tagging.start(job.tag)
            try:
                frame = self._session.sql(job.statement)
                return fetch(frame, job.max_rows)
            finally:
                self._tagging.finish(job.tag)
        except Exception as exc:  # returned, not raised: classified by the caller
            return exc


def fetch(frame: Any, max_rows: int) -> tuple[list[str], list[str], list[tuple[Any, ...]], bool]:
    """Columns, Spark type names, at most ``max_rows`` rows, and whether more existed."""
    fields = frame.schema.fields
    columns = [f.name for f in fields]
    types = [f.dataType.simpleString() for f in fields]
    limited = _as_text_where_needed(frame, fields).limit(max_rows + 1)
    if hasattr(limited, "toArrow"):  # PySpark 4; 3.5 collects Row objects
        try:
            rows = arrow_rows(limited.toArrow())
        except (pa.ArrowException, TypeError, ValueError, NotImplementedError) as exc:
            if "cancel" in str(exc).lower():
                raise
            rows = _collected(limited)  # a type the Arrow path cannot carry
    else:
        rows = _collected(limited)
    truncated = len(rows) > max_rows
    return columns, types, rows[:max_rows], truncated


def _collected(frame: Any) -> list[tuple[Any, ...]]:
    return [tuple(plain(v) for v in row) for row in frame.collect()]


def _as_text_where_needed(frame: Any, fields: list[Any]) -> Any:
    """Columns PySpark cannot turn into Python values (year-month intervals) or turns into raw
    encodings (variants) are read as Spark's text for them; ``types`` still names the real type."""
    if not any(type(f.dataType).__name__ in _READ_AS_TEXT for f in fields):
        return frame
    positional = frame.toDF(*[f"c{i}" for i in range(len(fields))])
    return positional.selectExpr(*[
        f"CAST(c{i} AS STRING) AS c{i}" if type(f.dataType).__name__ in _READ_AS_TEXT
        else f"c{i}" for i, f in enumerate(fields)])


def arrow_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    """Rows of an Arrow table as tuples of Python values (duplicate column names allowed)."""
    values = [column.to_pylist() for column in table.columns]
    return list(zip(*values, strict=True)) if values else [() for _ in range(table.num_rows)]


def plain(value: Any) -> Any:
    """A PySpark Row value as a plain Python value."""
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if hasattr(value, "asDict"):
        return {k: plain(v) for k, v in value.asDict().items()}
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    import datetime as dt
    from decimal import Decimal

    if isinstance(value, (Decimal, dt.date, dt.datetime, dt.timedelta)):
        return value
    return str(value)

