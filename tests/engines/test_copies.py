"""The evaluation-copy service: copies of a source database and databases built from setup
scripts, on real file engines (SQLite, DuckDB), idempotent by fingerprint and opened read-only.

Server engines build the same way through their own ``build_from_script``; they are proven on the
servers by tests/rewrite/test_rewrite_databases.py and tests/rewrite/test_spark_pool.py.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from polysql.backends.base import SetupScript
from polysql.core.errors import ConfigError, EngineError, LoadError
from polysql.engines.copies import (
    EvaluationCopies,
    build_copy,
    copy_url,
    engine_name,
    engine_url,
    open_copy,
)
from polysql.engines.registry import backend_class, connect

pytestmark = [pytest.mark.sqlite, pytest.mark.duckdb]

ENGINES = ("sqlite", "duckdb")
SCRIPT = ("CREATE TABLE items (id INTEGER PRIMARY KEY, name VARCHAR(20) NOT NULL)",
          "INSERT INTO items VALUES (1, 'apple'), (2, 'pear')")


@pytest.fixture
def source(tmp_path: Path) -> str:
    path = tmp_path / "source.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x INTEGER PRIMARY KEY, label TEXT)")
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(1, "a"), (2, "b"), (3, None)])
    conn.close()
    return f"sqlite:///{path}"


def _script(*statements: str) -> SetupScript:
    return SetupScript.from_text(";\n".join(statements) + ";\n", statements, "setup.sql")


@pytest.mark.parametrize("engine", ENGINES)
def test_a_source_is_copied_once_where_the_engine_keeps_copies(engine: str, source: str,
                                                               tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with open_copy(engine, dataset="ds", db_id="db1", source=source, cache_dir=cache) as first:
        assert not first.report.skipped and first.report.tables == {"t": 3}
        assert first.backend.execute("SELECT count(*) FROM t").rows == [(3,)]
        assert first.engine == engine and first.backend.name == engine
    expected = copy_url(engine, dataset="ds", db_id="db1", cache_dir=cache)
    assert first.url == expected
    assert expected.database is not None and Path(expected.database).is_file()
    assert Path(expected.database).is_relative_to(cache)
    with connect(source) as original:
        fingerprint = original.fingerprint()
    with open_copy(engine, dataset="ds", db_id="db1", source=source, cache_dir=cache) as again:
        assert again.report.skipped and again.report.fingerprint == fingerprint


@pytest.mark.parametrize("engine", ENGINES)
def test_a_copy_is_opened_read_only(engine: str, source: str, tmp_path: Path) -> None:
    with open_copy(engine, dataset="ds", db_id="db1", source=source,
                   cache_dir=tmp_path) as copy:
        for statement in ("DELETE FROM t", "DROP TABLE t", "CREATE TABLE u (x INTEGER)"):
            assert not copy.backend.execute(statement).ok, statement
        assert copy.backend.execute("SELECT count(*) FROM t").rows == [(3,)]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_script_builds_once_and_again_when_it_changes(engine: str, tmp_path: Path) -> None:
    script = _script(*SCRIPT)
    with open_copy(engine, dataset="rw", db_id="c1", source=script, cache_dir=tmp_path) as first:
        assert not first.report.skipped
        assert first.report.tables == {"items": 2}
        assert first.report.fingerprint == script.fingerprint
        assert first.backend.execute("SELECT name FROM items ORDER BY id").rows == [
            ("apple",), ("pear",)]
    built = build_copy(engine, dataset="rw", db_id="c1", source=script, cache_dir=tmp_path)
    assert built.report.skipped and built.report.tables == {"items": 2}
    changed = _script(*SCRIPT, "INSERT INTO items VALUES (3, 'fig')")
    with open_copy(engine, dataset="rw", db_id="c1", source=changed, cache_dir=tmp_path) as third:
        assert not third.report.skipped and third.report.tables == {"items": 3}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_failing_statement_is_named_and_leaves_the_last_build(engine: str,
                                                                tmp_path: Path) -> None:
    good = _script(*SCRIPT)
    open_copy(engine, dataset="rw", db_id="c1", source=good, cache_dir=tmp_path).close()
    broken = _script(*SCRIPT, "INSERT INTO nowhere VALUES (1)")
    with pytest.raises(LoadError, match=r"(?s)statement 3 of 3 in setup\.sql failed on .*nowhere"):
        build_copy(engine, dataset="rw", db_id="c1", source=broken, cache_dir=tmp_path)
    # the copy built before is still there, and still counts as built from the good script
    built = build_copy(engine, dataset="rw", db_id="c1", source=good, cache_dir=tmp_path)
    assert built.report.skipped


def test_an_engine_without_the_hook_cannot_build_from_scripts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    duckdb_backend = backend_class("duckdb://")
    monkeypatch.delattr(duckdb_backend, "build_from_script")  # the Backend protocol's default
    with pytest.raises(ConfigError, match="duckdb engine cannot host setup_sql cases yet"):
        build_copy("duckdb", dataset="rw", db_id="c1", source=_script(*SCRIPT),
                   cache_dir=tmp_path)
    assert not list(tmp_path.rglob("*.duckdb"))


def test_engines_are_named_by_short_name_or_url() -> None:
    assert engine_url("duckdb").render_as_string() == "duckdb://"
    assert engine_url(" sqlite ").render_as_string() == "sqlite://"
    assert engine_url("duckdb:///x.duckdb").database == "x.duckdb"
    url = engine_url("duckdb")
    assert engine_name(backend_class(url), url) == "duckdb"
    with pytest.raises(ConfigError, match="unknown engine 'oracle'"):
        engine_url("oracle")


def test_only_a_worker_that_finds_the_copy_being_built_waits(source: str, tmp_path: Path
                                                             ) -> None:
    """A sweep counts a copy's build in the worker doing it; another worker asking for the same
    copy meanwhile waits inside ``waiting`` (which a sweep counts nowhere), and only it."""
    copies = EvaluationCopies(tmp_path)
    building, second_waits = threading.Event(), threading.Event()
    waited: list[str] = []

    def find_source() -> str:  # called by the building worker: hold it until the other waits
        building.set()
        assert second_waits.wait(timeout=30)
        return source

    def waiting_as(who: str) -> Callable[[], AbstractContextManager[object]]:
        @contextmanager
        def wait() -> Iterator[None]:
            waited.append(who)
            second_waits.set()
            yield

        return wait

    builder = threading.Thread(target=lambda: copies.get(
        "duckdb", dataset="ds", db_id="db1", source=find_source, waiting=waiting_as("builder")))
    builder.start()
    assert building.wait(timeout=30)
    second = copies.get("duckdb", dataset="ds", db_id="db1", source=find_source, slot=1,
                        waiting=waiting_as("second"))
    builder.join()
    assert waited == ["second"]
    assert second.backend.execute("SELECT count(*) FROM t").rows == [(3,)]
    # an open copy is handed out without waiting
    copies.get("duckdb", dataset="ds", db_id="db1", source=find_source, slot=1,
               waiting=waiting_as("later"))
    assert waited == ["second"]
    copies.close()


def test_a_build_that_fails_is_not_repeated_by_the_workers_that_waited_for_it(
        tmp_path: Path) -> None:
    """Workers that waited for a copy whose build failed get that failure at once, instead of
    each trying (and waiting: a source locked by a writer holds a try for seconds) in turn; a
    worker asking later tries again."""
    copies = EvaluationCopies(tmp_path)
    building, second_waits = threading.Event(), threading.Event()
    asked: list[str] = []
    missing = f"sqlite:///{tmp_path / 'missing.sqlite'}"

    def find_source() -> str:
        asked.append("source")
        building.set()
        assert second_waits.wait(timeout=30)
        return missing

    @contextmanager
    def waiting() -> Iterator[None]:
        second_waits.set()
        yield

    failures: list[BaseException] = []

    def build() -> None:
        try:
            copies.get("duckdb", dataset="ds", db_id="db1", source=find_source)
        except EngineError as exc:
            failures.append(exc)

    builder = threading.Thread(target=build)
    builder.start()
    assert building.wait(timeout=30)
    with pytest.raises(EngineError, match="does not exist") as second:
        copies.get("duckdb", dataset="ds", db_id="db1", source=find_source, slot=1,
                   waiting=waiting)
    builder.join()
    assert asked == ["source"]  # one try, shared by both
    assert len(failures) == 1 and type(second.value) is type(failures[0])
    with pytest.raises(EngineError, match="does not exist"):
        copies.get("duckdb", dataset="ds", db_id="db1", source=find_source)
    assert asked == ["source", "source"]
    copies.close()


def test_copies_of_a_run_are_built_once_shared_and_closed_together(source: str,
                                                                    tmp_path: Path) -> None:
    asked: list[str] = []

    def find_source() -> str:
        asked.append(source)
        return source

    copies = EvaluationCopies(tmp_path)
    seen = []

    def worker() -> None:
        seen.append(copies.get("duckdb", dataset="ds", db_id="db1", source=find_source))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(asked) == 1  # the source is looked up only to build
    assert len({id(copy.backend) for copy in seen}) == 1
    first = seen[0]
    # another name for the same engine is another copy of its own
    other = copies.get("duckdb", dataset="ds", db_id="db1", source=source, name="second")
    assert other.backend is not first.backend
    fresh = copies.reopen("duckdb", dataset="ds", db_id="db1", source=find_source)
    assert fresh.backend is not first.backend and fresh.report.skipped
    assert not first.backend.execute("SELECT 1").ok  # the dropped connection was closed
    assert fresh.backend.execute("SELECT count(*) FROM t").rows == [(3,)]
    copies.close()
    assert not fresh.backend.execute("SELECT 1").ok and not other.backend.execute("SELECT 1").ok
    assert set(copies.reports) == {(engine_url("duckdb").render_as_string(False), "ds", "db1"),
                                   ("second", "ds", "db1")}
