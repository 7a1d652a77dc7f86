"""Content digests of large files remembered by the files' status, so an unchanged file is not
read again.

A sweep digests every source database when it starts, ``polysql report`` does again to tell stale
records, and ``leaderboard pack`` twice more: for BIRD's 1.5 GB of dev databases that is about a
second each time, for its 33 GB of train databases half a minute. A digest is remembered beside
the files' device, inode, size, modification and status-change times (nanoseconds), and served
again only while all of them are unchanged. Writing to a file changes its modification and
status-change times; setting the modification time back (``touch -d``) changes the status-change
time, which no user can set; replacing the file changes its inode. A file changed less than
:data:`SETTLE_SECONDS` before it was read is not remembered: file systems take their timestamps
from a coarse clock, and a second write within the same tick would leave the status unchanged.

The memo lives in polysql's cache folder. When it cannot be used (a read-only or corrupt file,
a locked database) the files are simply read; a digest is never wrong for want of a memo.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from polysql.core.paths import cache_dir

#: files smaller than this (together) are read every time: reading is cheaper than the lookup
SMALLEST_BYTES = 16 << 20
#: a file changed more recently than this before it was read is not remembered (see above)
SETTLE_SECONDS = 2.0
MEMO_FILE = "file-digests.db"
_BUSY_SECONDS = 2.0
_KEPT_ENTRIES = 10_000

Status = tuple[int, int, int, int, int] | None  # device, inode, size, mtime_ns, ctime_ns


def _status(path: Path) -> Status:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


def _settled(statuses: list[Status], started_ns: int) -> bool:
    limit = started_ns - int(SETTLE_SECONDS * 1e9)
    return all(s is None or max(s[3], s[4]) <= limit for s in statuses)


def _open_memo() -> sqlite3.Connection:
    conn = sqlite3.connect(cache_dir() / MEMO_FILE, timeout=_BUSY_SECONDS,
                           isolation_level=None)
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS digests (paths TEXT PRIMARY KEY, "
                     "status TEXT NOT NULL, digest TEXT NOT NULL, stored REAL NOT NULL)")
    except BaseException:
        conn.close()
        raise
    return conn


def _recall(key: str, status: str) -> str | None:
    with contextlib.closing(_open_memo()) as conn:
        row = conn.execute("SELECT digest FROM digests WHERE paths = ? AND status = ?",
                           (key, status)).fetchone()
    return None if row is None else str(row[0])


def _remember(key: str, status: str, digest: str) -> None:
    with contextlib.closing(_open_memo()) as conn:
        conn.execute("INSERT OR REPLACE INTO digests VALUES (?, ?, ?, ?)",
                     (key, status, digest, time.time()))
        # the oldest go first once the memo outgrows its bound (a look-up writes nothing, so
        # processes reading the memo never wait on each other)
        conn.execute("DELETE FROM digests WHERE paths NOT IN "
                     "(SELECT paths FROM digests ORDER BY stored DESC LIMIT ?)", (_KEPT_ENTRIES,))


def remembered_digest(paths: tuple[Path, ...], compute: Callable[[], str]) -> str:
    """``compute()``, the digest of ``paths``' content, or the one remembered for them while
    every file's status is as it was then (see the module's docstring)."""
    statuses = [_status(path) for path in paths]
    if sum(s[2] for s in statuses if s is not None) < SMALLEST_BYTES:
        return compute()
    key = json.dumps([os.path.realpath(path) for path in paths])
    status = json.dumps(statuses)
    with contextlib.suppress(sqlite3.Error, OSError):
        found = _recall(key, status)
        if found is not None:
            return found
    started_ns = time.time_ns()
    digest = compute()
    # Changed while being read, or too recently to trust its timestamps: not remembered.
    if _settled(statuses, started_ns) and [_status(path) for path in paths] == statuses:
        with contextlib.suppress(sqlite3.Error, OSError):
            _remember(key, status, digest)
    return digest
