"""Where polysql keeps derived data: loaded engine copies and the execution cache."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$POLYSQL_CACHE`` if set, else ``~/.cache/polysql``. Everything in it can be rebuilt."""
    env = os.environ.get("POLYSQL_CACHE")
    root = Path(env).expanduser() if env else Path.home() / ".cache" / "polysql"
    root.mkdir(parents=True, exist_ok=True)
    return root
