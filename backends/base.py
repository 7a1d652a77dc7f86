"""The Backend protocol: what every engine module implements.

Small on purpose: ``connect``, ``load``, ``execute``, ``version``, ``close`` plus introspection
(``tables``/``read_table``) so any backend can serve as a load *source*.

Evaluated SQL is untrusted. ``execute`` must run it read-only, with file and network access the
engine would offer disabled, under a timeout enforced by the engine's own mechanism, and must never
raise for a problem with the statement itself: it returns a :class:`~polysql.Result` whose
``error`` says what went wrong.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

import pyarrow as pa
from sqlalchemy.engine import URL

from polysql.model import Result
from polysql.schema import LoadReport, Table

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_ROWS = 100_000


class Backend(ABC):
    """One connection to one engine holding one database."""

    #: registry key, pytest marker and the name shown in reports ("sqlite", "duckdb", ...)
    name: ClassVar[str]
    #: sqlglot dialect name used to parse/render SQL for this engine
    dialect: ClassVar[str]
    #: declared features, e.g. {"read_only", "timeout", "load_target", "load_source"}
    capabilities: ClassVar[frozenset[str]] = frozenset()

    url: URL

    @classmethod
    @abstractmethod
    def connect(cls, url: URL, **options: Any) -> Backend:
        """Open a connection. ``read_only=True`` (the default) for evaluation."""

    @abstractmethod
    def execute(self, sql: str, *, timeout: float = DEFAULT_TIMEOUT,
                max_rows: int = DEFAULT_MAX_ROWS) -> Result:
        """Run one untrusted statement; never raises for errors in the statement."""

    @abstractmethod
    def version(self) -> str:
        """Engine version string, recorded with every result."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection. Safe to call twice."""

    # -- introspection (load source side) ---------------------------------------------------
    def tables(self) -> list[Table]:
        """The database's tables with logical column types resolved."""
        raise NotImplementedError(f"{self.name} backend cannot serve as a load source yet")

    def read_table(self, table: Table, *, batch_size: int = 65_536) -> Iterator[pa.RecordBatch]:
        """Stream a table's rows as Arrow batches typed per ``table``'s logical types."""
        raise NotImplementedError(f"{self.name} backend cannot serve as a load source yet")

    def fingerprint(self) -> str:
        """A digest identifying the database's content, used to make loads idempotent."""
        raise NotImplementedError(f"{self.name} backend cannot serve as a load source yet")

    # -- load (target side) -----------------------------------------------------------------
    def load(self, source: Backend, *, fingerprint: str | None = None,
             replace: bool = False) -> LoadReport:
        """Copy every table of ``source`` into this engine, idempotently (skip when the
        fingerprint matches what is already loaded, unless ``replace``)."""
        raise NotImplementedError(f"{self.name} backend cannot be a load target yet")

    # -- context manager --------------------------------------------------------------------
    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url.render_as_string(hide_password=True)}>"
