"""ClickHouse names and types: quoting, logical types to ClickHouse types and back, table DDL."""

from __future__ import annotations

import re
from dataclasses import dataclass

from polysql.backends._common.timestamps import MOST_FRACTION_DIGITS
from polysql.core.schema import ColumnType

# ClickHouse's widest Decimal.
MAX_DECIMAL_PRECISION = 76


def quote_ident(name: str) -> str:
    """A backquoted ClickHouse identifier; any name, exactly as given."""
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def quote_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def clickhouse_type(column_type: ColumnType, *, nullable: bool,
                    fraction_digits: int = MOST_FRACTION_DIGITS) -> str:
    """The ClickHouse type for a logical type. Blobs become ``String`` (ClickHouse strings are
    byte strings); dates and timestamps the wide ``Date32``/``DateTime64(p)``, ``p`` the
    fractional-second digits the values need (``toString`` writes out all ``p``)."""
    if column_type.kind == "timestamp":
        base = f"DateTime64({fraction_digits})"
    elif column_type.kind == "decimal":
        precision = min(column_type.precision or 18, MAX_DECIMAL_PRECISION)
        base = f"Decimal({precision}, {min(column_type.scale or 0, precision)})"
    else:
        base = {
            "boolean": "Bool",
            "integer": "Int64",
            "float": "Float64",
            "text": "String",
            "blob": "String",
            "date": "Date32",
        }[column_type.kind]
    return f"Nullable({base})" if nullable else base


_DECIMAL = re.compile(r"Decimal(?:32|64|128|256)?\((\d+)(?:,\s*(\d+))?\)")
_WRAPPERS = re.compile(r"^(?:Nullable|LowCardinality)\((.*)\)$")


def unwrap(type_name: str) -> tuple[str, bool]:
    """``Nullable(LowCardinality(String))`` -> (``String``, True)."""
    nullable = False
    while True:
        match = _WRAPPERS.match(type_name)
        if match is None:
            return type_name, nullable
        nullable = nullable or type_name.startswith("Nullable(")
        type_name = match.group(1)


def logical_type(type_name: str) -> ColumnType:
    """The logical type of a ClickHouse column type; anything without one travels as text."""
    base, _ = unwrap(type_name)
    match = _DECIMAL.fullmatch(base)
    if match:
        return ColumnType("decimal", int(match.group(1)), int(match.group(2) or 0))
    if base == "Bool":
        return ColumnType("boolean")
    if re.fullmatch(r"U?Int(8|16|32|64|128|256)", base):
        return ColumnType("integer")
    if re.fullmatch(r"Float(32|64)|BFloat16", base):
        return ColumnType("float")
    if base in ("Date", "Date32"):
        return ColumnType("date")
    if base.startswith("DateTime"):
        return ColumnType("timestamp")
    return ColumnType("text")


@dataclass(frozen=True, slots=True)
class TableSpec:
    """How one loaded table is declared: enough to attach it again from its directory."""

    name: str
    uuid: str
    columns: tuple[tuple[str, str], ...]  # (name, ClickHouse type)
    order_by: tuple[str, ...] = ()
    primary_key: tuple[str, ...] = ()

    def columns_sql(self) -> str:
        return ", ".join(f"{quote_ident(n)} {t}" for n, t in self.columns)

    def engine_sql(self, *, disk: str | None) -> str:
        """``ENGINE = MergeTree ...`` with the sorting key; ``disk`` is a ``disk(...)`` clause
        placing the data in a directory of its own, or None for the server's default storage."""
        keys = ", ".join(quote_ident(c) for c in self.order_by)
        nullable_key = any(t.startswith("Nullable(") for n, t in self.columns
                           if n in self.order_by)
        settings = [f"disk = {disk}"] if disk else []
        if nullable_key:
            settings.append("allow_nullable_key = 1")
        clause = f" SETTINGS {', '.join(settings)}" if settings else ""
        return f"ENGINE = MergeTree ORDER BY ({keys}){clause}"

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "uuid": self.uuid, "columns": [list(c) for c in self.columns],
                "order_by": list(self.order_by), "primary_key": list(self.primary_key)}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> TableSpec:
        columns = data["columns"]
        assert isinstance(columns, list)
        return cls(name=str(data["name"]), uuid=str(data["uuid"]),
                   columns=tuple((str(n), str(t)) for n, t in columns),
                   order_by=tuple(map(str, data.get("order_by") or [])),  # type: ignore[call-overload]
                   primary_key=tuple(map(str, data.get("primary_key") or [])))  # type: ignore[call-overload]


def disk_clause(directory: str) -> str:
    """A local disk rooted at ``directory`` (an absolute path, with a trailing slash)."""
    return f"disk(type = 'local', path = {quote_string(directory)})"
