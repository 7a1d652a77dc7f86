"""Ctrl-C as a terminal sends it, and statements that run long enough to be stopped."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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


def _wait_until_open(pid: int, path: Path, limit: float = 120.0) -> None:
    """Until process ``pid`` holds a file at or below ``path`` open (Linux's /proc), at most
    ``limit`` seconds: then its start-up is over and it is working on that database, however
    long a loaded machine took to import. Elsewhere, returns at once."""
    fds = Path(f"/proc/{pid}/fd")
    if not fds.is_dir():
        return
    target, deadline = str(path), time.monotonic() + limit
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):  # a descriptor closed while listed; the process ended
            if any(os.readlink(fd).startswith(target) for fd in fds.iterdir()):
                return
        time.sleep(0.05)


def ctrl_c_compare(db_url: str, gold_sql: str, *, after: float,
                   opens: Path | None = None) -> tuple[int, str]:
    """Run ``polysql compare`` on ``db_url`` with ``gold_sql`` as the gold, send it a real
    SIGINT ``after`` seconds in (start-up done, the gold running) and return its exit code and
    output. ``opens``: the database's file or folder; the seconds then count from when the
    process has it open, so a slow start-up (a loaded machine) is not interrupted instead."""
    process = subprocess.Popen(
        [sys.executable, "-m", "polysql.cli", "compare", "--db", db_url, "--gold", gold_sql,
         "--pred", "SELECT 1", "--timeout", "300"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        if opens is not None:
            _wait_until_open(process.pid, opens)
        time.sleep(after)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    return process.returncode, output
