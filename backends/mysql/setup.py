"""Who evaluated SQL runs as, and where polysql's own records about loaded databases live.

Every evaluation database gets its own login, ``polysql_r_<hash>``, with SELECT on that database
and nothing else: no other database, no FILE, PROCESS or SUPER, so server files, other users'
sessions and settings stay out of reach even for a statement the guard did not recognise. Its
generated password, the source fingerprint and the load report are kept in the ``polysql_meta``
database, which the reader cannot see -- a model inspecting its database finds only the source's
tables. An evaluation connection opened with an administrator URL looks the reader up there and
logs in as it.

Loads (``load.py``) and builds from setup scripts (:func:`build_from_script`) share the rest:
an administrator's session, a server-wide lock per database, and the in-progress marker.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import secrets
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pymysql

from polysql.backends._common.readers import not_loaded, privileged_login_refusal
from polysql.backends.mysql.connect import Login, open_connection, quietly_close
from polysql.core.errors import ConfigError, EngineError, LoadError
from polysql.core.schema import LoadReport

if TYPE_CHECKING:
    from polysql.backends.base import SetupScript
    from polysql.backends.mysql.backend import MySQLBackend

META_DATABASE = "polysql_meta"
READER_PREFIX = "polysql_r_"
# MySQL 8 allows 32 characters in a user name; the prefix plus 12 hex digits stays far below.
_READER_HASH_DIGITS = 12
# Privileges a login may hold and still be used for evaluation as it is.
_READ_ONLY_PRIVILEGES = frozenset({"USAGE", "SELECT", "SHOW VIEW"})
_GRANT_LINE = re.compile(r"^GRANT\s+(.+?)\s+ON\s+", re.IGNORECASE)
# The fingerprint recorded while a build's swap is under way; it matches no source or script.
PENDING = "pending"
# Strict: a value MySQL would silently change is an error, not a warning. No backslash escapes:
# literals built by the load's value rendering escape quotes only.
_LOAD_SQL_MODE = "STRICT_ALL_TABLES,NO_BACKSLASH_ESCAPES,NO_ENGINE_SUBSTITUTION,NO_AUTO_VALUE_ON_ZERO"
_LOCK_WAIT = 600  # seconds to wait for another process building the same database
# A swap waits at most this long for evaluation statements holding the old tables.
_SWAP_LOCK_WAIT = 120

_META_TABLE = f"""
CREATE TABLE IF NOT EXISTS `{META_DATABASE}`.`loads` (
    db_name VARCHAR(64) COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
    fingerprint VARCHAR(255) NOT NULL,
    settings TEXT NOT NULL,
    report LONGTEXT NOT NULL,
    reader_user VARCHAR(32) NOT NULL,
    reader_host VARCHAR(255) NOT NULL,
    reader_password VARCHAR(255) NOT NULL,
    engine_version VARCHAR(64) NOT NULL,
    loaded_at DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
"""


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def grant_pattern(database: str) -> str:
    """``database`` as a GRANT names it: database-level grants read ``_`` and ``%`` as wildcards,
    so ``polysql_a_b`` unescaped would also grant ``polysqlXaYb``."""
    return re.sub(r"([\\_%])", r"\\\1", database)


def reader_name(database: str) -> str:
    digest = hashlib.sha256(database.encode("utf-8")).hexdigest()[:_READER_HASH_DIGITS]
    return READER_PREFIX + digest


def account(conn: pymysql.connections.Connection, user: str, host: str) -> str:
    return f"{conn.escape(user)}@{conn.escape(host)}"


@dataclass(slots=True)
class LoadRecord:
    """One row of ``polysql_meta.loads``."""

    database: str
    fingerprint: str
    settings: dict[str, Any]
    report: dict[str, Any]
    reader_user: str
    reader_host: str
    reader_password: str


# -- building evaluation databases ---------------------------------------------------------

@contextmanager
def admin_session(login: Login) -> Iterator[pymysql.connections.Connection]:
    """An administrator's session for building databases (loads and setup scripts alike)."""
    conn = open_connection(login.without_database())
    try:
        with conn.cursor() as cur:
            cur.execute(f"SET SESSION sql_mode = '{_LOAD_SQL_MODE}'")
            cur.execute("SET SESSION time_zone = '+00:00'")
            cur.execute(f"SET SESSION lock_wait_timeout = {_SWAP_LOCK_WAIT}")
        yield conn
    finally:
        quietly_close(conn)  # a server that died mid-build must not hide why the build failed


@contextmanager
def load_lock(conn: pymysql.connections.Connection, database: str) -> Iterator[None]:
    """One build of ``database`` at a time across every process using this server."""
    name = "polysql_load_" + hashlib.sha256(database.encode("utf-8")).hexdigest()[:32]
    with conn.cursor() as cur:
        cur.execute("SELECT GET_LOCK(%s, %s)", (name, _LOCK_WAIT))
        (granted,) = cur.fetchone()
    if granted != 1:
        raise LoadError(f"another load of database {database!r} has held the lock for "
                        f"{_LOCK_WAIT}s; try again when it has finished")
    try:
        yield
    finally:
        # A lock ends with its session: when the release fails, the connection is gone and
        # the lock with it, and the error that ended the build is the one to raise.
        with contextlib.suppress(pymysql.err.MySQLError), conn.cursor() as cur:
            cur.execute("SELECT RELEASE_LOCK(%s)", (name,))


def resolve_collation(conn: pymysql.connections.Connection, requested: str | None) -> str:
    """The utf8mb4 collation text columns get: ``requested``, or what the server defaults to."""
    with conn.cursor() as cur:
        if requested is not None:
            cur.execute("SHOW COLLATION WHERE Charset = 'utf8mb4' AND Collation = %s",
                        (requested,))
            if cur.fetchone() is None:
                raise ConfigError(
                    f"collation {requested!r} is not a utf8mb4 collation on this server; list "
                    f"them with SHOW COLLATION WHERE Charset = 'utf8mb4'")
            return requested
        cur.execute("SELECT @@character_set_server, @@collation_server")
        charset, collation = cur.fetchone()
        if charset == "utf8mb4":
            return str(collation)
        cur.execute("SHOW COLLATION WHERE Charset = 'utf8mb4' AND `Default` = 'Yes'")
        return str(cur.fetchone()[0])


def database_tables(conn: pymysql.connections.Connection, database: str) -> list[str] | None:
    """Base tables of ``database``, or None when it does not exist."""
    with conn.cursor() as cur:
        cur.execute("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s",
                    (database,))
        if cur.fetchone() is None:
            return None
        cur.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s "
                    "AND TABLE_TYPE = 'BASE TABLE'", (database,))
        return [row[0] for row in cur.fetchall()]


def ensure_meta(conn: pymysql.connections.Connection) -> None:
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {quote_ident(META_DATABASE)} "
                    "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
        cur.execute(_META_TABLE)


def read_record(conn: pymysql.connections.Connection, database: str) -> LoadRecord | None:
    """The record for ``database``; None when there is none or this login cannot read them."""
    try:
        with conn.cursor() as cur:
            cur.execute(
                f"SELECT fingerprint, settings, report, reader_user, reader_host, reader_password "
                f"FROM {quote_ident(META_DATABASE)}.`loads` WHERE db_name = %s", (database,))
            row = cur.fetchone()
    except pymysql.err.ProgrammingError:
        # 1146 (no meta table yet) or 1142 (a login that may not read it): no record for us.
        return None
    except pymysql.err.OperationalError as exc:
        if exc.args and exc.args[0] in (1044, 1049, 1142):
            return None
        raise
    if row is None:
        return None
    fingerprint, settings, report, user, host, password = row
    return LoadRecord(database, fingerprint, json.loads(settings), json.loads(report), user, host,
                      password)


def write_record(conn: pymysql.connections.Connection, record: LoadRecord,
                 engine_version: str) -> None:
    with conn.cursor() as cur:
        cur.execute(
            f"REPLACE INTO {quote_ident(META_DATABASE)}.`loads` (db_name, fingerprint, settings, "
            "report, reader_user, reader_host, reader_password, engine_version) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (record.database, record.fingerprint, json.dumps(record.settings, sort_keys=True),
             json.dumps(record.report, ensure_ascii=False), record.reader_user,
             record.reader_host, record.reader_password, engine_version))


def delete_record(conn: pymysql.connections.Connection, database: str) -> None:
    try:
        with conn.cursor() as cur:
            cur.execute(f"DELETE FROM {quote_ident(META_DATABASE)}.`loads` WHERE db_name = %s",
                        (database,))
    except pymysql.err.ProgrammingError:
        return  # no meta table: nothing recorded


def new_password() -> str:
    return secrets.token_urlsafe(24)


def ensure_reader(conn: pymysql.connections.Connection, database: str, user: str, host: str,
                  password: str) -> None:
    """Create (or repair) the reader: this password, SELECT on ``database`` only."""
    who = account(conn, user, host)
    with conn.cursor() as cur:
        # Literals spliced in, not bound: a '%' host would clash with parameter markers.
        secret = conn.escape(password)
        cur.execute(f"CREATE USER IF NOT EXISTS {who} IDENTIFIED BY {secret}")
        cur.execute(f"ALTER USER {who} IDENTIFIED BY {secret}")
        cur.execute(f"GRANT SELECT ON {quote_ident(grant_pattern(database))}.* TO {who}")


def drop_reader(conn: pymysql.connections.Connection, user: str, host: str) -> None:
    with conn.cursor() as cur:
        cur.execute(f"DROP USER IF EXISTS {account(conn, user, host)}")


def broad_privileges(conn: pymysql.connections.Connection, of: str | None = None) -> list[str]:
    """Privileges beyond reading of the current login, or of the account ``of`` (``'u'@'h'``,
    escaped; needs an administrator's ``conn``); empty for a read-only login."""
    with conn.cursor() as cur:
        cur.execute(f"SHOW GRANTS FOR {of}" if of else "SHOW GRANTS")
        lines = [row[0] for row in cur.fetchall()]
    found: list[str] = []
    for line in lines:
        match = _GRANT_LINE.match(line)
        if match is None:
            if line.upper().startswith("GRANT "):
                # "GRANT role TO user": whatever the role carries is more than we can vouch for.
                found.append(line.split(" TO ")[0].removeprefix("GRANT ").strip())
            continue
        for privilege in match.group(1).split(","):
            name = re.sub(r"\s*\(.*\)$", "", privilege.strip()).upper()  # SELECT (col) -> SELECT
            if name not in _READ_ONLY_PRIVILEGES:
                found.append(name)
    return found


@dataclass(frozen=True, slots=True)
class EvaluationLogin:
    """The login evaluated SQL uses, or why there is none."""

    login: Login | None
    refusal: str | None = None


def evaluation_login(conn: pymysql.connections.Connection, login: Login) -> EvaluationLogin:
    """The reader polysql created for ``login.database``; else ``login`` itself if it can only
    read; else a refusal saying why evaluated SQL may not run as it. ``conn`` is logged in as
    ``login``."""
    if login.database:
        record = read_record(conn, login.database)
        if record is not None:
            return EvaluationLogin(login.as_user(record.reader_user, record.reader_password))
    extra = broad_privileges(conn)
    if not extra:
        return EvaluationLogin(login)
    return EvaluationLogin(None, privileged_login_refusal(
        login.user, extra, not_loaded(login.database, META_DATABASE), login.database))


# -- evaluation databases built from setup scripts -------------------------------------------

def build_from_script(target: MySQLBackend, script: SetupScript) -> LoadReport:
    """Build ``target``'s database (an administrator's writable connection) from ``script``.

    Like a load, with the same records and reader: the database is dropped and created afresh,
    the script runs in it on a connection with the server's own session defaults (the ones
    evaluation sessions get), and the database's SELECT-only reader is (re)granted. A database
    polysql has no record of is replaced only when it holds no tables.
    """
    login = target.login
    database = login.database
    if not database:
        raise ConfigError(f"{script.origin}: {target!r} names no database to build")
    settings = {"kind": "setup_sql"}
    started = time.perf_counter()
    with admin_session(login) as admin, load_lock(admin, database):
        ensure_meta(admin)
        version = target.version()
        record = read_record(admin, database)
        existing = database_tables(admin, database)
        if (record is not None and existing is not None
                and record.fingerprint == script.fingerprint and record.settings == settings
                and record.reader_host == target.reader_host):
            ensure_reader(admin, database, record.reader_user, record.reader_host,
                          record.reader_password)
            return script.report(target.url, dict(record.report.get("tables", {})),
                                 skipped=True)
        if record is None and existing:
            raise LoadError(f"database {database!r} already holds tables polysql did not build; "
                            "drop it or build into another database")
        user = record.reader_user if record else reader_name(database)
        password = record.reader_password if record else new_password()
        if record is not None and record.reader_host != target.reader_host:
            drop_reader(admin, record.reader_user, record.reader_host)
        # marked in progress: a build that stops half way matches no script and is redone
        write_record(admin, LoadRecord(database, PENDING, settings, {}, user, target.reader_host,
                                       password), version)
        collation = resolve_collation(admin, target.collation)
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {quote_ident(database)}")
            cur.execute(f"CREATE DATABASE {quote_ident(database)} CHARACTER SET utf8mb4 "
                        f"COLLATE {collation}")
        counts = _run_script(login, database, script, target)
        ensure_reader(admin, database, user, target.reader_host, password)
        report = script.report(target.url, counts, started=started)
        write_record(admin, LoadRecord(database, script.fingerprint, settings,
                                       {"target": report.target, "tables": counts,
                                        "elapsed": round(report.elapsed, 3)},
                                       user, target.reader_host, password), version)
        return report


def _run_script(login: Login, database: str, script: SetupScript,
                target: MySQLBackend) -> dict[str, int]:
    """Run ``script`` in ``database``, gather statistics and count each table's rows."""
    conn = open_connection(login)
    try:
        with conn.cursor() as cur:
            script.run(target.url, cur.execute, pymysql.err.MySQLError)
            counts: dict[str, int] = {}
            for table in database_tables(conn, database) or []:
                cur.execute(f"ANALYZE TABLE {quote_ident(table)}")
                cur.fetchall()
                cur.execute(f"SELECT count(*) FROM {quote_ident(table)}")
                counts[table] = int(cur.fetchone()[0])
            return counts
    finally:
        conn.close()


# -- a throwaway server ----------------------------------------------------------------------

def start_container(image: str, stack: ExitStack, password: str) -> str:
    """Start a MySQL or MariaDB server from the Docker ``image`` (``polysql up``), stopped and
    removed when ``stack`` closes; the URL of its root login. Needs the ``containers`` extra."""
    from testcontainers.mysql import MySqlContainer  # the optional 'containers' extra

    server = stack.enter_context(MySqlContainer(image, root_password=password))
    host, port = server.get_container_host_ip(), server.get_exposed_port(3306)
    return f"mysql://root:{password}@{host}:{port}/"


# -- reader logins for databases polysql did not load --------------------------------------------

def create_team_reader(login: Login, user: str, databases: Sequence[str], host: str = "%") -> str:
    """Create the account ``user`` (or give it a new password) that may only read
    ``databases``: SELECT on each and nothing else. Returns the password."""
    password = new_password()
    conn = open_connection(login.without_database())
    try:
        missing = [name for name in databases if database_tables(conn, name) is None]
        if missing:
            raise EngineError(f"there is no database {missing[0]!r} on {login.host}:{login.port} "
                              "to create a reader for")
        if user == login.user:
            raise EngineError(f"the reader login cannot be {user!r}, the administrator this URL "
                              "logs in as; name another with --login")
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM mysql.user WHERE User = %s AND Host = %s", (user, host))
            exists = cur.fetchone() is not None
        extra = broad_privileges(conn, account(conn, user, host)) if exists else []
        if extra:  # someone's account: never given a new password or turned into a reader
            raise EngineError(
                f"account {user}@{host} exists and holds {', '.join(sorted(set(extra))[:5])}; "
                "evaluated SQL must not run as it. Name another login with --login")
        for name in databases:
            ensure_reader(conn, name, user, host, password)
    finally:
        conn.close()
    return password


def drop_team_reader(login: Login, user: str, host: str = "%") -> bool:
    """Drop the account ``user`` (its grants go with it); False if there is none."""
    conn = open_connection(login.without_database())
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM mysql.user WHERE User = %s AND Host = %s", (user, host))
            if cur.fetchone() is None:
                return False
        drop_reader(conn, user, host)
        return True
    finally:
        conn.close()
