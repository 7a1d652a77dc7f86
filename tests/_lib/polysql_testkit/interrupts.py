"""Ctrl-C as a terminal sends it, and statements that run long enough to be stopped."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

# Statements that run for a minute or more; a test stops one after a moment.
SLOW = {
    "sqlite": "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r "
              "WHERE i < 2000000000) SELECT count(*) FROM r",
    "duckdb": "SELECT count(*) FROM range(2000000000) AS a "
              "WHERE md5(a.range::VARCHAR) LIKE '%abc%'",
}


@contextmanager
def sigint_to_main_thread(after: float = 0.5) -> Iterator[None]:
    """A real SIGINT to the main thread ``after`` seconds in (interrupt_main() only sets the
    flag, which a thread blocked on a lock would not see)."""
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(after, signal.pthread_kill, args=(main, signal.SIGINT))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


#: what `polysql compare` prints, and nothing else, when Ctrl-C stops it: no resume hint, as a
#: compare re-run starts over
INTERRUPTED = "interrupted"


def ctrl_c_compare(db_url: str, gold_sql: str, *, after: float) -> tuple[int, str]:
    """Run ``polysql compare`` on ``db_url`` with ``gold_sql`` as the gold, send it a real
    SIGINT ``after`` seconds in (start-up done, the gold running) and return its exit code and
    output."""
    process = subprocess.Popen(
        [sys.executable, "-m", "polysql.cli", "compare", "--db", db_url, "--gold", gold_sql,
         "--pred", "SELECT 1", "--timeout", "300"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(after)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    return process.returncode, output
