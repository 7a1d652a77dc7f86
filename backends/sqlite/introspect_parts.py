"""Read a whole SQLite table into Arrow on several threads at once, one rowid range each.

ADBC's SQLite driver reads one statement on one thread. A table holding most of a database's
rows then keeps one core busy while the others wait for it -- and every load of that database
waits with them. Split by rowid into ranges of about equal span, each read through its own
connection, the parts concatenated in rowid order are the rows one ``NOT INDEXED`` read of the
table gives, in its order (a rowid table's own order is rowid order).

The driver types each statement's columns from that statement's first rows, so the parts may
disagree. A column that one part holds only NULL in takes the type the others agree on; any other
disagreement, a part the driver refused, or a table without a usable rowid is answered by one
read of the whole table, exactly as without parts. Like every reader of a load source, the parts
assume the file does not change while it is loaded (the load fingerprints it first).
"""

from __future__ import annotations

import math
import re
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa

from polysql.backends.sqlite.connect import read_arrow
from polysql.backends.sqlite.types import quote_ident

# A part smaller than this costs more in its own connection and statement than it saves.
MIN_ROWS_PER_PART = 100_000
# The names SQLite accepts for a rowid; a column of the same name hides that one.
_ROWID_NAMES = ("rowid", "_rowid_", "oid")
_VIRTUAL = re.compile(r"\s*CREATE\s+VIRTUAL\b", re.IGNORECASE)


def part_count(rows: int, total_rows: int, cores: int) -> int:
    """How many parts to read a table of ``rows`` in, out of ``total_rows`` in the database: enough
    that no part holds more than one core's even share of all rows, at most one per core, and none
    smaller than MIN_ROWS_PER_PART. Tables no larger than their share are read whole (they fill
    the other cores side by side)."""
    if cores <= 1 or rows < 2 * MIN_ROWS_PER_PART:
        return 1
    share = max(total_rows / cores, MIN_ROWS_PER_PART)
    return max(1, min(cores, math.ceil(rows / share), rows // MIN_ROWS_PER_PART))


def read_whole_table(path: Path, table: str, select: str, *, parts: int = 1,
                     batch_rows: int = 65_536) -> pa.Table:
    """``SELECT {select} FROM {table} NOT INDEXED`` on the SQLite file at ``path``, as
    :func:`read_arrow` answers it (and raising as it does), read in up to ``parts`` rowid ranges
    at once when the table allows."""
    whole = f"SELECT {select} FROM {quote_ident(table)} NOT INDEXED"
    if parts > 1:
        split = _read_in_parts(path, table, whole, parts, batch_rows)
        if split is not None:
            return split
    return read_arrow(path, whole, batch_rows=batch_rows)


def _read_in_parts(path: Path, table: str, whole: str, parts: int,
                   batch_rows: int) -> pa.Table | None:
    ranges = _rowid_ranges(path, table, parts)
    if ranges is None:
        return None
    queries = [f"{whole} WHERE {condition}" for condition in ranges]
    try:
        with ThreadPoolExecutor(max_workers=len(queries) - 1,
                                thread_name_prefix="polysql-read") as pool:
            later = [pool.submit(read_arrow, path, sql, batch_rows=batch_rows)
                     for sql in queries[1:]]
            first = read_arrow(path, queries[0], batch_rows=batch_rows)  # on this thread
            read = [first, *(future.result() for future in later)]
    except Exception:  # noqa: BLE001 - a part the driver refused: the whole read decides
        return None
    return _concatenate(read)


def _rowid_ranges(path: Path, table: str, parts: int) -> list[str] | None:
    """WHERE conditions that split ``table`` into ``parts`` rowid ranges of equal span, the first
    and last open-ended (together they cover every rowid); None for a table without a rowid to
    split by (WITHOUT ROWID, a virtual table, columns named like every rowid alias) or too few."""
    try:
        with closing(sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)) as conn:
            row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                               (table,)).fetchone()
            if row is None or _VIRTUAL.match(row[0] or ""):
                return None  # a virtual table's rowid may mean a scan of its own per part
            names = {str(r[0]).lower() for r in conn.execute(
                "SELECT name FROM pragma_table_xinfo(?)", (table,))}
            alias = next((name for name in _ROWID_NAMES if name not in names), None)
            if alias is None:
                return None
            low, high = conn.execute(
                f"SELECT min({alias}), max({alias}) FROM {quote_ident(table)}").fetchone()
    except sqlite3.Error:  # e.g. WITHOUT ROWID: no such column
        return None
    if low is None or high - low + 1 < parts:
        return None
    step = -(-(high - low + 1) // parts)
    bounds = [low + step * i for i in range(1, parts)]
    conditions = [f"{alias} < {bounds[0]}"]
    conditions += [f"{alias} >= {start} AND {alias} < {stop}"
                   for start, stop in zip(bounds, bounds[1:], strict=False)]
    conditions.append(f"{alias} >= {bounds[-1]}")
    return conditions


def _concatenate(read: list[pa.Table]) -> pa.Table | None:
    """The parts as one table; None when parts typed a column differently. A column NULL
    throughout a part says nothing of its type there (the driver calls such a column int64, as it
    does in a single read where the whole column is NULL): it takes the type the other parts
    agree on."""
    types: list[pa.DataType] = []
    for index in range(read[0].num_columns):
        columns = [part.column(index) for part in read]
        seen = {column.type for column in columns if column.null_count < len(column)}
        if len(seen) > 1:
            return None
        types.append(seen.pop() if seen else columns[0].type)
    names = read[0].column_names
    aligned = [pa.Table.from_arrays(
        [column if column.type == kind else pa.chunked_array([pa.nulls(len(column), kind)], kind)
         for column, kind in zip(part.columns, types, strict=True)], names=names)
        for part in read]
    return pa.concat_tables(aligned)
