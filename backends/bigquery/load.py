"""Load a source into a BigQuery evaluation dataset: idempotent, staged, fingerprinted.

1. The dataset's load record (JSON in its description, plus labels) is read: same fingerprint and
   format, every table present -> skipped. A dataset holding tables polysql did not load is
   refused unless ``replace``.
2. The record is marked "in progress" (empty fingerprint): a load that stops anywhere after this
   reloads next time, never skips.
3. Every table is built and filled in a fresh staging dataset (``<dataset>_polysql_staging_<id>``,
   tables expiring after a day should cleanup itself fail), and its row count checked.
4. Swap: one copy job per table (``WRITE_TRUNCATE``; each copy is atomic) into the evaluation
   dataset, then tables of an earlier load that the source no longer has are dropped. BigQuery
   has no multi-table DDL transaction, so for the few seconds of the swap a reader can see some
   tables new and others old; a failure before the swap leaves the old content untouched.
5. The staging dataset is deleted and the record completed.

The same steps run on the emulator (bqemulator supports datasets, copy jobs and labels); only
the bulk path differs (see ``load_bulk.py``). Primary and foreign keys become BigQuery's
unenforced table constraints, set once all tables are in place; the emulator keeps none, so the
primary keys are also kept in the load record, which ``tables()`` falls back on.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as api_exceptions
from google.cloud import bigquery

from polysql.backends._common.load_files import source_coercions, source_name, timed
from polysql.backends.bigquery.load_bulk import load_rows
from polysql.backends.bigquery.types import TablePlan, plan_tables
from polysql.core.errors import LoadError
from polysql.core.naming import check_mode, rename_tables
from polysql.core.schema import Coercion, LoadReport
from polysql.core.version import __version__

if TYPE_CHECKING:
    from polysql.backends.base import Backend
    from polysql.backends.bigquery.backend import BigQueryBackend

# What a load builds; a dataset recorded under another format is reloaded.
LOAD_FORMAT = 1
RECORD_KEY = "polysql_load"
_LABEL_FORMAT = "polysql-load-format"
_LABEL_FINGERPRINT = "polysql-fingerprint"
_MAX_DESCRIPTION = 16_000
_STAGING_EXPIRATION_MS = 24 * 3600 * 1000
_COPY_TIMEOUT = 3_600.0


def _polysql_version() -> str:
    return __version__


def read_record(dataset: Any) -> dict[str, Any] | None:
    """The load record in a dataset's description, or None when polysql did not load it."""
    try:
        data = json.loads(dataset.description or "")
    except ValueError:
        return None
    record = data.get(RECORD_KEY) if isinstance(data, dict) else None
    return record if isinstance(record, dict) else None


def _write_record(client: Any, dataset: Any, record: dict[str, Any]) -> Any:
    text = json.dumps({RECORD_KEY: record}, ensure_ascii=False, sort_keys=True)
    if len(text) > _MAX_DESCRIPTION:  # the description has a size limit; coercions go first
        kept = list(record.get("coercions", []))
        while kept and len(text) > _MAX_DESCRIPTION:
            kept = kept[: len(kept) // 2]
            text = json.dumps({RECORD_KEY: {**record, "coercions": kept,
                                            "coercions_truncated": True}},
                              ensure_ascii=False, sort_keys=True)
    dataset.description = text
    fingerprint = str(record.get("fingerprint") or "")
    dataset.labels = {**(dataset.labels or {}), _LABEL_FORMAT: str(LOAD_FORMAT),
                      _LABEL_FINGERPRINT: hashlib.sha256(fingerprint.encode()).hexdigest()[:60]
                      if fingerprint else "loading"}
    return client.update_dataset(dataset, ["description", "labels"])


def _table_ids(client: Any, dataset_ref: str) -> list[str]:
    return [t.table_id for t in client.list_tables(dataset_ref)]


def _skipped(client: Any, dataset: Any, fingerprint: str, origin: str,
             destination: str) -> LoadReport | None:
    record = read_record(dataset)
    if (record is None or record.get("fingerprint") != fingerprint
            or record.get("load_format") != LOAD_FORMAT):
        return None
    tables = dict(record.get("tables", {}))
    if not set(tables) <= set(_table_ids(client, dataset.reference)):
        return None
    return LoadReport(source=origin, target=destination, fingerprint=fingerprint, skipped=True,
                      tables=tables,
                      coercions=[Coercion(**c) for c in record.get("coercions", [])])


def _constraints(plan: TablePlan, plans: dict[str, TablePlan],
                 dataset_ref: str) -> Any:
    from google.cloud.bigquery.table import (
        ColumnReference,
        ForeignKey,
        PrimaryKey,
        TableConstraints,
        TableReference,
    )

    primary = (PrimaryKey(columns=[plan.columns[c] for c in plan.source.primary_key])
               if plan.source.primary_key else None)
    foreign = []
    for fk in plan.source.foreign_keys:
        referenced = plans.get(fk.ref_table)
        if referenced is None or not all(c in referenced.columns for c in fk.ref_columns):
            continue
        foreign.append(ForeignKey(
            name="", referenced_table=TableReference.from_string(
                f"{dataset_ref}.{referenced.name}"),
            column_references=[ColumnReference(referencing_column=plan.columns[c],
                                               referenced_column=referenced.columns[r])
                               for c, r in zip(fk.columns, fk.ref_columns, strict=True)]))
    if primary is None and not foreign:
        return None
    return TableConstraints(primary_key=primary, foreign_keys=foreign)


def _structure_notes(source: Backend, plans: list[TablePlan]) -> list[Coercion]:
    notes = []
    for plan in plans:
        for index in plan.source.indexes:
            kind = "UNIQUE index" if index.unique else "index"
            notes.append(Coercion(plan.name, ", ".join(plan.columns.get(c, c)
                                                       for c in index.columns),
                                  f"{kind} {index.name!r} not created: BigQuery has no "
                                  f"secondary indexes", 0))
    views = getattr(source, "views", None)
    for name, _ in (views() if callable(views) else []):
        notes.append(Coercion(name, "", "view not created: the BigQuery backend does not copy "
                              "views", 0))
    return notes


def _rename_coercions(coercions: list[Coercion], plans: list[TablePlan]) -> list[Coercion]:
    by_source = {plan.source.name: plan for plan in plans}
    renamed = []
    for c in coercions:
        plan = by_source.get(c.table)
        renamed.append(c if plan is None else
                       Coercion(plan.name, plan.columns.get(c.column, c.column), c.message,
                                c.count))
    return renamed


def _fill_staging(target: BigQueryBackend, source: Backend, plans: list[TablePlan],
                  origins: list[Any], staging_ref: str) -> tuple[dict[str, int], dict[str, str]]:
    client = target.client
    counts: dict[str, int] = {}
    methods: dict[str, str] = {}
    for origin, plan in zip(origins, plans, strict=True):
        client.create_table(bigquery.Table(f"{staging_ref}.{plan.name}", schema=plan.schema()))
        # rows are read under the source's own names
        origin_plan = TablePlan(origin, plan.name, dict(zip(
            [c.name for c in origin.columns], plan.columns.values(), strict=True)), plan.types)
        count, method = load_rows(client, f"{staging_ref}.{plan.name}", origin_plan, source,
                                  method=target.target.load_method, emulated=target.emulated)
        if plan.source.row_count is not None and count != plan.source.row_count:
            raise LoadError(f"table {plan.name!r}: the source reported {plan.source.row_count} "
                            f"rows but {count} were sent")
        counts[plan.name] = count
        methods[plan.name] = method
    return counts, methods


def _swap_in(target: BigQueryBackend, plans: list[TablePlan], staging_ref: str,
             dataset_ref: str) -> None:
    client = target.client
    for plan in plans:
        job = client.copy_table(f"{staging_ref}.{plan.name}", f"{dataset_ref}.{plan.name}",
                                job_config=bigquery.CopyJobConfig(
                                    write_disposition=bigquery.WriteDisposition.WRITE_TRUNCATE))
        job.result(timeout=_COPY_TIMEOUT)
    keep = {plan.name for plan in plans}
    for table_id in _table_ids(client, dataset_ref):
        if table_id not in keep:
            client.delete_table(f"{dataset_ref}.{table_id}", not_found_ok=True)


def _add_constraints(target: BigQueryBackend, plans: list[TablePlan],
                     dataset_ref: str) -> list[Coercion]:
    """Primary and foreign keys as table constraints, once every table is in place (a foreign
    key names its referenced table). The emulator keeps none; the load record has the keys."""
    if target.emulated:
        return []
    client = target.client
    by_source = {p.source.name: p for p in plans}
    notes = []
    for plan in plans:
        wanted = _constraints(plan, by_source, dataset_ref)
        if wanted is None:
            continue
        try:
            table = client.get_table(f"{dataset_ref}.{plan.name}")
            table.table_constraints = wanted
            client.update_table(table, ["table_constraints"])
        except api_exceptions.GoogleAPICallError as exc:
            notes.append(Coercion(plan.name, "", f"keys not recorded as table constraints: "
                                  f"{' '.join(str(exc).split())[:300]}", 0))
    return notes


def _ensure_dataset(target: BigQueryBackend, dataset_ref: str) -> Any:
    try:
        return target.client.get_dataset(dataset_ref)
    except api_exceptions.NotFound:
        dataset = bigquery.Dataset(dataset_ref)
        if target.target.location:
            dataset.location = target.target.location
        return target.client.create_dataset(dataset, exists_ok=True)


def _build(target: BigQueryBackend, source: Backend, dataset: Any, *, names: str,
           report: LoadReport, record: dict[str, Any]) -> LoadReport:
    client = target.client
    dataset_ref = target.target.dataset_ref
    origins = source.tables()
    plans, name_notes = plan_tables(rename_tables(origins, check_mode(names)),
                                    emulated=target.emulated)
    staging = bigquery.Dataset(f"{dataset_ref}_polysql_staging_{uuid.uuid4().hex[:8]}")
    staging.location = dataset.location
    staging.default_table_expiration_ms = _STAGING_EXPIRATION_MS
    staging.labels = {"polysql-staging": "true"}
    staging = client.create_dataset(staging)
    staging_ref = f"{staging.project}.{staging.dataset_id}"
    try:
        counts, methods = _fill_staging(target, source, plans, origins, staging_ref)
        _swap_in(target, plans, staging_ref, dataset_ref)
    finally:
        client.delete_dataset(staging_ref, delete_contents=True, not_found_ok=True)
    key_notes = _add_constraints(target, plans, dataset_ref)
    report.tables = counts
    report.coercions = (_rename_coercions(source_coercions(source), plans) + name_notes
                        + _structure_notes(source, plans) + key_notes)
    record.update(bulk=methods, primary_keys={
        p.name: [p.columns[c] for c in p.source.primary_key] for p in plans
        if p.source.primary_key})
    return report


def load_into_bigquery(target: BigQueryBackend, source: Backend, *, fingerprint: str | None,
                       replace: bool, names: str) -> LoadReport:
    """The BigQuery side of ``polysql.load``."""
    if target.read_only:
        raise LoadError(f"{target!r} was opened read-only; connect with read_only=False to load")
    mode = check_mode(names)
    fingerprint = fingerprint or source.fingerprint()
    if mode != "exact":  # a copy under other names is a different copy: never skip into it
        fingerprint = f"{fingerprint}+names={mode}"
    dataset_ref = target.target.dataset_ref
    origin, destination = source_name(source), source_name(target)
    client = target.client
    try:
        existing = client.get_dataset(dataset_ref)
    except api_exceptions.NotFound:
        existing = None
    if existing is not None and not replace:
        skipped = _skipped(client, existing, fingerprint, origin, destination)
        if skipped is not None:
            return skipped
        if read_record(existing) is None and _table_ids(client, dataset_ref):
            raise LoadError(f"dataset {dataset_ref!r} already holds tables that polysql did not "
                            f"load; pass replace=True (polysql load --replace) to replace them, "
                            f"or choose another dataset")
    dataset = existing or _ensure_dataset(target, dataset_ref)
    record: dict[str, Any] = {"load_format": LOAD_FORMAT, "fingerprint": "",
                              "source": origin, "engine_version": target.version(),
                              "polysql_version": _polysql_version()}
    dataset = _write_record(client, dataset, record)
    report = timed(lambda: _build(target, source, dataset, names=mode,
                                  report=LoadReport(origin, destination, fingerprint),
                                  record=record))
    record.update(fingerprint=fingerprint, tables=report.tables,
                  coercions=[asdict(c) for c in report.coercions],
                  elapsed=round(report.elapsed, 3),
                  loaded_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    _write_record(client, client.get_dataset(dataset_ref), record)
    target.load_notes = [f"{table}: {how}" for table, how in record.get("bulk", {}).items()]
    return report
