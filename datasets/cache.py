"""Where polysql keeps files it builds on demand (generated databases, converted copies)."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "POLYSQL_CACHE"


def cache_root() -> Path:
    """``$POLYSQL_CACHE`` when set (and non-empty), else ``~/.cache/polysql``."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "polysql"
