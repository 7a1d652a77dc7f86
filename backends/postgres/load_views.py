"""The fold schema: every table of an exact-name copy once more under pgloader's names, as views.

PostgreSQL folds an unquoted identifier to lower case, so SQL that leaves a mixed-case name
unquoted (``SELECT TrackId FROM Track``, ``SELECT Name FROM singer`` for a column ``"Name"``)
asks for ``track.trackid`` and ``singer.name``, which a copy with the source's exact names does
not have. That is how SQLite gold SQL, sqlglot's transpile output and SQL written against a
database pgloader built spell names; SQL written against the exact names quotes them instead
(``"Track"."TrackId"``). One table cannot answer both spellings of its columns.

So an exact-name copy keeps its tables, exactly as the source named them, in ``public``, and
:data:`FOLD_SCHEMA` holds a view over each table whose names the ``fold`` rule changes
(:mod:`polysql.core.naming`: a name SQL can leave unquoted in lower case, a name that needs
quotes anyway as it is), under the folded table name with folded column names. The views are
plain ``SELECT``\\ s of every column, which the planner inlines. A statement that names a table
or column that does not exist is run once more with the fold schema first on the search path
(:mod:`polysql.backends.postgres.execute`), so each statement is read in the one layout it was
written for; the SQL itself is never changed.

A table gets no view when two of its columns fold to one name or two tables fold to one name;
it is then reachable under its exact names only.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from polysql.core.naming import convert
from polysql.core.schema import TablePlan

#: the schema of the folded views; evaluated SQL reaches it only through the retry
FOLD_SCHEMA = "polysql_fold"
#: the search path of the retry: folded names first, then the tables as loaded
FOLD_SEARCH_PATH = f"{FOLD_SCHEMA}, public"


def planned_views(plans: list[TablePlan]) -> dict[str, tuple[TablePlan, list[str]]]:
    """Folded view name -> (the table it shows, its folded column names), for every table whose
    names folding changes and can carry them without a clash."""
    folded_names = [convert(plan.name, "fold") for plan in plans]
    views: dict[str, tuple[TablePlan, list[str]]] = {}
    for plan, view in zip(plans, folded_names, strict=True):
        columns = [convert(c, "fold") for c in plan.target_columns()]
        if view == plan.name and columns == plan.target_columns():
            continue  # unquoted SQL reaches this table as it is
        if folded_names.count(view) > 1 or len(set(columns)) != len(columns):
            continue
        views[view] = (plan, columns)
    return views


def add_fold_views(conn: psycopg.Connection, schema: str, tables_schema: str,
                   plans: list[TablePlan]) -> list[str]:
    """Create the folded views of ``plans``' tables (in ``tables_schema``) in ``schema``, which
    exists and is empty; returns their names."""
    views = planned_views(plans)
    for view, (plan, names) in views.items():
        columns = sql.SQL(", ").join(
            sql.SQL("{} AS {}").format(sql.Identifier(column), sql.Identifier(name))
            for column, name in zip(plan.target_columns(), names, strict=True))
        conn.execute(sql.SQL("CREATE VIEW {} AS SELECT {} FROM {}").format(
            sql.Identifier(schema, view), columns, sql.Identifier(tables_schema, plan.name)))
    return sorted(views)
