"""Build the demo database into the cache on first use, atomically."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from pathlib import Path

from polysql.core.errors import DatasetError
from polysql.core.paths import CACHE_ENV, cache_root
from polysql.datasets.demo.generate import DB_ID, GENERATOR_VERSION, write_database


def demo_database_path(cache_dir: Path | None = None) -> Path:
    """Where the demo database lives: ``<cache>/datasets/demo/v<GENERATOR_VERSION>/retail.sqlite``."""
    root = cache_dir if cache_dir is not None else cache_root()
    return root / "datasets" / "demo" / f"v{GENERATOR_VERSION}" / f"{DB_ID}.sqlite"


def ensure_demo_database(cache_dir: Path | None = None) -> Path:
    """The demo database's path, building it first when it is missing.

    The file is written under a temporary name in the same folder and renamed into place, so a
    reader never sees a half-written database and two concurrent builds (which write identical
    bytes) cannot corrupt each other.
    """
    path = demo_database_path(cache_dir)
    if path.is_file():
        return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{DB_ID}-", suffix=".building", dir=path.parent)
    except OSError as exc:
        raise DatasetError(
            f"cannot create the demo database cache folder {path.parent} ({exc.strerror}); "
            f"set {CACHE_ENV} to a writable folder"
        ) from exc
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        tmp.unlink()  # write_database refuses to overwrite; we only wanted a unique name
        write_database(tmp)
        os.replace(tmp, path)
    except (OSError, sqlite3.Error) as exc:  # sqlite3: "database or disk is full", "disk I/O"
        raise DatasetError(f"cannot build the demo database at {path}: {exc}; make room in "
                           f"{path.parent} (or set {CACHE_ENV} to a folder with room) and run "
                           f"again") from exc
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + "-journal")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
    return path
