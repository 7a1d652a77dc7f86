"""Copy a SQLite source into a SQLite target, verbatim.

SQLite's online-backup API copies the database page by page, so the target holds exactly the
source's schema text (tables, indexes, views, triggers) and stored values -- including each
value's storage class, which a row-by-row copy through typed columns could not promise.
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING

from polysql.backends._common.load_files import (
    atomic_build,
    copy_not_written,
    load_file_once,
    source_name,
)
from polysql.backends.sqlite.errors import LOCK_WAIT_SECONDS, locked_hint, source_problem
from polysql.backends.sqlite.types import list_tables, quote_ident
from polysql.core.errors import LoadError
from polysql.core.schema import LoadReport

if TYPE_CHECKING:
    from collections.abc import Callable

    from polysql.backends.sqlite.backend import SQLiteBackend

# Files SQLite keeps beside a database; stale ones must not be replayed onto a new file.
_COMPANIONS = ("-journal", "-wal", "-shm")

# Between the steps of a backup while another program's write holds the source locked (each
# step itself waits BACKUP_STEP_WAIT_SECONDS in SQLite's busy handler).
_RETRY_SECONDS = 0.05


class _SourceLocked(Exception):
    """The source stayed locked by a writer for longer than LOCK_WAIT_SECONDS."""


def _give_up_when_locked(wait: float) -> Callable[[int, int, int], None]:
    """A backup progress callback that ends the copy once the source has been locked for
    ``wait`` seconds in a row. Without it the backup retries for as long as the writer holds its
    lock -- forever, for a program that keeps a write transaction open -- in C, where not even
    Ctrl-C reaches it; being Python, the callback also lets Ctrl-C in between steps."""
    waiting_since = time.monotonic()  # a step's wait in the busy handler counts too

    def progress(status: int, _remaining: int, _pages: int) -> None:
        nonlocal waiting_since
        now = time.monotonic()
        if status not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            waiting_since = now
        elif now - waiting_since >= wait:
            raise _SourceLocked

    return progress


def _copy(source: SQLiteBackend, destination: sqlite3.Connection) -> dict[str, int]:
    with source._lock, source.backup_reader() as conn:
        try:
            conn.backup(destination, progress=_give_up_when_locked(LOCK_WAIT_SECONDS),
                        sleep=_RETRY_SECONDS)
        except _SourceLocked:
            raise LoadError(f"cannot copy {source!r}: {locked_hint(LOCK_WAIT_SECONDS)}") from None
        except sqlite3.Error as exc:
            raise LoadError(f"cannot copy {source!r}: {source_problem(exc)}") from exc
    return {name: destination.execute(f"SELECT count(*) FROM {quote_ident(name)}").fetchone()[0]
            for name in list_tables(destination)}


def load_into_sqlite(target: SQLiteBackend, source: SQLiteBackend, *, fingerprint: str | None,
                     replace: bool) -> LoadReport:
    """The SQLite side of ``polysql.load``: ``source`` is a SQLite database (the backend checked
    it) and the caller holds ``target``'s lock."""

    if target.read_only:
        raise LoadError(f"{target!r} was opened read-only; connect with read_only=False to load")
    fingerprint = fingerprint or source.fingerprint()
    origin = source_name(source)
    path = target.path

    def build() -> LoadReport:
        if path is None:
            counts = _copy(source, target._connection())
            return LoadReport(origin, source_name(target), fingerprint, tables=counts)
        if source.path is not None and path.resolve() == source.path.resolve():
            raise LoadError(f"the load target {str(path)!r} is the source itself")
        target._release()  # nothing may hold the old file while it is replaced
        with atomic_build(path, _COMPANIONS) as temporary:
            conn: sqlite3.Connection | None = None
            try:
                conn = sqlite3.connect(temporary)
                counts = _copy(source, conn)
                # A source in WAL mode would hand its mode to the copy, and a read-only
                # connection to a WAL database needs to create -shm/-wal files beside it.
                conn.execute("PRAGMA journal_mode = DELETE")
            except sqlite3.Error as exc:  # the copy's own file: a read-only folder, a full disk
                raise copy_not_written("SQLite", path, exc) from exc
            finally:
                if conn is not None:
                    conn.close()
        return LoadReport(origin, source_name(target), fingerprint, tables=counts)

    return load_file_once(path, origin=origin, fingerprint=fingerprint, replace=replace,
                          build=build, engine="sqlite", engine_version=sqlite3.sqlite_version)
