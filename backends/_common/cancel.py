"""The statements running on one backend, so that ``Backend.cancel()`` can stop them from
another thread.

``execute`` opens a :class:`Flight` as soon as it is called and *arms* it with ``interrupt`` once
the engine has the statement: the very call the backend's timeout makes to stop a statement
(``sqlite3.Connection.interrupt``, ``KILL QUERY``, a cancel request, ...). ``cancel`` marks every
open flight cancelled and returns; a thread of the flight's own interrupts it at once and then
again every ``REPEAT`` seconds until the statement has ended, because several engines drop an
interrupt that arrives just before the statement starts running (DuckDB, PostgreSQL and MySQL
forget one sent to an idle session) and Spark queries may start new jobs after the first cancel.
A flight cancelled before it was armed never runs: ``arm`` says so and ``execute`` returns at once.

No interrupt ever reaches the next statement through a flight: ``disarm``/``end`` and every
interrupt take the same lock, so once they have returned nothing more is sent for this statement
(interrupts aimed at one statement alone, by a unique query id or tag, are sent outside the lock).
A cancel request already delivered may still be acted on late by a server; backends therefore do
not reuse the connection of a cancelled statement.

A cancelled statement is reported as ``unavailable``: its outcome says nothing about the SQL, and
like every other answer that depends on the moment it must never be cached or judged.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from polysql.core.model import Result

# Seconds between repeated interrupts of a cancelled statement that is still running.
REPEAT = 0.25
# How long to go on interrupting it; the statement's own timeout still applies after that.
KEEP_TRYING = 60.0
# How often a waiting caller looks whether its statement was cancelled.
_POLL = 0.05

CANCELLED = "statement cancelled before it finished (Backend.cancel was called)"


class Flight:
    """One statement in ``execute``, from the call until it returns."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self._ended = threading.Event()
        # reentrant: cancel() may run in a signal handler on a thread that holds it
        self._lock = threading.RLock()
        self._interrupt: Callable[[], object] | None = None
        self._exclusive = True
        self._sender: threading.Thread | None = None

    def arm(self, interrupt: Callable[[], object], *, exclusive: bool = True) -> bool:
        """From now on ``interrupt`` stops the statement. False when it was cancelled already:
        then it must not run at all.

        ``exclusive=False`` for an interrupt aimed at this statement alone (a unique query id or
        job tag), which cannot reach another one even if it arrives late: it is then sent
        without holding up ``disarm``, which matters when a server is slow to take it.
        """
        with self._lock:
            if self.cancelled.is_set():
                return False
            self._interrupt = interrupt
            self._exclusive = exclusive
            return True

    def disarm(self) -> None:
        """The engine is done with the statement; no interrupt is sent once this returns."""
        with self._lock:
            self._interrupt = None

    def cancel(self) -> bool:
        """Mark the statement cancelled and have it interrupted (from a thread of its own, so
        the caller never waits on the engine); False if it has ended already."""
        with self._lock:
            if self._ended.is_set():
                return False
            self.cancelled.set()
            if self._sender is None or not self._sender.is_alive():  # else it is still at it
                self._sender = threading.Thread(target=self._interrupt_until_ended,
                                                name="polysql-cancel", daemon=True)
                self._sender.start()
        return True

    def wait(self, done: threading.Event, timeout: float) -> bool:
        """Wait until ``done`` is set, the statement is cancelled or ``timeout`` seconds have
        passed, for callers that run the statement on a worker thread; True when ``done``."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if done.wait(max(0.0, min(_POLL, remaining))):
                return True
            if self.cancelled.is_set() or remaining <= 0:
                return done.is_set()

    def end(self) -> None:
        with self._lock:
            self._interrupt = None
            self._ended.set()

    def _interrupt_until_ended(self) -> None:
        deadline = time.monotonic() + KEEP_TRYING
        while True:
            self._send()
            if self._ended.wait(REPEAT) or time.monotonic() >= deadline:
                return

    def _send(self) -> None:
        with self._lock:
            interrupt = self._interrupt
            if interrupt is None:
                return
            if self._exclusive:
                _quietly(interrupt)
                return
        _quietly(interrupt)


def _quietly(interrupt: Callable[[], object]) -> None:
    # best effort: the statement's timeout still bounds it if the interrupt fails
    with contextlib.suppress(Exception):
        interrupt()


class Flights:
    """The flights of one backend."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # reentrant for the same reason as Flight's
        self._open: set[Flight] = set()

    @contextlib.contextmanager
    def track(self) -> Iterator[Flight]:
        flight = Flight()
        with self._lock:
            self._open.add(flight)
        try:
            yield flight
        finally:
            flight.end()
            with self._lock:
                self._open.discard(flight)

    def cancel(self) -> bool:
        """Cancel every statement in ``execute`` now; True when there was one."""
        with self._lock:
            flights = list(self._open)
        sent = False
        for flight in flights:
            sent = flight.cancel() or sent
        return sent


def cancelled(engine: str, elapsed: float, detail: str | None = None) -> Result:
    """The Result of a statement stopped by ``Backend.cancel``; ``detail``: what the engine
    said, if anything."""
    message = CANCELLED if not detail else f"{CANCELLED}: {detail[:300]}"
    return Result.failed("unavailable", message, elapsed=elapsed, engine=engine)
