"""The console script: the ``polysql`` command, without the garbage collection of its exit.

When the interpreter shuts down it runs full garbage collections over every object still alive:
the hundreds of thousands that importing SQLAlchemy, PyArrow, DuckDB and Rich created, and a
load's or sweep's own. That only frees memory the process is about to hand back, and costs about
0.1 s per command (measured on ``load`` and ``compare``): a tenth of a 1M-row DuckDB load.
Frozen objects are left out of those collections. Everything polysql writes is closed by the code
that writes it, and objects are still released by reference counting and ``atexit`` handlers
still run; what is skipped is freeing cyclic garbage. Only here, where the process ends next: a
program or a test that calls :func:`polysql.cli.main` keeps collecting as usual.
"""

from __future__ import annotations

import gc

from polysql.cli.main import main


def run() -> None:
    """Run ``polysql`` with the process's arguments; exits (click ends with SystemExit)."""
    try:
        main()
    finally:
        gc.freeze()
