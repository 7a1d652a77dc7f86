"""Opening a DuckDB database named by a ``duckdb://`` URL.

Every connection gets :data:`~polysql.backends.duckdb.screen.SAFE_CONFIG` (no external access,
no extension loading, locked configuration); an evaluation connection to a file also opens it
read-only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
from sqlalchemy.engine import URL

from polysql.core.errors import ConfigError, EngineUnavailableError

#: options ``DuckDBBackend.connect`` passes on to DuckDB's configuration; a URL's query may
#: give them too (``duckdb:///sales.duckdb?threads=2&memory_limit=4GB``), the one way a sweep
#: can set them
CONFIG_OPTIONS = ("threads", "memory_limit")


def url_settings(url: URL) -> dict[str, Any]:
    """The settings in ``url``'s query. Anything else there is refused rather than ignored: a
    setting the user believes applied would silently not be."""
    query = dict(url.query)
    unknown = sorted(set(query) - set(CONFIG_OPTIONS))
    if unknown:
        raise ConfigError(
            f"unknown setting(s) in the DuckDB URL: {', '.join(unknown)}; a duckdb:// URL's "
            f"query may give {' and '.join(CONFIG_OPTIONS)} "
            f"(duckdb:///file.duckdb?threads=2&memory_limit=4GB)")
    settings: dict[str, Any] = {}
    for key, value in query.items():
        if not isinstance(value, str):
            raise ConfigError(f"{key} is given more than once in the DuckDB URL")
        settings[key] = value
    if "threads" in settings:
        try:
            settings["threads"] = int(settings["threads"])
        except ValueError:
            raise ConfigError(f"threads={settings['threads']!r} in the DuckDB URL is not a "
                              f"whole number") from None
    return settings


def database_path(url: URL) -> Path | None:
    """The file a ``duckdb://`` URL names, or None for an in-memory database."""
    database = url.database
    if not database or database == ":memory:":
        return None
    return Path(database)


def open_connection(path: Path | None, *, read_only: bool,
                    config: dict[str, Any]) -> duckdb.DuckDBPyConnection:
    """A connection to ``path`` (None: in-memory) with ``config``; ``lock_configuration`` in it
    is applied last, after the session settings polysql makes itself."""
    target = ":memory:" if path is None else str(path)
    # DuckDB cannot open an in-memory database read-only; the statement screen keeps such a
    # connection read-only instead.
    file_read_only = read_only and path is not None
    settings = dict(config)
    lock = bool(settings.pop("lock_configuration", False))
    try:
        conn = duckdb.connect(target, read_only=file_read_only, config=settings)
        _settle_and_lock(conn, lock)
    except duckdb.Error as exc:
        raise EngineUnavailableError(f"cannot open DuckDB database {target!r}: {exc}") from exc
    return conn


def use_utc(conn: duckdb.DuckDBPyConnection) -> None:
    """Read naive timestamps as UTC on every session of ``conn``'s database instance.

    DuckDB takes its time zone from the machine, and a naive timestamp cast to TIMESTAMPTZ (or
    read by strftime, epoch, date_trunc on one) is read in it: the same query would give another
    answer, and another verdict, on a machine elsewhere. UTC is how every other engine's session
    and the comparison read naive timestamps. GLOBAL, because every cursor of the connection and
    every later connection to the same file is a session of its own; ``TimeZone`` cannot be given
    in the connect-time config (the ICU extension that owns it loads after).
    """
    conn.execute("SET GLOBAL TimeZone = 'UTC'")


def _settle_and_lock(conn: duckdb.DuckDBPyConnection, lock: bool) -> None:
    """Put the database instance in UTC (:func:`use_utc`), turn the progress bar off, then lock
    the configuration against untrusted SET statements.

    DuckDB draws a progress bar on stdout for statements over ~2 s, which corrupts
    machine-readable output (--json); it is a session setting only, so it is set here. A second
    connection to a file this process already opened shares that database instance, whose
    configuration is locked already: it keeps the lock (and the instance's UTC), and DuckDB
    refuses the SET (its progress bar then stays on, the one thing lost).
    """
    try:
        use_utc(conn)
        conn.execute("SET enable_progress_bar = false")
    except duckdb.InvalidInputException as exc:
        if "locked" not in str(exc):
            raise
        return
    if lock:
        conn.execute("SET lock_configuration = true")
