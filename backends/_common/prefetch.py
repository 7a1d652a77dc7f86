"""Read ahead of a consumer: drive an iterator in a worker thread through a bounded queue.

Loading reads the source (SQLite stepping and Arrow conversion) and writes the target (encoding
and sending to a server) one batch at a time. Both sides spend much of their time outside the
GIL, so reading the next batch while the current one is written overlaps the two. The queue is
bounded, so memory stays at a few batches however large the table.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

_DONE = object()
# How often a blocked producer re-checks whether the consumer has gone away.
_POLL_SECONDS = 0.1


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def prefetched(items: Iterator[T], *, depth: int = 2) -> Iterator[T]:
    """Yield what ``items`` yields, in order, produced up to ``depth`` items ahead in a thread.

    An exception raised by ``items`` is raised here at the point the consumer reaches it. When
    the consumer stops early (break, error, close), the worker stops at its next item and
    ``items`` is closed before this generator returns.
    """
    slots: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                slots.put(item, timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
        except BaseException as exc:  # handed to the consumer, which re-raises it
            put(_Failure(exc))
            return
        put(_DONE)

    worker = threading.Thread(target=produce, name="polysql-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item = slots.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        worker.join()
        close = getattr(items, "close", None)
        if close is not None:
            close()
