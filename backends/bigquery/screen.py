"""What untrusted SQL may do on a BigQuery evaluation connection.

BigQuery has no read-only session: a job can run DML, DDL, scripts, ``EXPORT DATA`` (writes to
Cloud Storage), ``EXTERNAL_QUERY`` (reaches other databases) and, for any table the credentials
can see, read other datasets and projects (public data billed to you included). The barriers,
in the order ``execute`` applies them:

1. :func:`polysql.backends._common.guard.screen` (one statement, a query, no writing nodes);
2. :func:`screen_bigquery` here: the statement must not begin as DML, DDL or a script, must not call
   functions that leave the dataset (``EXTERNAL_QUERY``, ``ML.*``, ``AI.*``, ...), and every
   table it names must be in the evaluation dataset (unqualified, ``dataset.t`` or
   ``project.dataset.t``; the dataset's own ``INFORMATION_SCHEMA`` views included);
3. on real BigQuery, a dry run whose ``statement_type`` must be ``SELECT`` -- BigQuery's own
   parser deciding, free of charge;
4. the credentials themselves: use a service account that can only read the dataset
   (``roles/bigquery.dataViewer`` on it, ``roles/bigquery.jobUser`` on the project).
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from polysql.core.sqlglot_quiet import quietly

# Comments and quoted text, removed before the raw-text checks so words inside them never count.
_LITERALS = re.compile(r"--[^\n]*|#[^\n]*|/\*.*?\*/|'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"",
                       re.S)
# Backquoted names (`Alter Ego`), reduced to one neutral word for the same reason.
_QUOTED_NAMES = re.compile(r"`(?:\\.|[^`\\])*`")
# Words that begin a BigQuery statement other than a query (DML, DDL, DCL, scripting,
# transactions, data movement). A statement starting with an unknown word is left to the engine,
# which can only call it a syntax error.
_STATEMENT_START = re.compile(
    r"^[\s(]*(insert|update|delete|merge|truncate|create|drop|alter|undrop|grant|revoke|declare|"
    r"set|begin|commit|rollback|execute|export|load|call|assert|raise|if|loop|while|repeat|for|"
    r"return|break|leave|continue|iterate)\b", re.I)
# Calls that leave the dataset, reach other systems or spend money beyond the query itself.
_FORBIDDEN_CALLS = re.compile(
    r"\b(?:external_query|external_object_transform|vector_search|ml\s*\.\s*\w+|ai\s*\.\s*\w+|"
    r"obj\s*\.\s*\w+)\s*\(", re.I)
# Statements that write, whatever sqlglot makes of the text around them.
_WRITES = re.compile(
    r"\b(?:insert\s+(?:into\s+)?[\w.-]+|delete\s+(?:from\s+)?[\w.-]+|update\s+[\w.-]+\s+"
    r"(?:\w+\s+)?set\b|merge\s+(?:into\s+)?[\w.-]+|truncate\s+table|drop\s+\w+|"
    r"create\s+(?:or\s+replace\s+)?(?:temp(?:orary)?\s+)?(?:table|view|function|procedure|schema|"
    r"model|materialized)|alter\s+\w+|execute\s+immediate|export\s+data|load\s+data|"
    r"call\s+[\w.]+\s*\(|declare\s+\w+|begin\s+transaction|grant\s+|revoke\s+)", re.I)


def _strip(sql: str) -> str:
    return _QUOTED_NAMES.sub(" quoted_name ", _LITERALS.sub(" ", sql))


def _table_allowed(table: exp.Table, project: str, dataset: str) -> bool:
    catalog, db = table.catalog, table.db
    if not db:
        return not catalog
    return db == dataset and catalog in ("", project)


def screen_bigquery(sql: str, *, project: str, dataset: str) -> str | None:
    """Why ``sql`` must not run on the evaluation dataset ``project.dataset``, or None."""
    text = _strip(sql)
    match = _STATEMENT_START.match(text)
    if match:
        return (f"only queries may run on a BigQuery evaluation dataset; this is a "
                f"{match.group(1).upper()} statement")
    match = _FORBIDDEN_CALLS.search(text)
    if match:
        return f"{match.group(0).rstrip('(').strip()}() reaches outside the evaluation dataset"
    match = _WRITES.search(text)
    if match:
        return f"statement contains {' '.join(match.group(0).split()[:2]).upper()}, which writes"
    try:
        with quietly():
            statements = [s for s in sqlglot.parse(sql, read="bigquery") if s is not None]
    except (SqlglotError, RecursionError):  # RecursionError: nesting too deep to follow
        return None  # BigQuery's dry run (real service) or the engine judges the syntax
    ctes = {cte.alias_or_name for s in statements for cte in s.find_all(exp.CTE)}
    for statement in statements:
        for table in statement.find_all(exp.Table):
            if not table.db and not table.catalog and table.name in ctes:
                continue
            if not _table_allowed(table, project, dataset):
                name = ".".join(p for p in (table.catalog, table.db, table.name) if p)
                return (f"table {name!r} is outside the evaluation dataset "
                        f"{project}.{dataset}")
    return None
