"""PostgreSQL loads rows through CSV COPY (binary for tables with bytes): every value that CSV
could blur -- NULL against the empty string, quotes, line breaks, a lone backslash-dot line,
floats at the edges of their range, timestamps, decimals -- must arrive exactly."""

from __future__ import annotations

import datetime as dt
import math
import sqlite3
from decimal import Decimal

import pytest
from polysql_testkit import pg_fixtures

from polysql.backends.postgres.load_copy import csv_carries
from polysql.backends.sqlite.backend import SQLiteBackend

pytestmark = pytest.mark.postgres

fx = pg_fixtures
admin_url, loader, make_sqlite = fx.admin_url, fx.loader, fx.make_sqlite

TEXTS = ["", " ", "trailing  ", "  leading", 'say "hi"', "a,b", "line\nbreak", "cr\rlf\r\n",
         "\\.", "x\n\\.\ny", "\\N", "NULL", "Ærøskøbing 東京 🚀", "tab\there", "\\"]
FLOATS = [0.1, 1 / 3, -1e-300, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
          float("inf"), float("-inf"), 123456789.12345679, 1e22, 1e-7, -2.5]


@pytest.fixture(scope="module")
def loaded(loader, make_sqlite):
    rows = []
    for i in range(max(len(TEXTS), len(FLOATS))):
        text = TEXTS[i] if i < len(TEXTS) else None
        number = FLOATS[i] if i < len(FLOATS) else None
        rows.append((i, text, number))
    path = make_sqlite("copy_formats", """
        CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT, x REAL, price NUMERIC(12,4),
                        day DATE, at TIMESTAMP, flag BOOLEAN);
        CREATE TABLE b (id INTEGER PRIMARY KEY, data BLOB, note TEXT);
        CREATE TABLE tiny (id INTEGER PRIMARY KEY, v NUMERIC(20,12));
        INSERT INTO tiny VALUES (1, 0.0000000001), (2, -0.000000123), (3, 0), (4, 12345678.5);
        INSERT INTO b VALUES (1, x'00ff0a0d22', 'with "bytes"'), (2, x'', ''), (3, NULL, NULL);
    """)
    conn = sqlite3.connect(path)
    conn.executemany("INSERT INTO t (id, body, x) VALUES (?, ?, ?)", rows)
    conn.execute("INSERT INTO t (id, body, price, day, at, flag) VALUES "
                 "(100, NULL, -12345678.1234, '0001-01-01', '2020-02-29 23:59:59.999999', 1), "
                 "(101, '', 0.0001, '9999-12-31', '1999-12-31T00:00', 0), "
                 "(102, 'x', 12, '2024-02-29', '2024-01-01 00:00:00', NULL)")
    conn.commit()
    conn.close()
    target, report = loader.load(path)
    return path, target, report


def _fetch(target: str, query: str) -> list[tuple]:
    database = target.rsplit("/", 1)[1]
    with fx.admin_connection(fx.server_url(), database) as conn:
        return conn.execute(query).fetchall()


def test_text_null_and_empty_string_stay_distinct(loaded) -> None:
    _, target, _ = loaded
    rows = dict(_fetch(target, "SELECT id, body FROM public.t WHERE id < 100"))
    expected = {i: (TEXTS[i] if i < len(TEXTS) else None) for i in rows}
    assert rows == expected
    assert _fetch(target, "SELECT body IS NULL, body = '' FROM public.t WHERE id IN (100, 101) "
                          "ORDER BY id") == [(True, None), (False, True)]


def test_floats_round_trip_bit_for_bit(loaded) -> None:
    _, target, _ = loaded
    got = dict(_fetch(target, "SELECT id, x FROM public.t WHERE id < 100"))
    for i, value in enumerate(FLOATS):
        assert got[i] == value and math.copysign(1, got[i]) == math.copysign(1, value), i


def test_decimals_dates_timestamps_and_booleans(loaded) -> None:
    _, target, _ = loaded
    assert _fetch(target, "SELECT id, price, day, at, flag FROM public.t WHERE id >= 100 "
                          "ORDER BY id") == [
        (100, Decimal("-12345678.1234"), dt.date(1, 1, 1),
         dt.datetime(2020, 2, 29, 23, 59, 59, 999999), True),
        (101, Decimal("0.0001"), dt.date(9999, 12, 31), dt.datetime(1999, 12, 31), False),
        (102, Decimal("12.0000"), dt.date(2024, 2, 29), dt.datetime(2024, 1, 1), None)]


def test_table_with_bytes_goes_binary_and_round_trips(loaded) -> None:
    path, target, report = loaded
    with SQLiteBackend.connect(f"sqlite:///{path}") as source:
        by_name = {t.name: t for t in source.tables()}
    assert csv_carries(by_name["t"]) and not csv_carries(by_name["b"])
    assert _fetch(target, "SELECT id, data, note FROM public.b ORDER BY id") == [
        (1, b"\x00\xff\n\r\"", 'with "bytes"'), (2, b"", ""), (3, None, None)]
    assert report.tables == {"t": len(TEXTS) + 3, "b": 3, "tiny": 4}


def test_decimals_that_arrow_writes_in_exponent_form(loaded) -> None:
    _, target, _ = loaded
    assert _fetch(target, "SELECT v FROM public.tiny ORDER BY id") == [
        (Decimal("1E-10"),), (Decimal("-1.23E-7"),), (Decimal("0"),), (Decimal("12345678.5"),)]
