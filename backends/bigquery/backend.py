"""BigQuery backend (google-cloud-bigquery): an evaluation engine and a load target.

URLs: ``bigquery://PROJECT/DATASET`` with application-default credentials
(``google.auth.default``), or ``bigquery://PROJECT/DATASET?emulator=http://127.0.0.1:9050`` for
a BigQuery emulator (anonymous credentials; results are labelled emulated). Other options:
``location``, ``maximum_bytes_billed``, ``credentials`` (a key file), ``load`` -- see
``connect.py``.

Evaluated SQL runs as a query job with the dataset as default dataset. BigQuery has no read-only
session, so statements are screened (``polysql.backends._common.guard`` plus the BigQuery rules in
``screen.py``) and, on the real service, dry-run first so that BigQuery itself confirms a
SELECT; use a service account that can only read the dataset. The timeout is the job's own
``jobTimeoutMs`` plus a client backstop that cancels the job. Bytes processed by the last query
are kept in ``last_stats``. See docs/engines-bigquery.md.
"""

from __future__ import annotations

import hashlib
import re
import threading
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy.engine import URL

from polysql.backends._common.cancel import Flight, Flights
from polysql.backends._common.guard import screen
from polysql.backends._common.statement_text import refuse_text
from polysql.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, Backend, EngineInfo
from polysql.backends.bigquery import INFO
from polysql.backends.bigquery.connect import (
    Target,
    emulator_version,
    make_client,
    parse_target,
)
from polysql.backends.bigquery.execute import QueryStats, dry_run, run_query
from polysql.backends.bigquery.introspect import read_tables
from polysql.backends.bigquery.load import load_into_bigquery
from polysql.backends.bigquery.screen import screen_bigquery
from polysql.core.errors import ConfigError, EngineError, EngineUnavailableError
from polysql.core.model import Result
from polysql.core.schema import LoadReport, Table
from polysql.core.urls import parse_url

_OPTIONS = ("read_only", "dry_run", "screen")
MAX_DATASET_NAME = 1024


def evaluation_dataset_name(dataset: str, db_id: str) -> str:
    """``polysql_<dataset>_<db_id>`` in letters, digits and underscores (lower case). A short hash
    of the original names is appended whenever characters had to be replaced, so two different
    databases never share a dataset."""
    raw = f"polysql_{dataset}_{db_id}"
    clean = re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]", "_", raw.lower())).rstrip("_")
    if clean == re.sub(r"_+", "_", raw.lower()).rstrip("_") and len(clean) <= MAX_DATASET_NAME:
        return clean
    suffix = hashlib.sha256(raw.encode("utf-8")).hexdigest()[:8]
    return f"{clean[:MAX_DATASET_NAME - len(suffix) - 1].rstrip('_')}_{suffix}"


class BigQueryBackend(Backend):
    """One BigQuery dataset in one project (or on an emulator)."""

    info: ClassVar[EngineInfo] = INFO
    name: ClassVar[str] = INFO.name
    dialect: ClassVar[str] = INFO.dialect
    capabilities: ClassVar[frozenset[str]] = frozenset({"read_only", "timeout", "load_target"})

    def __init__(self, url: URL, target: Target, client: Any, *, read_only: bool,
                 dry_run: bool, screen_sql: bool) -> None:
        self.url = url
        self.target = target
        self.client = client
        self.read_only = read_only
        self.emulated = target.emulator is not None
        self._dry_run = dry_run
        self._screen = screen_sql
        self._version: str | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._flights = Flights()
        #: what BigQuery reported for the last executed query (job id, bytes processed/billed,
        #: cache hit); Result has no field for it
        self.last_stats: dict[str, Any] = {}
        #: how the last load moved each table's rows (load job or INSERT DML, and why)
        self.load_notes: list[str] = []

    @property
    def last_bytes_processed(self) -> int | None:
        return self.last_stats.get("bytes_processed")

    @classmethod
    def is_emulated(cls, url: URL) -> bool:
        return "emulator" in parse_url(url).query

    @classmethod
    def evaluation_url(cls, base: URL, *, dataset: str, db_id: str, cache_dir: Path) -> URL:
        return base.set(database=evaluation_dataset_name(dataset, db_id))

    @classmethod
    def connect(cls, url: URL | str, *, read_only: bool = True, dry_run: bool | None = None,
                screen: bool = True, **options: Any) -> BigQueryBackend:
        """``read_only=True``: evaluation (the dataset must exist). ``dry_run`` (default: on for
        the real service, off on an emulator, whose dry runs execute the query) asks BigQuery to
        classify each statement before it runs. ``screen`` exists so tests can prove the other
        barriers hold on their own; leave it on."""
        if options:
            raise ConfigError(
                f"unknown option(s) for the bigquery backend: {', '.join(sorted(options))}; "
                f"supported: {', '.join(_OPTIONS)}")
        parsed = parse_url(url)
        target = parse_target(parsed)
        if read_only and not target.dataset:
            raise ConfigError("an evaluation connection needs a dataset: "
                              f"bigquery://{target.project}/<dataset>")
        emulated = target.emulator is not None
        backend = cls(parsed, target, make_client(target), read_only=read_only,
                      dry_run=(not emulated) if dry_run is None else dry_run, screen_sql=screen)
        backend._probe()
        return backend

    def _probe(self) -> None:
        """Fail in ``connect`` when the service or the evaluation dataset cannot be reached."""
        from google.api_core import exceptions as api_exceptions

        self.version()
        if not self.read_only:
            return
        try:
            self.client.get_dataset(self.target.dataset_ref)
        except api_exceptions.NotFound as exc:
            raise EngineUnavailableError(
                f"BigQuery dataset {self.target.dataset_ref} does not exist: load it first "
                f"(polysql load SOURCE {self.url.render_as_string(hide_password=True)})") from exc
        except Exception as exc:
            raise EngineUnavailableError(
                f"cannot reach BigQuery dataset {self.target.dataset_ref}: {exc}") from exc

    # -- evaluation --------------------------------------------------------------------------
    def _refusal(self, sql: str) -> str | None:
        if not (self.read_only and self._screen):
            return None
        assert self.target.dataset is not None
        return screen(sql, self.dialect) or screen_bigquery(
            sql, project=self.target.project, dataset=self.target.dataset)

    def execute(self, sql: str, *, timeout: float = DEFAULT_TIMEOUT,
                max_rows: int = DEFAULT_MAX_ROWS) -> Result:
        refused = refuse_text(sql, comments=self.info.comments, engine=self.name)
        if refused is not None:
            return refused
        if self._closed:
            return Result.failed("unavailable", f"{self!r} is closed", engine=self.name)
        with self._flights.track() as flight:
            return self._execute(sql, timeout, max_rows, flight)

    def cancel(self) -> bool:
        """``job.cancel()`` for each running query job, as the timeout's backstop sends; the
        waiting ``execute`` returns after the backstop's grace whether or not BigQuery (or an
        emulator) stops the job."""
        return self._flights.cancel()

    def _execute(self, sql: str, timeout: float, max_rows: int, flight: Flight) -> Result:
        reason = self._refusal(sql)
        if reason is not None:
            return Result.failed("forbidden", reason, engine=self.name)
        stats = QueryStats()
        default_dataset = self.target.dataset_ref
        if self._dry_run and self.read_only:
            refused = dry_run(self.client, sql, default_dataset=default_dataset,
                              timeout=timeout, stats=stats)
            if refused is not None:
                self._remember(stats)
                return Result.failed(refused[0], refused[1], engine=self.name)
        result = run_query(self.client, sql, default_dataset=default_dataset, timeout=timeout,
                           max_rows=max_rows,
                           maximum_bytes_billed=self.target.maximum_bytes_billed,
                           engine=self.name, stats=stats, flight=flight)
        self._remember(stats)
        result.stats = {k: v for k, v in stats.to_dict().items()
                        if k in ("bytes_processed", "bytes_billed", "cache_hit", "job_id")}
        return result

    def _remember(self, stats: QueryStats) -> None:
        with self._lock:
            self.last_stats = stats.to_dict()

    def version(self) -> str:
        if self._version is None:
            if self.target.emulator is not None:
                self._version = f"{emulator_version(self.target.emulator)} (emulated BigQuery)"
            else:
                from google.cloud import bigquery

                self._version = f"BigQuery (google-cloud-bigquery {bigquery.__version__})"
        return self._version

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.client.close()

    # -- introspection -----------------------------------------------------------------------
    def tables(self) -> list[Table]:
        """The dataset's tables as BigQuery holds them; primary keys from the table constraints
        or, where the engine keeps none (the emulator), from polysql's load record."""

        try:
            return read_tables(self.client, self.target.dataset_ref)
        except Exception as exc:
            raise EngineError(f"cannot read the tables of {self!r}: {exc}") from exc

    # -- load target -------------------------------------------------------------------------
    def load(self, source: Backend, *, fingerprint: str | None = None, replace: bool = False,
             names: str = "exact") -> LoadReport:
        """Copy ``source`` into this dataset (created if missing); see
        :mod:`polysql.backends.bigquery.load`."""

        with self._lock:
            return load_into_bigquery(self, source, fingerprint=fingerprint, replace=replace,
                                      names=names)

    @classmethod
    def drop(cls, url: URL | str) -> None:
        """Delete the URL's dataset and everything in it (tests and cleanup)."""
        parsed = parse_url(url)
        target = parse_target(parsed)
        client = make_client(target)
        try:
            client.delete_dataset(target.dataset_ref, delete_contents=True, not_found_ok=True)
        finally:
            client.close()


__all__ = ["BigQueryBackend", "evaluation_dataset_name"]
