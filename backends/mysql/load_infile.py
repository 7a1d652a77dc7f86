"""Filling tables with ``LOAD DATA LOCAL INFILE``, and falling back to INSERTs where refused.

The loader gets a connection of its own: LOCAL INFILE lets the server read any client file it
names, so it is enabled on this connection only, which runs nothing but polysql's statements,
and never on the administrator's or an evaluation connection.

With LOCAL the server cannot stop the client mid-file, so it treats every row error as IGNORE
would: a duplicate key skips the row, a value that does not fit is clipped -- each only a
warning. Those warnings are therefore read after every file: key problems are raised as the
IntegrityError an INSERT would have raised (so the table is rebuilt without its key, as with
INSERTs), anything else fails the load.

Whether the server takes LOCAL INFILE is settled once per load, before any table is read, by a
real LOAD DATA of an empty file into a temporary table: a server whose ``local_infile`` is OFF
(MySQL 8's default) or that refuses the statement is loaded with INSERTs instead, and the load
report says so.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pymysql

from polysql.backends.mysql.connect import Login, open_connection, quietly_close
from polysql.backends.mysql.load_infile_format import FORMAT_CLAUSE
from polysql.backends.mysql.setup import quote_ident
from polysql.core.errors import LoadError
from polysql.core.schema import Coercion

# Whether the loader's connection offers LOCAL INFILE to the server at all. Only ever False
# in tests, to have the server refuse the statement the way a client without it is refused.
CLIENT_LOCAL_INFILE = True
# False: load with INSERTs without asking the server (benchmarks/load_bench.py times that path
# against LOAD DATA in the same run).
USE_INFILE = True
# Refusals of LOCAL INFILE: 1148 ER_NOT_ALLOWED_COMMAND (MySQL 5.x, older MariaDB), 3948
# ER_CLIENT_LOCAL_FILES_DISABLED (MySQL 8), 4166 ER_LOAD_INFILE_CAPABILITY_DISABLED (MariaDB),
# 2068 CR_LOAD_DATA_LOCAL_INFILE_REJECTED (client side).
REFUSED = frozenset({1148, 3948, 4166, 2068})
# Warnings that are an INSERT's IntegrityError: duplicate key, NULL into a NOT NULL column.
_KEY_WARNINGS = frozenset({1062, 1048, 1263})
_SHOWN_WARNINGS = 3
_SESSION = ("sql_mode", "time_zone", "lock_wait_timeout")
_PROBE_TABLE = "polysql_infile_probe"


@dataclass(slots=True)
class Loading:
    """The loader's connection and whether its tables are filled with LOAD DATA."""

    conn: pymysql.connections.Connection
    # Opens one more connection like ``conn`` (same settings, LOCAL INFILE offered): tables are
    # filled on several at once, since InnoDB takes one table's rows on one core.
    open_more: Callable[[], pymysql.connections.Connection] | None = None
    infile: bool = True
    refusal: str | None = None  # why INSERTs are used instead
    inserted_rows: int = 0  # rows loaded with INSERTs

    def refuse(self, reason: str) -> None:
        self.infile, self.refusal = False, reason

    def note(self) -> Coercion | None:
        """What the load report says when INSERTs replaced LOAD DATA (None: they did not)."""
        if self.refusal is None:
            return None
        return Coercion("", "", (
            f"LOAD DATA LOCAL INFILE was refused ({self.refusal}); every table was loaded with "
            f"INSERT statements instead -- the same values, only slower (a server with "
            f"local_infile OFF allows it after SET GLOBAL local_infile = ON)"), self.inserted_rows)


@contextmanager
def loader_session(login: Login, admin: pymysql.connections.Connection) -> Iterator[Loading]:
    """A connection for filling tables, with the administrator session's settings."""
    with admin.cursor() as cur:
        cur.execute("SELECT " + ", ".join(f"@@SESSION.{name}" for name in _SESSION))
        values = cur.fetchone()

    def open_more() -> pymysql.connections.Connection:
        conn = open_connection(login.without_database(), local_infile=CLIENT_LOCAL_INFILE)
        try:
            with conn.cursor() as cur:
                cur.execute("SET " + ", ".join(f"SESSION {name} = %s" for name in _SESSION),
                            values)
        except BaseException:
            conn.close()
            raise
        return conn

    conn = open_more()
    try:
        yield Loading(conn, open_more)
    finally:
        quietly_close(conn)


def choose_fill(loading: Loading, database: str) -> None:
    """Settle whether this load may use LOCAL INFILE, with a probe in ``database``."""
    if not USE_INFILE:
        loading.refuse("switched off in polysql")
        return
    with loading.conn.cursor() as cur:
        try:
            cur.execute("SELECT @@GLOBAL.local_infile")
            (enabled,) = cur.fetchone()
        except pymysql.err.MySQLError:
            enabled = 1  # a server without the setting: the probe tells
    if not int(enabled or 0):
        loading.refuse("the server's local_infile setting is OFF")
        return
    refusal = _probe(loading.conn, database)
    if refusal is not None:
        loading.refuse(refusal)


def _probe(conn: pymysql.connections.Connection, database: str) -> str | None:
    """Why LOAD DATA LOCAL INFILE of an empty file fails on ``conn`` (None: it works)."""
    table = f"{quote_ident(database)}.{quote_ident(_PROBE_TABLE)}"
    descriptor, path = tempfile.mkstemp(prefix="polysql-mysql-probe-")
    os.close(descriptor)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE TEMPORARY TABLE {table} (x INT)")
            try:
                cur.execute(f"LOAD DATA LOCAL INFILE {conn.escape(path)} INTO TABLE {table}")
            except pymysql.err.MySQLError as exc:
                if exc.args and exc.args[0] in REFUSED:
                    return f"error {exc.args[0]}: {exc.args[1]}"
                raise
            finally:
                cur.execute(f"DROP TEMPORARY TABLE IF EXISTS {table}")
    finally:
        os.unlink(path)
    return None


def load_data_sql(conn: pymysql.connections.Connection, table_ref: str, columns: list[str],
                  kinds: list[str], path: str) -> str:
    targets, decoded = [], []
    for index, (column, kind) in enumerate(zip(columns, kinds, strict=True)):
        if kind == "blob":  # sent as hex text (see load_infile_format)
            variable = f"@polysql_hex_{index}"
            targets.append(variable)
            decoded.append(f"{quote_ident(column)} = UNHEX({variable})")
        else:
            targets.append(quote_ident(column))
    # conn.escape quotes the file name as this session reads literals (NO_BACKSLASH_ESCAPES).
    sql = (f"LOAD DATA LOCAL INFILE {conn.escape(path)} INTO TABLE {table_ref} "
           f"CHARACTER SET utf8mb4 {FORMAT_CLAUSE} ({', '.join(targets)})")
    return sql + (f" SET {', '.join(decoded)}" if decoded else "")


def load_file(conn: pymysql.connections.Connection, table_ref: str, columns: list[str],
              kinds: list[str], path: str, rows: int) -> int:
    """Fill the table from the data file (or pipe) at ``path`` holding ``rows`` rows; the rows
    stored, which are always all of them.

    Raises IntegrityError when rows break the key, LoadError when any value was changed on its
    way in.
    """
    with conn.cursor() as cur:
        try:
            stored = cur.execute(load_data_sql(conn, table_ref, columns, kinds, path))
        except AttributeError as exc:
            if conn.open:
                raise
            # PyMySQL ends a LOCAL INFILE by writing to its socket, which it has already
            # dropped when the server went away mid-file: that is a lost connection.
            raise pymysql.err.OperationalError(
                2013, "Lost connection to the server during LOAD DATA LOCAL INFILE") from exc
        count = cur.warning_count
        warnings: list[tuple[str, int, str]] = []
        if count:
            cur.execute("SHOW WARNINGS")
            warnings = list(cur.fetchall())
    if stored == rows and not count:
        return stored
    for _, code, message in warnings:
        if code in _KEY_WARNINGS:
            raise pymysql.err.IntegrityError(code, message)
    shown = "; ".join(f"{message} ({code})" for _, code, message in warnings[:_SHOWN_WARNINGS])
    raise LoadError(
        f"LOAD DATA into {table_ref} stored {stored} of {rows} rows with "
        f"{count} warning(s){': ' + shown if shown else ''}; polysql loads values "
        f"exactly or not at all")
