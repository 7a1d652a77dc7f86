"""One bounded, thread-safe pool of server connections, shared by every engine that keeps some.

An evaluation backend runs many short statements from several threads; it needs a handful of
connections reused across statements, each used by one thread at a time, and replaced when the
server drops one. No pool library does exactly that for every client library polysql drives, so
each engine instantiates this pool with its own callables:

* ``open()``: a new connection, or :class:`~polysql.core.errors.EngineUnavailableError`;
* ``close(conn)``: say goodbye; an exception from it is ignored, the connection is gone anyway;
* ``usable(conn)``: a local check without a round trip (closed? broken? inside a transaction?),
  made before a connection is handed out and when it comes back;
* ``ping(conn)``: a round trip, made only before handing out a connection that sat idle for at
  least ``ping_after`` seconds (servers close idle sessions; a statement should not be the one
  to find out).

Connections open lazily; at most ``size`` exist at once, idle or in use, and ``acquire`` waits for
one to come back. A connection that fails a check is closed and a fresh one opened in its place,
which is how a backend reconnects after a server restart. Closing the pool closes the idle
connections at once and every busy one as it comes back.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from polysql.core.errors import ConfigError, EngineUnavailableError

C = TypeVar("C")


def _always(conn: object) -> bool:
    return True


class ConnectionPool(Generic[C]):
    """Up to ``size`` connections made by ``open``, each used by one thread at a time."""

    def __init__(self, open: Callable[[], C], close: Callable[[C], None], *, size: int,
                 engine: str, usable: Callable[[C], bool] = _always,
                 ping: Callable[[C], bool] | None = None, ping_after: float = 0.0,
                 wait: float = 60.0) -> None:
        if size < 1:
            raise ConfigError(f"pool_size must be at least 1, got {size}")
        self._open = open
        self._close = close
        self._usable = usable
        self._ping = ping
        self._ping_after = ping_after
        self.engine = engine  # the engine's display name, for messages
        self.size = size
        self.wait = wait  # default seconds ``acquire`` waits for a free connection
        self.opened = 0  # connections opened over the pool's life, for diagnostics and tests
        self._idle: list[tuple[C, float]] = []  # (connection, idle since), most recent last
        self._count = 0  # connections that exist, idle or in use
        self._closed = False
        self._cond = threading.Condition()

    def acquire(self, wait: float | None = None) -> C:
        """A connection for the calling thread alone; give it back with :meth:`release` (or
        :meth:`discard`/:meth:`abandon`). Waits up to ``wait`` seconds (default: the pool's) for
        one to be free."""
        limit = self.wait if wait is None else wait
        deadline = time.monotonic() + limit
        while True:
            taken = self._take(deadline, limit)
            if taken is None:
                return self._open_counted()
            conn, idle_since = taken
            if self._healthy(conn, idle_since):
                return conn
            self.discard(conn)

    def release(self, conn: C) -> None:
        """Hand ``conn`` back: kept for the next caller when it passes ``usable`` and the pool is
        open, closed otherwise."""
        keep = not self._closed and self._passes(self._usable, conn)
        with self._cond:
            if keep and not self._closed:
                self._idle.append((conn, time.monotonic()))
                self._cond.notify()
                return
            self._count -= 1
            self._cond.notify()
        self._close_quietly(conn)

    def discard(self, conn: C) -> None:
        """Close ``conn`` and free its place: its state cannot be trusted (lost, killed, a
        session setting changed)."""
        self._close_quietly(conn)
        self._forget()

    def abandon(self, conn: C) -> None:
        """Free the place of a connection still busy with a statement the caller stopped
        waiting for; whoever runs that statement closes the connection when it returns."""
        self._forget()

    def close(self) -> None:
        """Close the idle connections now; connections in use close when they come back."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._count -= len(idle)
            self._cond.notify_all()
        for conn, _ in idle:
            self._close_quietly(conn)

    @contextlib.contextmanager
    def connection(self, wait: float | None = None) -> Iterator[C]:
        """``acquire`` for a ``with`` block, released (checked as usual) when it ends."""
        conn = self.acquire(wait)
        try:
            yield conn
        finally:
            self.release(conn)

    # -- inside -------------------------------------------------------------------------------
    def _take(self, deadline: float, limit: float) -> tuple[C, float] | None:
        """An idle connection with its idle-since time, or None for a free place to open one
        in (already counted)."""
        with self._cond:
            while True:
                if self._closed:
                    raise EngineUnavailableError(f"the {self.engine} backend is closed")
                if self._idle:
                    return self._idle.pop()
                if self._count < self.size:
                    self._count += 1
                    return None
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise EngineUnavailableError(
                        f"no {self.engine} connection free within {limit:g}s (pool of "
                        f"{self.size}): raise pool_size or run fewer statements at once")
                self._cond.wait(remaining)

    def _open_counted(self) -> C:
        try:
            conn = self._open()
        except BaseException:
            self._forget()
            raise
        with self._cond:
            self.opened += 1
        return conn

    def _healthy(self, conn: C, idle_since: float) -> bool:
        if not self._passes(self._usable, conn):
            return False
        if self._ping is not None and time.monotonic() - idle_since >= self._ping_after:
            return self._passes(self._ping, conn)
        return True

    @staticmethod
    def _passes(check: Callable[[C], bool], conn: C) -> bool:
        try:
            return bool(check(conn))
        except Exception:  # a check that cannot even run means the connection is unusable
            return False

    def _forget(self) -> None:
        with self._cond:
            self._count -= 1
            self._cond.notify()

    def _close_quietly(self, conn: C) -> None:
        # the connection is being thrown away; a failure to say goodbye changes nothing
        with contextlib.suppress(Exception):
            self._close(conn)
