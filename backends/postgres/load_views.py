"""Lower-case views over tables whose exact names unquoted SQL cannot reach.

PostgreSQL folds an unquoted identifier to lower case, so with exact names a table created as
``"Track"`` answers ``SELECT "TrackId" FROM "Track"`` but not ``SELECT TrackId FROM Track``
(which asks for ``track.trackid``). Most SQL written for other engines, sqlglot's transpile output
and most model output leave names unquoted, so on a mixed-case dataset almost every statement
failed on PostgreSQL alone, for a reason no other engine shares.

Next to such a table the load creates a view under the folded name whose columns are the folded
column names (``track(trackid, ...)``), so both spellings reach the same rows: the quoted one the
table, the unquoted one the view. The view is a plain ``SELECT`` of every column, which the
planner inlines, so a statement through it runs the same plan as on the table.

A view is left out, and the table reachable by its exact name only, when the folded name is
taken (another table, an index, or a second table folding to it) or two of the table's columns
fold to one name. A table whose name is already lower case gets no view: its mixed-case columns
still need quotes, as a view of the same name cannot exist beside it.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from polysql.core.schema import TablePlan

_ASCII_UPPER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def folded(name: str) -> str:
    """``name`` as PostgreSQL reads it unquoted: only ASCII letters are lowered (as the server
    does in a UTF-8 database)."""
    return name.translate(_ASCII_UPPER)


def planned_views(plans: list[TablePlan], taken: set[str]) -> dict[str, TablePlan]:
    """Folded view name -> the table it shows, for every table that can have one; ``taken``:
    the names of relations (tables, indexes, sequences) in the schema already."""
    folds: dict[str, int] = {}
    for plan in plans:
        folds[folded(plan.name)] = folds.get(folded(plan.name), 0) + 1
    views: dict[str, TablePlan] = {}
    for plan in plans:
        view = folded(plan.name)
        if view == plan.name or view in taken or folds[view] > 1:
            continue
        columns = [folded(c) for c in plan.target_columns()]
        if len(set(columns)) != len(columns):
            continue
        views[view] = plan
    return views


def add_folded_views(conn: psycopg.Connection, schema: str, plans: list[TablePlan]) -> list[str]:
    """Create the lower-case views of ``plans``' tables in ``schema``; returns their names."""
    taken = {row[0] for row in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s", (schema,)).fetchall()}
    views = planned_views(plans, taken)
    for view, plan in views.items():
        columns = sql.SQL(", ").join(
            sql.SQL("{} AS {}").format(sql.Identifier(c), sql.Identifier(folded(c)))
            for c in plan.target_columns())
        conn.execute(sql.SQL("CREATE VIEW {} AS SELECT {} FROM {}").format(
            sql.Identifier(schema, view), columns, sql.Identifier(schema, plan.name)))
    return sorted(views)
