"""Build a Spark evaluation database from a setup script (``Backend.build_from_script``).

On a Spark driver in this process (embedded or standalone). The script runs in a writable session
of its own, locked down like an evaluation session (no SQL on files, no reflection), into a
scratch database; each table it leaves is then written as Parquet into a staging folder of the
warehouse, with a manifest recording the fingerprint, and swapped in: the layout a Spark load
produces (:mod:`polysql.backends.spark.load`), so the read-only ``connect`` registers and screens
it exactly as it does a loaded database. The script's views are kept (as temporary views of every
evaluation session), its temporary views are not. Spark Connect servers cannot host setup scripts
yet.
"""

from __future__ import annotations

import shutil
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from polysql.backends.spark import connect as sessions
from polysql.backends.spark import introspect as catalog
from polysql.backends.spark.connect import REFLECTION_FUNCTIONS
from polysql.backends.spark.errors import message_of
from polysql.backends.spark.load import _check_staged_views
from polysql.backends.spark.load_store import Manifest, TableEntry, location_literal
from polysql.backends.spark.screen import FILE_FORMATS, _scala_items, _simple_name, tokenize
from polysql.backends.spark.types import physical_names, quote
from polysql.core.errors import ConfigError, LoadError
from polysql.core.schema import LoadReport
from polysql.core.version import __version__

if TYPE_CHECKING:
    from polysql.backends.base import SetupScript
    from polysql.backends.spark.backend import SparkBackend


class _StatementFailed(Exception):
    """A setup statement Spark rejected, or one a setup script may not run."""


# Statements that would change the session, load code or reach files rather than build tables.
_REFUSED_STARTS = frozenset({
    "USE", "SET", "RESET", "ADD", "LOAD", "EXECUTE", "CALL", "DECLARE", "DFS", "EXPORT", "IMPORT",
})
# What CREATE, DROP and ALTER may act on; modifiers before the object word are skipped.
_OBJECTS = frozenset({"TABLE", "VIEW"})
_MODIFIERS = frozenset({"OR", "REPLACE", "IF", "NOT", "EXISTS", "TEMPORARY", "TEMP"})
# Parsed-plan nodes naming a table, and the method that returns the name's parts.
_NAME_PARTS = {"UnresolvedRelation": "multipartIdentifier",
               "UnresolvedTable": "multipartIdentifier",
               "UnresolvedTableOrView": "multipartIdentifier",
               "UnresolvedView": "multipartIdentifier",
               "UnresolvedIdentifier": "nameParts"}


def build_from_script(target: SparkBackend, script: SetupScript) -> LoadReport:
    """Build ``target``'s database (a writable session) from ``script``; the caller holds
    ``target``'s load lock."""
    database, warehouse = target.target.database, target.warehouse
    where = target.url.render_as_string(hide_password=True)
    if target.target.connect or warehouse is None:
        raise ConfigError(f"setup scripts run on a Spark driver in this process (spark://...), "
                          f"not on the Spark Connect server {where}; give the case a sqlite or "
                          "dataset database")
    if database is None:
        raise ConfigError(f"{script.origin}: {where} names no database to build")
    with warehouse.locked(database):
        manifest = warehouse.read_manifest(database)
        if manifest is not None and manifest.fingerprint == script.fingerprint:
            return script.report(target.url, dict(manifest.report.get("tables", {})),
                                 skipped=True)
        started = time.perf_counter()
        with warehouse.staging(database) as folder:
            entries, views = _build(target, script, folder)
            report = script.report(target.url, {entry.name: entry.rows for entry in entries},
                                   started=started)
            manifest = Manifest(database=database, fingerprint=script.fingerprint,
                                generation=uuid.uuid4().hex, tables=entries, views=views,
                                report={**asdict(report), "kind": "setup_sql"},
                                engine_version=target.version(),
                                polysql_version=_polysql_version())
            warehouse.write_manifest(folder, manifest)
            warehouse.swap_in(folder, database)
        catalog.register(target.session, warehouse, manifest, force=True)
        return report


def _polysql_version() -> str:
    return __version__


def _build(target: SparkBackend, script: SetupScript,
           folder: Path) -> tuple[list[TableEntry], list[dict[str, str]]]:
    """Run the script in a scratch database and write what it made into ``folder``: one
    Parquet folder per table and the views' text. The scratch database is dropped afterwards."""
    assert target.warehouse is not None
    session = target.session
    sessions.lock_down(session, target.target)
    # Spark 3.5 would make a plain CREATE TABLE a Hive table, which needs a metastore
    session.conf.set("spark.sql.legacy.createHiveTableByDefault", "false")
    scratch = f"polysql_setup_{uuid.uuid4().hex[:12]}"
    location = target.warehouse.root / ".spark" / "setup" / f"{scratch}.db"

    def execute(statement: str) -> None:
        why = _refusal(session, statement)
        if why is not None:
            raise _StatementFailed(f"refused: {why}")
        try:
            session.sql(statement)
        except Exception as exc:  # whatever Spark raised is this statement's failure
            raise _StatementFailed(message_of(exc)) from exc

    session.sql(f"CREATE DATABASE {quote(scratch)} LOCATION {location_literal(location)}")
    try:
        session.catalog.setCurrentDatabase(scratch)
        script.run(target.url, execute, _StatementFailed)
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
            columns = [_column(field, sql_type)
                       for field, sql_type in zip(frame.schema.fields, sql_types, strict=True)]
            rows = session.read.schema(frame.schema).parquet(str(path)).count()
            entries.append(TableEntry(name=name, physical=physical[name], columns=columns,
                                      rows=int(rows)))
        views = [{"name": table.name, "sql": _view_text(session, scratch, table.name)}
                 for table in listed if table.tableType == "VIEW"]
        kept, failed = _check_staged_views(target, folder, entries, views)
        if failed:
            raise LoadError(f"views of {script.origin} cannot be recreated over the built "
                            f"tables: {'; '.join(note.message for note in failed)}")
        return entries, kept
    finally:
        catalog.forget(session, None, scratch)
        shutil.rmtree(location, ignore_errors=True)


def _refusal(session: Any, statement: str) -> str | None:
    """Why a setup statement may not run: the script builds tables in the evaluation database
    only, so it may not change the session, name files, create databases or functions, or
    reach a table of another database (every name it uses must be unqualified)."""
    tokens = [token for token, _ in tokenize(statement)]
    words = [token.text if token.kind == "word" else "" for token in tokens]
    if words and words[0] in _REFUSED_STARTS:
        return (f"{words[0]} statements change the session or load files; a setup script "
                "builds tables")
    if words and words[0] in ("CREATE", "DROP", "ALTER"):
        rest = [word for word in words[1:] if word not in _MODIFIERS]
        if not rest or rest[0] not in _OBJECTS:
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
    qualified = _qualified_name(session, statement)
    if qualified is not None:
        return (f"{qualified} names a table of another database; a setup script uses the "
                "evaluation database's own tables, unqualified")
    return None


def _qualified_name(session: Any, statement: str) -> str | None:
    """The first table name in ``statement`` that has a database (or catalog) part, found in the
    plan Spark's own parser makes of it. A statement Spark cannot parse has none: running it
    reports the syntax error."""
    try:
        plan = session._jsparkSession.sessionState().sqlParser().parsePlan(statement)
    except Exception:  # a syntax error: session.sql raises it with Spark's message
        return None
    pending, seen = [plan], 0
    while pending and seen < 5000:
        node = pending.pop()
        seen += 1
        name = _simple_name(node)
        method = _NAME_PARTS.get(name)
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


def _column(field: Any, sql_type: str) -> dict[str, Any]:
    """A manifest column: Spark's own type as declared, and the logical kind polysql reports
    (anything without one of its own, like arrays, maps and intervals, reports as text)."""
    from pyspark.sql import types  # pyspark is imported only once a session runs

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


def _view_text(session: Any, database: str, view: str) -> str:
    rows = session.sql(f"DESCRIBE TABLE EXTENDED {quote(database)}.{quote(view)}").collect()
    text = next((row["data_type"] for row in rows if row["col_name"] == "View Text"), None)
    if not text:
        raise LoadError(f"cannot read the text of view {view!r} from Spark's catalog")
    return str(text)
