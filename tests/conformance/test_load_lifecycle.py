"""Loading on every engine that can be a load target: idempotent (an unchanged source is
skipped, a changed one reloaded, ``replace`` reloads regardless), all or nothing (a failed load
leaves the previous copy as it was, with no staging debris), and careful (a database polysql did
not load is not overwritten without ``replace``; an evaluation connection cannot load). Then the
connection side of a target: never loaded or unreachable is ``unavailable``, an unknown option is
a ConfigError, a closed backend answers ``unavailable``.

These tests need a database of their own, not the shared read-only fixture copy: each engine's
``polysql_testkit.engine_<name>`` hook hands out fresh targets (``fresh_target``), removes them
(``drop_target``), looks behind a load from outside polysql (``staging_leftovers``,
``make_foreign``, ``foreign_tables``, ``unreachable_url``) and declares in ``NOT_APPLICABLE`` the
behaviours here that do not apply to it, each with the reason. A test of such a behaviour takes its
engines from :func:`engines_with`, so it is never collected for an engine it does not apply to.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest
import sqlglot
from polysql_testkit import availability

import polysql
from polysql.backends import catalog
from polysql.backends.base import Backend
from polysql.backends.sqlite.backend import SQLiteBackend
from polysql.core.errors import ConfigError, EngineUnavailableError, LoadError
from polysql.core.schema import LoadReport, Table

#: behaviours an engine's hook may declare NOT_APPLICABLE (with the reason)
OPTIONAL_BEHAVIOURS = {
    "foreign_target_refused": "a target holding tables polysql did not load is refused unless "
                              "replace=True",
    "unreachable_server": "a server that does not answer is unavailable at connect",
    "other_name_modes": "a load takes names='snake' (or 'lower') as well as exact names",
}

ENGINE_NAMES = [info.name for info in catalog.infos()]


def hook(engine: str) -> ModuleType:
    return importlib.import_module(f"polysql_testkit.engine_{engine}")


def _declared_not_applicable(engine: str) -> dict[str, str]:
    try:
        module = hook(engine)
    except ImportError:  # the engine's client is missing: collected, then skipped as unavailable
        return {}
    return dict(module.NOT_APPLICABLE)


def engines_with(behaviour: str | None = None, *,
                 notimpl: dict[str, tuple[type[BaseException] | None, str]] | None = None
                 ) -> list[Any]:
    """``target`` params: every installed engine, less those whose hook declares ``behaviour``
    not applicable. Each param carries the engine's marker, as the suite's ``backend`` does.

    ``notimpl`` maps an engine to (the exception it raises instead, or None when the test fails
    some other way; why): a gap polysql has not closed there. It becomes a strict xfail -- as the
    suite's ``notimpl`` marker does for ``backend`` tests -- so the run fails once the gap is
    fixed and the entry is still here."""
    assert behaviour is None or behaviour in OPTIONAL_BEHAVIOURS, behaviour
    gaps = notimpl or {}
    assert set(gaps) <= set(ENGINE_NAMES), gaps
    params = []
    for name in ENGINE_NAMES:
        if behaviour in _declared_not_applicable(name):
            continue
        marks = [getattr(pytest.mark, name)]
        if name in gaps:
            raises, reason = gaps[name]
            marks.append(pytest.mark.xfail(strict=True, raises=raises,
                                           reason=f"notimpl on {name}: {reason}"))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


def engine_hook(engine: str) -> ModuleType:
    """The engine's hook, once its client library is known to be installed (hooks import it);
    skips -- or fails, when POLYSQL_REQUIRE names the engine -- otherwise."""
    problem = availability.client_problem(engine)
    if problem is not None:
        availability.unavailable(engine, problem)
    return hook(engine)


def build_sqlite(path: Path, script: str) -> Path:
    """A SQLite source written with plain sqlite3 (independent of the code under test)."""
    conn = sqlite3.connect(path)
    try:
        conn.executescript(script)
        conn.commit()
    finally:
        conn.close()
    return path


@dataclass
class Target:
    """A database of one engine that no load has touched yet, removed after the test."""

    engine: str
    hook: ModuleType
    url: str
    options: dict[str, Any] = field(default_factory=dict)

    def writer(self) -> Backend:
        """A loading (administrator) connection."""
        return polysql.connect(self.url, read_only=False, **self.options)

    def evaluation(self) -> Backend:
        """A fresh read-only evaluation connection."""
        return polysql.connect(self.url, **self.options)

    def load(self, source: Path | Backend, **options: Any) -> LoadReport:
        """Load a SQLite file (or an open source backend) into the target."""
        with contextlib.ExitStack() as stack:
            if isinstance(source, Path):
                source = stack.enter_context(polysql.connect(f"sqlite:///{source}"))
            writer = stack.enter_context(self.writer())
            return writer.load(source, **options)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """Sorted rows of ``sql`` (written with "double-quoted" names) on a fresh evaluation
        connection, so the answer never comes from a connection opened before a reload."""
        with self.evaluation() as backend:
            result = backend.execute(render(sql, backend))
        assert result.ok, result.error
        return sorted(result.rows, key=repr)

    def leftovers(self) -> list[str]:
        return list(self.hook.staging_leftovers(self.url))


def render(sql: str, backend: Backend) -> str:
    """Test SQL written for PostgreSQL, in the engine's dialect (quoting differs)."""
    return sqlglot.transpile(sql, read="postgres", write=backend.dialect)[0]


@pytest.fixture
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    """A fresh load target on ``request.param``'s engine; parametrize indirectly with
    :func:`engines_with`."""
    engine: str = request.param
    module = engine_hook(engine)
    tag = f"lc{os.getpid()}x{uuid.uuid4().hex[:8]}"
    workdir = tmp_path / "targets"
    workdir.mkdir()
    try:
        url, options = module.fresh_target(tag, workdir)
    except module.ServerUnavailable as exc:
        availability.unavailable(engine, str(exc))
    made = Target(engine, module, url, dict(options))
    try:
        yield made
    finally:
        with contextlib.suppress(module.ServerUnavailable, EngineUnavailableError):
            module.drop_target(url, options)


# -- sources -------------------------------------------------------------------------------------

# "five" in an INTEGER column: every typed engine reports a coercion for it (a SQLite target copies
# the file verbatim and has none), which a skipped load must hand back as the load it skipped did.
SOURCE = """
CREATE TABLE "Items" ("k" INTEGER PRIMARY KEY, "label" TEXT, "qty" INTEGER);
INSERT INTO "Items" VALUES (1, 'a', 5), (2, 'b', 'five');
CREATE TABLE "Extra" ("x" INTEGER);
INSERT INTO "Extra" VALUES (1), (2), (3);
"""
TABLES = {"Items": 2, "Extra": 3}
ITEMS = 'SELECT "k", "label" FROM "Items"'

# The same source changed: a row more, a table gone, a table new.
CHANGE = """
INSERT INTO "Items" VALUES (3, 'c', 7);
DROP TABLE "Extra";
CREATE TABLE "Fresh" ("x" INTEGER);
INSERT INTO "Fresh" VALUES (42);
"""
CHANGED_TABLES = {"Items": 3, "Fresh": 1}


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return build_sqlite(tmp_path / "source.sqlite", SOURCE)


def _names(backend: Backend) -> list[str]:
    return sorted(t.name for t in backend.tables())


class SourceVanished(OSError):
    """What the failing source raises (a disk or network going away mid-copy)."""


class _BrokenBackup:
    """A sqlite3 connection whose page-by-page backup breaks after the first page."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def backup(self, target: sqlite3.Connection, **_: Any) -> None:
        def vanish(status: int, remaining: int, total: int) -> None:
            raise SourceVanished("the source vanished mid-copy")

        self._conn.backup(target, pages=1, progress=vanish)


class FailingSource(SQLiteBackend):
    """A real SQLite source that breaks down midway through a copy: after the first batch of the
    second table it reads (the row path every typed engine uses), or after the first page of a
    backup (the path a SQLite target copies a SQLite source by)."""

    read = 0

    def read_table(self, table: Table, *, batch_size: int = 65_536) -> Iterator[pa.RecordBatch]:
        self.read += 1
        if self.read < 2:
            yield from super().read_table(table, batch_size=batch_size)
            return
        for batch in super().read_table(table, batch_size=1):
            yield batch
            raise SourceVanished("the source vanished mid-copy")

    @contextlib.contextmanager
    def backup_reader(self) -> Iterator[Any]:
        with super().backup_reader() as conn:
            yield _BrokenBackup(conn)


def _vanished(exc: BaseException) -> bool:
    """The failure is the source's own, raised as it is or wrapped (with its cause) in a
    LoadError: never swallowed, never replaced by an unrelated error."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, SourceVanished):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


# -- idempotence ---------------------------------------------------------------------------------

@pytest.mark.parametrize("target", engines_with(), indirect=True)
def test_an_unchanged_source_is_skipped(target: Target, source: Path) -> None:
    first = target.load(source)
    assert not first.skipped and first.tables == TABLES
    again = target.load(source)
    assert again.skipped
    assert again.fingerprint == first.fingerprint and again.tables == first.tables
    assert again.coercions == first.coercions
    assert target.rows(ITEMS) == [(1, "a"), (2, "b")]
    assert target.leftovers() == []


@pytest.mark.parametrize("target", engines_with(), indirect=True)
def test_a_changed_source_is_reloaded(target: Target, source: Path) -> None:
    first = target.load(source)
    build_sqlite(source, CHANGE)
    changed = target.load(source)
    assert not changed.skipped and changed.fingerprint != first.fingerprint
    assert changed.tables == CHANGED_TABLES
    assert target.rows(ITEMS) == [(1, "a"), (2, "b"), (3, "c")]
    assert target.rows('SELECT "x" FROM "Fresh"') == [(42,)]
    with target.evaluation() as backend:
        assert _names(backend) == ["Fresh", "Items"]  # the table the source lost is gone
    assert target.leftovers() == []
    assert target.load(source).skipped  # and the new copy is what a next load compares with


@pytest.mark.parametrize("target", engines_with(), indirect=True)
def test_replace_reloads_an_unchanged_source(target: Target, source: Path) -> None:
    first = target.load(source)
    forced = target.load(source, replace=True)
    assert not forced.skipped
    assert forced.fingerprint == first.fingerprint and forced.tables == TABLES
    assert target.rows(ITEMS) == [(1, "a"), (2, "b")]
    assert target.leftovers() == []


@pytest.mark.parametrize("target", engines_with("other_name_modes"), indirect=True)
def test_a_change_of_name_mode_is_reloaded(target: Target, tmp_path: Path) -> None:
    """The same source under other names is another copy: a load never skips into it. (Names
    that differ by more than case: the BigQuery emulator cannot replace a table by one whose
    name differs only in case.)"""
    source = build_sqlite(tmp_path / "named.sqlite", """
        CREATE TABLE "OrderItems" ("ItemId" INTEGER PRIMARY KEY, "UnitLabel" TEXT);
        INSERT INTO "OrderItems" VALUES (1, 'a'), (2, 'b');""")
    target.load(source)
    snake = target.load(source, names="snake")
    assert not snake.skipped and snake.tables == {"order_items": 2}
    with target.evaluation() as backend:
        assert _names(backend) == ["order_items"]
    assert target.rows('SELECT "item_id", "unit_label" FROM "order_items"') == [(1, "a"), (2, "b")]
    assert target.load(source, names="snake").skipped
    back = target.load(source)
    assert not back.skipped and back.tables == {"OrderItems": 2}
    assert target.rows('SELECT "ItemId", "UnitLabel" FROM "OrderItems"') == [(1, "a"), (2, "b")]


# -- all or nothing ------------------------------------------------------------------------------

@pytest.mark.parametrize("target", engines_with(), indirect=True)
def test_a_failed_load_leaves_the_previous_copy(target: Target, source: Path) -> None:
    target.load(source)
    build_sqlite(source, CHANGE)
    for replace in (False, True):  # an ordinary reload and a forced one alike
        with FailingSource.connect(f"sqlite:///{source}") as failing, \
                pytest.raises(Exception) as failure:  # which one: checked below
            target.load(failing, replace=replace)
        assert _vanished(failure.value), failure.value
        with target.evaluation() as backend:
            assert _names(backend) == ["Extra", "Items"]
        assert target.rows(ITEMS) == [(1, "a"), (2, "b")]
        assert target.rows('SELECT "x" FROM "Extra"') == [(1,), (2,), (3,)]
        assert target.leftovers() == []
    retried = target.load(source)  # the failures recorded nothing: the next load does it all
    assert not retried.skipped and retried.tables == CHANGED_TABLES
    assert target.rows(ITEMS) == [(1, "a"), (2, "b"), (3, "c")]


# -- what a load may not touch --------------------------------------------------------------------

@pytest.mark.parametrize("target", engines_with("foreign_target_refused"), indirect=True)
def test_a_target_polysql_did_not_load_is_kept_without_replace(target: Target,
                                                               source: Path) -> None:
    target.hook.make_foreign(target.url)
    # the refusal says why (polysql did not load it) and what to do
    with pytest.raises(LoadError, match=r"(did not load|holds no polysql).*replace=True"):
        target.load(source)
    assert target.hook.foreign_tables(target.url) == ["precious"]
    report = target.load(source, replace=True)
    assert not report.skipped and report.tables == TABLES
    assert "precious" not in target.hook.foreign_tables(target.url)
    assert target.rows(ITEMS) == [(1, "a"), (2, "b")]


def test_an_evaluation_connection_cannot_load(backend: Backend, fixture_db: Path) -> None:
    """The shared fixture copy's own read-only connection refuses to load, and its copy stays."""
    before = backend.execute(render('SELECT count(*) FROM "Customers"', backend)).rows
    with polysql.connect(f"sqlite:///{fixture_db}") as src, \
            pytest.raises(LoadError, match="read-only"):
        backend.load(src)
    assert backend.execute(render('SELECT count(*) FROM "Customers"', backend)).rows == before


# -- connecting ----------------------------------------------------------------------------------

@pytest.mark.parametrize("target", engines_with(), indirect=True)
def test_a_target_never_loaded_is_unavailable(target: Target) -> None:
    with pytest.raises(EngineUnavailableError):
        target.evaluation().close()
    assert target.leftovers() == []


@pytest.mark.parametrize("engine", engines_with("unreachable_server"))
def test_an_unreachable_server_is_unavailable(engine: str) -> None:
    url, says = engine_hook(engine).unreachable_url()
    for read_only in (True, False):  # evaluating and loading alike
        with pytest.raises(EngineUnavailableError, match=says):
            polysql.connect(url, read_only=read_only)


@pytest.mark.parametrize("target", engines_with(), indirect=True)
def test_an_unknown_option_is_a_config_error(target: Target, source: Path) -> None:
    target.load(source)
    for read_only in (True, False):
        with pytest.raises(ConfigError, match="no_such_option"):
            polysql.connect(target.url, read_only=read_only, no_such_option=1, **target.options)


@pytest.mark.parametrize("target", engines_with(), indirect=True)
def test_a_closed_backend_reports_unavailable(target: Target, source: Path) -> None:
    target.load(source)
    backend = target.evaluation()
    assert backend.execute(render(ITEMS, backend)).ok
    backend.close()
    backend.close()  # closing twice is fine
    result = backend.execute(render(ITEMS, backend))
    assert result.error is not None and result.error.kind == "unavailable", result
    assert result.rows == [] and result.columns == []


# -- the declarations behind engines_with() -------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_every_exclusion_is_a_known_behaviour_with_a_reason(engine: str) -> None:
    """A misspelt behaviour would silently include an engine, an empty reason hide why one is
    left out."""
    declared = _declared_not_applicable(engine)
    assert set(declared) <= set(OPTIONAL_BEHAVIOURS), declared
    assert all(len(reason.split()) >= 5 for reason in declared.values()), declared
