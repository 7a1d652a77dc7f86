"""Which Spark engines may still be busy with a statement they were told to stop.

Spark stops a cancelled job by interrupting its task threads, and a task only notices between
rows. Work inside one row -- a higher-order function over a large array, a long regular
expression -- runs on after the cancel, holding its task slots. The next statement then waits
for those slots and may run out of its own timeout: a cheap, correct query counted as the
model's timeout. So after a cancel the next statement first checks that a one-task probe gets
a slot; if none frees within ``SETTLE_WAIT`` seconds, the statement is not run and reports the
engine ``unavailable`` (an outage, never a verdict against the model).

A job can also escape the cancel altogether. With adaptive execution, Spark submits a shuffle
stage's job from a thread of its own; a cancel that lands between that thread's check and its
submission leaves a job that carries the statement's tags but was never told to stop. On Spark
Connect nothing a client can send reaches it afterwards: the server interrupts an operation once
and forgets it, ``interruptTag``/``interruptAll`` walk only the operations it still holds, and
releasing the session cancels no jobs (seen on Spark 4.3). Such a job holds its slots until it
ends on its own, so the probe reports the engine unavailable until then or until a restart.

A driver in this process is restarted instead (its JVM killed, a new one started): the tasks of
a local master run in that JVM, and a thread busy inside one row ends only with it. Statements
the sessions of the old driver were running fail as ``unavailable``; each backend opens a
session of the new driver before its next statement.

The record is kept per engine (a Spark Connect server, or this process's driver), not per
session, so a reconnect after an ``unavailable`` result still checks first.
"""

from __future__ import annotations

import threading

# How long the probe may wait for a free task slot after a cancel. Longer than any one row of
# ordinary evaluation work. On a driver in this process a backlog that outlasts it is ended by
# restarting the driver (seconds); a Spark Connect server cannot be restarted from here, so it
# gets longer, and a backlog that outlasts that makes the engine unusable for a sweep.
SETTLE_WAIT = 15.0
SETTLE_WAIT_CONNECT = 60.0
# The probe: one task on one partition, so it needs one free slot and nothing else.
PROBE_STATEMENT = "SELECT sum(id) FROM range(0, 1, 1, 1)"
PROBE_ROWS = [(0,)]


class Unsettled:
    """Engines with a cancelled statement whose tasks may still be running."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled: dict[str, str] = {}  # engine key -> what was cancelled there

    def mark(self, engine: str, statement: str) -> None:
        with self._lock:
            self._cancelled.setdefault(engine, statement)

    def pending(self, engine: str) -> str | None:
        with self._lock:
            return self._cancelled.get(engine)

    def clear(self, engine: str) -> None:
        with self._lock:
            self._cancelled.pop(engine, None)


UNSETTLED = Unsettled()


def engine_key(*, connect: bool, master: str) -> str:
    """One key per engine: a Spark Connect server, or the driver every embedded session in this
    process shares."""
    return f"connect:{master}" if connect else f"driver:{master}"


def _shown(statement: str) -> str:
    """The statement on one line, cut to a length a message can carry."""
    shown = " ".join(statement.split())
    return shown if len(shown) <= 120 else shown[:117] + "..."


def unsettled_message(statement: str, waited: float) -> str:
    return (f"Spark still has no free task slot {waited:g}s after cancelling "
            f"{_shown(statement)!r}: its "
            f"tasks did not stop when cancelled (work inside one row is not interruptible, or "
            f"Spark started one of its jobs after the cancel, which no client call can stop). "
            f"Restart the Spark engine; until then its backlog would be counted as timeouts")


def restarted_message(statement: str, waited: float) -> str:
    return (f"Spark still had no free task slot {waited:g}s after cancelling "
            f"{_shown(statement)!r} (its "
            f"tasks do not notice a cancel while busy inside one row), so polysql restarted the "
            f"Spark driver of this process")
