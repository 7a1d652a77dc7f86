"""The database each rewrite case is evaluated on: an evaluation copy on the case's engine.

A case's :class:`~polysql.datasets.rewrite.cases.DatabaseRef` says where its data comes from:

* ``sqlite`` (a file in the case) or ``dataset`` + ``db_id``: that SQLite database, copied into
  the engine exactly as a sweep copies its databases;
* ``setup_sql``: a DDL + data script in the case's dialect, run statement by statement into a
  fresh database by the engine itself (``Backend.build_from_script``).

Either way :mod:`polysql.engines.copies` builds the copy where ``Backend.evaluation_url(base,
dataset="rewrite-<pool>", db_id=<case id>)`` puts it, idempotently (a setup script's fingerprint is
the sha256 of its text, recorded where the engine's loads record theirs, never inside the
evaluation database), and evaluated SQL only ever reaches it through a read-only connection.

Setup scripts must be self-contained (no files, no transaction control) and create their objects
in the database's default schema (``public`` on PostgreSQL, ``main`` on DuckDB): each statement
runs as written, in order, and planner statistics are gathered afterwards. An engine that cannot
build from scripts cannot host ``setup_sql`` cases yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import sqlglot
import sqlglot.errors
from sqlalchemy.engine import URL
from sqlglot.tokens import TokenType

from polysql.backends.base import Backend, SetupScript
from polysql.core.errors import ConfigError, EngineUnavailableError, LoadError, PolysqlError
from polysql.datasets.registry import get_dataset
from polysql.datasets.rewrite.cases import RewriteCase
from polysql.engines.copies import EvaluationCopy, Source, build_copy, copy_url, engine_url
from polysql.engines.ddl import render_schema
from polysql.engines.registry import backend_class

__all__ = [
    "case_source",
    "method_schema",
    "open_database",
    "parse_engine_overrides",
    "resolve_engine_url",
    "setup_schema",
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
            raise ConfigError(f"engine override {item!r} must be NAME=URL: the engine name "
                              "cases give, then the URL of the instance to use for it")
        if name.lower() in overrides:
            raise ConfigError(f"engine {name!r} is overridden twice")
        overrides[name.lower()] = url
    return overrides


def resolve_engine_url(engine: str, overrides: Mapping[str, str] | None = None) -> URL:
    """The base URL of the engine a case declares: an override for that name (matched without
    regard to case), else the URL itself, else the short name's default instance."""
    key = engine.strip()
    return engine_url((overrides or {}).get(key.lower(), key))


# --- where a case's data comes from --------------------------------------------------------------

def case_source(case: RewriteCase) -> Source:
    """What ``case``'s evaluation database is built from: the URL of its SQLite source (a
    ``sqlite`` or ``dataset`` case), or its setup script."""
    database = case.database
    if database.kind == "setup_sql" and database.path is not None:
        return SetupScript.from_text(database.path.read_text(encoding="utf-8"),
                                     case.setup_statements(), str(database.path))
    file_url = database.file_url()
    if file_url is not None:
        return file_url
    if database.kind == "dataset" and database.dataset and database.db_id:
        return get_dataset(database.dataset).database_url(database.db_id)
    raise ConfigError(f"case {case.id}: a {database.kind} database has no source to build from")


# --- evaluation databases ------------------------------------------------------------------------

def open_database(case: RewriteCase, *, engines: Mapping[str, str] | None = None,
                  cache_dir: Path | None = None,
                  connect_options: Mapping[str, Any] | None = None) -> EvaluationCopy:
    """Build (or reuse) ``case``'s evaluation database on its engine and open it read-only.

    ``engines`` overrides engine names with URLs (:func:`parse_engine_overrides`);
    ``connect_options`` go to the backend's ``connect`` for building and evaluating alike (e.g.
    ``reader_role`` for PostgreSQL). Raises :class:`EngineUnavailableError` when the engine
    cannot be used here at all (client library not installed, server unreachable), and
    :class:`LoadError` (or :class:`ConfigError`) naming the case when its database cannot be
    built on it.
    """
    base = resolve_engine_url(case.engine, engines)
    backend = backend_class(base)
    if backend.dialect != case.dialect:
        raise ConfigError(f"case {case.id} is written in {case.dialect} but its engine "
                          f"{base.render_as_string(hide_password=True)!r} speaks "
                          f"{backend.dialect}")
    source = case_source(case)
    options = dict(connect_options or {})
    try:
        built = build_copy(base, dataset=f"rewrite-{case.pool}", db_id=case.id, source=source,
                           cache_dir=cache_dir, **options)
    except EngineUnavailableError:
        raise  # the engine cannot be used at all: no fault of this case's database
    except PolysqlError as exc:
        if isinstance(source, SetupScript):  # the engine's own words, naming the statement
            raise type(exc)(f"case {case.id}: {exc}") from exc
        target = copy_url(base, dataset=f"rewrite-{case.pool}", db_id=case.id,
                          cache_dir=cache_dir)
        raise LoadError(f"case {case.id}: cannot load its database into "
                        f"{target.render_as_string(hide_password=True)}: {exc}") from exc
    return built.open(**options)


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
    return render_schema(backend)
