"""SQLite database files built by a test's own statements."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
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
