"""A first screen for untrusted SQL, applied before a statement reaches a server.

Engines remain the real barrier (read-only transactions, least-privilege roles, disabled file
access); this screen is defence in depth and makes refusals explicit: a statement that must never
run is reported as ``forbidden`` with the reason, instead of surfacing as whatever error (or
silent NULL, as with MySQL's LOAD_FILE without the FILE privilege) the engine happens to give.

It only refuses what it recognises. A statement sqlglot cannot parse is still checked for a few
dangerous tokens and otherwise left for the engine to judge, so dialect syntax sqlglot does not
know is never refused by mistake.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

from polysql.core.sqlglot_quiet import quietly

if TYPE_CHECKING:
    from sqlglot import exp


# sqlglot is imported on the first screened statement, not with this module: the backends import
# it, and a load, which screens nothing, would pay ~35 ms of start-up for it.
@cache
def _read_roots() -> tuple[type[exp.Expression], ...]:
    """Statement roots that only read."""
    from sqlglot import exp

    return (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Values, exp.Subquery, exp.Paren)


@cache
def _write_nodes() -> tuple[type[exp.Expression], ...]:
    """Nodes that write or change state wherever they appear (including data-modifying CTEs)."""
    from sqlglot import exp

    return (exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter,
            exp.Copy, exp.Set, exp.Command, exp.TruncateTable, exp.Grant, exp.Use, exp.Into,
            exp.LoadData)

# Functions that read or write server files, reach the network, or change settings.
FORBIDDEN_FUNCTIONS = frozenset({
    "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "pg_ls_logdir",
    "pg_ls_waldir", "pg_ls_tmpdir", "pg_ls_archive_statusdir", "lo_import", "lo_export", "lo_get",
    "lo_put", "lo_from_bytea", "dblink", "dblink_exec", "dblink_connect", "set_config",
    "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile",
    "pg_promote", "pg_advisory_lock", "pg_advisory_xact_lock", "pg_try_advisory_lock", "pg_file_write", "pg_file_rename", "pg_logdir_ls", "query_to_xml",
    "load_file", "sys_exec", "sys_eval", "get_lock", "release_lock", "release_all_locks",
    "read_csv", "read_csv_auto", "read_parquet", "read_json", "read_json_auto", "read_text",
    "read_blob", "read_ndjson", "parquet_scan", "sniff_csv", "glob",
    "load_extension", "writefile", "readfile", "fts3_tokenizer",
})
# Checked on raw text, for statements sqlglot cannot parse.
_RAW_PATTERNS = [
    (re.compile(r"\binto\s+(?:local\s+)?(?:outfile|dumpfile)\b", re.I), "writes a server file (INTO OUTFILE/DUMPFILE)"),
    (re.compile(r"\bload\s+data\b", re.I), "reads a file (LOAD DATA)"),
    (re.compile(r"\b(?:load_file|pg_read_(?:binary_)?file|lo_import|lo_export)\s*\(", re.I), "reads or writes server files"),
    (re.compile(r"\bcopy\b[^;]*\b(?:to|from)\s+program\b", re.I), "runs a program (COPY ... PROGRAM)"),
]


# A call of a forbidden function in text the parser cannot read: its name, quoted or not, maybe
# after a schema, then an opening parenthesis (PostgreSQL runs `SELECT pg_cancel_backend(...),
# collation for ('a')`, which sqlglot does not parse). Checked only then: in a parsed statement
# the walk knows a call from the same words inside a string.
_FORBIDDEN_CALL = re.compile(
    r"(?<![\w$])[\"`\[]?(" + "|".join(sorted(FORBIDDEN_FUNCTIONS)) + r")[\"`\]]?\s*\(",
    re.IGNORECASE)


# First keywords of statements that are not queries, across the dialects polysql speaks: text
# beginning with one is refused even when the parser cannot read the rest of it.
STATEMENT_WORDS = frozenset("""
    ALTER ANALYZE ATTACH BACKUP BEGIN CACHE CALL CHECK CHECKPOINT CHECKSUM CLUSTER COMMENT
    COMMIT COPY CREATE DEALLOCATE DELETE DETACH DISCARD DO DROP EXECUTE EXPORT FLUSH GRANT
    HANDLER IMPORT INSERT INSTALL KILL LISTEN LOAD LOCK MERGE NOTIFY OPTIMIZE PRAGMA PREPARE
    PURGE REFRESH REINDEX RELEASE RENAME REPAIR REPLACE RESET RESIGNAL RESTORE REVOKE ROLLBACK
    SAVEPOINT SET SHUTDOWN SIGNAL START TRUNCATE UNDROP UNINSTALL UNLISTEN UNLOCK UPDATE UPSERT
    USE VACUUM XA
""".split())
_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)


def _leading_word(sql: str) -> str | None:
    """The first word of ``sql`` after comments, upper-cased; None when there is none."""
    match = re.match(r"\s*([A-Za-z_]+)", _COMMENTS.sub(" ", sql))
    return match.group(1).upper() if match else None


def _function_name(node: exp.Expression) -> str | None:
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        # the name without its quotes: PostgreSQL calls "pg_cancel_backend"(...) as readily
        return node.name.lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return None


def _statement_kind(root: exp.Expression, sql: str) -> str:
    """``a DELETE statement``: the kind named by the parsed root where it is a statement, else by
    the text's first word (sqlglot reads ``LISTEN x`` as a column alias)."""
    from sqlglot import exp

    if isinstance(root, exp.Command):
        kind = str(root.this).upper()
    elif isinstance(root, _write_nodes()):
        kind = root.key.upper()
    else:
        words = re.findall(r"[A-Za-z_]+", re.sub(r"--[^\n]*|/\*.*?\*/", " ", sql, flags=re.S))
        kind = words[0].upper() if words else root.key.upper()
    return f"{_with_article(kind)} statement"


def _with_article(word: str) -> str:
    """``an INTO``, ``a DELETE``: the indefinite article a reader says before the keyword."""
    return f"{'an' if word[:1] in 'AEIOU' else 'a'} {word}"


def screen(sql: str, dialect: str | None = None) -> str | None:
    """Why ``sql`` must not run, or None when the screen finds nothing wrong."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    for pattern, why in _RAW_PATTERNS:
        if pattern.search(sql):
            return f"statement {why}"
    try:
        with quietly():
            statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except (SqlglotError, RecursionError):
        # (RecursionError: nesting deeper than the parser can follow, some 500 parentheses:
        # the engine judges it as it judges what the parser does not know; the login and the
        # read-only transaction still hold.)
        # Syntax the parser does not know is the engine's to judge -- unless the text begins
        # with the keyword of a statement that is not a query (DO ..., HANDLER ...): then it is
        # none, whatever follows. Any other first word (a typo, prose before the query) is left
        # for the engine to report as the syntax error it is.
        lead = _leading_word(sql)
        if lead in STATEMENT_WORDS:
            return f"only queries may run; this is {_with_article(lead)} statement"
        # comments are not skipped: a `--` inside a string would hide the rest of its line
        call = _FORBIDDEN_CALL.search(sql)
        if call is not None:
            return f"function {call.group(1).lower()}() reaches files, the network or server settings"
        return None
    if len(statements) > 1:
        return f"{len(statements)} statements given; evaluated SQL must be a single query"
    if not statements:
        return None
    root = statements[0]
    if not isinstance(root, _read_roots()):
        return f"only queries may run; this is {_statement_kind(root, sql)}"
    write_nodes = _write_nodes()
    for node in root.walk():
        if isinstance(node, write_nodes):
            return (f"query contains {_with_article(node.key.upper())} that would change data "
                    "or settings")
        name = _function_name(node)
        if name in FORBIDDEN_FUNCTIONS:
            return f"function {name}() reaches files, the network or server settings"
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Literal):
            return "reading a file as a table is not allowed"
    return None
