"""What a SQLite database holds, as engine-neutral descriptions with logical types resolved.

Per table: its columns (each type decided by :mod:`polysql.backends.sqlite.types` from the
declared type and one scan of the stored values: a columnar read where it measures exactly,
else SQL aggregates), primary key, foreign keys and the
indexes that have an engine-neutral form. Tables are scanned on several threads when the database
is a file; :func:`fingerprint` identifies the content, so loads from it are idempotent. Reading
the rows themselves is :mod:`polysql.backends.sqlite.introspect_rows`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from polysql.backends._common.fingerprint import ALGORITHM, file_digest
from polysql.backends.sqlite.introspect_arrow import complete_table, from_scan
from polysql.backends.sqlite.introspect_cache import fits, fits_in_memory
from polysql.backends.sqlite.introspect_parts import part_count
from polysql.backends.sqlite.types import (
    ColumnStats,
    list_tables,
    quote_ident,
    resolve_column,
    scan_table,
)
from polysql.backends.sqlite.types_arrow import ColumnarScan, scan_table_columnar
from polysql.core.schema import Coercion, Column, ForeignKey, Index, Table


@dataclass(slots=True)
class SourceTable:
    """A table as introspected: its engine-neutral description plus the coercions behind it."""

    table: Table
    coercions: list[Coercion]
    # Columns already in their logical Arrow form, from the columnar scan's read (asked for with
    # read_ahead=True): the load's row read need not read them again.
    read_ahead: dict[str, pa.ChunkedArray] = field(default_factory=dict)


def introspect_table(conn: sqlite3.Connection, name: str, path: str | None = None, *,
                     read_ahead: bool = False, rows: int | None = None,
                     parts: int = 1) -> SourceTable:
    """One table; ``path``: the database file, for the single-read columnar scan, whose values
    are kept in ``read_ahead`` form when asked. ``rows``: the table's row count, when counted
    already. ``parts``: rowid ranges the columnar read reads at once (see
    :mod:`.introspect_parts`)."""
    info = conn.execute("SELECT name, type, \"notnull\", pk, hidden FROM pragma_table_xinfo(?)",
                        (name,)).fetchall()
    # hidden=1 marks virtual-table hidden columns that SELECT * does not return.
    info = [row for row in info if row[4] != 1]
    declared = [(row[0], row[1] or "") for row in info]
    scanned, counted = None, None
    if path is not None:
        counted = rows if rows is not None else _row_count(conn, name)
        if fits_in_memory(counted, len(declared)):
            # The columnar scan holds the whole table in memory; a larger one is measured by
            # the aggregate scan, which streams.
            scanned = scan_table_columnar(Path(path), name, declared, parts=parts)
    row_count, stats = _measure(conn, name, declared, scanned, counted)
    columns: list[Column] = []
    coercions: list[Coercion] = []
    for (col_name, declared, notnull, _pk, _hidden), col_stats in zip(info, stats, strict=True):
        decision = resolve_column(name, col_name, declared or "", col_stats)
        coercions.extend(decision.coercions)
        columns.append(Column(col_name, decision.type, nullable=not notnull,
                              declared_type=declared or ""))
    primary_key = tuple(row[0] for row in sorted((r for r in info if r[3]), key=lambda r: r[3]))
    indexes, skipped = _indexes(conn, name)
    source = SourceTable(
        Table(name, columns, primary_key=primary_key, foreign_keys=_foreign_keys(conn, name),
              row_count=row_count, indexes=indexes),
        coercions + skipped)
    if read_ahead and scanned is not None and path is not None and fits(source.table):
        source.read_ahead = _read_ahead(Path(path), source.table, scanned, stats, parts=parts)
    return source


def _row_count(conn: sqlite3.Connection, name: str) -> int:
    (rows,) = conn.execute(f"SELECT count(*) FROM {quote_ident(name)}").fetchone()
    return int(rows)


def _measure(conn: sqlite3.Connection, name: str, declared: list[tuple[str, str]],
             scanned: ColumnarScan | None, rows: int | None) -> tuple[int, list[ColumnStats]]:
    """Row count and stats: the columnar scan's, with the columns it could not measure (or the
    whole table, without it) measured by the aggregate scan. ``rows``: counted already."""
    if scanned is None:
        return scan_table(conn, name, declared, rows=rows)
    apart = [i for i, stats in enumerate(scanned.stats) if stats is None]
    measured = dict(zip(apart, scan_table(conn, name, [declared[i] for i in apart],
                                          rows=scanned.rows)[1], strict=True)) if apart else {}
    return scanned.rows, [measured[i] if stats is None else stats
                          for i, stats in enumerate(scanned.stats)]


def _read_ahead(path: Path, table: Table, scanned: ColumnarScan, stats: list[ColumnStats], *,
                parts: int) -> dict[str, pa.ChunkedArray]:
    """The table's columns in their logical form: those the scan's read holds as they are, the
    rest read now, on this scan thread, so tables are read side by side (only the scanned
    columns when the rest need the row reader's care)."""
    known: dict[str, pa.ChunkedArray] = {}
    for index, (column, column_stats) in enumerate(zip(table.columns, stats, strict=True)):
        if scanned.stats[index] is None:  # measured apart: its values here may be converted
            continue
        values = from_scan(scanned.values.column(index), column, column_stats)
        if values is not None:
            known[column.name] = values
    if not known or len(known) == len(table.columns):
        return known
    whole = complete_table(path, table, known, parts=parts)
    return known if whole is None else dict(zip(whole.column_names, whole.columns, strict=True))


def _indexes(conn: sqlite3.Connection, table: str) -> tuple[list[Index], list[Coercion]]:
    """Secondary indexes and UNIQUE constraints over plain columns, in creation order; the
    automatic index behind the primary key is the key itself and is left out. Partial and
    expression indexes have no engine-neutral form: each is reported, not carried."""
    indexes: list[Index] = []
    skipped: list[Coercion] = []
    listed = conn.execute('SELECT name, "unique", origin, partial FROM pragma_index_list(?) '
                          "ORDER BY seq DESC", (table,)).fetchall()
    for name, unique, origin, partial in listed:
        if origin == "pk":
            continue
        columns = conn.execute("SELECT cid, name FROM pragma_index_info(?) ORDER BY seqno",
                               (name,)).fetchall()
        if partial:
            why = "it is a partial index (CREATE INDEX ... WHERE)"
        elif any(cid < 0 or column is None for cid, column in columns):
            why = "it indexes an expression, not plain columns"
        else:
            indexes.append(Index(name, tuple(column for _, column in columns), bool(unique)))
            continue
        skipped.append(Coercion(table, name, f"index {name!r} not carried: {why}"))
    return indexes, skipped


def _foreign_keys(conn: sqlite3.Connection, table: str) -> list[ForeignKey]:
    rows = conn.execute('SELECT id, "from", "table", "to" FROM pragma_foreign_key_list(?) '
                        "ORDER BY id, seq", (table,)).fetchall()
    grouped: dict[int, tuple[list[str], str, list[str]]] = {}
    for fk_id, src, ref_table, ref_col in rows:
        cols, _, refs = grouped.setdefault(fk_id, ([], ref_table, []))
        cols.append(src)
        refs.append(ref_col or "")  # NULL "to" means the referenced table's primary key
    return [ForeignKey(tuple(c), t, tuple(r)) for c, t, r in grouped.values()]


def _database_file(conn: sqlite3.Connection) -> str | None:
    """The file behind the main database, or None for an in-memory or temporary one."""
    for _seq, name, file in conn.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return file or None
    return None


def _scan_in_parallel(path: str, counts: dict[str, int], parts: dict[str, int], workers: int, *,
                      read_ahead: bool) -> list[SourceTable]:
    """Each worker thread scans whole tables through its own read-only connection: the scan
    runs inside SQLite, which releases the GIL, so tables are measured on several cores.
    ``counts``: every table's row count, in the order the tables are returned; ``parts``: the
    rowid ranges each table's columnar read is split into."""
    local = threading.local()
    opened: list[sqlite3.Connection] = []
    uri = f"file:{urllib.parse.quote(path)}?mode=ro"

    def scan(name: str) -> SourceTable:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            opened.append(conn)
            local.conn = conn
        return introspect_table(conn, name, path, read_ahead=read_ahead, rows=counts[name],
                                parts=parts[name])

    # Largest first: the big tables are scanned side by side and the small ones fill in after,
    # instead of one big table starting last on a thread of its own.
    by_size = sorted(counts, key=counts.__getitem__, reverse=True)
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="polysql-scan") as pool:
            scanned = dict(zip(by_size, pool.map(scan, by_size), strict=True))
        return [scanned[name] for name in counts]
    finally:
        for conn in opened:
            conn.close()


def introspect(conn: sqlite3.Connection, *, read_ahead: bool = False) -> list[SourceTable]:
    """Every user table of the database, logical types resolved; ``read_ahead``: with the
    columns the type scan's read already holds in their logical form."""
    names = list_tables(conn)
    # Other connections see only what is committed; a connection inside a transaction is
    # scanned on itself alone, so its own changes count.
    path = None if conn.in_transaction else _database_file(conn)
    counts: dict[str, int] | None = None
    if path is not None:
        # a table that cannot be counted fails below, where it is named
        with contextlib.suppress(sqlite3.Error):
            counts = {name: _row_count(conn, name) for name in names}
    if path is not None and counts is not None:
        cores = os.cpu_count() or 1
        total = sum(counts.values())
        # A table holding more than a core's share of all rows is read in rowid ranges on
        # several cores; the others are read whole, side by side.
        parts = {name: part_count(rows, total, cores) for name, rows in counts.items()}
        workers = min(len(names), cores)
        if workers > 1:
            try:
                return _scan_in_parallel(path, counts, parts, workers, read_ahead=read_ahead)
            except sqlite3.Error:
                pass  # e.g. the file cannot be opened a second time: scan on this connection
        return [introspect_table(conn, name, path, read_ahead=read_ahead, rows=counts[name],
                                 parts=parts[name]) for name in names]
    return [introspect_table(conn, name, path, read_ahead=read_ahead) for name in names]


def fingerprint(conn: sqlite3.Connection, path: Path | None) -> str:
    """Digest of a SQLite database: its file plus any write-ahead log not yet checkpointed into
    it (WAL content is part of the database), or the serialized image of an in-memory one."""
    if path is None:
        try:
            image = conn.serialize()
        except sqlite3.OperationalError:  # an in-memory database nothing was written to has no
            image = b""  # pages, and SQLite refuses to serialize it
        return f"{ALGORITHM}:{hashlib.sha256(image).hexdigest()}"
    return file_digest(path, path.with_name(path.name + "-wal"))
