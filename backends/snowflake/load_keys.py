"""Declare the source's keys on loaded Snowflake tables.

Snowflake records PRIMARY KEY, UNIQUE and FOREIGN KEY constraints without enforcing them, so on a
real account every key is declared as the source has it, even when the rows violate it (SQLite
allows that too). The emulator is different: DuckDB enforces keys and cannot add a foreign key to
an existing table, and a failed ALTER there aborts the load's transaction. So on the emulator a
key is declared only after a query shows the rows satisfy it, foreign keys are left out, and each
key left out is reported as a coercion. Plain secondary indexes have no counterpart on Snowflake
tables and are not carried.
"""

from __future__ import annotations

import snowflake.connector.errors as sf_errors

from polysql.backends.snowflake.load_copy import Session, TablePlan
from polysql.backends.snowflake.types import qualified, quote_ident
from polysql.core.schema import Coercion, ForeignKey


def _columns(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(quote_ident(n) for n in names)


def _violations(session: Session, table: str, keys: list[str]) -> tuple[int, int]:
    """(rows with a NULL key, rows sharing their key with another row)."""
    any_null = " OR ".join(f"{quote_ident(k)} IS NULL" for k in keys)
    nulls = session.run(f"SELECT COUNT(*) FROM {table} WHERE {any_null}")[0][0]
    shared = session.run(
        f"SELECT COALESCE(SUM(n), 0) FROM (SELECT COUNT(*) AS n FROM {table} "
        f"WHERE NOT ({any_null}) GROUP BY {_columns(keys)} HAVING COUNT(*) > 1)")[0][0]
    return int(nulls), int(shared)


def _declare(session: Session, where: tuple[str, str], plan: TablePlan, keys: list[str],
             constraint: str, label: str) -> Coercion | None:
    table = qualified(*where, plan.name)
    if session.emulated:
        nulls, shared = _violations(session, table, keys)
        if constraint == "UNIQUE":
            nulls = 0  # UNIQUE admits NULLs
        if nulls or shared:
            return Coercion(plan.name, ", ".join(keys),
                            f"{label} not declared: {nulls} rows have a NULL key and {shared} "
                            f"rows share a key with another row, and the emulator (fakesnow on "
                            f"DuckDB) enforces keys where Snowflake only records them",
                            nulls + shared or 1)
    try:
        session.run(f"ALTER TABLE {table} ADD {constraint} ({_columns(keys)})")
    except sf_errors.Error as exc:
        return Coercion(plan.name, ", ".join(keys),
                        f"{label} not declared: {str(exc).strip().splitlines()[0]}")
    return None


def _find(names: list[str], wanted: str) -> str | None:
    """``wanted`` among ``names``, exactly or else ignoring case (SQLite names are
    case-insensitive, so a foreign key may spell its target differently)."""
    if wanted in names:
        return wanted
    folded = [n for n in names if n.lower() == wanted.lower()]
    return folded[0] if len(folded) == 1 else None


def _foreign_key(session: Session, where: tuple[str, str], plan: TablePlan, key: ForeignKey,
                 plans: list[TablePlan]) -> Coercion | None:
    def skipped(why: str) -> Coercion:
        return Coercion(plan.name, ", ".join(key.columns),
                        f"foreign key to {key.ref_table!r} not declared: {why}")

    parent_name = _find([p.source.name for p in plans], key.ref_table)
    if parent_name is None:
        return skipped("the referenced table does not exist")
    parent = next(p for p in plans if p.source.name == parent_name)
    refs = list(key.ref_columns) if any(key.ref_columns) else list(parent.source.primary_key)
    child_cols = [_find(list(plan.columns), c) for c in key.columns]
    parent_cols = [_find(list(parent.columns), c) for c in refs]
    if len(child_cols) != len(parent_cols) or None in child_cols or None in parent_cols:
        return skipped("its columns do not match the referenced table's columns")
    if session.emulated:
        return skipped("the emulator (fakesnow on DuckDB) cannot add a foreign key to a table")
    child = [plan.columns[c] for c in child_cols if c is not None]
    referenced = [parent.columns[c] for c in parent_cols if c is not None]
    try:
        session.run(f"ALTER TABLE {qualified(*where, plan.name)} ADD FOREIGN KEY "
                    f"({_columns(child)}) REFERENCES {qualified(*where, parent.name)} "
                    f"({_columns(referenced)})")
    except sf_errors.Error as exc:
        return skipped(str(exc).strip().splitlines()[0])
    return None


def declare_keys(session: Session, where: tuple[str, str],
                 plans: list[TablePlan]) -> list[Coercion]:
    """Primary keys, then UNIQUE constraints, then foreign keys; what was left out."""
    notes: list[Coercion] = []
    for plan in plans:
        keys = [plan.columns[c] for c in plan.source.primary_key]
        if keys and (note := _declare(session, where, plan, keys, "PRIMARY KEY",
                                      "primary key")) is not None:
            notes.append(note)
    for plan in plans:
        for index in plan.indexes:
            if index.unique and (note := _declare(
                    session, where, plan, list(index.columns), "UNIQUE",
                    f"UNIQUE constraint {index.name!r}")) is not None:
                notes.append(note)
    for plan in plans:
        for key in plan.source.foreign_keys:
            if (note := _foreign_key(session, where, plan, key, plans)) is not None:
                notes.append(note)
    return notes
