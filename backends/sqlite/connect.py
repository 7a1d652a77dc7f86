"""Opening a SQLite database named by a ``sqlite://`` URL.

An evaluation connection (``read_only``) opens the file with ``mode=ro`` and gets the authorizer
of :mod:`polysql.backends.sqlite.screen`; every connection has extension loading disabled.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa
from sqlalchemy.engine import URL

from polysql.backends.sqlite.errors import LOCK_WAIT_SECONDS
from polysql.backends.sqlite.screen import read_only_authorizer
from polysql.core.errors import EngineUnavailableError

# Bytes of the file an evaluation connection reads through a memory map (SQLite clamps it to the
# build's SQLITE_MAX_MMAP_SIZE, 2 GB by default). Mapped pages are read where the operating
# system caches them instead of being copied into SQLite's small page cache one read() at a time:
# a third less engine time on scans and joins of a database larger than that cache (measured by
# benchmarks/eval_bench.py). The known cost is SQLite's own: an I/O error or a file truncated
# under a running statement stops the process with a signal instead of failing the statement.
# Load and test connections write, and keep SQLite's default (no map).
EVALUATION_MMAP_BYTES = 2**31 - 2**16


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
        if path.is_dir():
            raise EngineUnavailableError(
                f"cannot open SQLite database {str(path)!r}: it is a folder; name a database "
                f"file (e.g. one in it ending .sqlite)")
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
        conn = sqlite3.connect(target, uri=uri, isolation_level=None, check_same_thread=False,
                               timeout=LOCK_WAIT_SECONDS)
    except sqlite3.Error as exc:
        raise EngineUnavailableError(f"cannot open SQLite database {str(path)!r}: {exc}") from exc
    # Builds without extension support lack the method; then loading is impossible anyway.
    disable_extensions = getattr(conn, "enable_load_extension", None)
    if disable_extensions is not None:
        disable_extensions(False)
    if read_only:
        if path is not None:
            conn.execute(f"PRAGMA mmap_size = {EVALUATION_MMAP_BYTES}")
        conn.set_authorizer(read_only_authorizer)
    return conn


# While another program's write holds a source locked, each step of a backup waits this long in
# SQLite's busy handler (in C, out of Ctrl-C's reach) before the copy's progress callback decides
# whether to go on (see load._copy).
BACKUP_STEP_WAIT_SECONDS = 0.25


def open_backup_reader(path: Path) -> sqlite3.Connection:
    """A read-only connection for SQLite's backup API to copy ``path`` through: no authorizer
    (the backup reads pages, not SQL) and a busy handler that waits only
    BACKUP_STEP_WAIT_SECONDS per step, where an evaluation connection waits LOCK_WAIT_SECONDS
    (and its authorizer refuses the PRAGMA that would shorten that)."""
    try:
        return sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True,
                               timeout=BACKUP_STEP_WAIT_SECONDS)
    except sqlite3.Error as exc:
        raise EngineUnavailableError(f"cannot open SQLite database {str(path)!r}: {exc}") from exc


def read_arrow(path: Path, sql: str, *, batch_rows: int = 65_536) -> pa.Table:
    """The answer to ``sql`` on the SQLite file at ``path`` (opened read-only), read straight into
    Arrow by ADBC's SQLite driver, which types each column from its first ``batch_rows`` rows.

    Through the driver manager's own API: its DB-API layer imports pyarrow.dataset and pandas,
    a quarter of a second per process for nothing used here. ImportError when the driver is not
    installed; the driver's errors (a value of another type than its column's) as they come.
    """
    import adbc_driver_manager
    import adbc_driver_sqlite

    with closing(adbc_driver_sqlite.connect(f"file:{quote(str(path))}?mode=ro")) as database, \
            closing(adbc_driver_manager.AdbcConnection(database)) as conn, \
            closing(adbc_driver_manager.AdbcStatement(conn)) as statement:
        statement.set_options(**{"adbc.sqlite.query.batch_rows": str(batch_rows)})
        statement.set_sql_query(sql)
        stream, _ = statement.execute_query()
        return pa.RecordBatchReader.from_stream(stream).read_all()
