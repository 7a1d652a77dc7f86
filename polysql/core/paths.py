"""Where polysql keeps derived data (loaded engine copies, generated databases, the execution and
response caches): one root for all of it. Everything there can be deleted and rebuilt."""

from __future__ import annotations

import os
from pathlib import Path

from polysql.core.errors import ConfigError

CACHE_ENV = "POLYSQL_CACHE"


def cache_root() -> Path:
    """``$POLYSQL_CACHE`` when set to a non-blank value, else ``~/.cache/polysql``; not created."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "polysql"


def cache_dir() -> Path:
    """:func:`cache_root`, created if missing; ConfigError when it cannot be (a file in its
    place, no permission), naming the folder and how to choose another."""
    root = cache_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        what = ("a file stands in its path" if isinstance(exc, FileExistsError | NotADirectoryError)
                else exc.strerror or str(exc))
        raise ConfigError(f"cannot create polysql's cache folder {str(root)!r} ({what}); set "
                          f"{CACHE_ENV} to a folder you can write in") from exc
    return root


def path_in(folder: Path | None, path: str) -> str:
    """``path`` as read from ``folder`` (None: as it is): a relative path joined to it."""
    expanded = Path(path).expanduser()
    return path if folder is None or expanded.is_absolute() else str(folder / expanded)
