"""What untrusted SQL may do in a Spark evaluation session.

Spark has no read-only session, so statements are screened before they run, in three layers:

1. a lexical screen of the text (:func:`screen_text`): exactly one statement; it must start as a
   query (SELECT, WITH, VALUES, FROM, TABLE) or as SHOW/DESCRIBE/EXPLAIN; no write clause, script
   transform (``USING 'script'``), EXECUTE IMMEDIATE, reflection function, function name computed
   by IDENTIFIER(), or file read as a table (``parquet.`/path```) anywhere in it; queries also pass
   :func:`polysql.backends._common.guard.screen`;
2. on a driver in this process, Spark's own parser (:func:`plan_refusal`): no node of the parsed
   plan -- including CTE definitions and subqueries -- may be a command or a write, except the
   read-only SHOW/DESCRIBE/EXPLAIN commands at the root;
3. the session itself: ``spark.sql.runSQLOnFiles`` off and (on a driver in this process) the
   reflection functions removed from its registry (see ``connect.lock_down``).

On Spark Connect, which offers no parser, a statement whose first word layer 1 does not know is
planned with EXPLAIN (never run): a syntax error is reported as such, anything else is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from polysql.backends._common.guard import screen
from polysql.backends.spark.connect import REFLECTION_FUNCTIONS
from polysql.backends.spark.errors import classify, message_of
from polysql.core.model import ErrorKind

QUERY_STARTS = frozenset({"SELECT", "WITH", "VALUES", "FROM", "TABLE"})
READ_COMMANDS = frozenset({"SHOW", "DESCRIBE", "DESC", "EXPLAIN"})
# Statement keywords that never start a query: refused without asking the parser.
WRITE_STARTS = frozenset({
    "INSERT", "UPDATE", "DELETE", "MERGE", "UPSERT", "CREATE", "DROP", "ALTER", "TRUNCATE",
    "REPLACE", "SET", "RESET", "USE", "ADD", "LOAD", "CACHE", "UNCACHE", "CLEAR", "REFRESH",
    "MSCK", "REPAIR", "ANALYZE", "GRANT", "REVOKE", "CALL", "DECLARE", "EXECUTE", "BEGIN",
    "START", "COMMIT", "ROLLBACK", "LIST", "COMMENT", "EXPORT", "IMPORT", "OPTIMIZE", "VACUUM",
    "LOCK", "UNLOCK", "DFS", "FOR", "WHILE", "LOOP", "REPEAT", "IF", "LEAVE", "ITERATE", "SIGNAL",
    "RESIGNAL", "GET", "PUT", "REMOVE", "COPY",
})
# Data source names Spark reads a file path as a table with (``csv.`/etc/passwd```).
FILE_FORMATS = frozenset({
    "parquet", "orc", "json", "csv", "text", "avro", "binaryfile", "xml", "delta", "jdbc",
    "libsvm", "hive", "image", "iceberg", "hudi", "protobuf",
})
_EXPLAIN_MODES = frozenset({"EXTENDED", "CODEGEN", "COST", "FORMATTED", "LOGICAL", "ANALYZE"})
_CREATE_OBJECTS = frozenset({
    "TABLE", "VIEW", "DATABASE", "SCHEMA", "NAMESPACE", "FUNCTION", "TEMPORARY", "TEMP",
    "GLOBAL", "OR", "EXTERNAL", "INDEX", "CATALOG", "VARIABLE", "MATERIALIZED", "STREAMING",
})
# Parsed-plan nodes that write or leave the query without being Spark "commands".
WRITE_NODES = frozenset({
    "InsertIntoStatement", "InsertIntoDir", "ScriptTransformation", "UnresolvedExecuteImmediate",
    "ExecuteImmediateQuery", "ExecuteImmediateCommand", "AppendData", "OverwriteByExpression",
    "OverwritePartitionsDynamic", "MergeIntoTable", "UpdateTable", "DeleteFromTable",
    "CompoundBody", "SingleStatement",
})
# Commands that only read and never run the statement they describe.
READ_ONLY_COMMANDS = frozenset({
    "ShowTables", "ShowTablesExtended", "ShowTablePartition", "ShowViews", "ShowNamespaces",
    "ShowNamespacesCommand", "ShowColumns", "ShowTableProperties", "ShowFunctions",
    "ShowCreateTable", "ShowPartitions", "ShowCatalogsCommand", "ShowCurrentNamespace",
    "ShowCurrentNamespaceCommand", "ShowCollationsCommand", "DescribeRelation", "DescribeColumn",
    "DescribeFunction", "DescribeNamespace", "DescribeQueryCommand", "ExplainCommand",
})
_COMMAND = "org.apache.spark.sql.catalyst.plans.logical.Command"
_MAX_PLAN_NODES = 5000


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # word | quoted (backtick identifier) | string | symbol
    text: str  # words upper-cased; quoted identifiers and strings without their quotes


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a statement is not run: an error kind, the message, the SQLSTATE if Spark gave one."""

    kind: ErrorKind
    message: str
    sqlstate: str | None = None


@dataclass(frozen=True, slots=True)
class Screened:
    """The lexical screen's verdict on one statement."""

    statement: str  # the statement to run: comments kept, trailing semicolons removed
    refusal: Refusal | None = None
    # the first keyword is none the screen knows: only the parser can tell a typo (syntax
    # error) from a statement the screen does not allow (forbidden)
    unknown_start: bool = False


class _Unterminated(Exception):
    pass


_WORD = re.compile(r"[A-Za-z0-9_$]+")


def _skip_block_comment(sql: str, i: int) -> int:
    """Index after the bracketed comment starting at ``i`` (Spark nests them)."""
    depth, i = 0, i
    while i < len(sql):
        if sql.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif sql.startswith("*/", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    raise _Unterminated


def _read_quoted(sql: str, i: int, quote: str, *, escapes: bool) -> tuple[str, int]:
    """The content of the literal or identifier opening at ``i`` and the index after it."""
    out, i = [], i + 1
    while i < len(sql):
        ch = sql[i]
        if escapes and ch == "\\" and i + 1 < len(sql):
            out.append(sql[i + 1])
            i += 2
            continue
        if ch == quote:
            if quote == "`" and sql.startswith("``", i):
                out.append("`")
                i += 2
                continue
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    raise _Unterminated


def tokenize(sql: str) -> list[tuple[Token, int]]:
    """Tokens of Spark SQL text with their start offsets; comments are dropped."""
    tokens: list[tuple[Token, int]] = []
    i = 0
    while i < len(sql):
        ch = sql[i]
        if ch.isspace():
            i += 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = len(sql) if end < 0 else end + 1
        elif sql.startswith("/*", i):
            i = _skip_block_comment(sql, i)
        elif ch in "'\"":
            text, end = _read_quoted(sql, i, ch, escapes=True)
            tokens.append((Token("string", text), i))
            i = end
        elif ch in "rR" and i + 1 < len(sql) and sql[i + 1] in "'\"" and \
                not (i and _WORD.match(sql[i - 1])):
            text, end = _read_quoted(sql, i + 1, sql[i + 1], escapes=False)  # raw literal
            tokens.append((Token("string", text), i))
            i = end
        elif ch == "`":
            text, end = _read_quoted(sql, i, "`", escapes=False)
            tokens.append((Token("quoted", text), i))
            i = end
        elif match := _WORD.match(sql, i):
            tokens.append((Token("word", match.group().upper()), i))
            i = match.end()
        else:
            tokens.append((Token("symbol", ch), i))
            i += 1
    return tokens


def _split(sql: str, tokens: list[tuple[Token, int]]) -> list[tuple[str, list[Token]]]:
    statements: list[tuple[str, list[Token]]] = []
    start, current = 0, []
    for token, offset in tokens:
        if token == Token("symbol", ";"):
            if current:
                statements.append((sql[start:offset].strip(), current))
            start, current = offset + 1, []
        else:
            if not current:
                start = offset
            current.append(token)
    if current:
        statements.append((sql[start:].strip().rstrip(";").strip(), current))
    return statements


def _is_name(token: Token, names: frozenset[str] | tuple[str, ...]) -> bool:
    return token.kind in ("word", "quoted") and token.text.lower() in names


def _dangerous(tokens: list[Token]) -> str | None:
    """Why the statement's tokens contain something no evaluated query may do."""
    words = [t.text if t.kind == "word" else None for t in tokens]

    def word(i: int) -> str | None:
        return words[i] if 0 <= i < len(words) else None

    for i, token in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        w, after = word(i), word(i + 1)
        if w == "INSERT" and after in ("INTO", "OVERWRITE"):
            return "an INSERT writes data"
        if (w, after) in (("DELETE", "FROM"), ("MERGE", "INTO"), ("TRUNCATE", "TABLE"),
                          ("LOAD", "DATA"), ("EXECUTE", "IMMEDIATE")):
            return f"{w} {after} changes data or runs another statement"
        if w == "UPDATE" and "SET" in [word(j) for j in range(i + 2, i + 5)]:
            return "an UPDATE writes data"
        if w in ("CREATE", "DROP", "ALTER", "REPLACE") and after in _CREATE_OBJECTS:
            return f"{w} {after} changes the catalog"
        if w == "ADD" and after in ("JAR", "JARS", "FILE", "FILES", "ARCHIVE", "ARCHIVES"):
            return f"ADD {after} loads code or files into the driver"
        if w == "CACHE" and (after == "TABLE" or (after == "LAZY" and word(i + 2) == "TABLE")):
            return "CACHE TABLE changes the session"
        if w == "USING" and nxt is not None and nxt.kind == "string":
            return "USING '...' runs a script or loads a jar"
        if nxt == Token("symbol", "(") and _is_name(token, REFLECTION_FUNCTIONS):
            return f"{token.text.lower()}() calls Java methods"
        if w == "IDENTIFIER" and nxt == Token("symbol", "(") and _calls_computed_name(tokens, i):
            return "function names computed by IDENTIFIER() are not allowed"
        if (_is_name(token, FILE_FORMATS) and nxt == Token("symbol", ".")
                and i + 2 < len(tokens) and tokens[i + 2].kind == "quoted"):
            return f"reading a file as a table ({token.text.lower()}.`...`) is not allowed"
    return None


def _calls_computed_name(tokens: list[Token], i: int) -> bool:
    """Whether IDENTIFIER(...) at ``i`` is followed directly by an argument list."""
    depth = 0
    for j in range(i + 1, len(tokens)):
        if tokens[j] == Token("symbol", "("):
            depth += 1
        elif tokens[j] == Token("symbol", ")"):
            depth -= 1
            if depth == 0:
                return j + 1 < len(tokens) and tokens[j + 1] == Token("symbol", "(")
    return False


def _first_word(tokens: list[Token]) -> tuple[str | None, int]:
    """The first keyword (past opening parentheses) and its index."""
    for i, token in enumerate(tokens):
        if token == Token("symbol", "("):
            continue
        return (token.text if token.kind == "word" else None), i
    return None, len(tokens)


def screen_text(sql: str) -> Screened:
    """The lexical screen (layer 1) of one untrusted statement."""
    try:
        statements = _split(sql, tokenize(sql))
    except _Unterminated:
        # an unterminated literal or comment: Spark cannot parse it either
        return Screened(sql.strip(), unknown_start=True)
    if not statements:
        return Screened("", refusal=Refusal("syntax", "no SQL statement found"))
    if len(statements) > 1:
        return Screened(sql.strip(), refusal=Refusal(
            "forbidden", f"exactly one statement is evaluated, got {len(statements)}"))
    statement, tokens = statements[0]
    why = _dangerous(tokens)
    if why is not None:
        return Screened(statement, refusal=Refusal("forbidden", f"statement refused: {why}"))
    first, index = _first_word(tokens)
    if first == "EXPLAIN":
        rest = tokens[index + 1:]
        while rest and rest[0].kind == "word" and rest[0].text in _EXPLAIN_MODES:
            rest = rest[1:]
        inner, _ = _first_word(rest)
        if inner not in QUERY_STARTS:
            return Screened(statement, refusal=Refusal(
                "forbidden", "only queries may be explained"))
        return Screened(statement)
    if first in READ_COMMANDS:
        return Screened(statement)
    if first in QUERY_STARTS:
        # sqlglot reads TABLE t as an alias; everything else it parses as Spark SQL
        reason = screen(statement, "spark") if first != "TABLE" else None
        if reason is not None:
            return Screened(statement, refusal=Refusal("forbidden", reason))
        return Screened(statement)
    if first in WRITE_STARTS:
        return Screened(statement, refusal=Refusal(
            "forbidden", f"only queries may run; this is a {first} statement"))
    return Screened(statement, unknown_start=True)


def _simple_name(node: Any) -> str:
    return str(node.getClass().getName()).rsplit(".", 1)[-1].rstrip("$")


def _scala_items(seq: Any) -> list[Any]:
    return [seq.apply(i) for i in range(seq.size())]


def plan_refusal(session: Any, statement: str) -> Refusal | None:
    """Layer 2 on a driver in this process: parse with Spark's own parser and inspect every node
    of the plan. A statement the parser rejects is a syntax error, reported without running it."""
    from py4j.java_gateway import is_instance_of

    gateway = session.sparkContext._gateway
    parser = session._jsparkSession.sessionState().sqlParser()
    try:
        plan = parser.parsePlan(statement)
    except Exception as exc:
        kind, sqlstate = classify(exc, cancelled=False)
        return Refusal(kind, message_of(exc), sqlstate) if kind == "syntax" else None
    root = _simple_name(plan)
    if root in READ_ONLY_COMMANDS:
        if root != "ExplainCommand":
            return None
        plan = plan.logicalPlan()  # explained, never run; but still only a query is allowed
    pending, seen = [plan], 0
    while pending:
        node = pending.pop()
        seen += 1
        if seen > _MAX_PLAN_NODES:
            return Refusal("forbidden", "statement too large to screen")
        name = _simple_name(node)
        if name in WRITE_NODES or is_instance_of(gateway, node, _COMMAND):
            return Refusal("forbidden", f"only queries may run; the statement holds a {name}")
        pending.extend(_scala_items(node.children()))
        pending.extend(_scala_items(node.innerChildren()))
        pending.extend(_scala_items(node.subqueries()))
    return None


def screen_statement(session: Any, sql: str, *, connect: bool) -> tuple[Refusal | None, str]:
    """The statement to run, or why it must not run: layer 1, then layer 2 on a driver in this
    process (``connect`` False); on Spark Connect a statement of unknown start is judged by
    :func:`_connect_parse_verdict` instead."""
    screened = screen_text(sql)
    if screened.refusal is not None:
        return screened.refusal, screened.statement
    if not connect:
        try:
            refusal = plan_refusal(session, screened.statement)
        except Exception as exc:  # the screen itself failed: never run unscreened SQL
            if classify(exc, cancelled=False)[0] == "unavailable":
                # the driver is gone (killed, out of memory): an outage, not the statement's fault
                return Refusal("unavailable", f"the Spark driver cannot be reached to screen "
                                              f"the statement: {message_of(exc)}"), ""
            return Refusal("forbidden", f"statement could not be screened: {exc}"), ""
        if refusal is None and screened.unknown_start:
            refusal = Refusal("forbidden", "only queries may run")
        return refusal, screened.statement
    if screened.unknown_start:
        return _connect_parse_verdict(session, screened.statement), screened.statement
    return None, screened.statement


def _connect_parse_verdict(session: Any, statement: str) -> Refusal:
    """Spark Connect has no parse-only call; EXPLAIN parses and plans without running. A parse
    error is the statement's syntax error; anything that parses is refused, as it starts with a
    keyword no query starts with."""
    try:
        session.sql(f"EXPLAIN {statement}").collect()
    except Exception as exc:
        kind, sqlstate = classify(exc, cancelled=False)
        if kind == "syntax":
            return Refusal("syntax", message_of(exc), sqlstate)
    return Refusal("forbidden", "only queries may run")
