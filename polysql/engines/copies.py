"""Evaluation copies: the one way a task gets a database on an engine to evaluate SQL against.

The sweep, ``polysql rewrite``, the reward environment and the debug evaluation all get their
databases here. A copy is built from one of two sources:

* a source database (a dataset's SQLite file, by URL): copied with :func:`polysql.load`;
* a :class:`~polysql.backends.base.SetupScript` (a rewrite case's ``setup_sql``): run into a fresh
  database by the engine's own :meth:`~polysql.backends.base.Backend.build_from_script`.

Or it is not built at all: an engine URL whose database part holds ``{db_id}``
(``postgresql://reader@host/{db_id}``) names databases that already exist, one per db_id, which
polysql did not load. They are opened read-only as they are (the backend refuses a login that
could write), and their fingerprint is their own content's (schema and row counts), so records
made on them are bound to what the database held, like any other input.

Either way the copy lives where the engine's ``Backend.evaluation_url`` puts it (a file under the
cache, a database on the server), is rebuilt only when its fingerprint changed (the source's
content digest, the script's sha256: both recorded by the engine, outside the copy), and is opened
read-only, so evaluated SQL reaches it through nothing else.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL

from polysql.backends.base import Backend, SetupScript
from polysql.core import paths
from polysql.core.digest import content_digest
from polysql.core.errors import EngineError, EngineUnavailableError
from polysql.core.schema import LoadReport, Table
from polysql.engines.loading import load
from polysql.engines.registry import alias_url, backend_class, parse_url

__all__ = ["DB_ID_PLACEHOLDER", "Built", "EvaluationCopies", "EvaluationCopy", "Source",
           "build_copy", "copy_url", "engine_name", "engine_url", "layout_digest", "names_existing",
           "open_copy", "open_existing"]

#: in an engine URL's database part: the databases exist already, one per db_id
DB_ID_PLACEHOLDER = "{db_id}"

#: what a copy is built from: the URL of a source database, or a setup script
Source = str | SetupScript


def engine_url(engine: str | URL) -> URL:
    """The base URL of an engine given as a URL or a short name (``duckdb``, ``postgres``)."""
    if isinstance(engine, URL):
        return engine
    text = engine.strip()
    return parse_url(text if "://" in text else alias_url(text))


def engine_name(backend: type[Backend], url: URL) -> str:
    """The engine's name in results: the backend's, marked when an emulator stands in for the
    real service (an emulator's results must never pass for the real service's)."""
    return f"{backend.name}-emulated" if backend.is_emulated(url) else backend.name


def copy_url(engine: str | URL, *, dataset: str, db_id: str, cache_dir: Path | None = None) -> URL:
    """Where ``engine`` keeps its copy of ``dataset``/``db_id`` (``cache_dir``: polysql's cache
    unless given)."""
    base = engine_url(engine)
    return backend_class(base).evaluation_url(base, dataset=dataset, db_id=db_id,
                                              cache_dir=cache_dir or paths.cache_dir())


def _client_failed(backend: type[Backend], exc: ImportError) -> EngineUnavailableError:
    """A client library that is installed but fails to import when first used (as some import
    theirs only when a session starts) makes the engine unavailable, like a missing one."""
    extra = backend.info.extra or backend.name
    return EngineUnavailableError(
        f"engine {backend.name!r} unavailable: its client library cannot be imported ({exc}); "
        f"install it with pip install 'polysql[{extra}]'")


def _ours(exc: ImportError) -> bool:
    """polysql's own module failed to import: a bug, never reported as a missing client."""
    return (exc.name or "").split(".")[0] == "polysql"


@dataclass(slots=True)
class EvaluationCopy:
    """A copy open read-only for evaluation. Close it (or use ``with``) when done."""

    engine: str  # the engine's name in results (see engine_name)
    url: URL  # where the copy lives (with the administrator's login on server engines)
    backend: Backend  # read-only: the only way evaluated SQL reaches the copy
    report: LoadReport  # what building it did; ``report.skipped`` when it was there already

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> EvaluationCopy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class Built:
    """A copy that is built (or was already there), not opened yet."""

    backend: type[Backend]
    engine: str
    url: URL
    report: LoadReport

    def open(self, **options: Any) -> EvaluationCopy:
        """Open the copy read-only; ``options`` go to the backend's ``connect``."""
        try:
            backend = self.backend.connect(self.url, read_only=True, **options)
        except ImportError as exc:
            if _ours(exc):
                raise
            raise _client_failed(self.backend, exc) from exc
        return EvaluationCopy(self.engine, self.url, backend, self.report)


def build_copy(engine: str | URL, *, dataset: str, db_id: str, source: Source,
               cache_dir: Path | None = None, **options: Any) -> Built:
    """Build ``engine``'s copy of ``dataset``/``db_id`` from ``source``, unless the copy there was
    built from the same fingerprint. ``options`` go to the backend's ``connect`` (the build's
    writable connection, e.g. ``reader_role`` for PostgreSQL).

    Raises :class:`EngineUnavailableError` when the engine cannot be used here at all (client
    library missing, server unreachable); a source or script that cannot be built raises its
    engine's error (:class:`LoadError` naming a failing statement, :class:`ConfigError` for an
    engine that cannot build from scripts).
    """
    base = engine_url(engine)
    backend = backend_class(base)
    target = backend.evaluation_url(base, dataset=dataset, db_id=db_id,
                                    cache_dir=cache_dir or paths.cache_dir())
    try:
        if isinstance(source, SetupScript):
            report = backend.build_from_script(target, source, **options)
        else:
            report = load(source, target.render_as_string(hide_password=False), **options)
    except ImportError as exc:
        if _ours(exc):
            raise
        raise _client_failed(backend, exc) from exc
    return Built(backend, engine_name(backend, base), target, report)


def names_existing(engine: str | URL) -> bool:
    """Whether ``engine``'s URL names existing databases (its database part holds ``{db_id}``)."""
    return DB_ID_PLACEHOLDER in (engine_url(engine).database or "")


def layout_digest(engine: str | URL) -> str | None:
    """A digest of what copies polysql builds on ``engine`` hold beyond the source's tables
    (:attr:`~polysql.backends.base.EngineInfo.copy_layout`); None when they hold nothing more, or
    when the URL names existing databases, which polysql does not build."""
    if names_existing(engine):
        return None
    layout = backend_class(engine_url(engine)).info.copy_layout
    return content_digest("copy-layout", layout) if layout else None


def existing_fingerprint(tables: Sequence[Table], change_marker: str | None = None) -> str:
    """A digest of what an existing database holds as far as can be told cheaply: every
    table's name, columns, keys and row count, and the engine's ``change_marker`` (its own record
    of row changes, see :meth:`~polysql.backends.base.Backend.change_marker`), which also moves on
    a change that keeps every count (an UPDATE). Without a marker such a change is not seen."""
    described = [
        (table.name, [(c.name, str(c.type), c.nullable, c.declared_type) for c in table.columns],
         list(table.primary_key), table.row_count) for table in tables]
    if change_marker is None:  # the digest of engines without a marker stays what it was
        return content_digest("existing", described)
    return content_digest("existing", [described, change_marker])


def open_existing(engine: str | URL, *, db_id: str, **options: Any) -> EvaluationCopy:
    """Open the existing database ``engine``'s URL names for ``db_id``, read-only, as it is."""
    base = engine_url(engine)
    backend = backend_class(base)
    url = base.set(database=(base.database or "").replace(DB_ID_PLACEHOLDER, db_id))
    try:
        opened = backend.connect(url, read_only=True, **options)
    except ImportError as exc:
        if _ours(exc):
            raise
        raise _client_failed(backend, exc) from exc
    try:
        tables = opened.tables()  # one read: it counts every table's rows
        marker = opened.change_marker()
    except BaseException:
        opened.close()
        raise
    shown = url.render_as_string(hide_password=True)
    report = LoadReport(source=shown, target=shown, fingerprint=existing_fingerprint(tables, marker),
                        skipped=True, tables={t.name: t.row_count or 0 for t in tables})
    return EvaluationCopy(engine_name(backend, base), url, opened, report)


def open_copy(engine: str | URL, *, dataset: str, db_id: str, source: Source,
              cache_dir: Path | None = None, **options: Any) -> EvaluationCopy:
    """:func:`build_copy`, then open the copy read-only (``options`` go to both); for a URL
    naming existing databases, :func:`open_existing` (nothing is built)."""
    if names_existing(engine):
        return open_existing(engine, db_id=db_id, **options)
    return build_copy(engine, dataset=dataset, db_id=db_id, source=source, cache_dir=cache_dir,
                      **options).open(**options)


def _again(failure: EngineError) -> EngineError:
    """The same failure, raised anew for another thread (the first one's traceback is its own)."""
    try:
        again = type(failure)(*failure.args)
    except TypeError:  # a subclass that takes other arguments
        again = EngineError(str(failure))
    again.__cause__ = failure.__cause__
    return again


# A copy kept open by EvaluationCopies: (name the task knows the engine by, dataset, db_id).
_Key = tuple[str, str, str]


class EvaluationCopies:
    """Copies kept open for a whole run: each built and opened on first use, then reused, and
    closed together. Safe to share between threads: two threads asking for one copy get the
    same connection, built once; different copies are built in parallel. A thread that runs
    statements beside others on the same copy asks for a ``slot`` of its own: each slot is a
    connection of its own to the one copy.

    A copy is known by the name the task gives its engine (a sweep's ``pg15`` and ``pg16`` are
    two engines behind one backend), its dataset and its database; the name defaults to the
    engine's URL. ``options`` go to every copy's ``connect``.
    """

    def __init__(self, cache_dir: Path | None = None, **options: Any) -> None:
        self.cache_dir = cache_dir
        self.options = options
        self._open: dict[_Key, EvaluationCopy] = {}
        # connections beyond the first (slot 0) to an open copy, by (copy, slot)
        self._more: dict[tuple[_Key, int], EvaluationCopy] = {}
        self._locks: dict[_Key, threading.Lock] = {}
        self._guard = threading.Lock()
        # per copy: how many tries at building or opening it have ended, and the last one's
        # failure
        self._tries: dict[_Key, int] = {}
        self._failures: dict[_Key, EngineError] = {}
        #: what building each copy did, kept after it is closed
        self.reports: dict[_Key, LoadReport] = {}

    @staticmethod
    def key(engine: str | URL, dataset: str, db_id: str, name: str | None = None) -> _Key:
        label = name or engine_url(engine).render_as_string(hide_password=False)
        return (label, dataset, db_id)

    def _lock_for(self, key: _Key) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def get(self, engine: str | URL, *, dataset: str, db_id: str,
            source: Source | Callable[[], Source], name: str | None = None,
            slot: int = 0,
            waiting: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
            ) -> EvaluationCopy:
        """The open copy of ``dataset``/``db_id`` on ``engine``, built and opened on first use,
        through ``slot``'s connection. ``source`` may be a function giving it, called only then
        (finding a dataset's database can cost more than reusing an open copy). ``waiting`` is
        entered while another thread is building or opening the copy (a sweep counts that
        wait nowhere: the build counts in the thread doing it)."""
        key = self.key(engine, dataset, db_id, name)
        lock = self._lock_for(key)
        tried_before = self._tries.get(key, 0)
        if not lock.acquire(blocking=False):
            with waiting():
                lock.acquire()
        try:
            first = self._open.get(key)
            if first is None:
                failure = self._failures.get(key)
                if failure is not None and self._tries.get(key, 0) > tried_before:
                    # it failed while this thread waited for it: trying again at once would
                    # only repeat the wait (a source locked by a writer holds each try for
                    # seconds) before failing the same way
                    raise _again(failure)
                try:
                    first = open_copy(engine, dataset=dataset, db_id=db_id,
                                      source=source() if callable(source) else source,
                                      cache_dir=self.cache_dir, **self.options)
                except EngineError as exc:
                    self._failures[key] = exc
                    raise
                except BaseException:  # not the copy's failure (Ctrl-C, a bug): not shared
                    self._failures.pop(key, None)
                    raise
                finally:
                    self._tries[key] = self._tries.get(key, 0) + 1
                self._failures.pop(key, None)
                with self._guard:
                    self._open[key] = first
                    self.reports[key] = first.report
            if slot == 0:
                return first
            copy = self._more.get((key, slot))
            if copy is None:
                # the same copy, built (or found) once: only another read-only connection
                backend = type(first.backend).connect(first.url, read_only=True, **self.options)
                copy = EvaluationCopy(first.engine, first.url, backend, first.report)
                with self._guard:
                    self._more[(key, slot)] = copy
            return copy
        finally:
            lock.release()

    def reopen(self, engine: str | URL, *, dataset: str, db_id: str,
               source: Source | Callable[[], Source], name: str | None = None,
               slot: int = 0) -> EvaluationCopy:
        """Drop ``slot``'s connection to a copy, which died, and open it afresh (for slot 0,
        rebuilding the copy if it is gone)."""
        key = self.key(engine, dataset, db_id, name)
        with self._lock_for(key), self._guard:
            old = self._open.pop(key, None) if slot == 0 else self._more.pop((key, slot), None)
        if old is not None:
            # the connection is already broken; closing it is best effort
            with contextlib.suppress(Exception):
                old.close()
        return self.get(engine, dataset=dataset, db_id=db_id, source=source, name=name,
                        slot=slot)

    def close(self) -> None:
        with self._guard:
            copies = [*self._more.values(), *self._open.values()]
            self._more.clear()
            self._open.clear()
        for copy in copies:
            # closing at shutdown must not mask the run's own outcome
            with contextlib.suppress(Exception):
                copy.close()

    def __enter__(self) -> EvaluationCopies:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
