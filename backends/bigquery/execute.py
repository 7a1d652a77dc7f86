"""Run one evaluated query as a BigQuery job: dry run, job with a server-side timeout, client
backstop with ``job.cancel()``, rows and types back, errors classified.

The server stops the job itself through ``jobTimeoutMs``; the client waits at most the same
time (plus a short grace for the answer to arrive) and then cancels the job, so neither a slow
service nor a lost response holds ``execute`` past its timeout.

Under ``Backend.cancel`` the job runs on a worker thread: a cancel sends ``job.cancel()`` (once
the job exists) and the caller stops waiting after the same grace, whatever the service does.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from google.api_core.retry import Retry
from google.cloud import bigquery

from polysql.backends._common.cancel import Flight, cancelled
from polysql.backends.bigquery.errors import classify
from polysql.backends.bigquery.types import standard_type_name
from polysql.core.model import ErrorKind, Result

# How long past the timeout the client waits for the server's own timeout answer.
GRACE = 2.0
JOB_LABELS = {"polysql": "evaluation"}


@dataclass(slots=True)
class QueryStats:
    """What BigQuery reports about one job (Result has no field for it)."""

    job_id: str | None = None
    bytes_processed: int | None = None
    bytes_billed: int | None = None
    cache_hit: bool | None = None
    statement_type: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"job_id": self.job_id, "bytes_processed": self.bytes_processed,
                "bytes_billed": self.bytes_billed, "cache_hit": self.cache_hit,
                "statement_type": self.statement_type, **self.extra}


def _retry(deadline: float) -> Retry:
    """The client's default retry of API calls, bounded by what is left of the timeout."""
    return bigquery.DEFAULT_RETRY.with_timeout(max(0.1, deadline - time.monotonic()))


def dry_run(client: Any, sql: str, *, default_dataset: str, timeout: float,
            stats: QueryStats) -> tuple[ErrorKind, str] | None:
    """Ask BigQuery what ``sql`` is without running it; an error unless it is a SELECT."""
    deadline = time.monotonic() + timeout
    config = bigquery.QueryJobConfig(dry_run=True, use_query_cache=False,
                                     default_dataset=default_dataset)
    try:
        job = client.query(sql, job_config=config, timeout=timeout, retry=_retry(deadline),
                           job_retry=None)
    except Exception as exc:  # noqa: BLE001 -- every failure is reported, never raised
        return classify(exc, timed_out=time.monotonic() >= deadline)
    stats.statement_type = job.statement_type
    if job.statement_type != "SELECT":
        return "forbidden", (f"BigQuery classifies this statement as {job.statement_type}; only "
                             f"SELECT statements are evaluated")
    stats.extra["estimated_bytes"] = job.total_bytes_processed
    return None


def run_query(client: Any, sql: str, *, default_dataset: str, timeout: float, max_rows: int,
              maximum_bytes_billed: int | None, engine: str,
              stats: QueryStats, flight: Flight | None = None) -> Result:
    """Run ``sql`` as a query job. ``flight``: how ``Backend.cancel`` reaches it."""
    if flight is None:
        return _run_query(client, sql, default_dataset=default_dataset, timeout=timeout,
                          max_rows=max_rows, maximum_bytes_billed=maximum_bytes_billed,
                          engine=engine, stats=stats, on_job=None)
    started = time.perf_counter()
    jobs: list[Any] = []
    # job ids are unique: a late cancel cannot reach another statement's job
    if not flight.arm(lambda: [_cancel(job) for job in jobs], exclusive=False):
        return cancelled(engine, time.perf_counter() - started)
    outcome: list[Result] = []
    done = threading.Event()

    def worker() -> None:
        try:
            outcome.append(_run_query(
                client, sql, default_dataset=default_dataset, timeout=timeout,
                max_rows=max_rows, maximum_bytes_billed=maximum_bytes_billed, engine=engine,
                stats=stats, on_job=jobs.append))
        finally:
            done.set()

    threading.Thread(target=worker, name="polysql-bigquery-job", daemon=True).start()
    try:
        # the worker's own calls are bounded by the timeout and its grace; this is a backstop
        finished = flight.wait(done, timeout + 3 * GRACE)
        if flight.cancelled.is_set():
            done.wait(GRACE)  # job.cancel() is on its way once the job exists
            detail = outcome[0].error.message if outcome and outcome[0].error else None
            return cancelled(engine, time.perf_counter() - started, detail)
    finally:
        flight.disarm()
    if not finished:
        for job in jobs:
            _cancel(job)
        return Result.failed("timeout", f"statement exceeded the {timeout:g}s timeout (no answer "
                                        f"from BigQuery {3 * GRACE:g}s after it)",
                             elapsed=time.perf_counter() - started, engine=engine)
    return outcome[0]


def _run_query(client: Any, sql: str, *, default_dataset: str, timeout: float, max_rows: int,
               maximum_bytes_billed: int | None, engine: str, stats: QueryStats,
               on_job: Callable[[Any], object] | None) -> Result:
    started = time.monotonic()
    deadline = started + timeout
    config = bigquery.QueryJobConfig(
        default_dataset=default_dataset, use_legacy_sql=False, labels=dict(JOB_LABELS),
        job_timeout_ms=max(1, math.ceil(timeout * 1000)),
        maximum_bytes_billed=maximum_bytes_billed)
    job = None

    def failed(exc: BaseException) -> Result:
        timed_out = time.monotonic() >= deadline
        if timed_out and job is not None:
            _cancel(job)
        kind, message = classify(exc, timed_out=timed_out)
        if kind == "timeout":
            message = f"statement exceeded the {timeout:g}s timeout ({message})"
        return Result.failed(kind, message, elapsed=time.monotonic() - started, engine=engine)

    try:
        job = client.query(sql, job_config=config, job_id_prefix="polysql_",
                           timeout=timeout + GRACE, retry=_retry(deadline + GRACE),
                           job_retry=None)
        if on_job is not None:
            on_job(job)
        stats.job_id = job.job_id
        rows_iter = job.result(timeout=max(0.1, deadline + GRACE - time.monotonic()),
                               max_results=max_rows + 1, job_retry=None)
        schema = list(rows_iter.schema or [])
        rows = [tuple(row.values()) for row in rows_iter]
    except Exception as exc:  # noqa: BLE001 -- every failure is reported, never raised
        _record(job, stats)
        return failed(exc)
    _record(job, stats)
    total = rows_iter.total_rows
    truncated = len(rows) > max_rows or (total is not None and total > max_rows)
    return Result(columns=[f.name for f in schema], rows=rows[:max_rows],
                  types=[standard_type_name(f) for f in schema],
                  elapsed=time.monotonic() - started, truncated=truncated, engine=engine)


def _cancel(job: Any) -> None:
    # best effort: the server-side job timeout applies as well
    with contextlib.suppress(Exception):
        job.cancel(timeout=5)


def _record(job: Any, stats: QueryStats) -> None:
    if job is None:
        return
    stats.job_id = job.job_id
    try:
        stats.bytes_processed = job.total_bytes_processed
        stats.bytes_billed = job.total_bytes_billed
        stats.cache_hit = job.cache_hit
        stats.statement_type = job.statement_type or stats.statement_type
    except (KeyError, TypeError, ValueError):
        pass
