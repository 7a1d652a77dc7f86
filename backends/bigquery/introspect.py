"""Read a BigQuery dataset's tables back as engine-neutral descriptions (what a model is shown:
``polysql.engines.ddl`` renders the schema from here, never from the source)."""

from __future__ import annotations

from typing import Any

from polysql.backends.bigquery.load import read_record
from polysql.backends.bigquery.types import logical_type
from polysql.core.schema import Column, Table


def read_tables(client: Any, dataset_ref: str) -> list[Table]:
    """The dataset's tables as BigQuery holds them; primary keys from the table constraints or,
    where the engine keeps none (the emulator), from polysql's load record."""
    dataset = client.get_dataset(dataset_ref)
    record = read_record(dataset) or {}
    recorded_keys: dict[str, list[str]] = record.get("primary_keys", {})
    tables = []
    for item in client.list_tables(dataset):
        if item.table_type not in ("TABLE", None):
            continue
        table = client.get_table(item.reference)
        constraints = table.table_constraints
        key = (tuple(constraints.primary_key.columns)
               if constraints is not None and constraints.primary_key is not None
               else tuple(recorded_keys.get(table.table_id, ())))
        tables.append(Table(
            name=table.table_id,
            columns=[Column(f.name, logical_type(f), f.mode != "REQUIRED", f.field_type)
                     for f in table.schema],
            primary_key=key,
            row_count=None if table.num_rows is None else int(table.num_rows)))
    return tables
