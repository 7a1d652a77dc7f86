"""Create and fill tables in a Snowflake schema from a load source, then declare their keys.

Two ways rows get in, chosen per table:

* ``put_copy`` -- the bulk path ``write_pandas`` uses, fed from Arrow directly so decimals, dates
  and bytes keep their exact types: the batches are written as Parquet files, PUT to a temporary
  stage and loaded with one ``COPY INTO ... MATCH_BY_COLUMN_NAME``;
* ``insert`` -- multi-row ``INSERT ... VALUES`` with bound parameters (each value bound as the
  connector's native type or as text CAST to the column type), a few hundred rows a statement.

Either way the loaded table is then checked: its row count and every column's count of non-NULL
values must equal what the source sent. A COPY that fails or does not pass the check is undone and
the table filled by INSERT instead (fakesnow's COPY from Parquet silently loads NULLs for some
columns, which is why the emulator uses INSERT from the start).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import snowflake.connector.errors as sf_errors
from snowflake.connector import SnowflakeConnection

from polysql.backends._common.prefetch import prefetched
from polysql.backends.snowflake.types import (
    check_identifier,
    physical_type,
    qualified,
    quote_ident,
)
from polysql.core.errors import LoadError
from polysql.core.naming import NameMode, plan_names
from polysql.core.schema import Column, Table, TablePlan

if TYPE_CHECKING:
    from polysql.backends.base import Backend

STAGE_NAME = "POLYSQL_LOAD"
# Bound values per INSERT statement, and rows per statement at most.
_VALUES_PER_INSERT = 8_000
_ROWS_PER_INSERT = 1_000
# Rows per Parquet file sent with PUT.
_ROWS_PER_FILE = 1_000_000
_COPY_FORMAT = "TYPE = PARQUET BINARY_AS_TEXT = FALSE USE_LOGICAL_TYPE = TRUE"


@dataclass(slots=True)
class Session:
    """The load's connection (qmark parameters) and whether it reaches the emulator."""

    conn: SnowflakeConnection
    emulated: bool

    def run(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        """Run one statement of the load and return its rows. Against the emulator a failed
        request is not retried: its HTTP 500 answers are final, not transient."""
        cursor = self.conn.cursor()
        try:
            cursor.execute(sql, params, _no_retry=self.emulated)
            return list(cursor.fetchall()) if cursor.description else []
        finally:
            cursor.close()


@dataclass(slots=True)
class Filled:
    """How one table was filled."""

    rows: int
    path: str  # "put_copy" | "insert" | "insert (COPY ...: why)"


class _Mismatch(Exception):
    """The loaded table does not hold what the source sent."""


def plan_tables(tables: list[Table], mode: NameMode) -> list[TablePlan]:
    """Target names for every table and column; a LoadError for a name Snowflake cannot keep."""
    plans, found = plan_names(tables, mode, check_identifier)
    if found:
        raise LoadError("cannot load into Snowflake with exact names: " + "; ".join(found))
    empty = [plan.name for plan in plans if not plan.columns]
    if empty:
        raise LoadError(f"table {empty[0]!r} has no columns; Snowflake cannot hold it")
    return plans


def create_table(session: Session, where: tuple[str, str], plan: TablePlan) -> None:
    columns = ", ".join(
        f"{quote_ident(plan.columns[c.name])} {physical_type(c.type)}"
        f"{'' if c.nullable else ' NOT NULL'}" for c in plan.source.columns)
    session.run(f"CREATE TABLE {qualified(*where, plan.name)} ({columns})")


# -- counting what arrived ---------------------------------------------------------------------

@dataclass(slots=True)
class _Tally:
    """Rows and non-NULL values per column the source sent."""

    rows: int = 0
    present: list[int] = field(default_factory=list)

    def add(self, batch: pa.RecordBatch) -> None:
        if not self.present:
            self.present = [0] * batch.num_columns
        self.rows += batch.num_rows
        for i in range(batch.num_columns):
            self.present[i] += batch.num_rows - batch.column(i).null_count


def _verify(session: Session, where: tuple[str, str], plan: TablePlan,
            tally: _Tally) -> None:
    counts = ", ".join(f"COUNT({quote_ident(name)})" for name in plan.target_columns())
    row = session.run(f"SELECT COUNT(*), {counts} FROM {qualified(*where, plan.name)}")[0]
    expected = [tally.rows, *(tally.present or [0] * len(plan.columns))]
    found = [int(v) for v in row]
    if found != expected:
        wrong = [name for name, want, got in zip(["rows", *plan.target_columns()], expected,
                                                  found, strict=True) if want != got]
        raise _Mismatch(f"the loaded table differs from the source in {', '.join(wrong)} "
                        f"(counts {found} instead of {expected})")


# -- INSERT with bound parameters ---------------------------------------------------------------

def _placeholder(column: Column) -> str:
    """How a bound value enters the VALUES list: text CAST to the column type where the
    connector's own binding would lose or change the value (decimals, floats such as NaN, dates
    and timestamps), the native binding otherwise."""
    if column.type.kind in ("integer", "text", "blob", "boolean"):
        return "?"
    return f"CAST(? AS {physical_type(column.type)})"


def _encoder(column: Column) -> Any:
    kind = column.type.kind
    if kind == "float":
        return lambda v: None if v is None else repr(float(v))
    if kind == "decimal":
        return lambda v: None if v is None else format(Decimal(v), "f")
    if kind == "date":
        return lambda v: None if v is None else v.isoformat()
    if kind == "timestamp":
        return lambda v: None if v is None else v.isoformat(sep=" ")
    return lambda v: v


def _insert_rows(session: Session, where: tuple[str, str], plan: TablePlan,
                 source: Backend) -> _Tally:
    columns = plan.source.columns
    encoders = [_encoder(c) for c in columns]
    row_marks = "(" + ", ".join(_placeholder(c) for c in columns) + ")"
    per_statement = max(1, min(_ROWS_PER_INSERT, _VALUES_PER_INSERT // len(columns)))
    head = (f"INSERT INTO {qualified(*where, plan.name)} "
            f"({', '.join(quote_ident(n) for n in plan.target_columns())}) VALUES ")
    tally = _Tally()
    for batch in prefetched(source.read_table(plan.source)):
        tally.add(batch)
        values = [[encode(v) for v in batch.column(i).to_pylist()]
                  for i, encode in enumerate(encoders)]
        rows = list(zip(*values, strict=True))
        for start in range(0, len(rows), per_statement):
            chunk = rows[start:start + per_statement]
            session.run(head + ", ".join([row_marks] * len(chunk)),
                [v for row in chunk for v in row])
    return tally


# -- PUT + COPY --------------------------------------------------------------------------------

def _renamed(batch: pa.RecordBatch, names: list[str]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(batch.columns, names=names)


def _write_parquet(plan: TablePlan, source: Backend, folder: Path) -> tuple[list[Path], _Tally]:
    names = plan.target_columns()
    files: list[Path] = []
    tally = _Tally()
    writer: pq.ParquetWriter | None = None
    in_file = 0
    try:
        for batch in prefetched(source.read_table(plan.source)):
            tally.add(batch)
            renamed = _renamed(batch, names)
            if writer is None or in_file >= _ROWS_PER_FILE:
                if writer is not None:
                    writer.close()
                files.append(folder / f"part-{len(files):05d}.parquet")
                writer = pq.ParquetWriter(files[-1], renamed.schema)
                in_file = 0
            writer.write_batch(renamed)
            in_file += batch.num_rows
    finally:
        if writer is not None:
            writer.close()
    return files, tally


def _put_copy(session: Session, where: tuple[str, str], plan: TablePlan,
              source: Backend, stage: str, slot: int) -> _Tally:
    with tempfile.TemporaryDirectory(prefix="polysql-snowflake-") as tmp:
        files, tally = _write_parquet(plan, source, Path(tmp))
        target = f"@{stage}/t{slot}/"
        for path in files:
            session.run(f"PUT 'file://{path.as_posix()}' {target} AUTO_COMPRESS = FALSE "
                      f"OVERWRITE = TRUE")
    if files:
        session.run(f"COPY INTO {qualified(*where, plan.name)} FROM {target} "
                  f"FILE_FORMAT = ({_COPY_FORMAT}) MATCH_BY_COLUMN_NAME = CASE_SENSITIVE "
                  f"ON_ERROR = ABORT_STATEMENT")
    return tally


def fill_table(session: Session, where: tuple[str, str], plan: TablePlan,
               source: Backend, *, bulk: str, stage: str, slot: int) -> Filled:
    """Fill the created table by ``bulk`` ("put_copy" or "insert"); a COPY that fails or loads
    something else than was sent falls back to INSERT."""
    path = "insert"
    if bulk == "put_copy":
        try:
            tally = _put_copy(session, where, plan, source, stage, slot)
            _verify(session, where, plan, tally)
            return Filled(tally.rows, "put_copy")
        except (sf_errors.Error, _Mismatch) as exc:
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            path = f"insert (COPY was not faithful: {why})"
            session.run(f"TRUNCATE TABLE {qualified(*where, plan.name)}")
    try:
        tally = _insert_rows(session, where, plan, source)
        _verify(session, where, plan, tally)
    except _Mismatch as exc:
        raise LoadError(f"table {plan.source.name!r}: {exc}") from exc
    return Filled(tally.rows, path)


def fill_tables(session: Session, where: tuple[str, str], plans: list[TablePlan],
                source: Backend, *, bulk: str) -> dict[str, Filled]:
    """Create and fill every planned table in ``where`` (database, schema)."""
    stage = qualified(*where, STAGE_NAME)
    if bulk == "put_copy":
        session.run(f"CREATE TEMPORARY STAGE {stage}")
    filled: dict[str, Filled] = {}
    try:
        for slot, plan in enumerate(plans):
            try:
                create_table(session, where, plan)
                filled[plan.name] = fill_table(session, where, plan, source, bulk=bulk,
                                               stage=stage, slot=slot)
            except sf_errors.Error as exc:
                raise LoadError(f"cannot load table {plan.source.name!r} into Snowflake: "
                                f"{str(exc).strip()}") from exc
            expected = plan.source.row_count
            if expected is not None and filled[plan.name].rows != expected:
                raise LoadError(f"table {plan.source.name!r}: the source reported {expected} "
                                f"rows but {filled[plan.name].rows} arrived")
    finally:
        if bulk == "put_copy":
            # The stage lives in the schema being built, which becomes the evaluation schema. It
            # is temporary, so it goes with the load's session anyway; fakesnow cannot drop one.
            with contextlib.suppress(sf_errors.Error):
                session.run(f"DROP STAGE IF EXISTS {stage}")
    return filled
