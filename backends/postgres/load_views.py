"""Views that let a table be reached under its second spelling: exact (quoted) or folded (unquoted).

PostgreSQL folds an unquoted identifier to lower case, so a table has two spellings SQL uses: the
source's exact one, written quoted (``"Track"."TrackId"``), and the folded one, written unquoted
(``Track.TrackId``, read as ``track.trackid``). A copy stores one of them as the table:

* ``names="exact"``: the table is ``"Track"("TrackId", ...)``; a view ``track(trackid, ...)``
  answers unquoted SQL;
* ``names="fold"`` (the copies tasks evaluate on): the table is ``track(trackid, ...)``; a view
  ``"Track"("TrackId", ...)`` answers SQL that quotes the source's spelling.

The view is a plain ``SELECT`` of every column, which the planner inlines, so a statement through
it runs the same plan as on the table. A view is left out, and the table reachable under its own
spelling only, when the other spelling is the same name (a table named in lower case, such as
``singer``: a view of that name cannot exist beside it, so its mixed-case columns are reachable in
one spelling only), when the name is taken (another table, an index, or a second table spelled
the same way), or when two of the table's columns would get one name. Other name modes (``lower``,
``snake``) are a study's explicit choice and get no views.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from polysql.core.naming import NameMode
from polysql.core.schema import TablePlan

_ASCII_UPPER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def folded(name: str) -> str:
    """``name`` as PostgreSQL reads it unquoted: only ASCII letters are lowered (as the server
    does in a UTF-8 database)."""
    return name.translate(_ASCII_UPPER)


def second_spelling(plan: TablePlan, mode: NameMode) -> tuple[str, list[str]] | None:
    """The name and column names of ``plan``'s view under ``mode``; None for modes without one."""
    if mode == "exact":
        return folded(plan.name), [folded(c) for c in plan.target_columns()]
    if mode == "fold":
        return plan.source.name, [c.name for c in plan.source.columns]
    return None


def planned_views(plans: list[TablePlan], mode: NameMode,
                  taken: set[str]) -> dict[str, tuple[TablePlan, list[str]]]:
    """View name -> (the table it shows, its column names), for every table that can have one;
    ``taken``: the names of relations (tables, indexes, sequences) in the schema already."""
    spellings = {plan.name: second_spelling(plan, mode) for plan in plans}
    uses: dict[str, int] = {}
    for spelling in spellings.values():
        if spelling is not None:
            uses[spelling[0]] = uses.get(spelling[0], 0) + 1
    views: dict[str, tuple[TablePlan, list[str]]] = {}
    for plan in plans:
        spelling = spellings[plan.name]
        if spelling is None:
            continue
        view, columns = spelling
        if view == plan.name or view in taken or uses[view] > 1:
            continue
        if len(set(columns)) != len(columns):
            continue
        views[view] = (plan, columns)
    return views


def add_spelling_views(conn: psycopg.Connection, schema: str, plans: list[TablePlan],
                       mode: NameMode) -> list[str]:
    """Create the views of ``plans``' tables under their second spelling in ``schema``; returns
    their names."""
    taken = {row[0] for row in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s", (schema,)).fetchall()}
    views = planned_views(plans, mode, taken)
    for view, (plan, names) in views.items():
        columns = sql.SQL(", ").join(
            sql.SQL("{} AS {}").format(sql.Identifier(column), sql.Identifier(name))
            for column, name in zip(plan.target_columns(), names, strict=True))
        conn.execute(sql.SQL("CREATE VIEW {} AS SELECT {} FROM {}").format(
            sql.Identifier(schema, view), columns, sql.Identifier(schema, plan.name)))
    return sorted(views)
