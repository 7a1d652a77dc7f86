"""sqlglot's log lines kept off stderr while polysql parses SQL it is evaluating.

sqlglot warns through the ``sqlglot`` logger about each statement it can only parse loosely
("... contains unsupported syntax. Falling back to parsing as a 'Command'"). When polysql
screens or inspects a prediction, that statement is evaluated SQL: the screen and the engine
judge it and the result says so, and without a logging configuration Python would print every
such warning on stderr (in a notebook, in a user's own evaluation loop). The CLI lowers the
logger's level for the whole process; a library must not, so polysql drops only the records
its own parses emit, on the thread making them, and leaves a user's own sqlglot calls alone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_state = threading.local()


class _DuringPolysqlParse(logging.Filter):
    """Drops records emitted while this thread is inside :func:`quietly`."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(_state, "depth", 0)


# Installed once; it drops nothing outside quietly().
logging.getLogger("sqlglot").addFilter(_DuringPolysqlParse())


@contextmanager
def quietly() -> Iterator[None]:
    """Within the block, records of the ``sqlglot`` logger from this thread are dropped."""
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        yield
    finally:
        _state.depth -= 1
