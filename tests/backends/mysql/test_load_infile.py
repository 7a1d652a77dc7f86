"""LOAD DATA LOCAL INFILE on the real local server: the data file carries every value exactly,
a server that refuses LOCAL INFILE is loaded with INSERTs (and the report says so), and warnings
the server raises while reading the file fail the load instead of passing silently."""

from __future__ import annotations

import math
import random
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pymysql
import pytest
from polysql_testkit import mysql_fixtures
from sqlalchemy.engine import URL

from polysql.backends.mysql import load_copy, load_infile, load_pipe, load_rows
from polysql.backends.mysql.backend import MySQLBackend
from polysql.backends.mysql.connect import login_from_url
from polysql.backends.mysql.load_copy import scalar
from polysql.backends.mysql.load_infile import Loading, load_file, loader_session
from polysql.backends.mysql.load_pipe import PipedRows
from polysql.backends.mysql.load_spool import InfileSpool
from polysql.backends.sqlite.backend import SQLiteBackend
from polysql.core.errors import LoadError
from polysql.core.schema import Table
from polysql.engines.registry import connect

pytestmark = pytest.mark.mysql

fx = mysql_fixtures
admin_url, loader, make_sqlite = fx.admin_url, fx.loader, fx.make_sqlite

# Text that collides with the file format: the NULL word, quotes, separators, backslashes.
TRICKY_TEXT = ["NULL", "null", "\\N", "", '"', '""', '","', 'a"\nb', 'end"', "x,y\nz\r\n",
               "\\", "back\\", "\\\"", "  trailing  ", "\t", "\x00nul", "Zoë 🙂 e\u0301"]
# Bytes that would be field or line ends, quotes or invalid UTF-8 if they travelled as text.
TRICKY_BLOBS = [b"", b"\x00", b'"', b",", b"\n", b"\\N", b"NULL", b"\xff\xfe\x80", bytes(range(256))]
FLOATS = [0.1, 1 / 3, -2.5, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
          123456789012345680.0, 1e-7, 9007199254740993.0]


def _rows(url: URL, sql: str) -> list[tuple[Any, ...]]:
    conn = fx.admin_connection(url.set(database=None), url.database)
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())
    finally:
        conn.close()


def _tricky_source(make_sqlite: Any) -> Any:
    path = make_sqlite("""
        CREATE TABLE words (id INTEGER PRIMARY KEY, s TEXT, b BLOB, f REAL, d DECIMAL(30, 10),
                            ok BOOLEAN, day DATE, at DATETIME);
        CREATE TABLE keyed (k TEXT PRIMARY KEY, n INTEGER);
    """)
    import sqlite3

    rng = random.Random(7)
    floats = FLOATS + [struct.unpack("<d", rng.randbytes(8))[0] for _ in range(300)]
    floats = [f for f in floats if math.isfinite(f)]
    conn = sqlite3.connect(path)
    rows = []
    for i in range(max(len(TRICKY_TEXT), len(TRICKY_BLOBS), len(floats))):
        rows.append((i, TRICKY_TEXT[i] if i < len(TRICKY_TEXT) else None,
                     TRICKY_BLOBS[i] if i < len(TRICKY_BLOBS) else None,
                     floats[i] if i < len(floats) else None,
                     ["0", "0.0000001234", "-99999.9999999999", "1"][i % 4],
                     i % 3 == 0 if i % 5 else None, f"{1 + i:04d}-02-28",
                     f"2024-02-29 23:59:{i % 60:02d}.{i:06d}"))
    conn.executemany("INSERT INTO words VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.executemany("INSERT INTO keyed VALUES (?, ?)",
                     [(f"k{i}\"{i}", i) for i in range(1000)])
    conn.commit()
    conn.close()
    return path, rows, floats


@pytest.mark.parametrize("form", ["pipe", "spool"])
def test_every_kind_of_value_arrives_exactly(loader: fx.Loader, make_sqlite: Any,
                                             monkeypatch: pytest.MonkeyPatch,
                                             form: str) -> None:
    """Through a pipe (tables held in memory) and through a spool file (larger tables)."""
    if form == "spool":
        monkeypatch.setattr(load_rows, "HOLD_BYTES", 0)
    path, rows, floats = _tricky_source(make_sqlite)
    url, report = loader(path)
    assert report.coercions == [] and report.tables == {"words": len(rows), "keyed": 1000}
    loaded = _rows(url, "SELECT id, s, b, f, ok, day, at FROM words ORDER BY id")
    assert [r[1] for r in loaded] == [r[1] for r in rows]  # NULL, 'NULL' and '' stay apart
    assert [r[2] for r in loaded] == [r[2] for r in rows]
    # Floats read back bit for bit. (-0.0 is not among them: SQLite already stores it as 0.)
    assert [r[3] for r in loaded][:len(floats)] == floats
    assert [repr(r[3]) for r in loaded][:len(floats)] == [repr(f) for f in floats]
    assert [r[4] for r in loaded] == [None if r[5] is None else int(r[5]) for r in rows]
    assert str(loaded[7][6]) == "2024-02-29 23:59:07.000007"
    assert _rows(url, "SELECT CAST(d AS CHAR) FROM words WHERE id < 4 ORDER BY id") == [
        ("0.0000000000",), ("0.0000001234",), ("-99999.9999999999",),
        ("1.0000000000",)]
    assert _rows(url, "SELECT count(*), min(n), max(n) FROM keyed") == [(1000, 0, 999)]


@pytest.fixture
def local_infile_off(admin_url: URL) -> Iterator[None]:
    """The server's own switch turned off for the test, and restored however the test ends."""
    conn = fx.admin_connection(admin_url)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT @@GLOBAL.local_infile")
            (before,) = cur.fetchone()
            cur.execute("SET GLOBAL local_infile = 0")
        try:
            yield
        finally:
            with conn.cursor() as cur:
                cur.execute(f"SET GLOBAL local_infile = {int(before)}")
    finally:
        conn.close()


def _refusal(report: Any) -> Any:
    notes = [c for c in report.coercions if "LOAD DATA LOCAL INFILE was refused" in c.message]
    assert len(notes) == 1, report.coercions
    return notes[0]


def test_server_setting_off_falls_back_to_inserts_and_says_so(
        loader: fx.Loader, make_sqlite: Any, admin_url: URL, local_infile_off: None) -> None:
    path, rows, _ = _tricky_source(make_sqlite)
    url, report = loader(path)
    note = _refusal(report)
    assert "local_infile setting is OFF" in note.message and note.count == len(rows) + 1000
    assert report.tables == {"words": len(rows), "keyed": 1000}
    assert _rows(url, "SELECT s, b FROM words ORDER BY id") == [(r[1], r[2]) for r in rows]


def test_refused_statement_falls_back_with_the_same_data(
        loader: fx.Loader, make_sqlite: Any, admin_url: URL,
        monkeypatch: pytest.MonkeyPatch) -> None:
    path, rows, _ = _tricky_source(make_sqlite)
    fast_url, fast = loader(path)
    assert fast.coercions == []
    # A client that does not offer LOCAL INFILE: the server's setting is ON, but it refuses the
    # statement itself, which the probe before the first table finds.
    monkeypatch.setattr(load_infile, "CLIENT_LOCAL_INFILE", False)
    slow_url, slow = loader(path)
    note = _refusal(slow)
    assert any(f"error {code}:" in note.message for code in load_infile.REFUSED), note.message
    assert note.count == len(rows) + 1000
    assert slow.tables == fast.tables
    # Row for row the same tables, definitions included.
    assert fx.checksum(admin_url, slow_url.database) == fx.checksum(admin_url, fast_url.database)


@pytest.fixture
def scratch(admin_url: URL) -> Iterator[tuple[Loading, str]]:
    """A loader session and an empty database of its own."""
    database = fx.unique()
    admin = fx.admin_connection(admin_url)
    try:
        with admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{database}`")
        with loader_session(login_from_url(admin_url), admin) as loading:
            yield loading, database
    finally:
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
        admin.close()


@contextmanager
def _data_file(columns: dict[str, pa.Array], kinds: list[str], form: str) -> Iterator[str]:
    """The rows as LOAD DATA reads them: a spool file, or a pipe rendered while it is read."""
    batch = pa.record_batch(list(columns.values()), names=list(columns))
    if form == "pipe":
        with PipedRows([batch], kinds).feeding() as path:
            yield path
        return
    spool = InfileSpool()
    try:
        spool.add_batch(batch, kinds)
        spool.finish()
        yield spool.path
    finally:
        spool.close()


@pytest.mark.parametrize("form", ["spool", "pipe"])
def test_a_value_the_server_changes_fails_the_load(scratch: tuple[Loading, str],
                                                   form: str) -> None:
    loading, database = scratch
    with loading.conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{database}`.t (id BIGINT PRIMARY KEY, small TINYINT, "
                    f"day DATE)")
    columns = {"id": pa.array([1, 2]), "small": pa.array([5, 300]),
               "day": pa.array(["2024-01-01", "2024-13-45"])}
    kinds = ["integer"] * 2 + ["date"]
    with _data_file(columns, kinds, form) as path, pytest.raises(
            LoadError, match=r"stored 2 of 2 rows with 2 warning\(s\).*Out of range"):
        load_file(loading.conn, f"`{database}`.t", ["id", "small", "day"],
                  ["integer", "integer", "date"], path, 2)


@pytest.mark.parametrize("form", ["spool", "pipe"])
def test_rows_the_key_skips_are_an_integrity_error(scratch: tuple[Loading, str],
                                                   form: str) -> None:
    loading, database = scratch
    with loading.conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{database}`.t (id BIGINT PRIMARY KEY, s TEXT)")
    columns = {"id": pa.array([1, 1, 2]), "s": pa.array(["a", "b", "c"])}
    # LOCAL makes the server skip the duplicate with a warning; the loader makes it an error.
    with _data_file(columns, ["integer", "text"], form) as path, pytest.raises(
            pymysql.err.IntegrityError, match="Duplicate entry"):
        load_file(loading.conn, f"`{database}`.t", ["id", "s"], ["integer", "text"], path, 3)


@pytest.mark.parametrize("form", ["spool", "pipe"])
def test_a_statement_that_never_reads_its_file_fails_at_once(scratch: tuple[Loading, str],
                                                             form: str) -> None:
    """The server refuses the statement before it asks for the data: its error is raised, and
    nothing is left waiting for a reader."""
    loading, database = scratch
    columns = {"id": pa.array(range(200_000))}
    with _data_file(columns, ["integer"], form) as path, pytest.raises(
            pymysql.err.ProgrammingError, match="doesn't exist"):
        load_file(loading.conn, f"`{database}`.missing", ["id"], ["integer"], path, 200_000)
    assert scalar(loading.conn, "SELECT 1") == 1  # the connection is still in step


@pytest.fixture
def spooled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the tables the loads in a test spool to a file."""
    names: list[str] = []
    spool_table = load_copy.spool_table

    def spool_and_count(table_rows: Any, *, infile: bool) -> Any:
        names.append(table_rows.table.name)
        return spool_table(table_rows, infile=infile)

    monkeypatch.setattr(load_copy, "spool_table", spool_and_count)
    return names


@pytest.mark.parametrize("why", ["too large to hold", "no named pipes"])
def test_held_and_spooled_tables_load_alike(loader: fx.Loader, make_sqlite: Any,
                                            admin_url: URL, monkeypatch: pytest.MonkeyPatch,
                                            spooled: list[str], why: str) -> None:
    """A table too large to hold, or any table where named pipes cannot be made, goes through
    a spool file; the copy is the same."""
    path, rows, _ = _tricky_source(make_sqlite)
    held_url, held = loader(path)
    assert spooled == []
    if why == "no named pipes":
        monkeypatch.setattr(load_pipe, "PIPES", False)
        load_pipe.pipes_work.cache_clear()
    else:
        monkeypatch.setattr(load_rows, "HOLD_BYTES", 1_000)
    try:
        spooled_url, from_spool = loader(path)
    finally:
        load_pipe.pipes_work.cache_clear()
    assert sorted(spooled) == ["keyed", "words"]
    assert from_spool.tables == held.tables and from_spool.coercions == held.coercions == []
    assert fx.checksum(admin_url, spooled_url.database) == fx.checksum(admin_url,
                                                                      held_url.database)


class MiscountedSource(SQLiteBackend):
    """A real SQLite source that claims one row more for table ``a`` than it holds, so the
    load fails on the first table while the next one is being spooled."""

    def tables(self) -> list[Table]:
        return [replace(t, row_count=(t.row_count or 0) + 1) if t.name == "a" else t
                for t in super().tables()]


class VanishingSource(SQLiteBackend):
    """A real SQLite source whose table ``b`` breaks off after its first row."""

    def read_table(self, table: Table, *, batch_size: int = 65_536) -> Iterator[pa.RecordBatch]:
        if table.name != "b":
            yield from super().read_table(table, batch_size=batch_size)
            return
        yield from super().read_table(table, batch_size=1)
        raise LoadError("source vanished mid-copy")


@pytest.mark.parametrize(("source_class", "message"), [
    (MiscountedSource, "source reported"), (VanishingSource, "vanished")])
def test_a_failed_load_leaves_no_spool_behind(make_sqlite: Any, admin_url: URL, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              source_class: type[SQLiteBackend],
                                              message: str) -> None:
    path = make_sqlite("CREATE TABLE a (x INTEGER); CREATE TABLE b (s TEXT); "
                       "CREATE TABLE c (y REAL); INSERT INTO a VALUES (1), (2);"
                       "INSERT INTO b VALUES ('p'), ('q'); INSERT INTO c VALUES (0.5);")
    spools = tmp_path / "spools"
    spools.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spools))
    url = admin_url.set(database=fx.unique())
    source = source_class.connect(f"sqlite:///{path}")
    try:
        with connect(url, read_only=False) as target, pytest.raises(LoadError, match=message):
            target.load(source)
    finally:
        source.close()
        MySQLBackend.drop(url)
    assert list(spools.iterdir()) == []
