"""Fill DuckDB tables on several connections to the same database at once.

One table's INSERT, primary key and indexes keep DuckDB on little more than one core (the ART
index build and the row-group writes are largely serial per table), so with the rows already in
memory a second table filled alongside uses the core that would otherwise idle. Each lane is a
cursor of the loading connection: the same database instance, its own transactions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import TypeVar

import duckdb

Job = TypeVar("Job")
Outcome = TypeVar("Outcome")


def fill_in_lanes(conn: duckdb.DuckDBPyConnection, jobs: Sequence[Job],
                  fill: Callable[[duckdb.DuckDBPyConnection, Job], Outcome], *, lanes: int,
                  size: Callable[[Job], int]) -> list[Outcome]:
    """``fill(cursor, job)`` for every job, largest ``size`` first, on up to ``lanes`` cursors of
    ``conn`` at once; the outcomes in the jobs' order.

    With one lane every job runs on ``conn`` itself, on the calling thread. Otherwise, should a
    job fail (or the caller be interrupted, Ctrl-C), no lane starts another job, the statements
    still running are interrupted, and the first failure is raised once every lane has stopped.
    """
    lanes = max(1, min(lanes, len(jobs)))
    if lanes == 1:
        return [fill(conn, job) for job in jobs]
    order = sorted(range(len(jobs)), key=lambda i: -size(jobs[i]))
    cursors: list[duckdb.DuckDBPyConnection] = []
    guard = threading.Lock()
    stopping = threading.Event()
    local = threading.local()

    def cursor() -> duckdb.DuckDBPyConnection:
        mine: duckdb.DuckDBPyConnection | None = getattr(local, "cursor", None)
        if mine is None:
            mine = conn.cursor()
            with guard:
                cursors.append(mine)
            local.cursor = mine
        return mine

    def run(index: int) -> Outcome:
        if stopping.is_set():
            raise _Stopped
        return fill(cursor(), jobs[index])

    pool = ThreadPoolExecutor(max_workers=lanes, thread_name_prefix="polysql-duckdb-fill")
    try:
        futures = {index: pool.submit(run, index) for index in order}
        wait(futures.values(), return_when=FIRST_EXCEPTION)
        for index in order:  # a failure, if any, before waiting on the jobs still running
            future = futures[index]
            if future.done() and not future.cancelled() and future.exception() is not None:
                raise future.exception()  # type: ignore[misc]
        outcomes = {index: future.result() for index, future in futures.items()}
    except BaseException:
        stopping.set()
        pool.shutdown(wait=False, cancel_futures=True)
        with guard:
            for running in cursors:
                running.interrupt()
        raise
    finally:
        pool.shutdown(wait=True)
        for opened in cursors:
            opened.close()
    return [outcomes[index] for index in range(len(jobs))]


class _Stopped(Exception):
    """A lane was about to start a job after another job failed."""
