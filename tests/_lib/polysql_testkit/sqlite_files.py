"""SQLite database files built by a test's own statements."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

Build = Callable[[sqlite3.Connection], None]


def built_sqlite(path: Path, build: Build) -> Path:
    """``path``, a new SQLite file holding what ``build`` wrote through its connection."""
    con = sqlite3.connect(path)
    try:
        build(con)
        con.commit()
    finally:
        con.close()
    return path


# Run as another program: takes the file's write lock and keeps it until its stdin closes.
_HOLDER = """
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
con.execute("ROLLBACK")
"""


@contextlib.contextmanager
def write_locked(path: Path) -> Iterator[None]:
    """``path`` held by another process in the middle of a write (an EXCLUSIVE transaction), as
    a program writing to a dataset's database holds it, until the block ends."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
