"""The console script: the ``polysql`` command, with the collector tuned for a short process.

Python starts a young garbage collection whenever 700 more container objects have been created
than freed, and every tenth young collection moves the survivors toward the full collections
that traverse every object. A sweep or a load keeps millions of containers alive for a while
(fetched rows, records, parsed SQL), so it collected thousands of times and traversed the same
long-lived objects again and again: about a tenth of polysql's own time in a sweep. Here a young
collection waits for :data:`YOUNG_COLLECTION` (50,000) such objects instead (1M-row four-engine
sweep: polysql's own time 2.0-2.2 s -> 1.7-1.8 s; a 1000-question SQLite sweep: about 8% less
wall time). Garbage in reference cycles is still freed, a little later; everything else is freed
by reference counting at once, as always.

When the interpreter shuts down it runs full garbage collections over every object still alive:
the hundreds of thousands that importing SQLAlchemy, PyArrow, DuckDB and Rich created, and a
load's or sweep's own. That only frees memory the process is about to hand back, and costs about
0.1 s per command (measured on ``load`` and ``compare``), so the objects alive at the end are
frozen, which leaves them out of those collections. Everything polysql writes is closed by the
code that writes it, and ``atexit`` handlers still run.

Both apply only here, in the ``polysql`` process: a program or a test that calls
:func:`polysql.cli.main` keeps its own collector settings.
"""

from __future__ import annotations

import gc

from polysql.cli.main import main

#: surviving young objects that start a collection in the ``polysql`` process (Python: 700)
YOUNG_COLLECTION = 50_000


def run() -> None:
    """Run ``polysql`` with the process's arguments; exits (click ends with SystemExit)."""
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION, middle, oldest)
    try:
        main()
    finally:
        gc.freeze()
