"""Content digests that make loads idempotent: same digest, same data, nothing to do."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

ALGORITHM = "sha256"
_CHUNK = 1 << 20


def file_digest(*paths: Path) -> str:
    """``sha256:<hex>`` over the bytes of ``paths`` in order (missing files contribute nothing)."""
    digest = hashlib.sha256()
    for path in paths:
        if not path.exists():
            continue
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    return f"{ALGORITHM}:{digest.hexdigest()}"


def sqlite_fingerprint(conn: sqlite3.Connection, path: Path | None) -> str:
    """Digest of a SQLite database: its file plus any write-ahead log not yet checkpointed into
    it (WAL content is part of the database), or the serialized image of an in-memory one."""
    if path is None:
        return f"{ALGORITHM}:{hashlib.sha256(conn.serialize()).hexdigest()}"
    return file_digest(path, path.with_name(path.name + "-wal"))
