"""Ctrl-C and SIGTERM during a sweep, in three steps the user can see.

1. The first Ctrl-C asks every worker to stop after the statement it is running; that statement's
   record is still written, so nothing finished is lost.
2. A second Ctrl-C cancels the running statements (their work stays pending, nothing is recorded
   for them).
3. A third one exits at once; records already written are kept and the next run resumes.

SIGTERM (``kill``) is taken as steps 1 and 2 together: whoever sends it wants the process gone
soon, and the records written so far must still be consistent.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

EXIT_INTERRUPTED = 130


class StopSignals:
    """Installs the handlers while a sweep runs (only possible on the main thread; elsewhere,
    e.g. a sweep run from a library thread, nothing is installed and the caller stops it)."""

    def __init__(self, *, stop: Callable[[], None], cancel: Callable[[], None],
                 say: Callable[[str], None]) -> None:
        self._stop = stop
        self._cancel = cancel
        self._say = say
        self.presses = 0
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    @property
    def interrupted(self) -> bool:
        return self.presses > 0

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGTERM:
            self.presses = max(self.presses, 2)
            self._say("terminated: cancelling running statements; their work stays pending")
            self._stop()
            self._cancel()
            return
        self.presses += 1
        if self.presses == 1:
            self._stop()
        elif self.presses == 2:
            self._cancel()
        else:
            self._say("stopping now; records written so far are kept, re-run the same command "
                      "to resume")
            os._exit(EXIT_INTERRUPTED)
