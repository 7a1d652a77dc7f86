"""Read a loaded PostgreSQL database's tables back: the schema shown to models.

Only the ``public`` schema is an evaluation database's content (loads put every table there), so
that is what is listed: declared types are PostgreSQL's own spelling (``numeric(10,2)``,
``double precision``), keys come from the catalog's constraints.
"""

from __future__ import annotations

from collections import defaultdict

import psycopg

from polysql.backends.postgres.types import logical_type, quote_ident
from polysql.core.schema import Column, ForeignKey, Index, Table

EVALUATION_SCHEMA = "public"
# atttypmod of a numeric column is ((precision << 16) | scale) + VARHDRSZ.
_VARHDRSZ = 4


def _numeric_modifier(typmod: int) -> tuple[int | None, int | None]:
    if typmod < _VARHDRSZ:
        return None, None
    packed = typmod - _VARHDRSZ
    return (packed >> 16) & 0xFFFF, packed & 0xFFFF


def read_tables(conn: psycopg.Connection, *, schema: str = EVALUATION_SCHEMA,
                count_rows: bool = True) -> list[Table]:
    """Every ordinary or partitioned table of ``schema``, in creation order."""
    relations = conn.execute(
        """SELECT c.oid, c.relname FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = %s AND c.relkind IN ('r', 'p') AND NOT c.relispartition
           ORDER BY c.oid""", (schema,)).fetchall()
    names = {oid: name for oid, name in relations}
    columns: dict[int, list[Column]] = defaultdict(list)
    attnames: dict[tuple[int, int], str] = {}
    for relid, attnum, attname, display, typname, typmod, notnull in conn.execute(
            """SELECT a.attrelid, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod),
                      t.typname, a.atttypmod, a.attnotnull
               FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
               WHERE a.attrelid = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped
               ORDER BY a.attrelid, a.attnum""", (list(names),)):
        precision, scale = _numeric_modifier(typmod) if typname == "numeric" else (None, None)
        columns[relid].append(Column(attname, logical_type(typname, precision, scale),
                                     nullable=not notnull, declared_type=display))
        attnames[(relid, attnum)] = attname
    primary: dict[int, tuple[str, ...]] = {}
    foreign: dict[int, list[ForeignKey]] = defaultdict(list)
    for contype, relid, conkey, refid, confkey in conn.execute(
            """SELECT contype, conrelid, conkey, confrelid, confkey FROM pg_constraint
               WHERE conrelid = ANY(%s) AND contype IN ('p', 'f') ORDER BY conname""",
            (list(names),)):
        keys = tuple(attnames[(relid, n)] for n in conkey)
        if contype == "p":
            primary[relid] = keys
        elif refid in names:
            foreign[relid].append(ForeignKey(
                keys, names[refid], tuple(attnames[(refid, n)] for n in confkey)))
    indexes: dict[int, list[Index]] = defaultdict(list)
    # Plain-column secondary indexes; primary keys are shown as such, and expression or partial
    # indexes are not something a query can be written against by name.
    for relid, index_name, unique, indkey in conn.execute(
            """SELECT i.indrelid, c.relname, i.indisunique, i.indkey::int2[]
               FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               WHERE i.indrelid = ANY(%s) AND NOT i.indisprimary
                 AND i.indexprs IS NULL AND i.indpred IS NULL
               ORDER BY c.relname""", (list(names),)):
        if all((relid, n) in attnames for n in indkey):
            indexes[relid].append(Index(index_name, tuple(attnames[(relid, n)] for n in indkey),
                                        bool(unique)))
    tables = []
    for oid, name in relations:
        count = None
        if count_rows:
            row = conn.execute(
                f"SELECT count(*) FROM {quote_ident(schema)}.{quote_ident(name)}").fetchone()
            count = int(row[0]) if row else None
        tables.append(Table(name, columns[oid], primary_key=primary.get(oid, ()),
                            foreign_keys=foreign[oid], row_count=count, indexes=indexes[oid]))
    return tables


def change_marker(conn: psycopg.Connection, *, schema: str = EVALUATION_SCHEMA) -> str:
    """Per table of ``schema``: its storage file (TRUNCATE and rewrites give a new one) and the
    rows the statistics collector saw inserted, updated and deleted since its last reset. Reads
    never move them; a change made by a session still open shows once that session's counters are
    flushed (at its exit, or within seconds while it idles)."""
    rows = conn.execute(
        """SELECT c.relname, pg_relation_filenode(c.oid), s.n_tup_ins, s.n_tup_upd, s.n_tup_del
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
           WHERE n.nspname = %s AND c.relkind IN ('r', 'p') ORDER BY c.oid""",
        (schema,)).fetchall()
    return ";".join(",".join(str(part) for part in row) for row in rows)
