"""Who evaluated SQL runs as, and where polysql's own records about loaded databases live.

Every evaluation database gets its own login, ``polysql_r_<hash>``, with SELECT on that database
and nothing else: no other database, no FILE, PROCESS or SUPER, so server files, other users'
sessions and settings stay out of reach even for a statement the guard did not recognise. Its
generated password, the source fingerprint and the load report are kept in the ``polysql_meta``
database, which the reader cannot see -- a model inspecting its database finds only the source's
tables. An evaluation connection opened with an administrator URL looks the reader up there and
logs in as it.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass
from typing import Any

import pymysql

from polysql.backends._mysql_pool import Login

META_DATABASE = "polysql_meta"
READER_PREFIX = "polysql_r_"
# MySQL 8 allows 32 characters in a user name; the prefix plus 12 hex digits stays far below.
_READER_HASH_DIGITS = 12
# Privileges a login may hold and still be used for evaluation as it is.
_READ_ONLY_PRIVILEGES = frozenset({"USAGE", "SELECT", "SHOW VIEW"})
_GRANT_LINE = re.compile(r"^GRANT\s+(.+?)\s+ON\s+", re.IGNORECASE)

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


def broad_privileges(conn: pymysql.connections.Connection) -> list[str]:
    """Privileges of the current login beyond reading (empty for a read-only login)."""
    with conn.cursor() as cur:
        cur.execute("SHOW GRANTS")
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
    shown = ", ".join(sorted(set(extra))[:5])
    where = (f"database {login.database!r} was not loaded by polysql (no reader recorded in "
             f"{META_DATABASE})" if login.database else "the URL names no database")
    return EvaluationLogin(None, (
        f"evaluated SQL never runs as {login.user!r}, which holds {shown}; {where}. Load the "
        f"database with polysql (which creates a SELECT-only reader), or connect with a login "
        f"that has only SELECT"))
