"""The database each rewrite case is evaluated on: built on the case's engine, opened read-only.

A case's :class:`~polysql.datasets.rewrite_cases.DatabaseRef` says where its data comes from:

* ``sqlite`` (a file in the case) or ``dataset`` + ``db_id``: copied into the engine with
  :func:`polysql.load`, exactly as a sweep loads its databases;
* ``setup_sql``: a DDL + data script in the case's dialect, run statement by statement by the
  engine's own driver on an administrator's (writable) connection into a fresh database.

Either way the copy lives where ``Backend.evaluation_url(base, dataset="rewrite-<pool>",
db_id=<case id>)`` puts it, and evaluated SQL only ever reaches it through a read-only
``polysql.connect``. Builds are idempotent: a setup script's fingerprint is the sha256 of its text,
recorded where the engine's loads record theirs (a sidecar beside a file database, the
``polysql_meta`` database on a server), never inside the evaluation database; an unchanged script
is not run again.

Setup scripts must be self-contained (no files, no transaction control) and create their objects
in the database's default schema (``public`` on PostgreSQL, ``main`` on DuckDB): each statement
runs as written, in order, and planner statistics are gathered afterwards. Engines get a script runner each
(:func:`setup_runner`); one without cannot host ``setup_sql`` cases yet.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import sqlglot
import sqlglot.errors
from sqlalchemy.engine import URL
from sqlglot.tokens import TokenType

import polysql
from polysql import paths
from polysql.backends.base import Backend
from polysql.datasets.rewrite_cases import RewriteCase
from polysql.errors import ConfigError, EngineUnavailableError, LoadError, PolysqlError
from polysql.registry import alias_url, backend_class, parse_url
from polysql.schema import LoadReport

__all__ = [
    "EvaluationDatabase",
    "SetupJob",
    "engine_name",
    "method_schema",
    "open_database",
    "parse_engine_overrides",
    "resolve_engine_url",
    "setup_fingerprint",
    "setup_runner",
    "setup_runners",
    "setup_schema",
    "source_url",
]

# Statements a method is shown from a setup script: the schema, never the rows.
_DDL_KEYWORDS = frozenset({TokenType.CREATE, TokenType.ALTER, TokenType.COMMENT})


# --- engines -------------------------------------------------------------------------------------

def parse_engine_overrides(items: Iterable[str]) -> dict[str, str]:
    """``["postgres=postgresql://u@host/", ...]`` (the CLI's repeated ``--engine``) as a mapping
    from the engine name cases declare to the URL to use instead."""
    overrides: dict[str, str] = {}
    for item in items:
        name, sep, url = item.partition("=")
        name, url = name.strip(), url.strip()
        if not sep or not name or not url:
            raise ConfigError(f"engine override {item!r} must be NAME=URL, e.g. "
                              "postgres=postgresql://user@localhost:5432/")
        if name.lower() in overrides:
            raise ConfigError(f"engine {name!r} is overridden twice")
        overrides[name.lower()] = url
    return overrides


def resolve_engine_url(engine: str, overrides: Mapping[str, str] | None = None) -> URL:
    """The base URL of the engine a case declares: an override for that name (matched without
    regard to case), else the URL itself, else the short name's default instance."""
    key = engine.strip()
    chosen = (overrides or {}).get(key.lower(), key)
    return parse_url(chosen if "://" in chosen else alias_url(chosen))


def engine_name(backend_cls: type[Backend], url: URL) -> str:
    """The engine's name in results: the backend's, marked when an emulator stands in for it."""
    return f"{backend_cls.name}-emulated" if backend_cls.is_emulated(url) else backend_cls.name


def source_url(case: RewriteCase) -> str:
    """The SQLite source of a ``sqlite`` or ``dataset`` case."""
    database = case.database
    if database.kind == "sqlite" and database.path is not None:
        return f"sqlite:///{database.path}"
    if database.kind == "dataset" and database.dataset and database.db_id:
        from polysql.datasets.registry import get_dataset

        return get_dataset(database.dataset).database_url(database.db_id)
    raise ConfigError(f"case {case.id}: a {database.kind} database has no source to load")


# --- setup scripts -------------------------------------------------------------------------------

def setup_fingerprint(script: str) -> str:
    """What a setup build is recorded under: the sha256 of the script's text."""
    return "sha256:" + hashlib.sha256(script.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class SetupJob:
    """One setup script to run into the evaluation database at ``target``."""

    case_id: str
    target: URL  # evaluation URL, with the administrator's login for server engines
    statements: tuple[str, ...]
    fingerprint: str
    origin: str  # the script's path, for reports and messages
    options: Mapping[str, Any] = field(default_factory=dict)  # the backend's connect options

    @property
    def target_text(self) -> str:
        return self.target.render_as_string(hide_password=True)

    def failure(self, number: int, error: Exception) -> LoadError:
        statement = self.statements[number - 1]
        shown = statement if len(statement) <= 300 else statement[:300] + " ..."
        return LoadError(f"case {self.case_id}: statement {number} of {len(self.statements)} in "
                         f"{self.origin} failed on {self.target_text}: "
                         f"{str(error).strip() or type(error).__name__}\n    {shown}")


SetupRunner = Callable[[SetupJob], LoadReport]
_RUNNERS: dict[str, SetupRunner] = {}


def setup_runner(engine: str) -> Callable[[SetupRunner], SetupRunner]:
    """Register the function that builds ``engine``'s (a backend name) evaluation databases from
    setup scripts. It runs ``job.statements`` into a fresh database at ``job.target`` unless one
    recorded under ``job.fingerprint`` is there (then it returns a ``skipped`` report), records the
    fingerprint outside that database, and leaves it readable by the login the backend's
    read-only ``connect`` uses."""

    def register(runner: SetupRunner) -> SetupRunner:
        _RUNNERS[engine] = runner
        return runner

    return register


def setup_runners() -> list[str]:
    """Engines that can build databases from setup scripts."""
    return sorted(_RUNNERS)


def _run_statements(job: SetupJob, execute: Callable[[str], object],
                    errors: type[Exception] | tuple[type[Exception], ...]) -> None:
    for number, statement in enumerate(job.statements, 1):
        try:
            execute(statement)
        except errors as exc:
            raise job.failure(number, exc) from exc


def _setup_report(job: SetupJob, counts: dict[str, int], *, skipped: bool = False,
                  started: float | None = None) -> LoadReport:
    elapsed = time.perf_counter() - started if started is not None else 0.0
    return LoadReport(source=job.origin, target=job.target_text, fingerprint=job.fingerprint,
                      skipped=skipped, tables=counts, elapsed=elapsed)


def _file_path(job: SetupJob) -> Path:
    database = job.target.database
    if not database or database == ":memory:":
        raise ConfigError(f"case {job.case_id}: {job.target_text} names no database file")
    return Path(database)


@setup_runner("sqlite")
def _sqlite_setup(job: SetupJob) -> LoadReport:
    from polysql.backends._load_files import atomic_build, load_file_once

    path = _file_path(job)

    def deny_attach(action: int, *_: object) -> int:
        # A script may not reach other files: ATTACH would create or change them.
        return sqlite3.SQLITE_DENY if action == sqlite3.SQLITE_ATTACH else sqlite3.SQLITE_OK

    def build() -> LoadReport:
        with atomic_build(path, ("-journal", "-wal", "-shm")) as temporary:
            conn = sqlite3.connect(temporary, isolation_level=None)
            try:
                conn.set_authorizer(deny_attach)
                conn.execute("BEGIN")
                _run_statements(job, conn.execute, sqlite3.Error)
                conn.execute("COMMIT")
                conn.execute("ANALYZE")
                # a read-only connection to a WAL database would need to create files beside it
                conn.execute("PRAGMA journal_mode = DELETE")
                names = [row[0] for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")]
                counts = {name: conn.execute(
                    f'SELECT count(*) FROM "{name.replace(chr(34), chr(34) * 2)}"').fetchone()[0]
                    for name in names}
            finally:
                conn.close()
        return _setup_report(job, counts)

    return load_file_once(path, origin=job.origin, fingerprint=job.fingerprint, replace=False,
                          build=build, engine="sqlite", engine_version=sqlite3.sqlite_version)


@setup_runner("duckdb")
def _duckdb_setup(job: SetupJob) -> LoadReport:
    import duckdb

    from polysql.backends._duckdb_load import _refuse_if_open_here
    from polysql.backends._duckdb_safety import SAFE_CONFIG
    from polysql.backends._load_files import atomic_build, load_file_once

    path = _file_path(job)
    # The evaluation connection's own safety settings: a script cannot read files or fetch
    # extensions either.
    config = {**SAFE_CONFIG, **{k: v for k, v in job.options.items() if k != "read_only"}}

    def build() -> LoadReport:
        _refuse_if_open_here(path, config)
        with atomic_build(path, (".wal",)) as temporary:
            conn = duckdb.connect(str(temporary), config=dict(config))
            try:
                _run_statements(job, conn.execute, duckdb.Error)
                names = [row[0] for row in conn.execute(
                    "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' "
                    "ORDER BY table_name").fetchall()]
                counts = {name: conn.execute(
                    f'SELECT count(*) FROM "{name.replace(chr(34), chr(34) * 2)}"').fetchone()[0]
                    for name in names}
                conn.execute("CHECKPOINT")
            finally:
                conn.close()
        return _setup_report(job, counts)

    return load_file_once(path, origin=job.origin, fingerprint=job.fingerprint, replace=False,
                          build=build, engine="duckdb", engine_version=duckdb.__version__)


@setup_runner("postgres")
def _postgres_setup(job: SetupJob) -> LoadReport:
    """The database is dropped (when polysql built it before) and created afresh; the script
    runs in one transaction that also grants the reader role -- the one the load path creates
    and evaluation logs in as -- what a load grants it: CONNECT, and SELECT on ``public``. The
    fingerprint goes to ``polysql_meta``, as a load's does."""
    import psycopg
    from psycopg import sql

    from polysql import __version__
    from polysql.backends._postgres_conn import (
        MAINTENANCE_DATABASE,
        connection_params,
        open_connection,
    )
    from polysql.backends._postgres_load import LOAD_FORMAT
    from polysql.backends._postgres_meta import (
        DEFAULT_READER,
        MetaStore,
        create_database,
        database_exists,
    )
    from polysql.backends._postgres_types import check_identifier
    from polysql.backends.postgres import format_version

    database = job.target.database or ""
    problem = check_identifier(database, "database")
    if problem:
        raise LoadError(f"case {job.case_id}: cannot build on PostgreSQL: {problem}")
    reader = str(job.options.get("reader_role", DEFAULT_READER))
    admin = job.target
    started = time.perf_counter()
    store = MetaStore.open(admin, create=True)
    assert store is not None
    server = open_connection(connection_params(admin, database=MAINTENANCE_DATABASE))
    try:
        with store.locked(database):
            record = store.load_record(database)
            exists = database_exists(server, database)
            if (record is not None and record["fingerprint"] == job.fingerprint
                    and record["reader"] == reader and exists
                    and server.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                                       (reader,)).fetchone() is not None):
                return _setup_report(job, dict((record["report"] or {}).get("tables", {})),
                                     skipped=True)
            if exists:
                if record is None:
                    _refuse_foreign_postgres(job, admin, database)
                server.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(
                    sql.Identifier(database)))
            store.ensure_reader(reader)
            create_database(server, database)
            version = format_version(server.info.server_version)
            store.record(database, fingerprint="", reader=reader, report={},
                         engine_version=version, polysql_version=__version__)
            conn = open_connection(connection_params(admin, database=database), autocommit=True)
            try:
                with conn.transaction():
                    _run_statements(job, conn.execute, psycopg.Error)
                    _grant_postgres_reader(conn, database, reader)
                conn.execute("ANALYZE")
                counts = _postgres_counts(conn)
            finally:
                conn.close()
            report = _setup_report(job, counts, started=started)
            store.record(database, fingerprint=job.fingerprint, reader=reader,
                         report={**asdict(report), "kind": "setup_sql",
                                 "load_format": LOAD_FORMAT},
                         engine_version=version, polysql_version=__version__)
            return report
    finally:
        server.close()
        store.close()


def _refuse_foreign_postgres(job: SetupJob, admin: URL, database: str) -> None:
    """A database polysql has no record of is dropped only when it holds nothing."""
    from polysql.backends._postgres_conn import connection_params, open_connection
    from polysql.backends._postgres_load import _foreign_content

    conn = open_connection(connection_params(admin, database=database))
    try:
        foreign = _foreign_content(conn)
    finally:
        conn.close()
    if foreign:
        raise LoadError(f"case {job.case_id}: database {database!r} already holds tables "
                        "polysql did not build; drop it or choose another pool")


def _grant_postgres_reader(conn: Any, database: str, reader: str) -> None:
    """What a load grants its reader (see ``_postgres_load._swap_in``), on the ``public`` schema
    the script filled: nothing for PUBLIC, USAGE and SELECT for the reader."""
    from psycopg import sql

    role, schema, db = (sql.Identifier(reader), sql.Identifier("public"),
                        sql.Identifier(database))
    conn.execute(sql.SQL("REVOKE ALL ON SCHEMA {} FROM PUBLIC").format(schema))
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(schema, role))
    conn.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(schema, role))
    conn.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(db))
    conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(db, role))


def _postgres_counts(conn: Any) -> dict[str, int]:
    from psycopg import sql

    names = [row[0] for row in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1").fetchall()]
    return {name: int(conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
        sql.Identifier("public", name))).fetchone()[0]) for name in names}


@setup_runner("mysql")
def _mysql_setup(job: SetupJob) -> LoadReport:
    """Like a MySQL load, with the same records and reader: the database is dropped and created
    afresh, the script runs in it on a connection with the server's own session defaults (the
    ones evaluation sessions get), and the database's SELECT-only reader is (re)granted."""
    import pymysql

    from polysql.backends._mysql_access import (
        LoadRecord,
        ensure_meta,
        ensure_reader,
        new_password,
        quote_ident,
        read_record,
        reader_name,
        write_record,
    )
    from polysql.backends._mysql_access import drop_reader as drop_mysql_reader
    from polysql.backends._mysql_load import (
        PENDING,
        admin_session,
        database_tables,
        load_lock,
        resolve_collation,
    )
    from polysql.backends._mysql_pool import describe_server, login_from_url, open_connection

    login = login_from_url(job.target)
    database = login.database
    if not database:
        raise ConfigError(f"case {job.case_id}: {job.target_text} names no database")
    reader_host = str(job.options.get("reader_host", "%"))
    settings = {"kind": "setup_sql"}
    started = time.perf_counter()
    with admin_session(login) as admin, load_lock(admin, database):
        ensure_meta(admin)
        flavor, number = describe_server(admin.get_server_info())
        version = f"{flavor} {number}"
        record = read_record(admin, database)
        existing = database_tables(admin, database)
        if (record is not None and existing is not None and record.fingerprint == job.fingerprint
                and record.settings == settings and record.reader_host == reader_host):
            ensure_reader(admin, database, record.reader_user, record.reader_host,
                          record.reader_password)
            return _setup_report(job, dict(record.report.get("tables", {})), skipped=True)
        if record is None and existing:
            raise LoadError(f"case {job.case_id}: database {database!r} already holds tables "
                            "polysql did not build; drop it or choose another pool")
        user = record.reader_user if record else reader_name(database)
        password = record.reader_password if record else new_password()
        if record is not None and record.reader_host != reader_host:
            drop_mysql_reader(admin, record.reader_user, record.reader_host)
        write_record(admin, LoadRecord(database, PENDING, settings, {}, user, reader_host,
                                       password), version)
        collation = resolve_collation(admin, job.options.get("collation"))
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {quote_ident(database)}")
            cur.execute(f"CREATE DATABASE {quote_ident(database)} CHARACTER SET utf8mb4 "
                        f"COLLATE {collation}")
        script = open_connection(login)
        try:
            with script.cursor() as cur:
                _run_statements(job, cur.execute, pymysql.err.MySQLError)
                tables = database_tables(script, database) or []
                counts: dict[str, int] = {}
                for table in tables:
                    cur.execute(f"ANALYZE TABLE {quote_ident(table)}")
                    cur.fetchall()
                    cur.execute(f"SELECT count(*) FROM {quote_ident(table)}")
                    counts[table] = int(cur.fetchone()[0])
        finally:
            script.close()
        ensure_reader(admin, database, user, reader_host, password)
        report = _setup_report(job, counts, started=started)
        write_record(admin, LoadRecord(database, job.fingerprint, settings,
                                       {"target": report.target, "tables": counts,
                                        "elapsed": round(report.elapsed, 3)},
                                       user, reader_host, password), version)
        return report


class _SparkStatementFailed(Exception):
    """A setup statement Spark rejected, or one a setup script may not run."""


# Statements that would change the session, load code or reach files rather than build tables.
_SPARK_SETUP_REFUSED_STARTS = frozenset({
    "USE", "SET", "RESET", "ADD", "LOAD", "EXECUTE", "CALL", "DECLARE", "DFS", "EXPORT", "IMPORT",
})
# What CREATE, DROP and ALTER may act on; modifiers before the object word are skipped.
_SPARK_SETUP_OBJECTS = frozenset({"TABLE", "VIEW"})
_SPARK_SETUP_MODIFIERS = frozenset({"OR", "REPLACE", "IF", "NOT", "EXISTS", "TEMPORARY", "TEMP"})
# Parsed-plan nodes naming a table, and the method that returns the name's parts.
_SPARK_NAME_PARTS = {"UnresolvedRelation": "multipartIdentifier",
                     "UnresolvedTable": "multipartIdentifier",
                     "UnresolvedTableOrView": "multipartIdentifier",
                     "UnresolvedView": "multipartIdentifier",
                     "UnresolvedIdentifier": "nameParts"}


def _spark_setup_refusal(session: Any, statement: str) -> str | None:
    """Why a setup statement may not run: the script builds tables in the evaluation database
    only, so it may not change the session, name files, create databases or functions, or
    reach a table of another database (every name it uses must be unqualified)."""
    from polysql.backends._spark_screen import FILE_FORMATS, tokenize
    from polysql.backends._spark_session import REFLECTION_FUNCTIONS

    tokens = [token for token, _ in tokenize(statement)]
    words = [token.text if token.kind == "word" else "" for token in tokens]
    if words and words[0] in _SPARK_SETUP_REFUSED_STARTS:
        return (f"{words[0]} statements change the session or load files; a setup script "
                "builds tables")
    if words and words[0] in ("CREATE", "DROP", "ALTER"):
        rest = [word for word in words[1:] if word not in _SPARK_SETUP_MODIFIERS]
        if not rest or rest[0] not in _SPARK_SETUP_OBJECTS:
            target = rest[0] if rest and rest[0] else "this object"
            return f"{words[0]} {target}: a setup script creates tables and views only"
    for index, token in enumerate(tokens):
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        previous = words[index - 1] if index else ""
        # clauses naming files: LOCATION 'path', OPTIONS (path ...), [LOCAL] DIRECTORY
        if (words[index] == "LOCATION" and following is not None and following.kind == "string") \
                or (words[index] == "OPTIONS" and following is not None
                    and following.text == "(") \
                or (words[index] == "DIRECTORY" and previous in ("OVERWRITE", "LOCAL")):
            return f"{words[index]} names files outside the evaluation database"
        if words[index] in ("USING", "TRANSFORM") and following is not None \
                and following.kind == "string":
            return "USING '...' runs a script or loads code"
        if token.kind in ("word", "quoted") and following is not None and following.text == "(" \
                and token.text.lower() in REFLECTION_FUNCTIONS:
            return f"{token.text.lower()}() calls Java methods"
        if token.kind in ("word", "quoted") and token.text.lower() in FILE_FORMATS \
                and following is not None and following.text == "." \
                and index + 2 < len(tokens) and tokens[index + 2].kind == "quoted":
            return "reading a file as a table is not allowed"
    qualified = _spark_qualified_name(session, statement)
    if qualified is not None:
        return (f"{qualified} names a table of another database; a setup script uses the "
                "evaluation database's own tables, unqualified")
    return None


def _spark_qualified_name(session: Any, statement: str) -> str | None:
    """The first table name in ``statement`` that has a database (or catalog) part, found in the
    plan Spark's own parser makes of it. A statement Spark cannot parse has none: running it
    reports the syntax error."""
    from polysql.backends._spark_screen import _scala_items, _simple_name

    try:
        plan = session._jsparkSession.sessionState().sqlParser().parsePlan(statement)
    except Exception:  # a syntax error: session.sql raises it with Spark's message
        return None
    pending, seen = [plan], 0
    while pending and seen < 5000:
        node = pending.pop()
        seen += 1
        name = _simple_name(node)
        method = _SPARK_NAME_PARTS.get(name)
        if method is not None:
            parts = [str(part) for part in _scala_items(getattr(node, method)())]
            if len(parts) > 1:
                return ".".join(parts)
        if name == "InsertIntoStatement":  # the table written is an argument, not a child
            pending.append(node.table())
        pending.extend(_scala_items(node.children()))
        pending.extend(_scala_items(node.innerChildren()))
        pending.extend(_scala_items(node.subqueries()))
    return None


def _spark_column(field: Any, sql_type: str) -> dict[str, Any]:
    """A manifest column: Spark's own type as declared, and the logical kind polysql reports
    (anything without one of its own, like arrays, maps and intervals, reports as text)."""
    from pyspark.sql import types

    kinds: tuple[tuple[tuple[type, ...], str], ...] = (
        ((types.BooleanType,), "boolean"),
        ((types.ByteType, types.ShortType, types.IntegerType, types.LongType), "integer"),
        ((types.FloatType, types.DoubleType), "float"),
        ((types.DecimalType,), "decimal"),
        ((types.BinaryType,), "blob"),
        ((types.DateType,), "date"),
        ((types.TimestampType, types.TimestampNTZType), "timestamp"),
    )
    data_type = field.dataType
    kind = next((kind for classes, kind in kinds if isinstance(data_type, classes)), "text")
    decimal = isinstance(data_type, types.DecimalType)
    return {"name": field.name, "spark": sql_type, "kind": kind,
            "precision": data_type.precision if decimal else None,
            "scale": data_type.scale if decimal else None, "declared": sql_type}


@setup_runner("spark")
def _spark_setup(job: SetupJob) -> LoadReport:
    """On a Spark driver in this process (embedded or standalone). The script runs in a writable
    session of its own, locked down like an evaluation session (no SQL on files, no reflection),
    into a scratch database; each table it leaves is then written as Parquet into a staging
    folder of the warehouse, with a manifest recording the fingerprint, and swapped in: the
    layout a Spark load produces (``backends/_spark_load``), so the read-only ``connect``
    registers and screens it exactly as it does a loaded database. The script's views are kept
    (as temporary views of every evaluation session), its temporary views are not. Spark
    Connect servers cannot host setup scripts yet."""
    import uuid

    from polysql import __version__
    from polysql.backends import _spark_catalog as catalog
    from polysql.backends._spark_store import Manifest
    from polysql.backends.spark import SparkBackend

    options = {key: value for key, value in job.options.items() if key != "read_only"}
    try:
        backend = SparkBackend.connect(job.target, read_only=False, **options)
    except ImportError as exc:  # the backend imports pyspark only when a session starts
        raise EngineUnavailableError(f"case {job.case_id}: Spark needs pyspark, which is not "
                                     f"installed ({exc}); pip install 'polysql[spark]'") from exc
    try:
        database, warehouse = backend.target.database, backend.warehouse
        if backend.target.connect or warehouse is None:
            raise ConfigError(f"case {job.case_id}: setup scripts run on a Spark driver in this "
                              f"process (spark://...), not on the Spark Connect server "
                              f"{job.target_text}; give the case a sqlite or dataset database")
        if database is None:
            raise ConfigError(f"case {job.case_id}: {job.target_text} names no database")
        with warehouse.locked(database):
            manifest = warehouse.read_manifest(database)
            if manifest is not None and manifest.fingerprint == job.fingerprint:
                return _setup_report(job, dict(manifest.report.get("tables", {})),
                                     skipped=True)
            started = time.perf_counter()
            with warehouse.staging(database) as folder:
                entries, views = _spark_build(job, backend, folder)
                report = _setup_report(job, {entry.name: entry.rows for entry in entries},
                                       started=started)
                manifest = Manifest(database=database, fingerprint=job.fingerprint,
                                    generation=uuid.uuid4().hex, tables=entries, views=views,
                                    report={**asdict(report), "kind": "setup_sql"},
                                    engine_version=backend.version(),
                                    polysql_version=__version__)
                warehouse.write_manifest(folder, manifest)
                warehouse.swap_in(folder, database)
            catalog.register(backend.session, warehouse, manifest, force=True)
            return report
    finally:
        backend.close()


def _spark_build(job: SetupJob, backend: Any,
                 folder: Path) -> tuple[list[Any], list[dict[str, str]]]:
    """Run the script in a scratch database and write what it made into ``folder``: one
    Parquet folder per table and the views' text. The scratch database is dropped afterwards."""
    import shutil
    import uuid

    from polysql.backends import _spark_catalog as catalog
    from polysql.backends import _spark_session as sessions
    from polysql.backends._spark_errors import message_of
    from polysql.backends._spark_load import _check_staged_views
    from polysql.backends._spark_store import TableEntry, location_literal
    from polysql.backends._spark_types import physical_names, quote

    session = backend.session
    sessions.lock_down(session, backend.target)
    # Spark 3.5 would make a plain CREATE TABLE a Hive table, which needs a metastore
    session.conf.set("spark.sql.legacy.createHiveTableByDefault", "false")
    scratch = f"polysql_setup_{uuid.uuid4().hex[:12]}"
    location = backend.warehouse.root / ".spark" / "setup" / f"{scratch}.db"

    def execute(statement: str) -> None:
        why = _spark_setup_refusal(session, statement)
        if why is not None:
            raise _SparkStatementFailed(f"refused: {why}")
        try:
            session.sql(statement)
        except Exception as exc:  # whatever Spark raised is this statement's failure
            raise _SparkStatementFailed(message_of(exc)) from exc

    session.sql(f"CREATE DATABASE {quote(scratch)} LOCATION {location_literal(location)}")
    try:
        session.catalog.setCurrentDatabase(scratch)
        _run_statements(job, execute, _SparkStatementFailed)
        listed = sorted((table for table in session.catalog.listTables(scratch)
                         if not table.isTemporary), key=lambda table: table.name)
        names = [table.name for table in listed if table.tableType != "VIEW"]
        physical = physical_names(names)
        entries = []
        for name in names:
            frame = session.table(f"{quote(scratch)}.{quote(name)}")
            path = folder / physical[name]
            frame.write.parquet(str(path))
            sql_types = [str(field.dataType().sql()) for field in frame._jdf.schema().fields()]
            columns = [_spark_column(field, sql_type)
                       for field, sql_type in zip(frame.schema.fields, sql_types, strict=True)]
            rows = session.read.schema(frame.schema).parquet(str(path)).count()
            entries.append(TableEntry(name=name, physical=physical[name], columns=columns,
                                      rows=int(rows)))
        views = [{"name": table.name, "sql": _spark_view_text(session, scratch, table.name)}
                 for table in listed if table.tableType == "VIEW"]
        kept, failed = _check_staged_views(backend, folder, entries, views)
        if failed:
            raise LoadError(f"case {job.case_id}: views of {job.origin} cannot be recreated over "
                            f"the built tables: {'; '.join(note.message for note in failed)}")
        return entries, kept
    finally:
        catalog.forget(session, None, scratch)
        shutil.rmtree(location, ignore_errors=True)


def _spark_view_text(session: Any, database: str, view: str) -> str:
    from polysql.backends._spark_types import quote

    rows = session.sql(f"DESCRIBE TABLE EXTENDED {quote(database)}.{quote(view)}").collect()
    text = next((row["data_type"] for row in rows if row["col_name"] == "View Text"), None)
    if not text:
        raise LoadError(f"cannot read the text of view {view!r} from Spark's catalog")
    return str(text)


# --- evaluation databases ------------------------------------------------------------------------

@dataclass(slots=True)
class EvaluationDatabase:
    """A case's evaluation database, open read-only. Close it (or use ``with``) when done."""

    case_id: str
    engine: str  # the engine's name in results
    url: URL  # the evaluation database's URL (administrator login for server engines)
    backend: Backend  # read-only: the only way evaluated SQL reaches the database
    report: LoadReport  # what building it did; ``report.skipped`` when it was already there

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> EvaluationDatabase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_database(case: RewriteCase, *, engines: Mapping[str, str] | None = None,
                  cache_dir: Path | None = None,
                  connect_options: Mapping[str, Any] | None = None) -> EvaluationDatabase:
    """Build (or reuse) ``case``'s evaluation database on its engine and open it read-only.

    ``engines`` overrides engine names with URLs (:func:`parse_engine_overrides`);
    ``connect_options`` go to the backend's ``connect`` for building and evaluating alike (e.g.
    ``reader_role`` for PostgreSQL). Raises :class:`EngineUnavailableError` when the engine
    cannot be used here at all (client library not installed, server unreachable), and
    :class:`LoadError` when this case's database cannot be built on it.
    """
    base = resolve_engine_url(case.engine, engines)
    backend_cls = backend_class(base)
    if backend_cls.dialect != case.dialect:
        raise ConfigError(f"case {case.id} is written in {case.dialect} but its engine "
                          f"{base.render_as_string(hide_password=True)!r} speaks "
                          f"{backend_cls.dialect}")
    target = backend_cls.evaluation_url(base, dataset=f"rewrite-{case.pool}", db_id=case.id,
                                        cache_dir=cache_dir or paths.cache_dir())
    options = dict(connect_options or {})
    if case.database.kind == "setup_sql":
        report = _build_from_setup(case, backend_cls, target, options)
    else:
        try:
            report = polysql.load(source_url(case), target.render_as_string(hide_password=False),
                                  **options)
        except EngineUnavailableError:
            raise  # the engine cannot be used at all: no fault of this case's database
        except PolysqlError as exc:
            raise LoadError(f"case {case.id}: cannot load its database into "
                            f"{target.render_as_string(hide_password=True)}: {exc}") from exc
    backend = backend_cls.connect(target, read_only=True, **options)
    return EvaluationDatabase(case.id, engine_name(backend_cls, base), target, backend, report)


def _build_from_setup(case: RewriteCase, backend_cls: type[Backend], target: URL,
                      options: dict[str, Any]) -> LoadReport:
    runner = _RUNNERS.get(backend_cls.name)
    if runner is None:
        raise ConfigError(
            f"case {case.id}: the {backend_cls.name} engine has no setup-script runner yet "
            f"(engines with one: {', '.join(setup_runners())}); give the case a sqlite or "
            "dataset database, or register a runner with polysql.analysis.rewrite_databases."
            "setup_runner")
    assert case.database.path is not None
    script = case.database.path.read_text(encoding="utf-8")
    job = SetupJob(case_id=case.id, target=target, statements=case.setup_statements(),
                   fingerprint=setup_fingerprint(script), origin=str(case.database.path),
                   options=options)
    return runner(job)


# --- what a method is shown ----------------------------------------------------------------------

def _is_ddl(statement: str, dialect: str) -> bool:
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(statement)
    except sqlglot.errors.SqlglotError:
        return False
    return bool(tokens) and tokens[0].token_type in _DDL_KEYWORDS


def setup_schema(statements: Sequence[str], dialect: str) -> str:
    """The DDL statements of a setup script (CREATE, ALTER, COMMENT), as written, without data."""
    ddl = [statement for statement in statements if _is_ddl(statement, dialect)]
    return "".join(f"{statement};\n\n" for statement in ddl).rstrip("\n") + "\n"


def method_schema(case: RewriteCase, backend: Backend) -> str:
    """The schema text a method sees with the input: a setup script's DDL, else the loaded
    database's tables rendered as CREATE TABLE statements."""
    if case.database.kind == "setup_sql":
        return setup_schema(case.setup_statements(), case.dialect)
    from polysql.ddl import render_schema

    return render_schema(backend)
