"""Engine-neutral description of a database's tables, used to copy data between engines.

Types here are *logical*: what the values are, decided once from the source (declared type plus a
scan of the stored values for dynamically typed sources like SQLite). Each backend maps them to
its own physical types when loading.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

TypeKind = Literal["boolean", "integer", "float", "decimal", "text", "blob", "date", "timestamp"]


@dataclass(frozen=True, slots=True)
class ColumnType:
    kind: TypeKind
    precision: int | None = None  # decimal only
    scale: int | None = None  # decimal only

    def __str__(self) -> str:
        if self.kind == "decimal" and self.precision is not None:
            return f"decimal({self.precision},{self.scale or 0})"
        return self.kind


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: ColumnType
    nullable: bool = True
    declared_type: str = ""  # the type text as the source declared it, for reports


@dataclass(frozen=True, slots=True)
class ForeignKey:
    columns: tuple[str, ...]
    ref_table: str
    ref_columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Index:
    """A secondary index (or UNIQUE constraint) over plain columns, in key order."""

    name: str
    columns: tuple[str, ...]
    unique: bool = False


@dataclass(slots=True)
class Table:
    name: str
    columns: list[Column]
    primary_key: tuple[str, ...] = ()
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    row_count: int | None = None
    indexes: list[Index] = field(default_factory=list)

    def column(self, name: str) -> Column:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(f"table {self.name!r} has no column {name!r}")


@dataclass(slots=True)
class Coercion:
    """A value or column whose stored form disagreed with the type chosen for it."""

    table: str
    column: str
    message: str
    count: int = 1


@dataclass(slots=True)
class LoadReport:
    """What a load did: tables and rows copied, type decisions, coercions, and whether it was skipped."""

    source: str
    target: str
    fingerprint: str
    skipped: bool = False  # True when the target already held this exact source
    tables: dict[str, int] = field(default_factory=dict)  # table name -> rows loaded
    coercions: list[Coercion] = field(default_factory=list)
    elapsed: float = 0.0


@dataclass(slots=True)
class TablePlan:
    """One source table and the names it gets in a target engine."""

    source: Table
    name: str
    columns: dict[str, str]  # source column name -> target column name
    indexes: list[Index] = field(default_factory=list)  # under target names

    def target_columns(self) -> list[str]:
        return [self.columns[c.name] for c in self.source.columns]


def rename_coercions(coercions: list[Coercion], plans: list[TablePlan]) -> list[Coercion]:
    """Source coercions under the names their tables and columns have in the target."""
    by_source = {plan.source.name: plan for plan in plans}
    return [Coercion(by_source[c.table].name, by_source[c.table].columns.get(c.column, c.column),
                     c.message, c.count) if c.table in by_source else c for c in coercions]
