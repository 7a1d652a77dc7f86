"""Name policies for loading: keep source names exactly (default) or make them engine-idiomatic.

Studies that want unquoted, lower-case names on PostgreSQL or MySQL load with ``lower`` or
``snake``; the schema shown to a model must then be read back from the loaded engine, never from
the source. ``fold`` is what a PostgreSQL user migrating a database expects (pgloader's default):
a name that can be written unquoted is stored as PostgreSQL reads it unquoted, in lower case, and
a name that needs quotes in any case (a space, punctuation, a leading digit) keeps its spelling.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Literal

from polysql.core.errors import ConfigError, LoadError
from polysql.core.schema import ForeignKey, Index, Table, TablePlan

NameMode = Literal["exact", "lower", "snake", "fold"]
NAME_MODES: tuple[str, ...] = ("exact", "lower", "snake", "fold")

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_WORD = re.compile(r"[^0-9A-Za-z_]+")
# a name SQL can leave unquoted (keywords aside): ASCII letters, digits, _ and $
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


def check_mode(mode: str) -> NameMode:
    if mode not in NAME_MODES:
        raise ConfigError(f"unknown name mode {mode!r}: use one of {', '.join(NAME_MODES)}")
    return mode  # type: ignore[return-value]


def convert(name: str, mode: NameMode) -> str:
    """``exact``: unchanged; ``lower``: lower-cased; ``snake``: ``OrderItems``/``Order Items`` ->
    ``order_items``; ``fold``: ``TrackId`` -> ``trackid`` but ``Unit Price`` unchanged."""
    if mode == "exact":
        return name
    if mode == "lower":
        return name.lower()
    if mode == "fold":
        return name.lower() if _PLAIN.fullmatch(name) else name
    snake = _NON_WORD.sub("_", _CAMEL_BOUNDARY.sub("_", name.strip())).strip("_").lower()
    return re.sub(r"_+", "_", snake) or "_"


def convert_all(names: Iterable[str], mode: NameMode, *, where: str) -> dict[str, str]:
    """Map each name to its converted form; two names landing on one form is a LoadError."""
    mapping: dict[str, str] = {}
    seen: dict[str, str] = {}
    for name in names:
        new = convert(name, mode)
        if new in seen and seen[new] != name:
            raise LoadError(
                f"name mode {mode!r} maps both {seen[new]!r} and {name!r} in {where} to {new!r}; "
                "load with --names exact instead"
            )
        seen[new] = name
        mapping[name] = new
    return mapping


def rename_tables(tables: list[Table], mode: NameMode) -> list[Table]:
    """Copies of ``tables`` with table, column and key names converted by ``mode``."""
    if mode == "exact":
        return tables
    table_names = convert_all([t.name for t in tables], mode, where="the table list")
    renamed: list[Table] = []
    for table in tables:
        cols = convert_all([c.name for c in table.columns], mode, where=f"table {table.name!r}")
        ref_cols = {t.name: convert_all([c.name for c in t.columns], mode, where=f"table {t.name!r}")
                    for t in tables}
        renamed.append(Table(
            name=table_names[table.name],
            columns=[replace(c, name=cols[c.name]) for c in table.columns],
            primary_key=tuple(cols[c] for c in table.primary_key),
            foreign_keys=[
                ForeignKey(tuple(cols[c] for c in fk.columns),
                           table_names.get(fk.ref_table, convert(fk.ref_table, mode)),
                           tuple(ref_cols.get(fk.ref_table, {}).get(c, convert(c, mode))
                                 for c in fk.ref_columns))
                for fk in table.foreign_keys
            ],
            row_count=table.row_count,
            indexes=[Index(convert(ix.name, mode), tuple(cols[c] for c in ix.columns), ix.unique)
                     for ix in table.indexes],
        ))
    return renamed


def plan_names(tables: list[Table], mode: NameMode,
               check_identifier: Callable[[str, str], str | None]) -> tuple[list[TablePlan], list[str]]:
    """Target names for every table, column and index under ``mode``, and the reasons
    ``check_identifier`` (the target engine's rule: why a name cannot be kept, or None) gives for
    the names the target cannot hold; the caller says how its engine reports them."""
    table_names = convert_all([t.name for t in tables], mode, where="the table names")
    plans = []
    for table in tables:
        columns = convert_all([c.name for c in table.columns], mode,
                              where=f"the columns of table {table.name!r}")
        indexes = [Index(convert(ix.name, mode), tuple(columns[c] for c in ix.columns), ix.unique)
                   for ix in table.indexes]
        plans.append(TablePlan(table, table_names[table.name], columns, indexes))
    problems = [check_identifier(plan.name, "table") for plan in plans]
    problems += [check_identifier(name, f"column of table {plan.name!r}")
                 for plan in plans for name in plan.columns.values()]
    return plans, [problem for problem in problems if problem]
