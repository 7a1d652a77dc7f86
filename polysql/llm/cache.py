"""Response cache: model answers stored on disk, keyed by everything that shapes the answer.

A re-run or a re-analysis of a sweep must cost nothing, so every (model, endpoint, sampling
parameters, messages) answer is kept in one SQLite file. The key deliberately leaves out what
does not change the answer (API key, timeout, concurrency). With sampling temperature above zero
the cache freezes the first answer: that is what makes a re-run reproducible.

Values are JSON, not pickle: the file may be shared or inspected, and a response is plain data.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from polysql.core.paths import cache_dir

# Bump when the key recipe or the stored record changes, so old entries are never misread.
KEY_VERSION = "1"
DEFAULT_FILE_NAME = "llm-responses.sqlite"


@dataclass(frozen=True, slots=True)
class CachedResponse:
    """A model's answer as stored: what it said and what it cost when it was first asked."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None
    model: str
    elapsed: float


def response_key(*, model: str, base_url: str, params: dict[str, Any],
                 messages: list[dict[str, str]]) -> str:
    """sha256 over the model id, the endpoint, canonical sampling params and the messages."""
    canonical = json.dumps(
        {"v": KEY_VERSION, "model": model, "base_url": base_url.rstrip("/"), "params": params,
         "messages": messages},
        sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str,
    )
    # surrogatepass: a lone surrogate in a question or an answer must hash, not raise
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


class ResponseCache:
    """Thread-safe SQLite store of model responses (``cache_dir()/llm-responses.sqlite`` by default)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else cache_dir() / DEFAULT_FILE_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._conn.commit()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> CachedResponse | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
            found = _decode(row[0]) if row is not None else None
            if found is None:  # an unreadable entry counts as a miss; the next put replaces it
                self.misses += 1
            else:
                self.hits += 1
        return found

    def put(self, key: str, response: CachedResponse) -> None:
        # ASCII escapes: SQLite cannot store a str holding a lone surrogate as text
        value = json.dumps(asdict(response))
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO responses VALUES (?, ?)", (key, value))
            self._conn.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _decode(value: str) -> CachedResponse | None:
    try:
        record = json.loads(value)
        return CachedResponse(
            text=str(record["text"]), prompt_tokens=int(record["prompt_tokens"]),
            completion_tokens=int(record["completion_tokens"]),
            finish_reason=record["finish_reason"], model=str(record["model"]),
            elapsed=float(record["elapsed"]),
        )
    except (ValueError, KeyError, TypeError):
        return None
