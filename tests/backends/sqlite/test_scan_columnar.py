"""The columnar type scan answers exactly what the aggregate scan answers, or nothing.

Every case is a real SQLite file measured both ways: where the columnar scan gives stats they
must equal the aggregate scan's field for field, and the columns it is built for (one storage
class, or integers beside reals) must not fall back."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from polysql.backends.sqlite.introspect import _measure, introspect
from polysql.backends.sqlite.types import ColumnStats, scan_table
from polysql.backends.sqlite.types_arrow import ColumnarScan, scan_table_columnar


def _both(path: Path, declared: str, values: list[object]) -> tuple[object, object]:
    conn = sqlite3.connect(path)
    conn.execute(f"CREATE TABLE t (v {declared})")
    conn.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values])
    conn.commit()
    aggregate = scan_table(conn, "t", [("v", declared)])
    conn.close()
    return aggregate, _measured(scan_table_columnar(path, "t", [("v", declared)]))


def _measured(scan: ColumnarScan | None) -> tuple[int, list[ColumnStats | None]] | None:
    return None if scan is None else (scan.rows, scan.stats)


DATES = ["2020-02-29", "2021-02-29", "2021-04-31", "2021-04-30", "2021-13-01", "2021-00-10",
         "0000-01-01", "0001-01-01", "2021-12-28", "2021-12-32", "1900-02-29", "2000-02-29",
         "2020-01-01 10:00", "2020-01-01T10:00:59", "2020-01-01 10:00:00.123456789",
         "2020-01-01 10:00:0", "2020-01-01 10:00:00.", "2020-01-01 10:00:00.12a",
         "2020-01-01 24:00:00", "2020-01-01 23:59:59", "2020-01-01 10:60:00",
         "2021-02-29 10:00:00", "2020-01-01 10:00:00Z", "2020-01-01t10:00", "２０２０-01-01",
         "2020-1-01", " 2020-01-01", "2020-01-01 ", "2020-01-01\n", "2020-01-01 10:00\n",
         "2020-01-01 10:00:00.5\n", "x", "", None]

CASES = {
    "dates in a DATE column": ("DATE", DATES),
    "dates in a TEXT column": ("TEXT", DATES),
    "dates in an undeclared column": ("", DATES),
    "date-times in a DATETIME column": ("DATETIME", DATES * 3),
    "booleans as integers": ("BOOLEAN", [0, 1, 1, None, 0]),
    "booleans as integers beyond 0 and 1": ("BOOLEAN", [0, 1, 2, -1]),
    "booleans as text": ("BOOLEAN", ["true", "FALSE", "True", "yes", None, "tRuE"]),
    "integers": ("INTEGER", [1, -5, 2**62, None, 0]),
    "integers in an undeclared column": ("", [1, -5, 7, None]),
    "reals in a REAL column": ("REAL", [1.5, 2.0, -3.25, None, 1e300]),
    "money in NUMERIC(10,2)": ("NUMERIC(10,2)", [1.25, 3, 0.1 + 0.2, 12.5, None, -7]),
    "digits beyond the scale": ("NUMERIC(10,2)", [0.125, 1.0000001, 99999.5, 3, 1e-7]),
    "NUMERIC without scale": ("NUMERIC", [0.125, 1.5, 10, 1e20, 1.5e-07, 2.5]),
    "a whole number first": ("DECIMAL(8,3)", [10, 12.5, 7, 0.001]),
    "large magnitudes": ("NUMERIC(38,4)", [123456789012345.6, -98765.4321, 2**53 - 1,
                                            -(2**53) + 1]),
    "text only": ("TEXT", ["a", "b", "naïve", "", None]),
    "blobs": ("BLOB", [b"\x00\x01", b"", None, b"abc"]),
    # shapes broken by a character beyond ASCII, wherever it stands
    "date-times beyond ASCII": ("DATETIME", ["2020-01-01 10:00:00.1é", "2020-01-01 1é:00",
                                             "2020-01-01 10:00:0é", "é020-01-01", "2020-01-0é",
                                             "2020-01-01 10:00:00.é1", "2020-01-01é10:00",
                                             "2020-01-01 10:00:00.12", "2020-01-01 10:00"]),
    "integers and NULLs in a BOOLEAN column": ("BOOLEAN", [None, None, 1, 0, 7]),
    # every string of one byte length: read as a matrix over the buffer, not string by string
    "dates of one width among NULLs": ("DATE", [d for d in DATES if d is None or len(d.encode())
                                                == 10] * 2),
    "date-times of one width": ("DATETIME", [d for d in DATES if d and len(d.encode()) == 19]),
    "date-times of one width, none a date": ("DATETIME", ["2020-01-0x 10:00:00"] * 3),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_columnar_scan_equals_the_aggregate_scan(case: str, tmp_path: Path) -> None:
    declared, values = CASES[case]
    aggregate, columnar = _both(tmp_path / "t.db", declared, values)
    assert columnar is not None, f"{case}: should be measured by the columnar scan"
    assert columnar == aggregate


FALLBACKS = {
    "numbers mixed with text": ("", [1, "x", 2.5]),
    "text mixed with blobs": ("TEXT", ["a", b"b"]),
    "an integer beyond 2^53 beside reals": ("NUMERIC", [2**53 + 1, 0.5]),
    "an integer of 2^53 beside reals": ("NUMERIC", [-(2**53), 0.5]),
    "text with a NUL": ("DATE", ["2020-01-01\x00tail", "2020-01-02"]),
    # read without its storage classes, which the driver's int64 column would have stood for
    "text first in an INTEGER column": ("INTEGER", ["abc", 1, 2]),
    "a real first in an INTEGER column": ("INT", [2.5, 1, 2]),
}


@pytest.mark.parametrize("case", sorted(FALLBACKS))
def test_columns_it_cannot_measure_exactly_fall_back(case: str, tmp_path: Path) -> None:
    declared, values = FALLBACKS[case]
    _, columnar = _both(tmp_path / "t.db", declared, values)
    assert columnar is None or columnar[1] == [None]


def test_dates_over_many_batches_are_counted_in_every_batch(tmp_path: Path) -> None:
    # More rows than one read batch holds: every chunk's strings are measured from its own
    # offsets into its own data.
    values = [DATES[i % len(DATES)] for i in range(150_001)]
    aggregate, columnar = _both(tmp_path / "t.db", "DATETIME", values)
    assert columnar == aggregate
    assert aggregate[1][0].dates > 0 and aggregate[1][0].datetimes > 0  # type: ignore[index]


def test_text_that_is_not_utf8_falls_back(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (v TEXT)")
    conn.execute("INSERT INTO t VALUES (CAST(x'ff61' AS TEXT)), ('ok')")
    conn.commit()
    conn.close()
    assert _measured(scan_table_columnar(path, "t", [("v", "TEXT")])) == (2, [None])


def test_many_columns_share_packed_class_codes(tmp_path: Path) -> None:
    # More columns than one packed code holds: every column's classes must still be its own.
    path = tmp_path / "t.db"
    conn = sqlite3.connect(path)
    # Integer columns are read without their classes: the others' codes must still line up.
    kinds = ["INTEGER", "REAL", "TEXT", "BLOB", "DATE", "NUMERIC(6,2)", "BIGINT"] * 7
    conn.execute("CREATE TABLE t (" + ", ".join(f"c{i} {k}" for i, k in enumerate(kinds)) + ")")
    samples = {"INTEGER": 3, "REAL": 2.5, "TEXT": "t", "BLOB": b"b", "DATE": "2020-01-01",
               "NUMERIC(6,2)": 4.25, "BIGINT": 2**40}
    row = [samples[k] if i % 5 else None for i, k in enumerate(kinds)]
    conn.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(kinds))})", [row] * 50)
    conn.commit()
    columns = [(f"c{i}", k) for i, k in enumerate(kinds)]
    aggregate = scan_table(conn, "t", columns)
    conn.close()
    assert _measured(scan_table_columnar(path, "t", columns)) == aggregate


def test_introspection_of_a_file_gives_the_aggregate_scans_types(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE a (id INTEGER PRIMARY KEY, price NUMERIC(8,2), day DATE, flag BOOLEAN);
        INSERT INTO a VALUES (1, 3, '2020-01-01', 1), (2, 4.125, '2020-02-30', 0);
        CREATE TABLE b (x, y TEXT);
        INSERT INTO b VALUES (1, 'a'), ('two', 'b');
    """)
    conn.commit()
    from_file = [(t.table.name, [str(c.type) for c in t.table.columns], t.coercions)
                 for t in introspect(conn)]
    memory = sqlite3.connect(":memory:")
    conn.backup(memory)
    in_memory = [(t.table.name, [str(c.type) for c in t.table.columns], t.coercions)
                 for t in introspect(memory)]
    assert from_file == in_memory
    assert from_file[0][1] == ["integer", "decimal(8,3)", "text", "boolean"]


def test_a_column_it_cannot_measure_is_measured_apart(tmp_path: Path) -> None:
    """One mixed column costs the aggregate scan of that column only; the others keep the
    columnar answer, and together they are the aggregate scan's answer."""
    path = tmp_path / "t.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a INTEGER, mixed TEXT, d DATE)")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)",
                     [(1, "x", "2020-01-01"), (2, 5, "2020-02-30"), (3, b"z", None)])
    conn.commit()
    columns = [("a", "INTEGER"), ("mixed", "TEXT"), ("d", "DATE")]
    scan = scan_table_columnar(path, "t", columns)
    assert scan is not None and [s is None for s in scan.stats] == [False, True, False]
    assert _measure(conn, "t", columns, scan, None) == scan_table(conn, "t", columns)
    from_file = [(c.name, str(c.type)) for t in introspect(conn) for c in t.table.columns]
    memory = sqlite3.connect(":memory:")
    conn.backup(memory)
    assert from_file == [(c.name, str(c.type)) for t in introspect(memory)
                         for c in t.table.columns]


def test_a_table_too_large_to_hold_is_measured_by_the_streaming_scan(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The columnar scan holds the whole table in memory: past the row budget, the aggregate
    scan (which streams) measures it, with the same answer."""
    import polysql.backends.sqlite.introspect as introspect_module
    import polysql.backends.sqlite.introspect_cache as cache_module

    path = tmp_path / "t.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (a INTEGER, d DATE)")
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, f"2020-01-{i % 28 + 1:02d}")
                                                     for i in range(1000)])
    conn.commit()
    expected = [(c.name, str(c.type)) for t in introspect(conn) for c in t.table.columns]
    columnar: list[str] = []
    original = introspect_module.scan_table_columnar

    def counted(*args: object, **options: object) -> object:
        columnar.append("scan")
        return original(*args, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(introspect_module, "scan_table_columnar", counted)
    monkeypatch.setattr(cache_module, "ROW_BUDGET_BYTES", 1000 * 2 * 16)  # twice too small
    assert [(c.name, str(c.type)) for t in introspect(conn) for c in t.table.columns] == expected
    assert columnar == []
    monkeypatch.setattr(cache_module, "ROW_BUDGET_BYTES", 1000 * 2 * 16 * 2)
    introspect(conn)
    assert columnar == ["scan"]
