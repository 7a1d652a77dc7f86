"""The Backend protocol: what every engine module implements.

Small on purpose: ``connect``, ``load``, ``execute``, ``version``, ``close`` plus introspection
(``tables``/``read_table``) so any backend can serve as a load *source*.

Evaluated SQL is untrusted. ``execute`` must run it read-only, with file and network access the
engine would offer disabled, under a timeout enforced by the engine's own mechanism, and must never
raise for a problem with the statement itself: it returns a :class:`~polysql.Result` whose
``error`` says what went wrong.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
from sqlalchemy.engine import URL

from polysql.model import Result
from polysql.schema import Coercion, LoadReport, Table

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_ROWS = 100_000


def _safe_name(text: str) -> str:
    """A file-name-safe rendering of a dataset or database id."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "_"


class Backend(ABC):
    """One connection to one engine holding one database."""

    #: registry key, pytest marker and the name shown in reports ("sqlite", "duckdb", ...)
    name: ClassVar[str]
    #: sqlglot dialect name used to parse/render SQL for this engine
    dialect: ClassVar[str]
    #: declared features, e.g. {"read_only", "timeout", "load_target", "load_source"}
    capabilities: ClassVar[frozenset[str]] = frozenset()
    #: modules of the client library the backend imports when it connects (often lazily, so
    #: loading the class proves nothing); polysql.registry refuses the engine while one is missing
    client_modules: ClassVar[tuple[str, ...]] = ()
    #: the polysql extra that installs ``client_modules`` (``pip install 'polysql[<extra>]'``)
    client_extra: ClassVar[str] = ""

    #: engines that keep each evaluation database in one local file set this (".duckdb")
    file_suffix: ClassVar[str | None] = None

    url: URL

    @classmethod
    def evaluation_url(cls, base: URL, *, dataset: str, db_id: str, cache_dir: Path) -> URL:
        """Where this engine keeps its evaluation copy of ``dataset``/``db_id``.

        File engines get one file per database under the cache; server engines override this to
        name a database on the server ``base`` points to.
        """
        if cls.file_suffix is None:
            raise NotImplementedError(f"{cls.name} backend must define evaluation_url")
        path = cache_dir / "engines" / cls.name / _safe_name(dataset) / f"{_safe_name(db_id)}{cls.file_suffix}"
        return base.set(database=str(path))

    @classmethod
    def is_emulated(cls, url: URL) -> bool:
        """True when ``url`` reaches an emulator of the engine rather than the real service;
        results from it are labelled as emulated (engine name and version)."""
        return False

    @classmethod
    @abstractmethod
    def connect(cls, url: URL, **options: Any) -> Backend:
        """Open a connection. ``read_only=True`` (the default) for evaluation."""

    @abstractmethod
    def execute(self, sql: str, *, timeout: float = DEFAULT_TIMEOUT,
                max_rows: int = DEFAULT_MAX_ROWS) -> Result:
        """Run one untrusted statement; never raises for errors in the statement.

        Text that holds no statement (empty, whitespace, comments, semicolons) or a NUL character
        is refused the same way on every engine, before it reaches one: a ``syntax`` error (see
        :mod:`polysql.backends._statement_text`)."""

    @abstractmethod
    def version(self) -> str:
        """Engine version string, recorded with every result."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection. Safe to call twice."""

    def cancel(self) -> bool:
        """Stop the statements running in :meth:`execute` on this backend right now.

        Called from another thread than the one waiting in ``execute`` (a sweep interrupted twice
        with Ctrl-C must not wait up to the statement timeout). Each engine stops the statement
        the way its own timeout does, and the waiting ``execute`` returns promptly with an
        ``unavailable`` Result saying it was cancelled: a cancelled statement says nothing about
        its SQL, so like any answer that depends on the moment it is neither cached nor judged.
        A statement that entered ``execute`` but had not reached the engine yet does not run.

        Returns True when a statement was running and was told to stop. Safe to call when nothing
        runs (a no-op) and after ``close``. This default, for backends that cannot interrupt a
        statement, does nothing and returns False.
        """
        return False

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

    def coercions(self) -> list[Coercion]:
        """Values whose stored form disagreed with the type chosen for them when serving as a
        load source (dynamically typed sources such as SQLite); typed engines have none."""
        return []

    # -- load (target side) -----------------------------------------------------------------
    def load(self, source: Backend, *, fingerprint: str | None = None,
             replace: bool = False, names: str = "exact") -> LoadReport:
        """Copy every table of ``source`` into this engine, idempotently (skip when the
        fingerprint matches what is already loaded, unless ``replace``). ``names`` is a
        :mod:`polysql.naming` mode: ``exact`` (default), ``lower`` or ``snake``."""
        raise NotImplementedError(f"{self.name} backend cannot be a load target yet")

    # -- context manager --------------------------------------------------------------------
    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url.render_as_string(hide_password=True)}>"
