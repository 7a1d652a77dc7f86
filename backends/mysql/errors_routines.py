"""Whether a routine the server refused to run exists at all.

MariaDB resolves any name it does not know as a built-in function to a stored function of the
current database, and checks the EXECUTE privilege *before* it looks the routine up. The
evaluation login may execute no routine, so ``SELECT no_such_function(1)`` -- typically a function
of another dialect, such as SQLite's ``julianday`` -- fails with error 1370 "execute command
denied ... for routine 'db.no_such_function'", which reads as a refusal although nothing was
refused: the function does not exist, and every other engine reports that as an ordinary error.

The reader cannot tell the two apart (``information_schema.ROUTINES`` only lists routines it may
execute, which are none), so the administrator login the backend was opened with looks the
routine up -- trusted only when a global grant lets it see every routine. Only a routine proven
missing is reported as unknown; one that exists, or whose existence cannot be checked (no such
login, server unreachable), stays ``forbidden``.
"""

from __future__ import annotations

import contextlib
import re
import threading

import pymysql

from polysql.backends.mysql.connect import Login, open_connection

ROUTINE_DENIED = 1370  # ER_PROCACCESS_DENIED_ERROR
_DENIED = re.compile(r"command denied to user .* for routine '(?P<routine>.+)'\s*\Z", re.S)
_CACHE_LIMIT = 4096
# Global privileges under which information_schema.ROUTINES lists every routine of the server.
_GLOBAL_GRANT = re.compile(r"^GRANT\s+(?P<privileges>.+?)\s+ON\s+\*\.\*\s+TO\s", re.I)
_SEES_EVERY_ROUTINE = frozenset({"ALL", "ALL PRIVILEGES", "SELECT", "EXECUTE", "ALTER ROUTINE",
                                 "CREATE ROUTINE", "SHOW_ROUTINE"})


def denied_routine(message: str) -> str | None:
    """The ``database.name`` a 1370 message names, as the server spelled it."""
    match = _DENIED.search(message)
    return match.group("routine") if match else None


class RoutineLookup:
    """Looks routines up as ``admin`` (None: nobody here can see routines the reader cannot run).

    Answers are remembered for the backend's life: the evaluation database is polysql's copy,
    whose routines do not come and go while it is evaluated.
    """

    def __init__(self, admin: Login | None, database: str | None) -> None:
        self._admin = admin.without_database() if admin is not None else None
        self._database = database
        self._known: dict[tuple[str, str], bool] = {}
        self._lock = threading.Lock()

    def missing(self, routine: str) -> bool:
        """True only when the routine named ``database.name`` certainly does not exist."""
        parts = self._split(routine)
        if parts is None or self._admin is None:
            return False
        with self._lock:
            known = self._known.get(parts)
        if known is None:
            known = self._exists(*parts)
            if known is None:
                return False
            with self._lock:
                if len(self._known) < _CACHE_LIMIT:
                    self._known[parts] = known
        return not known

    def _split(self, routine: str) -> tuple[str, str] | None:
        """(database, name); the message does not quote either part, so the current database is
        recognised first (its name may hold a dot, as may a quoted routine name)."""
        if self._database and routine.startswith(self._database + "."):
            return self._database, routine[len(self._database) + 1:]
        database, dot, name = routine.partition(".")
        return (database, name) if dot else None

    def _exists(self, database: str, name: str) -> bool | None:
        assert self._admin is not None
        try:
            conn = open_connection(self._admin, read_timeout=10, write_timeout=10)
        except Exception:  # noqa: BLE001 -- cannot check: the refusal stands
            return None
        try:
            with conn.cursor() as cur:
                if not _sees_every_routine(cur):
                    return None
                cur.execute("SELECT COUNT(*) FROM information_schema.ROUTINES "
                            "WHERE ROUTINE_SCHEMA = %s AND ROUTINE_NAME = %s", (database, name))
                row = cur.fetchone()
            return bool(row and row[0])
        except pymysql.Error:
            return None
        finally:
            with contextlib.suppress(Exception):
                conn.close()


def _sees_every_routine(cur: pymysql.cursors.Cursor) -> bool:
    """Whether the login holds a global privilege that shows it every routine; a routine it
    cannot see would otherwise look missing."""
    cur.execute("SHOW GRANTS")
    for (line,) in cur.fetchall():
        match = _GLOBAL_GRANT.match(str(line))
        if match is None:
            continue
        privileges = {p.strip().upper() for p in match.group("privileges").split(",")}
        if privileges & _SEES_EVERY_ROUTINE:
            return True
    return False
