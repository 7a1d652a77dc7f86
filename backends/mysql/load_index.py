"""Secondary indexes and UNIQUE constraints of a load source, created in MySQL/MariaDB after the
rows are in.

Indexed text columns were sized as VARCHAR before the table was created (see
``load_copy.plan_tables``); a column whose values are too long for an index key gets a prefix
index instead. MySQL compares keys under the table's collation (case- and often
accent-insensitive, trailing spaces ignored), so rows SQLite kept apart may collide: a UNIQUE
index the rows violate -- or one that only fits as a prefix index, where uniqueness of the prefix
is not uniqueness of the value -- is created as a plain index and the report says why. An index
MySQL refuses is skipped and reported. Rows are never dropped.
"""

from __future__ import annotations

import pymysql

from polysql.backends.mysql.load_copy import MAX_IDENTIFIER, TablePlan, table_ref
from polysql.backends.mysql.load_keys import altered
from polysql.backends.mysql.setup import quote_ident
from polysql.backends.mysql.types import BYTES_PER_CHAR, MAX_KEY_BYTES
from polysql.core.naming import NameMode, convert
from polysql.core.schema import Coercion, Index

# Longest prefix (in characters, or bytes for binary columns) given to a column too long to index
# whole: a few hundred characters tell almost all real values apart.
MAX_PREFIX = 255
_DUPLICATE_KEY_NAME = 1061
_DUPLICATE_ENTRY = 1062


def _parts(plan: TablePlan, index: Index) -> tuple[list[str], bool] | str:
    """The key parts of ``index`` (quoted target column, with a prefix length where needed) and
    whether any part is a prefix; or why MySQL cannot index these columns."""
    positions = {c.name: i for i, c in enumerate(plan.source.columns)}
    missing = [c for c in index.columns if c not in positions]
    if missing:
        return f"it names column(s) {', '.join(missing)} that the table does not have"
    physical = [plan.physical[positions[c]] for c in index.columns]
    whole = sum(p.key_bytes for p in physical if p.indexable)
    long_columns = sum(1 for p in physical if not p.indexable)
    budget = MAX_KEY_BYTES - whole
    if budget <= 0 or (long_columns and budget // long_columns < BYTES_PER_CHAR):
        return (f"its columns need more than MySQL's {MAX_KEY_BYTES} bytes per index entry")
    parts = []
    for column, p in zip(index.columns, physical, strict=True):
        name = quote_ident(plan.target(column))
        if p.indexable:
            parts.append(name)
            continue
        per_column = budget // long_columns
        text = "BLOB" not in p.sql
        prefix = min(MAX_PREFIX, per_column // BYTES_PER_CHAR if text else per_column)
        parts.append(f"{name}({prefix})")
    return parts, long_columns > 0


def _clause(name: str | None, parts: list[str], *, unique: bool) -> str:
    label = f" {quote_ident(name)}" if name else ""
    return f"ADD {'UNIQUE ' if unique else ''}INDEX{label} ({', '.join(parts)})"


def _statement(database: str, plan: TablePlan, name: str | None, parts: list[str], *,
               unique: bool) -> str:
    return (f"ALTER TABLE {quote_ident(database)}.{quote_ident(plan.name)} "
            f"{_clause(name, parts, unique=unique)}")


def _usable(name: str) -> bool:
    """Whether ``name`` can name a MySQL index (else the server picks one)."""
    return 0 < len(name) <= MAX_IDENTIFIER and name == name.rstrip(" ")


def _columns_named(plan: TablePlan, index: Index) -> str:
    """The index's columns as the loaded table names them: where a report puts its note."""
    return ", ".join(plan.target(c) for c in index.columns)


def _prefixed_unique(plan: TablePlan, index: Index, where: str) -> Coercion:
    return Coercion(plan.name, where, (
        f"UNIQUE index {index.name!r} created as a plain index: its text is too long for a "
        f"MySQL key, and a unique prefix would refuse distinct values"))


def _error(exc: pymysql.err.MySQLError) -> tuple[int, str]:
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
    return code, str(exc.args[1]) if len(exc.args) > 1 else str(exc)


def _create(conn: pymysql.connections.Connection, database: str, plan: TablePlan, name: str,
            parts: list[str], *, unique: bool) -> None:
    """Create the index under ``name``, or under a name MySQL picks when ``name`` cannot be
    used (too long, or already the name of another key of the table)."""
    usable = _usable(name)
    with conn.cursor() as cur:
        try:
            cur.execute(_statement(database, plan, name if usable else None, parts,
                                   unique=unique))
        except pymysql.err.MySQLError as exc:
            if not usable or _error(exc)[0] != _DUPLICATE_KEY_NAME:
                raise
            cur.execute(_statement(database, plan, None, parts, unique=unique))


def _shared_keys(conn: pymysql.connections.Connection, database: str, plan: TablePlan,
                 index: Index) -> int:
    """Rows sharing their key (all columns set) with another row, as MySQL compares keys."""
    columns = [quote_ident(plan.target(c)) for c in index.columns]
    present = " AND ".join(f"{c} IS NOT NULL" for c in columns)
    with conn.cursor() as cur:
        cur.execute(f"SELECT coalesce(sum(n), 0) FROM (SELECT count(*) AS n FROM "
                    f"{quote_ident(database)}.{quote_ident(plan.name)} WHERE {present} "
                    f"GROUP BY {', '.join(columns)} HAVING count(*) > 1) AS d")
        row = cur.fetchone()
    return int(row[0] or 0) if row else 0


def add_index(conn: pymysql.connections.Connection, database: str, plan: TablePlan,
              index: Index, name: str, collation: str) -> Coercion | None:
    """Create one index; what was changed or skipped, if anything."""
    where = _columns_named(plan, index)
    shape = _parts(plan, index)
    if isinstance(shape, str):
        return Coercion(plan.name, where, f"index {index.name!r} not created: {shape}")
    parts, prefixed = shape
    note = None
    if index.unique and prefixed:
        note = _prefixed_unique(plan, index, where)
    elif index.unique:
        try:
            _create(conn, database, plan, name, parts, unique=True)
            return None
        except pymysql.err.MySQLError as exc:
            code, message = _error(exc)
            if code != _DUPLICATE_ENTRY:
                return Coercion(plan.name, where, f"index {index.name!r} not created: MySQL "
                                                  f"refused it ({message})")
        shared = _shared_keys(conn, database, plan, index)
        note = Coercion(plan.name, where, (
            f"UNIQUE index {index.name!r} created as a plain index: {shared} rows share a key "
            f"with another row as MySQL compares keys (collation {collation})"), shared or 1)
    try:
        _create(conn, database, plan, name, parts, unique=False)
    except pymysql.err.MySQLError as exc:
        return Coercion(plan.name, where, f"index {index.name!r} not created: MySQL refused it "
                                          f"({_error(exc)[1]})")
    return note


def add_table_indexes(conn: pymysql.connections.Connection, database: str, plan: TablePlan,
                      names: NameMode, collation: str) -> list[Coercion]:
    """Every source index of one table (already created and filled). The plain ones go in one
    ALTER TABLE, which reads the table once instead of once per index, when the server takes
    them as they are; each UNIQUE one alone, as does every index when that statement is
    refused, so an index MySQL refuses (a UNIQUE one the rows violate under its collation, a
    name already taken) is changed or skipped alone and reported."""
    notes: list[Coercion] = []
    alone = list(plan.source.indexes)
    together = _plain_at_once(conn, database, plan, names)
    if together is not None:
        notes, done = together
        alone = [index for index in alone if index not in done]
    for index in alone:
        note = add_index(conn, database, plan, index, convert(index.name, names), collation)
        if note is not None:
            notes.append(note)
    return notes


def _plain_at_once(conn: pymysql.connections.Connection, database: str, plan: TablePlan,
                   names: NameMode) -> tuple[list[Coercion], list[Index]] | None:
    """The table's plain indexes (and UNIQUE ones that can only be plain) added by one
    statement: what that changed, and which indexes it added. None when there are fewer than
    two, one of them cannot be indexed as it is, or the server refused the statement (which then
    changed nothing: an ALTER TABLE is atomic). A UNIQUE index that can be one is left out: rows
    SQLite kept apart may collide under MySQL's collation, and a refused statement would have
    built every other index of it in vain."""
    clauses: list[str] = []
    notes: list[Coercion] = []
    done: list[Index] = []
    for index in plan.source.indexes:
        shape = _parts(plan, index)
        if isinstance(shape, str):
            return None
        parts, prefixed = shape
        if index.unique and not prefixed:
            continue
        if index.unique:
            notes.append(_prefixed_unique(plan, index, _columns_named(plan, index)))
        name = convert(index.name, names)
        clauses.append(_clause(name if _usable(name) else None, parts, unique=False))
        done.append(index)
    if len(clauses) < 2 or not altered(conn, table_ref(database, plan.name), clauses):
        return None
    return notes, done
