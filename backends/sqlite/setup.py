"""Build a SQLite evaluation database from a setup script (``Backend.build_from_script``).

Like a load, the database is built in a temporary file and renamed into place, and the script's
fingerprint is recorded in the sidecar beside it (:mod:`polysql.backends._common.load_files`), so
an unchanged script is not run again and a failed one leaves the previous database as it was.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from polysql.backends._common.load_files import atomic_build, load_file_once
from polysql.backends.sqlite.types import list_tables, quote_ident
from polysql.core.errors import ConfigError
from polysql.core.schema import LoadReport

if TYPE_CHECKING:
    from polysql.backends.base import SetupScript
    from polysql.backends.sqlite.backend import SQLiteBackend

# Files SQLite keeps beside a database; stale ones must not be replayed onto a new file.
_COMPANIONS = ("-journal", "-wal", "-shm")


def _deny_attach(action: int, *_: object) -> int:
    """A script may not reach other files: ATTACH would create or change them."""
    return sqlite3.SQLITE_DENY if action == sqlite3.SQLITE_ATTACH else sqlite3.SQLITE_OK


def build_from_script(target: SQLiteBackend, script: SetupScript) -> LoadReport:
    """Run ``script`` into a fresh file at ``target``'s path, in one transaction, then gather
    planner statistics. ``target`` is a writable connection; the caller holds its lock."""
    path = target.path
    if path is None:
        raise ConfigError(f"{script.origin}: {target!r} names no database file to build")

    def build() -> LoadReport:
        target._release()  # nothing may hold the old file while it is replaced
        with atomic_build(path, _COMPANIONS) as temporary:
            conn = sqlite3.connect(temporary, isolation_level=None)
            try:
                conn.set_authorizer(_deny_attach)
                conn.execute("BEGIN")
                script.run(target.url, conn.execute, sqlite3.Error)
                conn.execute("COMMIT")
                conn.execute("ANALYZE")
                # a read-only connection to a WAL database would need to create files beside it
                conn.execute("PRAGMA journal_mode = DELETE")
                counts = {name: conn.execute(f"SELECT count(*) FROM {quote_ident(name)}")
                          .fetchone()[0] for name in sorted(list_tables(conn))}
            finally:
                conn.close()
        return script.report(target.url, counts)

    return load_file_once(path, origin=script.origin, fingerprint=script.fingerprint,
                          replace=False, build=build, engine=target.name,
                          engine_version=sqlite3.sqlite_version)
