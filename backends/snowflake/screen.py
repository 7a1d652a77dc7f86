"""The statement screen for evaluated SQL on Snowflake (and its emulator).

Snowflake has no read-only session: a least-privilege reader role is the server-side barrier on a
real account, and the emulator has none at all. So every statement is screened before it is sent:

* only SELECT / WITH queries (checked by :func:`polysql.backends._common.guard.screen`), SHOW, DESCRIBE and
  EXPLAIN of such a query may run, and only one statement at a time;
* staged files (``@stage`` references, file-URL functions), ``SYSTEM$`` functions (which cancel
  queries, abort sessions or change state) and Cortex functions (which call paid models) are
  refused;
* a statement sqlglot cannot parse is refused when it starts with a keyword of a statement that
  is not a query, of Snowflake or of the DuckDB engine under the emulator; otherwise the engine
  judges it (it can only reject it as a syntax error).
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from polysql.backends._common.guard import FORBIDDEN_FUNCTIONS
from polysql.backends._common.guard import screen as guard_screen
from polysql.core.sqlglot_quiet import quietly

DIALECT = "snowflake"
# Leading keywords of statements that may run.
_QUERY_WORDS = frozenset({"SELECT", "WITH"})
_METADATA_WORDS = frozenset({"SHOW", "DESC", "DESCRIBE"})
# Leading keywords of every other statement Snowflake, or DuckDB under the emulator, would run.
_COMMAND_WORDS = frozenset("""
    ABORT ALTER ANALYZE ATTACH BEGIN CALL CANCEL CHECKPOINT COMMENT COMMIT COPY CREATE
    DEALLOCATE DECLARE DELETE DETACH DROP END EXECUTE EXPORT FOR FORCE GET GRANT IF IMPORT
    INSERT INSTALL LET LIST LOAD LOOP LS MERGE PIVOT PRAGMA PREPARE PUT REMOVE REPEAT RESET
    RETURN REVOKE RM ROLLBACK SET START SUMMARIZE TRUNCATE UNDROP UNPIVOT UNSET UPDATE USE
    VACUUM WHILE FROM VALUES TABLE
""".split())
# Functions that read staged files, change state or reach paid services.
_FORBIDDEN_FUNCTIONS = frozenset({
    "GET_PRESIGNED_URL", "BUILD_SCOPED_FILE_URL", "BUILD_STAGE_FILE_URL", "GET_STAGE_LOCATION",
    "GET_RELATIVE_PATH", "GET_ABSOLUTE_PATH", "INFER_SCHEMA", "GENERATE_COLUMN_DESCRIPTION",
    "TO_FILE", "FL_GET_CONTENT_TYPE", "PARSE_DOCUMENT",
})
# For text sqlglot cannot parse: a call of any refused function, by its name.
_FORBIDDEN_CALL = re.compile(
    r"(?<![\w$])(SYSTEM\$\w+|" + "|".join(
        re.escape(name) for name in sorted(FORBIDDEN_FUNCTIONS | _FORBIDDEN_FUNCTIONS))
    + r")\s*\(", re.I)
_LEADING_NOISE = re.compile(r"\A(?:\s+|--[^\n]*(?:\n|\Z)|//[^\n]*(?:\n|\Z)|/\*.*?\*/|\()*", re.S)
_EXPLAIN = re.compile(r"\A\s*EXPLAIN(?:\s+USING\s+(?:TEXT|JSON|TABULAR))?\b", re.I)


def leading_keyword(sql: str) -> str:
    """The first word of ``sql`` after comments and opening parentheses, upper-cased."""
    match = _LEADING_NOISE.match(sql)
    rest = sql[match.end():] if match else sql
    word = re.match(r"[A-Za-z_]+", rest)
    return word.group(0).upper() if word else ""


def _function_name(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Anonymous):
        return str(node.this).upper()
    if isinstance(node, exp.Func):
        return node.sql_name().upper()
    return None


def _snowflake_hazard(root: exp.Expression) -> str | None:
    """Snowflake-specific reasons to refuse a parsed query."""
    for node in root.walk():
        if isinstance(node, exp.Var) and str(node.this).startswith("@"):
            return "reading staged files is not allowed"
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Literal) \
                and str(node.this.this).startswith("@"):
            return "reading staged files is not allowed"
        name = _function_name(node)
        if name is None:
            continue
        if name.startswith("SYSTEM$"):
            return f"function {name}() is a system function that may change state"
        if name in _FORBIDDEN_FUNCTIONS:
            return f"function {name}() reaches staged files"
        if "CORTEX" in name:
            return f"function {name}() calls a paid model service"
    for node in root.find_all(exp.Dot):
        if "CORTEX" in node.sql(dialect=DIALECT).upper():
            return "Cortex functions call a paid model service"
    return None


def _parse(sql: str) -> list[exp.Expression] | None:
    try:
        with quietly():
            return [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None]
    except (SqlglotError, RecursionError):  # RecursionError: nesting too deep to follow
        return None


def screen_statement(sql: str) -> str | None:
    """Why ``sql`` must not run on Snowflake, or None when it may."""
    keyword = leading_keyword(sql)
    statements = _parse(sql)
    if statements is None:
        return _screen_unparsed(sql, keyword)
    if len(statements) > 1:
        return f"{len(statements)} statements given; evaluated SQL must be a single query"
    if not statements:
        return None
    root = statements[0]
    if keyword in _METADATA_WORDS and isinstance(root, exp.Show | exp.Describe | exp.Command):
        return None  # SHOW and DESCRIBE only read metadata
    if keyword == "EXPLAIN":
        return _screen_explain(sql)
    reason = guard_screen(sql, DIALECT)
    if reason is not None:
        return reason
    return _snowflake_hazard(root)


def _screen_explain(sql: str) -> str | None:
    """EXPLAIN compiles without running on Snowflake, but DuckDB's EXPLAIN ANALYZE under the
    emulator runs its statement: the explained statement must itself be a query that may run."""
    match = _EXPLAIN.match(sql)
    inner = sql[match.end():] if match else ""
    if leading_keyword(inner) not in _QUERY_WORDS:
        return "EXPLAIN is allowed for queries only"
    return screen_statement(inner)


def _more_than_one_statement(sql: str) -> bool:
    """Whether ``sql`` holds a statement after a semicolon (by sqlglot's tokenizer, so semicolons
    in strings and comments do not count; text it cannot tokenize counts as several)."""
    try:
        tokens = sqlglot.tokenize(sql, read=DIALECT)
    except SqlglotError:
        return ";" in sql.rstrip().rstrip(";")
    seen_semicolon = False
    for token in tokens:
        if token.token_type == sqlglot.TokenType.SEMICOLON:
            seen_semicolon = True
        elif seen_semicolon:
            return True
    return False


def _screen_unparsed(sql: str, keyword: str) -> str | None:
    reason = guard_screen(sql, DIALECT)  # its raw-text patterns still apply
    if reason is not None:
        return reason
    if _more_than_one_statement(sql):
        return "several statements given; evaluated SQL must be a single query"
    call = _FORBIDDEN_CALL.search(sql)
    if call:
        return f"function {call.group(1)}() reaches files, the network or changes state"
    if re.search(r"(?<![\w'\"])@[~%\w\"]", sql):
        return "reading staged files is not allowed"
    if keyword in _QUERY_WORDS or keyword in _METADATA_WORDS:
        return None  # syntax sqlglot does not know: Snowflake judges it
    if keyword == "EXPLAIN":
        return _screen_explain(sql)
    if keyword in _COMMAND_WORDS:
        return f"only queries may run; this is a {keyword} statement"
    return None  # not a statement keyword at all: the engine answers with a syntax error
