"""polysql.load: idempotent by source fingerprint, atomic, and clear about what went wrong."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from polysql_testkit.file_limits import locked_folder, needs_rlimits, run_cli_with_file_limit

import polysql
from polysql.core.errors import ConfigError, EngineUnavailableError, LoadError, UnknownEngineError


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "src" / "shop.sqlite"
    path.parent.mkdir()
    with sqlite3.connect(path) as conn:
        conn.execute('CREATE TABLE "Items" ("Id" INTEGER PRIMARY KEY, "Name" TEXT, "Price" NUMERIC(6,2))')
        conn.executemany('INSERT INTO "Items" VALUES (?, ?, ?)', [(1, "pen", 1.5), (2, "ink", 12)])
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('hello')")
    return path


def _duckdb_rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = duckdb.connect(str(path), read_only=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_second_load_is_skipped(source: Path, tmp_path: Path, engine: str) -> None:
    target = f"{engine}:///{tmp_path / 'out' / ('copy.' + engine)}"
    first = polysql.load(f"sqlite:///{source}", target)
    second = polysql.load(f"sqlite:///{source}", target)
    assert not first.skipped and first.tables == {"Items": 2, "notes": 1}
    assert second.skipped and second.tables == first.tables
    assert second.fingerprint == first.fingerprint
    assert not polysql.load(f"sqlite:///{source}", target, replace=True).skipped


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_changed_source_is_reloaded(source: Path, tmp_path: Path, engine: str) -> None:
    target = tmp_path / f"copy.{engine}"
    polysql.load(f"sqlite:///{source}", f"{engine}:///{target}")
    with sqlite3.connect(source) as conn:
        conn.execute("INSERT INTO notes VALUES ('again')")
    report = polysql.load(f"sqlite:///{source}", f"{engine}:///{target}")
    assert not report.skipped and report.tables["notes"] == 2
    with polysql.connect(f"{engine}:///{target}") as copy:
        assert copy.execute("SELECT count(*) FROM notes").rows == [(2,)]


def test_sidecar_records_the_load_and_the_database_holds_only_source_tables(
        source: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy.duckdb"
    report = polysql.load(f"sqlite:///{source}", f"duckdb:///{target}")
    sidecar = json.loads((tmp_path / "copy.duckdb.polysql.json").read_text())
    assert sidecar["fingerprint"] == report.fingerprint
    assert sidecar["tables"] == {"Items": 2, "notes": 1}
    assert sidecar["polysql_version"] == polysql.__version__
    tables = _duckdb_rows(target, "SELECT table_name FROM information_schema.tables ORDER BY 1")
    assert tables == [("Items",), ("notes",)]


def test_missing_target_file_is_rebuilt_despite_sidecar(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy.duckdb"
    polysql.load(f"sqlite:///{source}", f"duckdb:///{target}")
    target.unlink()
    assert not polysql.load(f"sqlite:///{source}", f"duckdb:///{target}").skipped
    assert _duckdb_rows(target, 'SELECT count(*) FROM "Items"') == [(2,)]


def _corrupt_overflow_chain(path: Path, marker: bytes) -> None:
    """Break the overflow-page chain holding ``marker``: SQLite can still tell the value is TEXT
    (typeof() does not follow the chain) but fails with "malformed" when it reads the value."""
    data = bytearray(path.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    page_start = data.index(marker) // page_size * page_size
    data[page_start:page_start + 4] = (2**31 - 1).to_bytes(4, "big")  # next page: nonsense
    path.write_bytes(bytes(data))


def test_failed_load_leaves_previous_copy_and_no_debris(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "out" / "copy.duckdb"
    polysql.load(f"sqlite:///{source}", f"duckdb:///{target}")
    before = sorted(p.name for p in target.parent.iterdir())
    marker = b"MIDDLE-OF-A-LONG-NOTE"
    with sqlite3.connect(source) as conn:
        conn.execute("INSERT INTO notes VALUES (?)", ("a" * 20_000 + marker.decode() + "b" * 20_000,))
    _corrupt_overflow_chain(source, marker)
    # "Items" is copied, then reading "notes" fails half-way through the load.
    with pytest.raises(LoadError, match="notes"):
        polysql.load(f"sqlite:///{source}", f"duckdb:///{target}")
    assert sorted(p.name for p in target.parent.iterdir()) == before
    assert _duckdb_rows(target, "SELECT count(*) FROM notes") == [(1,)]


def test_text_that_is_not_utf8_is_repaired_and_reported(source: Path, tmp_path: Path) -> None:
    with sqlite3.connect(source) as conn:
        conn.execute("INSERT INTO notes VALUES (CAST(x'41ff42' AS TEXT))")
    target = tmp_path / "copy.duckdb"
    report = polysql.load(f"sqlite:///{source}", f"duckdb:///{target}")
    assert report.tables["notes"] == 2
    (repair,) = [c for c in report.coercions if c.table == "notes"]
    assert repair.column == "body" and repair.count == 1 and "UTF-8" in repair.message
    assert ("A\ufffdB",) in _duckdb_rows(target, "SELECT body FROM notes")


def test_missing_source_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "absent.sqlite"
    with pytest.raises(LoadError, match="absent.sqlite"):
        polysql.load(f"sqlite:///{missing}", f"duckdb:///{tmp_path / 'x.duckdb'}")
    assert not (tmp_path / "x.duckdb").exists()


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_a_target_path_through_a_file_is_a_load_error(source: Path, tmp_path: Path,
                                                      engine: str) -> None:
    """A file where a folder of the target's path should be: a clear error naming that file
    (it was an internal error), and the file is left as it was."""
    blocker = tmp_path / "notes.txt"
    blocker.write_text("keep me", encoding="utf-8")
    with pytest.raises(LoadError, match=r"'.*notes\.txt' is a file, not a folder"):
        polysql.load(f"sqlite:///{source}", f"{engine}:///{blocker / ('copy.' + engine)}")
    assert blocker.read_text(encoding="utf-8") == "keep me"


def test_a_folder_as_target_is_refused_before_loading(source: Path, tmp_path: Path) -> None:
    folder = tmp_path / "copies"
    folder.mkdir()
    with pytest.raises(LoadError, match="is a folder: name the database file to create"):
        polysql.load(f"sqlite:///{source}", f"duckdb:///{folder}")
    assert list(folder.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == [
        "copies", "src"]  # nothing built beside it either
    # SQLite opens its target before loading: refused there, as an engine that cannot be used
    with pytest.raises(EngineUnavailableError, match="it is a folder; name a database file"):
        polysql.load(f"sqlite:///{source}", f"sqlite:///{folder}")
    # and read-only, as a source or an evaluation database: a folder, not a missing file
    with pytest.raises(EngineUnavailableError, match="it is a folder"):
        polysql.connect(f"sqlite:///{folder}")


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///:memory:",
                                 "duckdb:///:memory:"])
def test_a_source_that_names_no_database_is_refused(tmp_path: Path, url: str) -> None:
    """An in-memory database is empty when polysql opens it: a clear error, not a crash."""
    with pytest.raises(LoadError, match="names no database: give its file"):
        polysql.load(url, f"duckdb:///{tmp_path / 'x.duckdb'}")
    assert not (tmp_path / "x.duckdb").exists()


def test_an_url_with_a_broken_port_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot parse engine URL 'sqlite://:memory:'"):
        polysql.load("sqlite://:memory:", f"duckdb:///{tmp_path / 'x.duckdb'}")


def test_sqlite_target_refuses_a_non_sqlite_source(tmp_path: Path) -> None:
    duck = tmp_path / "d.duckdb"
    duckdb.connect(str(duck)).close()
    with pytest.raises(LoadError, match="only from a SQLite source"):
        polysql.load(f"duckdb:///{duck}", f"sqlite:///{tmp_path / 'x.sqlite'}")
    assert not (tmp_path / "x.sqlite").exists()


def test_duckdb_copy_of_a_duckdb_copy(source: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    polysql.load(f"sqlite:///{source}", f"duckdb:///{first}")
    report = polysql.load(f"duckdb:///{first}", f"duckdb:///{second}")
    assert report.tables == {"Items": 2, "notes": 1}
    query = 'SELECT "Id", "Name", "Price" FROM "Items" ORDER BY 1'
    assert _duckdb_rows(first, query) == _duckdb_rows(second, query)


def test_unknown_scheme(source: Path) -> None:
    with pytest.raises(UnknownEngineError, match="oracle"):
        polysql.load(f"sqlite:///{source}", "oracle://host/db")


def test_read_only_target_connection_cannot_load(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy.duckdb"
    polysql.load(f"sqlite:///{source}", f"duckdb:///{target}")
    with polysql.connect(f"duckdb:///{target}") as copy, \
            polysql.connect(f"sqlite:///{source}") as origin, \
            pytest.raises(LoadError, match="read_only=False"):
        copy.load(origin)


def test_sqlite_target_cannot_be_its_own_source(source: Path) -> None:
    with pytest.raises(LoadError, match="source itself"):
        polysql.load(f"sqlite:///{source}", f"sqlite:///{source}", replace=True)


def test_in_memory_duckdb_target(source: Path) -> None:
    with polysql.connect("duckdb://", read_only=False) as target, \
            polysql.connect(f"sqlite:///{source}") as origin:
        report = target.load(origin)
        assert report.tables == {"Items": 2, "notes": 1}
        assert target.execute('SELECT "Name", "Price" FROM "Items" ORDER BY "Id"').rows == [
            ("pen", Decimal("1.50")), ("ink", Decimal("12.00"))]


def test_sqlite_copy_is_verbatim(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy.sqlite"
    polysql.load(f"sqlite:///{source}", f"sqlite:///{target}")
    query = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
    with sqlite3.connect(source) as a, sqlite3.connect(target) as b:
        assert a.execute(query).fetchall() == b.execute(query).fetchall()
        rows = 'SELECT "Id", "Name", "Price", typeof("Price") FROM "Items" ORDER BY 1'
        assert a.execute(rows).fetchall() == b.execute(rows).fetchall()


def test_views_are_translated_into_duckdb_or_reported(source: Path, tmp_path: Path) -> None:
    with sqlite3.connect(source) as conn:
        conn.execute('CREATE VIEW "Dear Items" AS SELECT "Name" FROM "Items" WHERE "Price" > 5')
        conn.execute("CREATE VIEW names AS SELECT group_concat(\"Name\", '|') AS all_names "
                     'FROM "Dear Items"')
        conn.execute("CREATE VIEW broken AS SELECT * FROM no_such_table")
    target = tmp_path / "copy.duckdb"
    report = polysql.load(f"sqlite:///{source}", f"duckdb:///{target}")
    assert _duckdb_rows(target, 'SELECT * FROM "Dear Items"') == [("ink",)]
    assert _duckdb_rows(target, "SELECT all_names FROM names") == [("ink",)]
    (failed,) = [c for c in report.coercions if c.table == "broken"]
    assert "view not created" in failed.message


def test_copy_made_under_other_loading_rules_is_rebuilt(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy.duckdb"
    polysql.load(f"sqlite:///{source}", f"duckdb:///{target}")
    sidecar = tmp_path / "copy.duckdb.polysql.json"
    recorded = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps({**recorded, "format": recorded["format"] - 1}))
    assert not polysql.load(f"sqlite:///{source}", f"duckdb:///{target}").skipped


def test_reloading_a_duckdb_file_open_in_this_process_is_refused(source: Path,
                                                                 tmp_path: Path) -> None:
    target = tmp_path / "copy.duckdb"
    polysql.load(f"sqlite:///{source}", f"duckdb:///{target}")
    with sqlite3.connect(source) as conn:
        conn.execute("INSERT INTO notes VALUES ('changed')")
    with polysql.connect(f"duckdb:///{target}") as evaluation:
        with pytest.raises(LoadError, match="open in this process"):
            polysql.load(f"sqlite:///{source}", f"duckdb:///{target}")
        assert evaluation.execute("SELECT count(*) FROM notes").rows == [(1,)]
    assert polysql.load(f"sqlite:///{source}", f"duckdb:///{target}").tables["notes"] == 2


def test_sqlite_copy_of_a_wal_source_opens_read_only_without_side_files(tmp_path: Path) -> None:
    source = tmp_path / "wal.sqlite"
    writer = sqlite3.connect(source)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("CREATE TABLE t (a INTEGER)")
    writer.execute("INSERT INTO t VALUES (1)")
    writer.commit()  # still in the -wal file: the writer stays open, nothing is checkpointed
    try:
        out = tmp_path / "out"
        polysql.load(f"sqlite:///{source}", f"sqlite:///{out / 'copy.sqlite'}")
        with polysql.connect(f"sqlite:///{out / 'copy.sqlite'}") as copy:
            assert copy.execute("SELECT a FROM t").rows == [(1,)]
        assert sorted(p.name for p in out.iterdir()) == ["copy.sqlite", "copy.sqlite.polysql.json"]
    finally:
        writer.close()


def test_generated_columns_and_without_rowid_tables_are_copied(tmp_path: Path) -> None:
    source = tmp_path / "g.sqlite"
    with sqlite3.connect(source) as conn:
        conn.execute("CREATE TABLE g (a INTEGER, b INTEGER GENERATED ALWAYS AS (a * 2) VIRTUAL, "
                     "c TEXT GENERATED ALWAYS AS ('x' || a) STORED)")
        conn.execute("INSERT INTO g (a) VALUES (1), (2)")
        conn.execute("CREATE TABLE w (k TEXT PRIMARY KEY, v REAL) WITHOUT ROWID")
        conn.execute("INSERT INTO w VALUES ('a', 1.5)")
    target = tmp_path / "g.duckdb"
    polysql.load(f"sqlite:///{source}", f"duckdb:///{target}")
    assert _duckdb_rows(target, "SELECT * FROM g ORDER BY a") == [(1, 2, "x1"), (2, 4, "x2")]
    assert _duckdb_rows(target, "SELECT * FROM w") == [("a", 1.5)]


@needs_rlimits
def test_a_copy_the_disk_cannot_hold_is_a_load_error_at_every_step(tmp_path: Path) -> None:
    """A full disk, for real: ``polysql load`` into DuckDB in a process whose files may not
    grow past a limit (see polysql_testkit.file_limits). Wherever the write fails -- a table's
    commit, the final checkpoint -- the load says it could not be written (exit 3), never an
    internal error, and leaves neither a copy nor temporary files."""
    source = tmp_path / "big.sqlite"
    with sqlite3.connect(source) as conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT, n REAL)")
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)",
                         [(i, f"row {i} " + "x" * (i % 90), i / 7) for i in range(5_000)])
    conn.close()
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "copy.duckdb"
    said = set()
    # small limits stop a table's commit (its log), larger ones the final checkpoint (the file
    # grows by whole blocks of 256 KiB there)
    for limit in range(64 * 1024, 1024 * 1024 + 1, 128 * 1024):
        code, output = run_cli_with_file_limit(
            ["load", f"sqlite:///{source}", f"duckdb:///{target}"], limit,
            env={"POLYSQL_CACHE": str(tmp_path / "cache")})
        if code == 0:  # the copy fits under this limit: nothing to check
            continue
        assert code == 3, (limit, output)
        assert "internal error" not in output and "File too large" in output, (limit, output)
        assert ("cannot load table 't' into DuckDB" in output
                or f"cannot write the DuckDB copy '{target}'" in output), (limit, output)
        said.add("checkpoint" if "cannot write the DuckDB copy" in output else "table")
        assert sorted(p.name for p in folder.iterdir()) == [], (limit, output)
    assert said == {"table", "checkpoint"}


@pytest.fixture
def unwritable_folder(tmp_path: Path) -> Iterator[Path]:
    with locked_folder(tmp_path / "locked") as folder:
        yield folder


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_a_target_in_a_folder_that_cannot_be_written_is_a_load_error(
        source: Path, unwritable_folder: Path, engine: str) -> None:
    target = unwritable_folder / f"copy.{engine}"
    name = "DuckDB" if engine == "duckdb" else "SQLite"
    with pytest.raises(LoadError, match=f"cannot write the {name} copy '{target}'"):
        polysql.load(f"sqlite:///{source}", f"{engine}:///{target}")
    assert list(unwritable_folder.iterdir()) == []
