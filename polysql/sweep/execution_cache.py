"""Execution cache: results of (engine, database content, SQL, limits) stored on disk.

Gold queries run once per question no matter how many predictors and engines are swept, and a
re-run or re-analysis costs nothing. Keys include the engine version and the database
fingerprint, so a changed engine or dataset never serves stale results. Errors that depend on the
moment (``unavailable``) are never cached.
"""

from __future__ import annotations

import hashlib
import pickle
import sqlite3
import threading
from pathlib import Path

from polysql.core.model import Result

# 2: results pickle as polysql.core.model.Result since the module moved; entries written
# before would not unpickle, so the new version keys them out on purpose instead of by accident
SCHEMA_VERSION = "2"


def execution_key(*, engine: str, engine_version: str, db_fingerprint: str, sql: str,
                  timeout: float, max_rows: int) -> str:
    parts = [SCHEMA_VERSION, engine, engine_version, db_fingerprint, repr(timeout), str(max_rows), sql]
    # surrogatepass: any Python str gets a key, even one holding a lone surrogate (which plain
    # UTF-8 refuses); it is still one-to-one, and for valid text the bytes are plain UTF-8, so
    # every key made before stays the same.
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", errors="surrogatepass")).hexdigest()


class ExecutionCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        # A cache: a crash may lose the last few entries (they are recomputed), never corrupt the
        # file; NORMAL drops the fsync every commit paid under FULL (the bulk of a put's time).
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, value BLOB)")
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Result | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM results WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        try:
            result = pickle.loads(row[0])  # our own file, written below
        except Exception:  # an unreadable entry is a miss; it will be overwritten
            self.misses += 1
            return None
        if not hasattr(result, "stats"):  # written before results carried engine stats
            result.stats = {}
        self.hits += 1
        return result

    def put(self, key: str, result: Result) -> None:
        if result.error is not None and result.error.kind == "unavailable":
            return
        blob = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO results VALUES (?, ?)", (key, blob))
            self._conn.commit()

    def close(self) -> None:
        with self._lock:
            self._conn.close()
