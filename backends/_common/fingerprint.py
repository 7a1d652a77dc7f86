"""Content digests that make loads idempotent: same digest, same data, nothing to do."""

from __future__ import annotations

import hashlib
from pathlib import Path

from polysql.backends._common.digest_memo import remembered_digest

ALGORITHM = "sha256"
_CHUNK = 1 << 20


def file_digest(*paths: Path) -> str:
    """``sha256:<hex>`` over the bytes of ``paths`` in order (missing files contribute nothing);
    remembered for large files while they stay unchanged (see :mod:`.digest_memo`)."""
    return remembered_digest(paths, lambda: _read_digest(paths))


def _read_digest(paths: tuple[Path, ...]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        if not path.exists():
            continue
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    return f"{ALGORITHM}:{digest.hexdigest()}"
