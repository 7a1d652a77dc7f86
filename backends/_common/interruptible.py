"""Ctrl-C for a statement run from the main thread by an engine that holds that thread.

Python runs its SIGINT handler only when the main thread runs Python code. DuckDB keeps the thread
in C++ until the statement ends, so Ctrl-C waited for it (up to its timeout); SQLite returns only
into its progress handler, where the KeyboardInterrupt is swallowed and the statement fails as
'interrupted', which read as the SQL's own runtime error. Called from the main thread,
:func:`interruptibly` runs the statement on a helper thread while the main thread waits where a
signal reaches it at once; Ctrl-C then cancels the statement through its flight and, once the
statement has stopped, raises KeyboardInterrupt. Whatever handler SIGINT has runs as usual while
the main thread waits: one that raises KeyboardInterrupt (Python's own, PySpark's) stops the
statement; one that does not (a sweep's) leaves it running, as before. On any other thread the
statement runs in place.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import TypeVar

from polysql.backends._common.cancel import Flight

T = TypeVar("T")

# One helper thread serves every statement the main thread runs: the main thread waits for each,
# so one at a time is all there is, and a thread started per statement would cost more than
# running SELECT 1 on SQLite. Made again in a forked child, which inherits no threads.
_helper: tuple[int, queue.SimpleQueue[Callable[[], None]]] | None = None
_helper_lock = threading.Lock()


def _serve(jobs: queue.SimpleQueue[Callable[[], None]]) -> None:
    while True:
        jobs.get()()


def _jobs() -> queue.SimpleQueue[Callable[[], None]]:
    global _helper
    with _helper_lock:
        if _helper is None or _helper[0] != os.getpid():
            jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
            threading.Thread(target=_serve, args=(jobs,), name="polysql-statement",
                             daemon=True).start()
            _helper = (os.getpid(), jobs)
        return _helper[1]


def interruptibly(work: Callable[[], T], flight: Flight) -> T:
    """``work()`` (which runs the statement of ``flight``), stoppable by Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        # Signal handlers run on the main thread only: a worker has no Ctrl-C to answer (a
        # sweep stops its workers through its own handler).
        return work()
    outcome: list[tuple[bool, object]] = []
    # An Event, not a thread join: a join cut short by Ctrl-C may count the thread as finished
    # while it still runs, and the statement's connection would be closed under it.
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as exc:  # handed to the caller's thread as it is
            outcome.append((False, exc))
        finally:
            done.set()

    _jobs().put(run)
    try:
        done.wait()
    except BaseException:  # Ctrl-C, or whatever else a signal handler raised here
        flight.cancel()
        done.wait()  # the engine stops within moments; a second Ctrl-C leaves at once
        raise
    succeeded, value = outcome[0]
    if succeeded:
        return value  # type: ignore[return-value]
    raise value  # type: ignore[misc]
