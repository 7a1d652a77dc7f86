"""The Backend protocol: what every engine module implements.

Small on purpose: ``connect``, ``load``, ``execute``, ``version``, ``close`` plus introspection
(``tables``/``read_table``) so any backend can serve as a load *source*.

Evaluated SQL is untrusted. ``execute`` must run it read-only, with file and network access the
engine would offer disabled, under a timeout enforced by the engine's own mechanism, and must never
raise for a problem with the statement itself: it returns a :class:`~polysql.Result` whose
``error`` says what went wrong.
"""

from __future__ import annotations

import hashlib
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from polysql.backends._common.statement_text import STANDARD_COMMENTS, CommentSyntax
from polysql.core.errors import ConfigError, LoadError
from polysql.core.model import Result
from polysql.core.schema import Coercion, LoadReport, Table

if TYPE_CHECKING:
    # annotations only: the engine catalog reads EngineInfo through this module, and code that
    # only lists engines or reads records should not import Arrow and SQLAlchemy for it
    import pyarrow as pa
    from sqlalchemy.engine import URL

DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_ROWS = 100_000


# What a scaffolded rewrite case's setup script creates, in SQL most engines accept; an engine
# whose DDL differs declares its own in EngineInfo.setup_template.
DEFAULT_SETUP_TEMPLATE = """\
CREATE TABLE items (
    id INTEGER NOT NULL PRIMARY KEY,
    name VARCHAR(40) NOT NULL,
    price DECIMAL(10, 2) NOT NULL
);"""


@dataclass(frozen=True, slots=True)
class EngineInfo:
    """Every fact about one engine, declared once, in ``backends/<engine>/__init__.py`` as
    ``INFO``. Reading it never imports the engine's client library. Every table that lists
    engines (short names, extras, display names, prompts, error wording, checksums, templates)
    is built from these: adding an engine is one package, one entry point and one extra.
    """

    #: registry key, pytest marker and the engine's name in results ("postgres")
    name: str
    #: sqlglot dialect the engine speaks ("postgres")
    dialect: str
    #: how people write its name ("PostgreSQL")
    display_name: str
    #: URL schemes it serves; each is a ``polysql.backends`` entry point
    schemes: tuple[str, ...]
    #: short names typed on the command line -> the URL each stands for ("" for a hosted service
    #: whose URL comes from ``url_env``)
    aliases: Mapping[str, str]
    #: the pip extra that installs its client ("" when polysql's own dependencies suffice)
    extra: str = ""
    #: modules of the client library, checked (never imported) before the engine is used
    client_modules: tuple[str, ...] = ()
    #: environment variable holding the URL of a hosted service with no default instance
    url_env: str | None = None
    #: display names of aliases that are another product speaking the same dialect
    flavors: Mapping[str, str] = field(default_factory=dict)
    #: an engine a plain ``polysql sweep`` uses (embedded, nothing to set up)
    default_sweep: bool = False
    #: ``{sql}`` wrapped so the engine returns (row count, order-insensitive checksum) of its
    #: result, for graders that compare large results without fetching them; None: no such SQL
    checksum_sql: str | None = None
    #: DDL of the ``items`` table a scaffolded rewrite case starts from
    setup_template: str = DEFAULT_SETUP_TEMPLATE
    #: (error signal, regex) pairs for how this engine words errors the shared patterns miss
    #: (case-insensitive; see :mod:`polysql.analysis.signals`). A refusal (``forbidden``) whose
    #: message matches takes the pair's signal: the engine refused what is really a mistake in
    #: the statement.
    error_vocabulary: tuple[tuple[str, str], ...] = ()
    #: what a prompt at the ``pitfalls`` level tells a model about writing for this engine, as
    #: (topic, text) pairs: the topic is a stable key ("integer_division") that tests and
    #: analyses use to see which hazards a prompt covered, the text is what the model reads
    pitfalls: tuple[tuple[str, str], ...] = ()
    #: how model answers name the engine or its dialect ("postgresql", "psql"), lower case
    text_names: tuple[str, ...] = ()
    #: the first major release whose first number alone names it, so prompts say
    #: "PostgreSQL 15" (from PostgreSQL 10 on); None: major.minor ("MariaDB 10.11")
    major_only_from: int | None = None
    #: a throwaway server for ``polysql up`` (Docker image, port, URL template); None: none
    container: Container | None = None
    #: several evaluated statements may run at once, each on a connection of its own to one
    #: evaluation copy (a sweep then gives the engine a worker per core, up to four); False for
    #: an engine whose embedded library or emulator serves one statement at a time
    concurrent_statements: bool = False
    #: comments its SQL has beyond ``--`` and ``/* */`` (empty-statement detection)
    comments: CommentSyntax = STANDARD_COMMENTS
    #: what an evaluation copy polysql builds on this engine holds beyond the source's tables
    #: (PostgreSQL's fold schema), or a change in how it types them that answers can show
    #: (MySQL's DATETIME digits), as a short tag ("" for neither). Records and cached results
    #: on built copies carry it, so a copy whose shape changed is evaluated again.
    copy_layout: str = ""
    #: how its values are decoded into Python, as a short tag, changed whenever a value starts
    #: coming back in another form ("" for the first form). Cached results and sweep records carry
    #: it, so results fetched in an older form are fetched and judged again.
    result_form: str = ""

    def display(self, alias: str | None = None) -> str:
        """The engine's name as people write it, or the flavor an alias stands for."""
        return self.flavors.get((alias or "").lower(), self.display_name)


@dataclass(frozen=True, slots=True)
class Container:
    """A throwaway server for ``polysql up`` (testcontainers)."""

    #: the default Docker image
    image: str
    #: ``module:function`` that starts it: ``function(image, stack, password) -> admin URL``
    starter: str


@dataclass(frozen=True, slots=True)
class SetupScript:
    """A DDL + data script an evaluation database is built from (a rewrite case's ``setup_sql``),
    for :meth:`Backend.build_from_script`.

    Scripts are self-contained (no files, no transaction control) and create their objects in
    the database's default schema; each statement runs as written, in order.
    """

    #: the statements, as written, in order
    statements: tuple[str, ...]
    #: what the build is recorded under: the sha256 of the script's text
    fingerprint: str
    #: where the script came from (its path), for reports and messages
    origin: str

    @classmethod
    def from_text(cls, text: str, statements: Sequence[str], origin: str) -> SetupScript:
        """The script ``text`` split into ``statements``; its fingerprint covers the whole text,
        comments and all, so any edit rebuilds."""
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return cls(tuple(statements), f"sha256:{digest}", origin)

    def run(self, target: URL, execute: Callable[[str], object],
            errors: type[Exception] | tuple[type[Exception], ...]) -> None:
        """Run every statement with ``execute``; the first that raises one of ``errors`` stops
        the build with a LoadError naming it, its number and ``target``."""
        for number, statement in enumerate(self.statements, 1):
            try:
                execute(statement)
            except errors as exc:
                shown = statement if len(statement) <= 300 else statement[:300] + " ..."
                where = target.render_as_string(hide_password=True)
                raise LoadError(
                    f"statement {number} of {len(self.statements)} in {self.origin} failed on "
                    f"{where}: {str(exc).strip() or type(exc).__name__}\n    {shown}") from exc

    def report(self, target: URL, tables: Mapping[str, int], *, skipped: bool = False,
               started: float | None = None) -> LoadReport:
        """What building ``target`` did (``started``: its ``time.perf_counter()`` at the start)."""
        elapsed = time.perf_counter() - started if started is not None else 0.0
        return LoadReport(source=self.origin, target=target.render_as_string(hide_password=True),
                          fingerprint=self.fingerprint, skipped=skipped, tables=dict(tables),
                          elapsed=elapsed)


def _safe_name(text: str) -> str:
    """A file-name-safe rendering of a dataset or database id."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "_"


class Backend(ABC):
    """One connection to one engine holding one database."""

    #: the engine's facts (its package's ``INFO``)
    info: ClassVar[EngineInfo]
    #: registry key, pytest marker and the name shown in reports: ``info.name``
    name: ClassVar[str]
    #: sqlglot dialect name used to parse/render SQL for this engine: ``info.dialect``
    dialect: ClassVar[str]
    #: declared features, e.g. {"read_only", "timeout", "load_target", "load_source"};
    #: "parallel_read": as a load source, ``read_table`` may run on several threads at once
    capabilities: ClassVar[frozenset[str]] = frozenset()

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
        :mod:`polysql.backends._common.statement_text`)."""

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

    def change_marker(self) -> str | None:
        """A cheap token, read from the engine's own bookkeeping, that changes when rows of the
        database change -- also changes that keep every row count (an UPDATE) -- so results
        cached on a database polysql did not load are not served after it changed. None when
        the engine keeps no such bookkeeping (then only the schema and row counts tell)."""
        return None

    def coercions(self) -> list[Coercion]:
        """Values whose stored form disagreed with the type chosen for them when serving as a
        load source (dynamically typed sources such as SQLite); typed engines have none."""
        return []

    # -- load (target side) -----------------------------------------------------------------
    def load(self, source: Backend, *, fingerprint: str | None = None,
             replace: bool = False, names: str = "exact") -> LoadReport:
        """Copy every table of ``source`` into this engine, idempotently (skip when the
        fingerprint matches what is already loaded, unless ``replace``). ``names`` is a
        :mod:`polysql.core.naming` mode: ``exact`` (default), ``lower`` or ``snake``."""
        raise NotImplementedError(f"{self.name} backend cannot be a load target yet")

    @classmethod
    def build_from_script(cls, target: URL, script: SetupScript, **options: Any) -> LoadReport:
        """Build the evaluation database at ``target`` (an administrator's URL, as for ``load``)
        by running ``script`` into a fresh database, unless one built from
        ``script.fingerprint`` is there already (then a ``skipped`` report). Like a load, the
        build is recorded where the engine's loads record theirs (never inside the evaluation
        database), leaves the database readable by the login ``connect(target, **options)``
        evaluates as, and is all or nothing. ``options`` are ``connect``'s. A statement that
        fails raises LoadError naming it (:meth:`SetupScript.run`)."""
        raise ConfigError(
            f"the {cls.name} engine cannot host setup_sql cases yet: give the case a sqlite or "
            f"dataset database instead, or implement {cls.__name__}.build_from_script")

    # -- reader logins for databases polysql did not load ---------------------------------------
    @classmethod
    def create_reader(cls, admin: URL, login: str, databases: Sequence[str]) -> str:
        """Create the login ``login`` (or give it a new password) that may only read
        ``databases`` (existing databases polysql did not load), as the administrator ``admin``;
        return its password. Engines without logins refuse."""
        raise ConfigError(f"polysql cannot create reader logins on {cls.name}: create a login "
                          "that may only SELECT with the engine's own tools and sweep with its URL")

    @classmethod
    def drop_reader(cls, admin: URL, login: str) -> bool:
        """Drop a login :meth:`create_reader` made, with its grants; False if there is none."""
        raise ConfigError(f"polysql creates no reader logins on {cls.name}, so it drops none")

    # -- context manager --------------------------------------------------------------------
    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url.render_as_string(hide_password=True)}>"
