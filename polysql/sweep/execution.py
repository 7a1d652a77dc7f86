"""Running one statement for the sweep: through the execution cache, and stoppable.

The :class:`Executor` knows which statements are running on which thread, so Ctrl-C can first
let them finish (stop) and then cancel them on their engines (cancel); see
:mod:`polysql.sweep.interrupts` for the signals that ask for each.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from polysql.backends.base import Backend
from polysql.core.model import Result
from polysql.core.urls import without_database
from polysql.engines.copies import names_existing
from polysql.engines.fleet import EngineSpec
from polysql.sweep.execution_cache import ExecutionCache, execution_key
from polysql.sweep.timings import SweepTimings


def _engine_key(spec: EngineSpec) -> str:
    """What the cache knows an engine by: its name and URL, and the form its values are decoded
    in when that changed since the first (keys made before such a change stay the same). The
    database part of a URL the sweep builds copies through names nothing it reads (the copy's
    content is in the key's fingerprint), so 'sqlite://', 'sqlite:///' and the gold lane's
    URL are one engine; a ``{db_id}`` URL keeps it."""
    url = spec.url if names_existing(spec.url) else without_database(spec.url)
    key = f"{spec.backend.name}|{url.render_as_string(hide_password=True)}"
    form = spec.backend.info.result_form
    return f"{key}|{form}" if form else key


class Cancelled(Exception):
    """A statement was cancelled by the user (second Ctrl-C): its result means nothing."""


class Executor:
    """Executes statements under the sweep's limits, reusing cached results; no statement starts
    once a stop was asked for, and a cancelled one raises :class:`Cancelled`."""

    def __init__(self, *, timeout: float, max_rows: int, cache: ExecutionCache | None,
                 say: Callable[[str], None], timings: SweepTimings | None = None) -> None:
        self.timeout = timeout
        self.max_rows = max_rows
        self.cache = cache
        self.timings = timings if timings is not None else SweepTimings()
        self._say = say
        self._stop = threading.Event()
        self._cancel = threading.Event()
        # statements running now, by thread: what a second Ctrl-C cancels
        self._running: dict[int, Backend] = {}
        self._running_lock = threading.Lock()
        # what the cache knows each engine by: the same for every statement, and not free to
        # work out (URL rendering)
        self._engine_keys: dict[EngineSpec, str] = {}

    @property
    def stopping(self) -> bool:
        """A stop was asked for: workers finish what they are doing and take nothing new."""
        return self._stop.is_set()

    def execute(self, backend: Backend, spec: EngineSpec, fingerprint: str, sql: str, *,
                max_rows: int | None = None) -> Result:
        """Run (or fetch from the cache) one statement, keeping at most ``max_rows`` rows (the
        sweep's row cap unless given). Raises Cancelled when the user cancelled it: such a
        result is neither cached nor judged."""
        if self._cancel.is_set():
            raise Cancelled
        max_rows = self.max_rows if max_rows is None else max_rows
        key = None
        if self.cache is not None:
            with self.timings.stage("cache"):
                engine_key = self._engine_keys.get(spec)
                if engine_key is None:
                    engine_key = self._engine_keys[spec] = _engine_key(spec)
                key = execution_key(
                    engine=engine_key,
                    engine_version=backend.version(), db_fingerprint=fingerprint, sql=sql,
                    timeout=self.timeout, max_rows=max_rows,
                )
                cached = self.cache.get(key)
            if cached is not None:
                return cached
        me = threading.get_ident()
        with self._running_lock:
            self._running[me] = backend
        try:
            with self.timings.stage("execute"):
                result = backend.execute(sql, timeout=self.timeout, max_rows=max_rows)
        finally:
            with self._running_lock:
                self._running.pop(me, None)
        if self._cancel.is_set():
            raise Cancelled
        if self.cache is not None and key is not None:
            with self.timings.stage("cache"):
                self.cache.put(key, result)
        return result

    def request_stop(self) -> None:
        """First Ctrl-C: running statements finish and are recorded; nothing new starts."""
        with self._running_lock:
            running = len(self._running)
        self._stop.set()
        if running:
            self._say(
                f"stopping: waiting for {running} running statement(s) (up to "
                f"{self.timeout:g} s); Ctrl-C again to cancel them")
        else:
            self._say("stopping: Ctrl-C again to stop at once")

    def request_cancel(self) -> None:
        """Second Ctrl-C (or SIGTERM): cancel the running statements on their engines."""
        self._stop.set()
        self._cancel.set()
        with self._running_lock:
            running = list(self._running.values())
        self._say(f"cancelling {len(running)} running statement(s); their work stays "
                  "pending; Ctrl-C again to exit at once")
        for backend in running:
            try:
                backend.cancel()
            except Exception as exc:  # noqa: BLE001 - a failed cancel must not stop the others
                self._say(f"could not cancel a statement on {backend.name}: {exc}")
