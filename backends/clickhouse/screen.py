"""What untrusted SQL may do on ClickHouse, decided before it reaches the engine.

``readonly=1`` is the engine's own barrier: no writes, no DDL, no settings changes and no table
function that reaches a file, a URL or another server. Two things pass it in embedded chdb, because
clickhouse-local treats them as local client features: ``SELECT ... INTO OUTFILE`` writes a file,
and the scalar ``file()`` function reads any file the process can read. chdb also runs every
``;``-separated statement it is given, and ``USE`` or ``KILL QUERY`` pass ``readonly=1``.

So each statement is tokenized here by ClickHouse's own lexical rules (strings with backslash
escapes and doubled quotes, ``--``/``//``/``#`` and nested ``/* */`` comments, ``$tag$``
heredocs), and refused unless it is exactly one query (``SELECT``, ``WITH`` or ``FROM ...
SELECT``) that mentions no ``OUTFILE``/``INFILE`` and calls no function on the deny list.
``polysql.backends._common.guard.screen`` then adds its engine-neutral checks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from polysql.backends._common.guard import screen

_WHITESPACE = frozenset(" \t\n\r\f\v")
_QUOTES = frozenset("'\"`")


def _is_word_char(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "_")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # word | string | quoted | number | heredoc | semicolon | open | close | other | error
    text: str
    start: int


def _line_end(sql: str, pos: int) -> int:
    end = sql.find("\n", pos)
    return len(sql) if end < 0 else end


def _quoted_end(sql: str, pos: int) -> int | None:
    """End of the quoted token starting at ``pos``; None if it is never closed."""
    quote, i, n = sql[pos], pos + 1, len(sql)
    while i < n:
        ch = sql[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            if i + 1 < n and sql[i + 1] == quote:
                i += 2
                continue
            return i + 1
        i += 1
    return None


def _comment_end(sql: str, pos: int) -> int | None:
    """End of a (nestable) ``/* */`` comment starting at ``pos``; None if never closed."""
    depth, i, n = 1, pos + 2, len(sql)
    while i + 1 < n:
        pair = sql[i:i + 2]
        if pair == "/*":
            depth, i = depth + 1, i + 2
        elif pair == "*/":
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    return None


def _number_end(sql: str, pos: int) -> int:
    """Numbers never hold quotes, comments or semicolons; all that matters is where they stop."""
    i, n = pos, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "eEpP" and i + 1 < n and sql[i + 1] in "+-":
            i += 2
        elif _is_word_char(ch) or ch in ".$":
            i += 1
        else:
            break
    return i


def tokenize(sql: str) -> list[Token]:
    """Significant tokens of ``sql`` (whitespace and comments dropped). A token ClickHouse could
    not read (an unclosed string or comment) becomes one ``error`` token running to the end."""
    tokens: list[Token] = []
    i, n = 0, len(sql)
    while i < n:
        ch, start = sql[i], i
        two = sql[i:i + 2]
        if ch in _WHITESPACE or (not ch.isascii() and ch.isspace()):
            i += 1
            continue
        if two in ("--", "//") or (ch == "#" and sql[i + 1:i + 2] in (" ", "!")):
            i = _line_end(sql, i)
            continue
        if two == "/*":
            end = _comment_end(sql, i)
            if end is None:
                tokens.append(Token("error", sql[i:], start))
                break
            i = end
            continue
        if ch in _QUOTES:
            end = _quoted_end(sql, i)
            if end is None:
                tokens.append(Token("error", sql[i:], start))
                break
            tokens.append(Token("string" if ch == "'" else "quoted", sql[i:end], start))
            i = end
            continue
        if ch in "xXbB" and sql[i + 1:i + 2] == "'":
            digits = "0123456789abcdefABCDEF" if ch in "xX" else "01"
            j = i + 2
            while j < n and sql[j] in digits:
                j += 1
            if j >= n or sql[j] != "'":
                tokens.append(Token("error", sql[i:], start))
                break
            tokens.append(Token("string", sql[i:j + 1], start))
            i = j + 1
            continue
        if ch == "$":
            close = sql.find("$", i + 1)
            if close >= 0:
                tag = sql[i:close + 1]
                end = sql.find(tag, close + 1)
                if end >= 0:
                    tokens.append(Token("heredoc", sql[i:end + len(tag)], start))
                    i = end + len(tag)
                    continue
            if i + 1 >= n or not _is_word_char(sql[i + 1]):
                tokens.append(Token("other", ch, start))
                i += 1
                continue
        if ch.isascii() and ch.isdigit():
            i = _number_end(sql, i)
            tokens.append(Token("number", sql[start:i], start))
            continue
        if _is_word_char(ch) or ch == "$":
            i += 1
            while i < n and (_is_word_char(sql[i]) or sql[i] == "$"):
                i += 1
            tokens.append(Token("word", sql[start:i], start))
            continue
        kind = {";": "semicolon", "(": "open", ")": "close"}.get(ch, "other")
        tokens.append(Token(kind, ch, start))
        i += 1
    return tokens


def statements(tokens: list[Token]) -> list[list[Token]]:
    """Tokens grouped by top-level ``;`` (empty statements dropped)."""
    groups: list[list[Token]] = [[]]
    for token in tokens:
        if token.kind == "semicolon":
            groups.append([])
        else:
            groups[-1].append(token)
    return [g for g in groups if g]


def identifier(token: Token) -> str | None:
    """The name a word or quoted identifier token stands for."""
    if token.kind == "word":
        return token.text
    if token.kind == "quoted":
        body = token.text[1:-1]
        quote = token.text[0]
        return re.sub(r"\\(.)", r"\1", body.replace(quote * 2, quote))
    return None


# Functions and table functions that read or write files, reach the network or other servers,
# or run programs. ``readonly=1`` refuses the table functions on its own; the scalar ``file()``
# it does not.
_DENIED_FUNCTIONS = re.compile(
    r"(file|filecluster|filesystem|url|urlcluster|s3|s3cluster|gcs|oss|cosn|hdfs|hdfscluster"
    r"|azureblobstorage\w*|remote|remotesecure|cluster|clusterallreplicas|mysql|postgresql"
    r"|sqlite|mongodb|redis|jdbc|odbc|executable|input|python|arrowstream|dictionary|eval"
    r"|iceberg\w*|deltalake\w*|hudi\w*|paimon\w*|ytsaurus|bigquery|prometheusquery\w*"
    r"|loop|viewexplain)")
_QUERY_STARTS = frozenset({"select", "with", "from"})
# Words that start ClickHouse statements other than queries: refused without asking the engine.
_STATEMENT_WORDS = frozenset({
    "alter", "attach", "backup", "begin", "check", "commit", "create", "delete", "desc",
    "describe", "detach", "drop", "exchange", "execute", "exists", "explain", "grant", "insert",
    "kill", "move", "optimize", "rename", "replace", "restore", "revoke", "rollback", "set",
    "show", "start", "system", "truncate", "undrop", "update", "use", "watch", "parallel",
})
# Words that make a statement touch files whatever the context (INTO OUTFILE, FROM INFILE).
_FILE_CLAUSE = re.compile(r"\b(?:outfile|infile)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Screened:
    """One statement, ready to send (trailing semicolons and comments removed), or why not.

    ``query`` is False when the statement does not start like a query: it must not run, and only
    ClickHouse's parser (``EXPLAIN AST``, which never executes) can say whether that is a syntax
    error or a valid statement of another kind."""

    sql: str = ""
    refusal: str | None = None
    query: bool = True
    first_word: str = ""


def _first_word(statement: list[Token]) -> str | None:
    for token in statement:
        if token.kind == "open":
            continue
        return token.text.lower() if token.kind == "word" else None
    return None


def _denied_call(tokens: list[Token]) -> str | None:
    for token, following in zip(tokens, tokens[1:], strict=False):
        name = identifier(token)
        if name is not None and following.kind == "open" \
                and _DENIED_FUNCTIONS.fullmatch(name.lower()):
            return name
    return None


def _format_clause(tokens: list[Token]) -> bool:
    """A top-level ``FORMAT <name>`` clause (the function ``format(...)`` is fine)."""
    depth = 0
    for token, following in zip(tokens, tokens[1:], strict=False):
        if token.kind == "open":
            depth += 1
        elif token.kind == "close":
            depth -= 1
        elif depth == 0 and token.kind == "word" and token.text.lower() == "format" \
                and following.kind in ("word", "quoted"):
            return True
    return False


def screen_statement(sql: str, *, guard: bool = True) -> Screened:
    """Check one untrusted statement; the text to run, or the reason it must not run."""
    if _FILE_CLAUSE.search(sql):
        return Screened(refusal="INTO OUTFILE / FROM INFILE read or write files")
    tokens = tokenize(sql)
    groups = statements(tokens)
    if len(groups) > 1:
        return Screened(refusal=f"{len(groups)} statements given; evaluated SQL must be a "
                                f"single query")
    if not groups:
        return Screened(sql=sql)  # nothing but comments: ClickHouse reports the syntax error
    statement = groups[0]
    last = statement[-1]
    text = sql[statement[0].start:last.start + len(last.text)]
    first = _first_word(statement)
    if first in _STATEMENT_WORDS:
        return Screened(refusal=f"only queries may run; this is a {first.upper()} statement")
    if first not in _QUERY_STARTS:
        return Screened(sql=text, query=False, first_word=(first or statement[0].text).upper())
    denied = _denied_call(statement)
    if denied is not None:
        return Screened(refusal=f"function {denied}() reaches files, the network or other servers")
    if _format_clause(statement):
        return Screened(refusal="a FORMAT clause is not allowed: results are read in polysql's "
                                "own format")
    if guard:
        reason = screen(text, "clickhouse")
        if reason is not None:
            return Screened(refusal=reason)
    return Screened(sql=text)
