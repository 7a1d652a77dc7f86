"""Foreign keys of a MySQL/MariaDB load, added once every table is filled.

Each is added only after every child row is shown to have its parent -- by the server, or, for a
single-column integer key whose values were kept while spooling, by Arrow on the client (integers
compare alike everywhere, so no collation is involved) -- and with InnoDB's own re-check off, so no
table is copied. A key that cannot be created is reported, never forced: every row stays.

InnoDB indexes the child's columns of every foreign key. Building that index is the costly part
(a sort of the whole table), so :func:`prepare_child_indexes` builds it on the connection that
filled the table, right after the fill, while other tables are still loading; the constraint
added at the end then finds it. A key that is not created after all takes its index away again,
so the copy has the same indexes either way.
"""

from __future__ import annotations

import hashlib

import pyarrow.compute as pc
import pymysql

from polysql.backends.mysql.errors import CONNECTION_LOST_CODES, error_code
from polysql.backends.mysql.load_copy import (
    TablePlan,
    key_list,
    key_list_plain,
    key_problem,
    referenced_columns,
    scalar,
    table_ref,
)
from polysql.backends.mysql.setup import quote_ident
from polysql.backends.mysql.types import Physical
from polysql.core.schema import Coercion, ForeignKey

# A statement killed (1317 ER_QUERY_INTERRUPTED: the load is being cancelled) or cut off with its
# connection: not a refusal of the statement itself.
_STOPPED = CONNECTION_LOST_CODES | {1317}


def _kept_orphans(child: TablePlan, parent: TablePlan, fk: ForeignKey,
                  ref_columns: tuple[str, ...]) -> int | None:
    """Orphans counted from the kept key values (None when they were not kept)."""
    if len(fk.columns) != 1 or len(ref_columns) != 1:
        return None
    values = child.key_values.get(fk.columns[0])
    parents = parent.key_values.get(ref_columns[0])
    if values is None or parents is None:
        return None
    present = values.filter(pc.is_valid(values))
    if len(present) == 0:
        return 0
    # is_in hashes the parent keys once; their repeats and NULLs match nothing extra
    found = pc.is_in(present, value_set=parents.combine_chunks())
    return int(len(present) - (pc.sum(found).as_py() or 0))


def _orphans(conn: pymysql.connections.Connection, database: str, child: TablePlan,
             parent: TablePlan, fk: ForeignKey, ref_columns: tuple[str, ...]) -> int:
    """Child rows (all key columns set, as MySQL's MATCH SIMPLE checks) with no parent row."""
    pairs = list(zip(fk.columns, ref_columns, strict=True))
    present = " AND ".join(f"c.{quote_ident(child.target(a))} IS NOT NULL" for a, _ in pairs)
    match = " AND ".join(f"p.{quote_ident(parent.target(b))} = c.{quote_ident(child.target(a))}"
                         for a, b in pairs)
    return scalar(conn, f"SELECT count(*) FROM {table_ref(database, child.name)} AS c WHERE "
                         f"{present} AND NOT EXISTS (SELECT 1 FROM "
                         f"{table_ref(database, parent.name)} AS p WHERE {match})")


def _family(physical: Physical) -> str:
    # VARCHAR/VARBINARY lengths may differ between the two sides of a foreign key.
    return physical.sql.split("(")[0] if physical.sql.startswith(("VARCHAR", "VARBINARY")) \
        else physical.sql


def _type_mismatch(child: TablePlan, columns: tuple[str, ...], parent: TablePlan,
                   ref_columns: tuple[str, ...]) -> str | None:
    child_index = {c.name: i for i, c in enumerate(child.source.columns)}
    parent_index = {c.name: i for i, c in enumerate(parent.source.columns)}
    for a, b in zip(columns, ref_columns, strict=True):
        mine, theirs = child.physical[child_index[a]], parent.physical[parent_index[b]]
        if _family(mine) != _family(theirs):
            return (f"column {a} is {mine.sql} but the referenced column {b} is {theirs.sql}; "
                    f"InnoDB requires matching types")
    return None


def _constraint_name(plan: TablePlan, number: int) -> str:
    digest = hashlib.sha256(plan.name.encode("utf-8")).hexdigest()[:12]
    return f"fk_{digest}_{number}"


def _index_columns(conn: pymysql.connections.Connection, database: str,
                   plan: TablePlan) -> list[list[str | None]]:
    """The columns of each index of the table, in key order (None for a prefix part)."""
    with conn.cursor() as cur:
        cur.execute("SELECT INDEX_NAME, COLUMN_NAME, SUB_PART FROM information_schema.STATISTICS "
                    "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY INDEX_NAME, SEQ_IN_INDEX",
                    (database, plan.name))
        rows = cur.fetchall()
    leading: dict[str, list[str | None]] = {}
    for index_name, column, sub_part in rows:
        leading.setdefault(index_name, []).append(None if sub_part is not None else column)
    return list(leading.values())


def _covered(indexes: list[list[str | None]], columns: list[str | None]) -> bool:
    """Whether an index starts with ``columns`` whole (no prefix part), so InnoDB needs no
    index of its own for a foreign key on them."""
    return any(parts[:len(columns)] == columns for parts in indexes)


def prepare_child_indexes(conn: pymysql.connections.Connection, database: str,
                          plan: TablePlan) -> None:
    """Index the child columns of each of ``plan``'s foreign keys, under the name InnoDB would
    give them, where no index of the table serves already. Nothing is reported here: a key
    whose index cannot be built is judged, and reported, when the keys are added.

    One ALTER TABLE adds them all, reading the table once rather than once per index (a
    separate statement each costs about a tenth more). Should the server refuse it, they are
    added one by one and each refused one is left out."""
    indexes = _index_columns(conn, database, plan)
    wanted: dict[int, tuple[str, str]] = {}  # foreign key number -> (index name, key list)
    for number, fk in enumerate(plan.source.foreign_keys, start=1):
        if key_problem(plan, fk.columns, "foreign key") is not None:
            continue
        columns: list[str | None] = [plan.target(c) for c in fk.columns]
        if _covered(indexes, columns):
            continue
        indexes.append(columns)  # another key on the same columns is served by this index
        wanted[number] = (_constraint_name(plan, number), key_list(plan, fk.columns))
    if not wanted:
        return
    table = table_ref(database, plan.name)
    clauses = {number: f"ADD INDEX {quote_ident(name)} ({keys})"
               for number, (name, keys) in wanted.items()}
    if altered(conn, table, list(clauses.values())):
        plan.child_indexes.update({number: name for number, (name, _) in wanted.items()})
        return
    if len(clauses) == 1:
        return  # the constraint, added later, meets the same refusal and reports it
    for number, clause in clauses.items():
        if altered(conn, table, [clause]):
            plan.child_indexes[number] = wanted[number][0]


def altered(conn: pymysql.connections.Connection, table: str, clauses: list[str]) -> bool:
    """Whether ``ALTER TABLE table clauses`` succeeded; False when the server refused it. A
    statement that was stopped (the load is being cancelled) or lost its connection raises:
    trying again, index by index, would only delay the stop."""
    try:
        with conn.cursor() as cur:
            cur.execute(f"ALTER TABLE {table} {', '.join(clauses)}")
    except pymysql.err.MySQLError as exc:
        if error_code(exc) in _STOPPED:
            raise
        return False
    return True


def _drop_child_index(conn: pymysql.connections.Connection, database: str, plan: TablePlan,
                      number: int) -> None:
    """Take away the index built for foreign key ``number``, which was not created."""
    name = plan.child_indexes.pop(number, None)
    if name is None:
        return
    with conn.cursor() as cur:
        cur.execute(f"ALTER TABLE {table_ref(database, plan.name)} DROP INDEX {quote_ident(name)}")


def add_foreign_keys(conn: pymysql.connections.Connection, database: str,
                     plans: list[TablePlan]) -> list[Coercion]:
    by_source = {p.source.name: p for p in plans}
    coercions: list[Coercion] = []
    for plan in plans:
        for number, fk in enumerate(plan.source.foreign_keys, start=1):
            reason = _foreign_key(conn, database, plan, by_source, fk, number)
            if reason is not None:
                _drop_child_index(conn, database, plan, number)
                coercions.append(Coercion(plan.name, key_list_plain(plan, fk.columns), reason))
    return coercions


def _foreign_key(conn: pymysql.connections.Connection, database: str, plan: TablePlan,
                 by_source: dict[str, TablePlan], fk: ForeignKey, number: int) -> str | None:
    """Add one foreign key; the reason it was skipped, or None."""
    described = f"foreign key ({', '.join(fk.columns)}) -> {fk.ref_table}"
    parent = by_source.get(fk.ref_table)
    if parent is None:
        return f"{described} not created: the source has no table {fk.ref_table!r}"
    ref_columns = referenced_columns(fk, parent.source)
    if len(ref_columns) != len(fk.columns):
        return f"{described} not created: it names {len(ref_columns)} parent columns for " \
               f"{len(fk.columns)} child columns"
    problem = key_problem(plan, fk.columns, described) or key_problem(
        parent, ref_columns, f"{described} (referenced columns)")
    if problem:
        return problem
    mismatch = _type_mismatch(plan, fk.columns, parent, ref_columns)
    if mismatch:
        return f"{described} not created: {mismatch}"
    orphans = _kept_orphans(plan, parent, fk, ref_columns)
    if orphans is None:
        orphans = _orphans(conn, database, plan, parent, fk, ref_columns)
    if orphans:
        return f"{described} not created: {orphans} rows reference a missing parent row"
    parent_ref = table_ref(database, parent.name)
    try:
        with conn.cursor() as cur:
            if not (parent.primary_key and tuple(parent.source.primary_key[:len(ref_columns)])
                    == tuple(ref_columns)):
                # InnoDB needs an index on the referenced columns; the primary key is one.
                cur.execute(f"ALTER TABLE {parent_ref} ADD INDEX "
                            f"({key_list(parent, ref_columns)})")
            # The rows were checked above; skipping InnoDB's own re-check avoids a table copy.
            cur.execute("SET SESSION foreign_key_checks = 0")
            try:
                cur.execute(
                    f"ALTER TABLE {table_ref(database, plan.name)} ADD CONSTRAINT "
                    f"{quote_ident(_constraint_name(plan, number))} FOREIGN KEY "
                    f"({key_list(plan, fk.columns)}) REFERENCES {parent_ref} "
                    f"({key_list(parent, ref_columns)})")
            finally:
                cur.execute("SET SESSION foreign_key_checks = 1")
    except pymysql.err.MySQLError as exc:
        message = exc.args[1] if len(exc.args) > 1 else str(exc)
        return f"{described} not created: MySQL refused it ({message})"
    return None
