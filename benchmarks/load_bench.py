"""Load speed: polysql's bulk loaders against established tools, on the same SQLite file.

Generates a SQLite database (default 1,000,000 rows over four tables, with integers, text with
accents and trailing spaces, NUMERIC money, REAL, dates, datetimes, booleans and NULLs), then loads
it into PostgreSQL and MariaDB/MySQL with ``polysql.load`` and, where installed, with the tools
people use today — ``pgloader`` (Debian package) for PostgreSQL and ``sqlite3mysql`` (PyPI
``sqlite3-to-mysql``) for MySQL — and prints rows/second side by side with the ratio. A
row-for-row checksum proves each polysql copy identical to the source.

    python benchmarks/load_bench.py [--rows 1000000] [--pg-url URL] [--mysql-url URL]

Timings are wall-clock on this machine; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polysql
from polysql.core.errors import PolysqlError
from polysql.core.urls import parse_url


def generate(path: Path, rows: int) -> dict[str, int]:
    """Four tables sharing ``rows`` rows: stores 1%, customers 9%, orders 40%, order_lines 50%."""
    counts = {"stores": max(10, rows // 100), "customers": max(10, rows * 9 // 100),
              "orders": max(10, rows * 40 // 100)}
    counts["order_lines"] = max(10, rows - sum(counts.values()))
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE stores (store_id INTEGER PRIMARY KEY, "StoreName" TEXT NOT NULL, city TEXT,
                             opened DATE, is_open BOOLEAN);
        CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, "FirstName" TEXT, code CHAR(8),
                                signup DATETIME, score REAL);
        CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers,
                             store_id INTEGER REFERENCES stores, ordered_at DATETIME,
                             total NUMERIC(12,2), note TEXT);
        CREATE TABLE order_lines (order_id INTEGER REFERENCES orders, line_no INTEGER,
                                  qty INTEGER, unit_price NUMERIC(10,2), discount REAL,
                                  PRIMARY KEY (order_id, line_no));
    """)
    cte = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
    con.execute(cte + """INSERT INTO stores SELECT i, 'Store ' || i,
        CASE i % 4 WHEN 0 THEN 'Ærøskøbing' WHEN 1 THEN 'São Paulo' WHEN 2 THEN 'Zürich' ELSE NULL END,
        date('2010-01-01', '+' || (i % 4000) || ' days'), i % 3 <> 0 FROM n""", (counts["stores"],))
    con.execute(cte + """INSERT INTO customers SELECT i,
        CASE i % 5 WHEN 0 THEN 'José' WHEN 1 THEN 'Zoë' WHEN 2 THEN 'Łukasz' WHEN 3 THEN NULL ELSE 'Ann' END,
        substr('C' || i || '        ', 1, 8),
        datetime('2015-01-01 08:00:00', '+' || (i * 37 % 3000000) || ' minutes'),
        CASE WHEN i % 11 = 0 THEN NULL ELSE (i % 1000) / 7.0 END FROM n""", (counts["customers"],))
    con.execute(cte + """INSERT INTO orders SELECT i, 1 + i % ?, 1 + i % ?,
        datetime('2020-01-01 00:00:00', '+' || (i * 13 % 50000000) || ' seconds'),
        round((i % 100000) / 100.0, 2),
        CASE WHEN i % 7 = 0 THEN 'gift  ' WHEN i % 7 = 1 THEN NULL ELSE 'n' || (i % 97) END FROM n""",
                (counts["orders"], counts["customers"], counts["stores"]))
    con.execute(cte + """INSERT INTO order_lines SELECT 1 + (i - 1) / 2, 1 + (i - 1) % 2, 1 + i % 9,
        round((i % 50000) / 100.0, 2), CASE WHEN i % 4 = 0 THEN 0.1 ELSE 0 END FROM n""",
                (counts["order_lines"],))
    con.commit()
    con.close()
    return counts


def canonical(value: Any) -> str:
    """One text form per value, equal across engines for equal data."""
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (float, Decimal)):
        number = float(value)
        return "nan" if math.isnan(number) else f"{number:.9g}"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    text = str(value)
    # SQLite keeps dates and booleans as text/ints; render them the way typed engines return them
    return text


def checksum(rows: Iterable[tuple[Any, ...]]) -> str:
    digest = hashlib.sha256()
    for row in rows:
        digest.update("\x1f".join(canonical(v) for v in row).encode())
        digest.update(b"\x1e")
    return digest.hexdigest()[:16]


def table_checksums(url: str, tables: dict[str, int], dialect_quote: str) -> dict[str, str]:
    out = {}
    with polysql.connect(url) as backend:
        for table in backend.tables():
            if table.name not in tables:
                continue
            q = dialect_quote
            cols = ", ".join(f"{q}{c.name}{q}" for c in table.columns)
            keys = ", ".join(f"{q}{c}{q}" for c in (table.primary_key or (table.columns[0].name,)))
            result = backend.execute(f"SELECT {cols} FROM {q}{table.name}{q} ORDER BY {keys}",
                                     timeout=900, max_rows=10 * sum(tables.values()))
            if result.error:
                raise SystemExit(f"checksum query failed on {url}: {result.error.message}")
            rows = [tuple(_typed_source_value(c.type.kind, v) for c, v in zip(table.columns, row, strict=True))
                    for row in result.rows] if backend.name == "sqlite" else result.rows
            out[table.name] = checksum(rows)
    return out


def _typed_source_value(kind: str, value: Any) -> Any:
    """SQLite stores dates, datetimes and booleans as text/ints; read them as the typed engines do."""
    if value is None:
        return None
    if kind == "boolean":
        return bool(value)
    if kind == "timestamp" and isinstance(value, str):
        return datetime.fromisoformat(value)
    if kind == "date" and isinstance(value, str):
        return date.fromisoformat(value)
    return value


def timed(label: str, action) -> float | None:
    started = time.perf_counter()
    try:
        action()
    except (PolysqlError, subprocess.CalledProcessError, OSError) as exc:
        print(f"  {label}: failed: {exc}", file=sys.stderr)
        return None
    return time.perf_counter() - started


def run_tool(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=3600)


def server_admin(url: str, sql: str) -> None:
    """Run one administrative statement (create/drop a database) on a server."""
    parsed = parse_url(url)
    if parsed.get_backend_name().startswith("postgres"):
        import psycopg

        with psycopg.connect(host=parsed.host or "127.0.0.1", port=parsed.port or 5432,
                             user=parsed.username or "postgres", password=parsed.password,
                             dbname="postgres", autocommit=True) as con:
            con.execute(sql)
    else:
        import pymysql

        con = pymysql.connect(host=parsed.host or "127.0.0.1", port=parsed.port or 3306,
                              user=parsed.username or "root", password=parsed.password or "")
        with con.cursor() as cur:
            cur.execute(sql)
        con.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/")
    parser.add_argument("--mysql-url", default="mysql://root@127.0.0.1:3306/")
    parser.add_argument("--pgloader", default=shutil.which("pgloader"))
    parser.add_argument("--sqlite3mysql", default=shutil.which("sqlite3mysql"))
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="polysql-load-bench-"))
    source = work / "bench.sqlite"
    started = time.perf_counter()
    counts = generate(source, args.rows)
    total = sum(counts.values())
    print(f"generated {total:,} rows in {len(counts)} tables in {time.perf_counter() - started:.1f} s")
    source_url = f"sqlite:///{source}"
    source_sums = table_checksums(source_url, counts, '"')

    results: list[tuple[str, str, float | None, float | None, str]] = []
    pg = parse_url(args.pg_url)
    pg_target = pg.set(database="polysql_load_bench").render_as_string(hide_password=False)
    t_polysql = timed("polysql → postgres", lambda: polysql.load(source_url, pg_target, replace=True))
    verdict = "-"
    if t_polysql is not None:
        verdict = "identical" if table_checksums(pg_target, counts, '"') == source_sums else "DIFFERENT"
    t_tool = None
    if args.pgloader:
        server_admin(args.pg_url, "DROP DATABASE IF EXISTS pgloader_load_bench")
        server_admin(args.pg_url, "CREATE DATABASE pgloader_load_bench")
        pg_tool = pg.set(drivername="pgsql", database="pgloader_load_bench").render_as_string(
            hide_password=False)
        t_tool = timed("pgloader", lambda: run_tool([args.pgloader, "--quiet", f"sqlite://{source}", pg_tool]))
        server_admin(args.pg_url, "DROP DATABASE IF EXISTS pgloader_load_bench")
    results.append(("PostgreSQL", "pgloader", t_polysql, t_tool, verdict))

    my = parse_url(args.mysql_url)
    my_target = my.set(database="polysql_load_bench").render_as_string(hide_password=False)
    t_polysql = timed("polysql → mysql", lambda: polysql.load(source_url, my_target, replace=True))
    verdict = "-"
    if t_polysql is not None:
        verdict = "identical" if table_checksums(my_target, counts, "`") == source_sums else "DIFFERENT"
    t_tool = None
    if args.sqlite3mysql:
        server_admin(args.mysql_url, "DROP DATABASE IF EXISTS s2m_load_bench")
        cmd = [args.sqlite3mysql, "-f", str(source), "-d", "s2m_load_bench", "-u", my.username or "root",
               "-h", my.host or "127.0.0.1", "-P", str(my.port or 3306), "-q"]
        if my.password:
            cmd += ["--mysql-password", my.password]
        t_tool = timed("sqlite3mysql", lambda: run_tool(cmd))
        server_admin(args.mysql_url, "DROP DATABASE IF EXISTS s2m_load_bench")
    results.append(("MySQL/MariaDB", "sqlite3mysql", t_polysql, t_tool, verdict))

    print(f"\n{'target':<14} {'polysql rows/s':>15} {'baseline':>13} {'baseline rows/s':>16} "
          f"{'speed ratio':>12}  polysql copy")
    for target, tool, ours, theirs, verdict in results:
        ours_rate = f"{total / ours:,.0f}" if ours else "failed"
        theirs_rate = f"{total / theirs:,.0f}" if theirs else "not run"
        ratio = f"{theirs / ours:.2f}x" if ours and theirs else "-"
        print(f"{target:<14} {ours_rate:>15} {tool:>13} {theirs_rate:>16} {ratio:>12}  {verdict}")
    print("\nspeed ratio = baseline time / polysql time (above 1.00x: polysql is faster)")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
