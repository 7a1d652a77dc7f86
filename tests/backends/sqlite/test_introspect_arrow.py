"""The Arrow reader (ADBC) and the source cache give exactly what the row reader gives.

The row reader (``read_batches``) is the reference: it repairs and reports odd values. Every
table here is read both ways and must come out value for value the same, with the same coercions;
where the fast reader cannot match it, it must step aside (answer None), never differ.
"""

from __future__ import annotations

import itertools
import json
import random
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from polysql_testkit.sqlite_files import Build, built_sqlite

import polysql
from polysql.backends.sqlite import introspect_arrow
from polysql.backends.sqlite.introspect_cache import SOURCES, table_key
from polysql.backends.sqlite.introspect_rows import read_batches
from polysql.core.errors import LoadError
from polysql.core.schema import Coercion, Table


def _all_types(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE t (i INTEGER, f REAL, d NUMERIC(12,2), s TEXT, b BOOLEAN, "
                "dt DATE, ts DATETIME, bl BLOB, loose)")
    rows: list[tuple[Any, ...]] = [
        (1, 1.5, "12.25", "plain", 1, "2024-02-29", "2024-02-29 23:59:59.123456", b"\x00\xff", 7),
        (None, None, None, None, None, None, None, None, None),
        (-(2**63), -0.0, "-0.01", "trailing  ", 0, "1900-01-01", "1969-12-31 00:00:00",
         b"", "x"),
        (2**63 - 1, 2, "99999999.99", "ümlaut 😀", "true", "2100-12-31", "2000-01-01 12:00:00",
         b"text", 2.5),
        (0, float("inf"), "0", "", "FALSE", None, "2024-01-01 00:00:00.5", None, None),
    ]
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)


def _leading_nulls_then_text(con: sqlite3.Connection) -> None:
    # more NULLs than the driver's first batch: it types the column before seeing the text
    con.execute("CREATE TABLE t (s)")
    con.executemany("INSERT INTO t VALUES (?)", [(None,)] * 70_000 + [("late",), (3,)])


def _blob_in_text(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE t (s TEXT)")
    con.executemany("INSERT INTO t VALUES (?)", [("a",), (b"\xff\xfe",), (b"ok",)])


def _bad_utf8_text(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE t (s TEXT)")
    con.execute("INSERT INTO t VALUES ('fine')")
    con.execute("INSERT INTO t VALUES (CAST(x'ff41' AS TEXT))")


def _huge_int_in_float(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE t (a, b REAL)")
    con.executemany("INSERT INTO t VALUES (?, ?)",
                    [(1.5, 1.0), (2**60 + 1, 2.0), (3, None), (-(2**62) - 1, 4.0)])


def _ints_then_reals(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE t (a)")
    con.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(70_000)] + [(0.25,)])


def _one_class_per_column(con: sqlite3.Connection) -> None:
    # what the type scan's own read can hand to the load (every column but ``mixed``, whose
    # numbers and texts only the row reader's expression renders), with an index that covers
    # ``mixed`` alone: reading that column apart must not take the index's order
    con.execute("CREATE TABLE t (i INTEGER, f REAL, d NUMERIC(12,2), s TEXT, b BOOLEAN, "
                "dt DATE, ts DATETIME, bl BLOB, loose, empty TEXT, mixed)")
    con.execute("CREATE INDEX t_mixed ON t (mixed DESC)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)", [
        (n, n / 4, (n * 37 % 101) / 4, f"s{n} ü", n % 2, f"20{n % 90 + 10}-0{n % 9 + 1}-1{n % 9}",
         f"2020-01-01 10:{n % 60:02d}:00.{n:07d}", bytes([n % 256]), n * 3,
         n * 7 % 300 if n % 2 else f"m{n}")
        for n in range(300)] + [(None,) * 10])


def _decimals(con: sqlite3.Connection) -> None:
    # made from the doubles the type scan read: money at its declared scale, negative too; a
    # scale SQLite's printing widens (0.125); integers beside reals; 15 digits. Read apart, as
    # SQLite prints it: 16 digits (an integer past what a double tells apart from its
    # neighbours)
    con.execute("CREATE TABLE t (money NUMERIC(12,2), fine DECIMAL(10,4), wide NUMERIC(18,2), "
                "huge NUMERIC(20,0))")
    rows: list[tuple[Any, ...]] = [
        (round((n * 37 % 100_001) / 100 - 400, 2), round((n * 13 % 20_000) / 10_000, 4),
         1234567890123.45 if n % 2 else -n, 10**15 + n)
        for n in range(2_000)]
    rows += [(-0.0, 0.0001, None, None), (0.125, 3, 0, -(10**15)), (None,) * 4]
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)


def _decimals_of_arithmetic(con: sqlite3.Connection) -> None:
    # doubles that are not their printed decimals (0.1 * 3 prints 0.3), and tiny ones SQLite
    # prints with an exponent: left to SQLite's printing
    con.execute("CREATE TABLE t (computed NUMERIC, tiny NUMERIC)")
    con.executemany("INSERT INTO t VALUES (?, ?)",
                    [(n * 0.1, n * 1e-10) for n in range(2_000)] + [(7, -1e-10), (None, None)])


CASES: dict[str, Build] = {
    "one_class_per_column": _one_class_per_column,
    "decimals": _decimals,
    "decimals_of_arithmetic": _decimals_of_arithmetic,
    "all_types": _all_types,
    "leading_nulls_then_text": _leading_nulls_then_text,
    "blob_in_text": _blob_in_text,
    "bad_utf8_text": _bad_utf8_text,
    "huge_int_in_float": _huge_int_in_float,
    "ints_then_reals": _ints_then_reals,
}


def _row_reader(path: Path) -> tuple[pa.Table, list[Coercion]]:
    with polysql.connect(f"sqlite:///{path}") as source:
        (table,) = source.tables()
    found: list[Coercion] = []
    con = sqlite3.connect(path)
    try:
        batches = list(read_batches(con, table, batch_size=1000, lock=threading.Lock(),
                                    on_coercion=found.append))
    finally:
        con.close()
    return pa.Table.from_batches(batches), found


@pytest.mark.parametrize("loading", [False, True], ids=["schema-first", "as-a-load"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_backend_reads_what_the_row_reader_reads(tmp_path: Path, case: str,
                                                 loading: bool) -> None:
    """Also as a load reads (fingerprint first): then the columns the type scan read come from
    that read, and only the rest are read again."""
    path = built_sqlite(tmp_path / "src.sqlite", CASES[case])
    expected, expected_coercions = _row_reader(path)
    SOURCES.clear()
    for _ in range(2):  # the second connection takes the kept copy
        with polysql.connect(f"sqlite:///{path}") as source:
            if loading:
                source.fingerprint()
            (table,) = source.tables()
            before = list(source.coercions())
            got = pa.Table.from_batches(list(source.read_table(table)))
            read_coercions = source.coercions()[len(before):]
        assert got.schema == expected.schema
        assert got.to_pylist() == expected.to_pylist()
        assert read_coercions == expected_coercions


@pytest.mark.parametrize("case", ["all_types"])
def test_the_fast_reader_serves_plain_tables(tmp_path: Path, case: str) -> None:
    """Guards the speed path itself: a table with nothing odd in it is read by ADBC."""
    path = built_sqlite(tmp_path / "src.sqlite", CASES[case])
    with polysql.connect(f"sqlite:///{path}") as source:
        (table,) = source.tables()
    fast = introspect_arrow.read_table(path, table)
    assert fast is not None
    assert fast.to_pylist() == _row_reader(path)[0].to_pylist()


@pytest.mark.parametrize("case", ["blob_in_text", "bad_utf8_text", "huge_int_in_float",
                                  "ints_then_reals", "leading_nulls_then_text"])
def test_the_fast_reader_steps_aside_where_values_need_care(tmp_path: Path, case: str) -> None:
    path = built_sqlite(tmp_path / "src.sqlite", CASES[case])
    with polysql.connect(f"sqlite:///{path}") as source:
        (table,) = source.tables()
    fast = introspect_arrow.read_table(path, table)
    assert fast is None or fast.to_pylist() == _row_reader(path)[0].to_pylist()


def _clean_and_careful(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE t (i INTEGER, s TEXT)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(1, "a"), (2, b"\xff\xfe"), (3, None)])


def _kept_after_scan(path: Path) -> tuple[Table, Any]:
    SOURCES.clear()
    with polysql.connect(f"sqlite:///{path}") as source:
        fingerprint = source.fingerprint()  # as a load asks first
        (table,) = source.tables()
        return table, SOURCES.rows(table_key(fingerprint, table))


def test_a_load_takes_the_rows_the_type_scan_read(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the single read: after a load's type scan the whole table is kept -- the columns
    the scan read, decimals made from the doubles that read holds, and only the column that
    needs the row reader's own expression read beside it on the scan's thread -- and it is what
    the row reader reads."""
    path = built_sqlite(tmp_path / "src.sqlite", _one_class_per_column)
    read_apart: list[list[str]] = []
    whole_read = introspect_arrow.read_table

    def recording(path: Path, table: Table, **options: Any) -> pa.Table | None:
        read_apart.append([c.name for c in table.columns])
        return whole_read(path, table, **options)

    monkeypatch.setattr(introspect_arrow, "read_table", recording)
    table, kept = _kept_after_scan(path)
    assert read_apart == [["mixed"]]
    assert kept is not None and kept.complete
    assert kept.data.column_names == [c.name for c in table.columns]
    assert kept.data.to_pylist() == _row_reader(path)[0].to_pylist()


def test_columns_that_need_care_are_left_to_the_row_read(tmp_path: Path) -> None:
    path = built_sqlite(tmp_path / "src.sqlite", _clean_and_careful)
    table, kept = _kept_after_scan(path)
    assert kept is not None and not kept.complete
    assert kept.data.column_names == ["i"]
    with polysql.connect(f"sqlite:///{path}") as source:
        source.fingerprint()
        (table,) = source.tables()
        got = pa.Table.from_batches(list(source.read_table(table)))
        repaired = source.coercions()
    expected, expected_coercions = _row_reader(path)
    assert got.to_pylist() == expected.to_pylist()
    assert [c for c in repaired if c in expected_coercions] == expected_coercions


def test_a_changed_source_is_read_again(tmp_path: Path) -> None:
    """Kept rows are keyed by content: after the file changes, loads see the new rows."""
    path = built_sqlite(tmp_path / "src.sqlite", lambda c: c.execute("CREATE TABLE t (a INTEGER)"))
    con = sqlite3.connect(path)
    con.execute("INSERT INTO t VALUES (1)")
    con.commit()
    first = polysql.load(f"sqlite:///{path}", f"duckdb:///{tmp_path / 'a.duckdb'}")
    with polysql.connect(f"sqlite:///{path}") as source:
        (table,) = source.tables()
        assert SOURCES.rows(table_key(source.fingerprint(), table)) is not None
    con.execute("INSERT INTO t VALUES (2)")
    con.commit()
    con.close()
    second = polysql.load(f"sqlite:///{path}", f"duckdb:///{tmp_path / 'b.duckdb'}")
    assert (first.tables, second.tables) == ({"t": 1}, {"t": 2})
    with polysql.connect(f"duckdb:///{tmp_path / 'b.duckdb'}") as copy:
        assert copy.execute("SELECT a FROM t ORDER BY a").rows == [(1,), (2,)]


class _FailingSource:
    """A load source whose rows fail after the first batch, as a SQLite table too large to keep
    does when a value cannot be converted half way through the stream."""

    dialect = "sqlite"
    capabilities = frozenset({"load_source"})

    def __init__(self, path: Path) -> None:
        self._inner = polysql.connect(f"sqlite:///{path}")
        self.url = self._inner.url

    def tables(self) -> list[Table]:
        return self._inner.tables()

    def coercions(self) -> list[Coercion]:
        return []

    def views(self) -> list[tuple[str, str]]:
        return []

    def fingerprint(self) -> str:
        return self._inner.fingerprint()

    def read_table(self, table: Table) -> Iterator[pa.RecordBatch]:
        yield from itertools.islice(self._inner.read_table(table, batch_size=10), 1)
        raise LoadError(f"cannot convert table {table.name!r} to its resolved types: test")


def test_a_source_failure_mid_load_is_the_load_error(tmp_path: Path) -> None:
    """DuckDB pulls the source's batches on its own; the source's own error (naming the table)
    is what the caller sees, not DuckDB's text wrapping of it."""
    path = built_sqlite(tmp_path / "src.sqlite", lambda c: c.execute("CREATE TABLE t (a INTEGER)"))
    con = sqlite3.connect(path)
    con.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100)])
    con.commit()
    con.close()
    source = _FailingSource(path)
    try:
        with (polysql.connect(f"duckdb:///{tmp_path / 'c.duckdb'}", read_only=False) as target,
              pytest.raises(LoadError, match="^cannot convert table 't' to its resolved types: test$")):
            target.load(source)  # type: ignore[arg-type]
    finally:
        source._inner.close()


def test_engines_loading_one_source_at_once_all_get_every_row(tmp_path: Path) -> None:
    """A sweep loads one source into several engines on several threads: they share one scan
    and one read, and each copy is whole."""
    path = built_sqlite(tmp_path / "src.sqlite", CASES["all_types"])
    SOURCES.clear()
    reports: list[dict[str, int]] = []
    failures: list[BaseException] = []

    def load(n: int) -> None:
        try:
            reports.append(polysql.load(f"sqlite:///{path}",
                                        f"duckdb:///{tmp_path / f'copy{n}.duckdb'}").tables)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=load, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert reports == [{"t": 5}] * 4


def test_loads_share_one_type_scan_and_a_schema_lookup_hashes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second load of one source takes the first one's scan; a connection that only wants
    the schema (no load, so no fingerprint asked for) scans as before rather than hash the file."""
    import polysql.backends.sqlite.backend as backend_module

    path = built_sqlite(tmp_path / "src.sqlite", CASES["all_types"])
    SOURCES.clear()
    scans: list[int] = []
    original = backend_module.introspect

    def counted(conn: sqlite3.Connection, **options: Any) -> Any:
        scans.append(1)
        return original(conn, **options)

    monkeypatch.setattr(backend_module, "introspect", counted)
    hashed: list[int] = []
    original_fingerprint = backend_module.fingerprint

    def counted_fingerprint(conn: sqlite3.Connection, file: Path | None) -> str:
        hashed.append(1)
        return original_fingerprint(conn, file)

    monkeypatch.setattr(backend_module, "fingerprint", counted_fingerprint)
    for name in ("a", "b"):
        polysql.load(f"sqlite:///{path}", f"duckdb:///{tmp_path / f'{name}.duckdb'}")
    assert len(scans) == 1
    hashed.clear()
    with polysql.connect(f"sqlite:///{path}") as source:
        source.tables()
    assert (len(scans), hashed) == (2, [])


def test_decimals_from_doubles_are_what_sqlite_prints(tmp_path: Path) -> None:
    """Every decimal made from a double is the one SQLite's own text of that double parses to,
    and a value with more digits than a double tells apart is left to SQLite (None)."""
    rng = random.Random(11)
    doubles = [round(rng.uniform(-1, 1) * 10 ** rng.randint(0, 13), rng.randint(0, 2))
               for _ in range(20_000)]
    doubles += [0.0, -0.0, 9999999999999.99, -9999999999999.99, 0.01, 1e12]
    con = sqlite3.connect(":memory:")
    printed = [text for (text,) in con.execute(
        "SELECT CAST(value AS TEXT) FROM json_each(?)", (json.dumps(doubles),))]
    con.close()
    target = pa.decimal128(18, 2)
    made = introspect_arrow._decimals_from_doubles(
        pa.chunked_array([pa.array(doubles[:9_000]), pa.array(doubles[9_000:]).slice(3)]), target)
    assert made is not None
    assert made.to_pylist() == pa.array(printed[:9_000] + printed[9_003:]).cast(target).to_pylist()
    for unclear in (0.1 + 0.2, 1234567890.123456, 4503599627370495.0, float(2**53 + 2),
                    float("inf"), 0.125):
        assert introspect_arrow._decimals_from_doubles(pa.chunked_array([pa.array([1.5, unclear])]),
                                                       target) is None
