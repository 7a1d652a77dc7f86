"""Move one table's rows into an (empty) BigQuery table: a Parquet load job, or INSERT DML.

* ``job``: the rows are written to a local Parquet file (BigQuery's column names, the table's
  exact types) and sent with ``load_table_from_file``; the job's output row count is checked.
* ``dml``: ``INSERT ... SELECT ... FROM UNNEST(@rows)`` with the rows as an array-of-struct
  query parameter, in batches. BYTES travel as base64 text decoded by ``FROM_BASE64`` in the
  statement (bqemulator stores a BYTES parameter's base64 text verbatim).
* ``auto``: ``job``, falling back to ``dml`` when the load job fails or miscounts; on an emulator
  ``dml`` straight away, since emulated load jobs mishandle values (bqemulator keeps NDJSON BYTES
  as base64 text and reports wrong output row counts) while the DML path is checked end to end.

Which path loaded each table is returned and recorded in the load record.
"""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
from google.cloud import bigquery

from polysql.core.errors import LoadError

if TYPE_CHECKING:
    from polysql.backends.base import Backend
    from polysql.backends.bigquery.types import TablePlan

DML_MAX_ROWS = 2_000
DML_MAX_BYTES = 2_000_000  # rough size of one statement's parameters
LOAD_TIMEOUT = 3_600.0


def arrow_type_for(type_text: str) -> pa.DataType:
    base, _, params = type_text.partition("(")
    if base in ("NUMERIC", "BIGNUMERIC"):
        precision, scale = (int(p) for p in params.rstrip(")").split(",")) if params \
            else ((38, 9) if base == "NUMERIC" else (76, 38))
        return pa.decimal128(precision, scale) if precision <= 38 \
            else pa.decimal256(precision, scale)
    return {"BOOL": pa.bool_(), "INT64": pa.int64(), "FLOAT64": pa.float64(),
            "STRING": pa.string(), "BYTES": pa.binary(), "DATE": pa.date32(),
            "DATETIME": pa.timestamp("us")}[base]


def _target_schema(plan: TablePlan) -> pa.Schema:
    return pa.schema([pa.field(plan.columns[c.name], arrow_type_for(t), nullable=True)
                      for c, t in zip(plan.source.columns, plan.types, strict=True)])


def _batches(source: Backend, plan: TablePlan, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The source rows under BigQuery's names and types (read by the source's own names)."""
    for batch in source.read_table(plan.source):
        columns = [batch.column(i).cast(schema.field(i).type) for i in range(batch.num_columns)]
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


# -- load job ------------------------------------------------------------------------------

def load_with_job(client: Any, table_ref: str, plan: TablePlan, source: Backend) -> int:
    schema = _target_schema(plan)
    rows = 0
    with tempfile.NamedTemporaryFile(suffix=".parquet") as handle:
        with pq.ParquetWriter(handle.name, schema) as writer:
            for batch in _batches(source, plan, schema):
                writer.write_batch(batch)
                rows += batch.num_rows
        if rows == 0:
            return 0
        config = bigquery.LoadJobConfig(
            source_format=bigquery.SourceFormat.PARQUET,
            write_disposition=bigquery.WriteDisposition.WRITE_APPEND,
            create_disposition=bigquery.CreateDisposition.CREATE_NEVER)
        with open(handle.name, "rb") as data:
            job = client.load_table_from_file(data, table_ref, job_config=config)
        job.result(timeout=LOAD_TIMEOUT)
    if job.output_rows is not None and int(job.output_rows) != rows:
        raise LoadError(f"load job {job.job_id} reported {job.output_rows} rows for {rows} sent")
    return rows


# -- INSERT DML ----------------------------------------------------------------------------

def _param_type(type_text: str) -> str:
    base = type_text.partition("(")[0]
    return "STRING" if base == "BYTES" else base


def _param_value(value: Any, type_text: str) -> Any:
    if value is None:
        return None
    base = type_text.partition("(")[0]
    if base == "BYTES":
        return base64.b64encode(value).decode("ascii")
    if base == "FLOAT64" and isinstance(value, Decimal):
        return float(value)
    return value


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes)) else 16


def _quote(name: str) -> str:
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def insert_statement(table_ref: str, plan: TablePlan) -> str:
    names = [plan.columns[c.name] for c in plan.source.columns]
    columns = ", ".join(_quote(n) for n in names)
    values = ", ".join(
        f"FROM_BASE64(r.c{i})" if t.startswith("BYTES") else f"r.c{i}"
        for i, t in enumerate(plan.types))
    return f"INSERT INTO {_quote(table_ref)} ({columns}) SELECT {values} FROM UNNEST(@rows) AS r"


def _struct(row: tuple[Any, ...], plan: TablePlan) -> bigquery.StructQueryParameter:
    return bigquery.StructQueryParameter(None, *(
        bigquery.ScalarQueryParameter(f"c{i}", _param_type(t), _param_value(v, t))
        for i, (v, t) in enumerate(zip(row, plan.types, strict=True))))


def _chunks(source: Backend, plan: TablePlan) -> Iterator[list[tuple[Any, ...]]]:
    chunk: list[tuple[Any, ...]] = []
    size = 0
    for batch in source.read_table(plan.source):
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        for row in zip(*columns, strict=True):
            chunk.append(row)
            size += sum(_size(v) for v in row) + 8 * len(row)
            if len(chunk) >= DML_MAX_ROWS or size >= DML_MAX_BYTES:
                yield chunk
                chunk, size = [], 0
    if chunk:
        yield chunk


def load_with_dml(client: Any, table_ref: str, plan: TablePlan, source: Backend) -> int:
    statement = insert_statement(table_ref, plan)
    rows = 0
    for chunk in _chunks(source, plan):
        parameter = bigquery.ArrayQueryParameter("rows", "STRUCT",
                                                 [_struct(row, plan) for row in chunk])
        job = client.query(statement, job_config=bigquery.QueryJobConfig(
            query_parameters=[parameter]), job_retry=None)
        job.result(timeout=LOAD_TIMEOUT)
        inserted = job.num_dml_affected_rows
        if inserted is not None and int(inserted) != len(chunk):
            raise LoadError(f"INSERT into {table_ref} affected {inserted} rows for "
                            f"{len(chunk)} sent")
        rows += len(chunk)
    return rows


def clear(client: Any, table_ref: str, plan: TablePlan) -> None:
    """Empty a staging table again after a failed load job (recreated with the same schema)."""
    client.delete_table(table_ref, not_found_ok=True)
    client.create_table(bigquery.Table(table_ref, schema=plan.schema()))


def load_rows(client: Any, table_ref: str, plan: TablePlan, source: Backend, *, method: str,
              emulated: bool) -> tuple[int, str]:
    """Fill ``table_ref``; the row count and a note saying which path did it."""
    if method == "dml" or (method == "auto" and emulated):
        why = " (emulated BigQuery)" if method == "auto" else ""
        return load_with_dml(client, table_ref, plan, source), f"INSERT DML{why}"
    try:
        return load_with_job(client, table_ref, plan, source), "Parquet load job"
    except Exception as exc:
        if method == "job":
            raise LoadError(f"Parquet load job into {table_ref} failed: {exc}") from exc
        reason = " ".join(str(exc).split())[:300]
        clear(client, table_ref, plan)
        return (load_with_dml(client, table_ref, plan, source),
                f"INSERT DML (the Parquet load job failed: {reason})")
