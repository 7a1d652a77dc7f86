"""Opening a SQLite database named by a ``sqlite://`` URL.

An evaluation connection (``read_only``) opens the file with ``mode=ro`` and gets the authorizer
of :mod:`polysql.backends.sqlite.screen`; every connection has extension loading disabled.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

from sqlalchemy.engine import URL

from polysql.backends.sqlite.screen import read_only_authorizer
from polysql.core.errors import EngineUnavailableError


def database_path(url: URL) -> Path | None:
    """The file a ``sqlite://`` URL names, or None for an in-memory database."""
    database = url.database
    if not database or database == ":memory:":
        return None
    return Path(database)


def open_connection(path: Path | None, *, read_only: bool) -> sqlite3.Connection:
    """A connection to ``path`` (None: in-memory), read-only and screened when ``read_only``."""
    if path is None:
        target = ":memory:"
        uri = False
    else:
        if read_only and not path.is_file():
            raise EngineUnavailableError(
                f"SQLite database file {str(path)!r} does not exist (resolved from the URL path; "
                f"use sqlite:///relative/path or sqlite:////absolute/path)")
        target = f"file:{quote(str(path))}?mode={'ro' if read_only else 'rwc'}"
        uri = True
    try:
        # isolation_level=None: autocommit, so writes on a load/test connection are visible at
        # once and evaluated SQL never leaves a transaction open. check_same_thread=False lets a
        # runner thread use the connection; the backend's lock serialises access.
        conn = sqlite3.connect(target, uri=uri, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise EngineUnavailableError(f"cannot open SQLite database {str(path)!r}: {exc}") from exc
    # Builds without extension support lack the method; then loading is impossible anyway.
    disable_extensions = getattr(conn, "enable_load_extension", None)
    if disable_extensions is not None:
        disable_extensions(False)
    if read_only:
        conn.set_authorizer(read_only_authorizer)
    return conn
