"""SQL extraction: the one query a model's free-text answer gives for the question.

Models wrap SQL in many ways: fenced Markdown blocks (labelled ``sql`` or not), JSON objects
(``{"sql": ...}``), a ``SQL:`` label, inline code, or bare SQL followed by an explanation; they
think aloud first, write drafts, offer alternatives, echo the schema, refuse, or run out of
tokens mid-query. :func:`extract_sql` looks for candidates in that order of explicitness (the
first kind that yields a query wins) and never raises for any response text: when it cannot find
a usable query it says why in ``Extraction.failure`` so the sweep records a generation failure.

When several query statements are found, the answer is chosen as follows, and ``choice_made`` is
set so the choice stays visible in the results:

- when the response gives versions for several dialects (```mysql blocks, "For PostgreSQL:"),
  only those for the requested dialect are considered, if there are any;
- a statement introduced as the final answer ("Final answer:", "the answer is", ...) wins;
- a statement introduced as an alternative ("Alternatively, ...") does not replace the one before;
- otherwise the last one wins, because models that think aloud write drafts before the answer.

Statements that are not queries (``CREATE TABLE`` echoed from the prompt, ``INSERT``...) are never
chosen. A query cut off mid-way (unbalanced brackets or quotes, ending on ``WHERE`` or ``AND``) is
not passed on as SQL: it becomes ``truncated_response`` when it runs to the end of the text (and
``incomplete_sql`` when text follows it). Given ``truncated=True`` (the endpoint reported that it
stopped at the token limit), a query running to the end of the text is also ``truncated_response``.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import asdict, dataclass
from typing import Any

import sqlglot
from sqlglot.errors import SqlglotError

from polysql.backends import catalog
from polysql.core.errors import ConfigError
from polysql.core.sqlglot_quiet import quietly

# Failure codes (``Extraction.failure``).
EMPTY_RESPONSE = "empty_response"
REFUSAL = "refusal"
NO_SQL_FOUND = "no_sql_found"
NOT_A_QUERY = "not_a_query"
TRUNCATED_RESPONSE = "truncated_response"
INCOMPLETE_SQL = "incomplete_sql"


@dataclass
class Extraction:
    """What was taken from a response, how, and (when nothing usable was) why not."""

    sql: str | None
    method: str  # json | fenced_sql | fenced | inline_code | labeled | bare | none
    candidates: int  # distinct query statements found
    choice_made: bool  # True when other statements were found and passed over
    failure: str | None  # one of the failure codes above, None when sql is set

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class _Candidate:
    sql: str
    start: int  # where the statement's first keyword sits in the cleaned text
    end: int
    method: str
    complete: bool
    runs_to_end: bool  # nothing but whitespace follows it: a cut-off here means truncation
    lang: str = ""  # the fence's language label, if it came from a fenced block


# --- cleaning ------------------------------------------------------------------------------------

# Chat-template control tokens that small or misconfigured servers leak into the text.
_SPECIAL_TOKENS = re.compile(r"<\|[A-Za-z0-9_]+\|>|</?s>|\[/?INST\]")
_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)

_REFUSAL = re.compile(
    r"\b(I'?m sorry|I am sorry|I apologi[sz]e|I can(?:'|no)?t (?:help|assist|answer|provide|write|do)"
    r"|I(?:'m| am) (?:not able|unable) to|as an AI|cannot be answered|can't be answered"
    r"|not possible to (?:answer|write|determine))",
    re.IGNORECASE,
)


def _clean(text: str) -> str:
    text = _SPECIAL_TOKENS.sub("", text)
    return _THINK_BLOCK.sub(lambda m: " " * len(m.group(0)), text)


# --- a small SQL scanner: quotes, comments, brackets -----------------------------------------------

_QUERY_START = re.compile(r"\(*\s*(SELECT|WITH|VALUES)\b", re.IGNORECASE)
# A statement ending on one of these was cut off (or never finished).
_DANGLING = re.compile(
    r"(?:\b(?:SELECT|FROM|WHERE|AND|OR|JOIN|ON|BY|HAVING|AS|IN|NOT|LIKE|BETWEEN|CASE|WHEN|THEN|"
    r"ELSE|UNION|INTERSECT|EXCEPT|DISTINCT|LIMIT|OFFSET|SET|WITH|IS)|[,=<>(+\-/|.])\s*$",
    re.IGNORECASE,
)
_SQL_LINE_START = re.compile(
    r"(SELECT|FROM|WHERE|AND|OR|NOT|JOIN|INNER|LEFT|RIGHT|FULL|CROSS|NATURAL|OUTER|ON|USING|GROUP|"
    r"ORDER|HAVING|LIMIT|OFFSET|FETCH|UNION|INTERSECT|EXCEPT|WITH|AS|CASE|WHEN|THEN|ELSE|END|IN|"
    r"EXISTS|BETWEEN|LIKE|IS|NULL|DESC|ASC|OVER|PARTITION|WINDOW|QUALIFY|FILTER|VALUES|DISTINCT)\b",
    re.IGNORECASE,
)
# A line of English after a query ("This query counts ...", "Explanation:", "- It joins ...").
_PROSE_LINE = re.compile(
    r"^(?:[-*•]\s|\d+[.)]\s|#|\*\*|>|"
    r"[A-Z][a-z’']*(?:\s+[A-Za-z’'(),\"-]+){3,}.*[.:!?]$|"
    r"(?:Explanation|Note|Notes|Output|Result|Results|Here|This|The|It|In|We|I)\b)"
)


# After a period: the next sentence of English (" It counts ..."), which never continues SQL.
_SENTENCE_AFTER = re.compile(r"[ \t]+[A-Z][a-z]+\b")


@functools.cache
def _backslash_escapes(dialect: str) -> bool:
    """Whether ``dialect``'s string literals take backslash escapes, as sqlglot's tokenizer
    reads them."""
    return "\\" in sqlglot.Dialect.get_or_raise(dialect).tokenizer_class.STRING_ESCAPES


@dataclass(slots=True)
class _Scan:
    end: int  # index just past the statement (before its terminator)
    next: int  # where scanning may resume
    balanced: bool  # no open bracket, quote or block comment at the end


def _scan(text: str, start: int, *, stop_at_prose: bool, backslash: bool) -> _Scan:
    """Find where the statement beginning at ``start`` ends.

    It ends at a ``;`` outside quotes, comments and brackets; in running text (``stop_at_prose``)
    also at a blank line, a Markdown fence, or a line of English prose at bracket depth zero.
    ``backslash``: the dialect escapes quotes with a backslash (MySQL's ``'O\\'Brien'``).
    """
    i, depth, n = start, 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"`":
            close = _closing_quote(text, i, backslash)
            if close == -1 or (stop_at_prose and "\n\n" in text[i:close]):
                return _Scan(n if close == -1 else _blank_line_end(text, i), n, False)
            i = close + 1
            continue
        if text.startswith("--", i):
            newline = text.find("\n", i)
            i = n if newline == -1 else newline
            continue
        if text.startswith("/*", i):
            close = text.find("*/", i + 2)
            if close == -1:
                return _Scan(n, n, False)
            i = close + 2
            continue
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and (ch == ";" or (ch == "\n" and stop_at_prose
                                           and _ends_running_sql(text, i + 1))):
            return _Scan(i, i + 1, True)
        elif depth == 0 and stop_at_prose and ch == "." and _SENTENCE_AFTER.match(text, i + 1):
            return _Scan(i, i + 1, True)  # "... = 'shipped'. It counts ...": the sentence ended
        i += 1
    return _Scan(n, n, depth == 0)


def _closing_quote(text: str, opening: int, backslash: bool) -> int:
    """Index of the quote that closes the one at ``opening``, or -1 if it is never closed."""
    quote, i = text[opening], opening + 1
    while True:
        close = text.find(quote, i)
        if close == -1:
            return -1
        if text[close + 1 : close + 2] == quote:  # a doubled quote stands for itself
            i = close + 2
        elif backslash and _escaped(text, close):
            i = close + 1
        else:
            return close


def _escaped(text: str, pos: int) -> bool:
    backslashes = 0
    while pos - backslashes - 1 >= 0 and text[pos - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


def _blank_line_end(text: str, pos: int) -> int:
    blank = text.find("\n\n", pos)
    return len(text) if blank == -1 else blank


def _ends_running_sql(text: str, line_start: int) -> bool:
    line_end = text.find("\n", line_start)
    line = text[line_start : len(text) if line_end == -1 else line_end].strip()
    if not line:
        return True  # a blank line
    if line.startswith(("```", "~~~")):
        return True
    if _SQL_LINE_START.match(line):
        return False
    return bool(_PROSE_LINE.match(line))


def _split_statements(block: str, offset: int, method: str, backslash: bool) -> list[_Candidate]:
    """Statements of a block of SQL (fence or JSON value), with positions in the cleaned text."""
    found: list[_Candidate] = []
    pos = 0
    while pos < len(block):
        scan = _scan(block, pos, stop_at_prose=False, backslash=backslash)
        raw = block[pos : scan.end]
        body_start = _skip_comments(raw)
        sql = raw[body_start:].strip()
        if sql:
            found.append(_make_candidate(sql, offset + pos + body_start, offset + scan.end,
                                         method, scan.balanced, runs_to_end=False))
        pos = scan.next
    return found


def _skip_comments(raw: str) -> int:
    """Index of the first character of ``raw`` that is neither whitespace nor a comment."""
    i = 0
    while i < len(raw):
        if raw[i].isspace():
            i += 1
        elif raw.startswith("--", i):
            newline = raw.find("\n", i)
            i = len(raw) if newline == -1 else newline
        elif raw.startswith("/*", i):
            close = raw.find("*/", i + 2)
            i = len(raw) if close == -1 else close + 2
        else:
            break
    return i


def _make_candidate(sql: str, start: int, end: int, method: str, balanced: bool, *,
                    runs_to_end: bool) -> _Candidate:
    sql = sql.strip().rstrip(";").rstrip()
    # A sentence-final period after a query ("... WHERE age > 30.") is punctuation, not SQL.
    if sql.endswith(".") and not sql.endswith(".."):
        sql = sql[:-1].rstrip()
    complete = balanced and not _DANGLING.search(_strip_trailing_comment(sql))
    return _Candidate(sql, start, end, method, complete, runs_to_end)


def _strip_trailing_comment(sql: str) -> str:
    lines = sql.rstrip().splitlines()
    while lines and lines[-1].lstrip().startswith("--"):
        lines.pop()
    return "\n".join(lines).rstrip()


def _is_query(sql: str) -> bool:
    return bool(_QUERY_START.match(sql))


# --- finding candidates ----------------------------------------------------------------------------

# Fence labels that mark SQL besides the names of polysql's engines (EngineInfo.text_names):
# plain SQL and dialects polysql has no engine for.
_OTHER_SQL_FENCE_LANGS = frozenset({"sql", "ansi", "tsql", "mssql", "plsql", "oracle", "hive",
                                    "trino", "presto"})


@functools.cache
def _sql_fence_langs() -> frozenset[str]:
    return _OTHER_SQL_FENCE_LANGS | frozenset(_dialect_names())
_FENCE = re.compile(r"^[ \t]*(```+|~~~+)[ \t]*([\w+-]*)[^\n]*\n", re.MULTILINE)


@dataclass(slots=True)
class _Fence:
    lang: str
    body_start: int
    body_end: int
    block_start: int
    block_end: int
    closed: bool


def _fences(text: str) -> list[_Fence]:
    found: list[_Fence] = []
    pos = 0
    while True:
        opening = _FENCE.search(text, pos)
        if opening is None:
            return found
        marker = opening.group(1)
        closing = re.compile(rf"^[ \t]*{re.escape(marker)}[ \t]*$", re.MULTILINE)
        close = closing.search(text, opening.end())
        if close is None:  # the model stopped before closing its block
            found.append(_Fence(opening.group(2).lower(), opening.end(), len(text),
                                opening.start(), len(text), closed=False))
            return found
        found.append(_Fence(opening.group(2).lower(), opening.end(), close.start(),
                            opening.start(), close.end(), closed=True))
        pos = close.end()


_JSON_SQL_KEYS = ("sql", "query", "sql_query", "sqlquery", "final_sql", "answer")


def _json_candidates(text: str, backslash: bool) -> list[_Candidate]:
    """Query statements from a JSON object answer (``{"sql": ...}``), bare or fenced."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            obj, end = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        value = _json_sql_value(obj)
        if value is not None:
            statements = _split_statements(value, match.start(), "json", backslash)
            for candidate in statements:  # positions inside a JSON string are approximate
                candidate.end = min(candidate.end, end)
            return statements
    return []


def _json_sql_value(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return None
    keys = {str(key).lower(): value for key, value in obj.items()}
    for key in _JSON_SQL_KEYS:
        value = keys.get(key)
        if isinstance(value, str) and (key != "answer" or _is_query(value.strip())):
            return value
    return None


def _fenced_candidates(text: str, fences: list[_Fence], backslash: bool) -> list[_Candidate]:
    found: list[_Candidate] = []
    for fence in fences:
        labelled = fence.lang in _sql_fence_langs()
        if fence.lang and not labelled:
            continue  # python, json, text...: not SQL (JSON is handled on its own)
        body = text[fence.body_start : fence.body_end]
        statements = _split_statements(body, fence.body_start,
                                       "fenced_sql" if labelled else "fenced", backslash)
        if not fence.closed and statements:
            last = statements[-1]
            last.runs_to_end = True
            if last.complete and not text[last.end : fence.body_end].strip():
                # no terminator and no closing fence: the model may have stopped anywhere
                last.complete = bool(re.search(r";\s*$", body))
        if not labelled and not any(_is_query(s.sql) for s in statements):
            continue  # an unlabelled block of something else (output table, schema, prose)
        for statement in statements:
            statement.lang = fence.lang
        found.extend(statements)
    return found


_INLINE_CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


def _inline_candidates(text: str, backslash: bool) -> list[_Candidate]:
    found: list[_Candidate] = []
    for match in _INLINE_CODE.finditer(text):
        found.extend(s for s in _split_statements(match.group(1), match.start(1), "inline_code",
                                                  backslash) if _is_query(s.sql))
    return found


_BARE_START = re.compile(r"\b(SELECT|WITH)\b", re.IGNORECASE)
_LINE_PREFIX_OK = re.compile(r"^[\s>*#_\-\d.)]*$")
_LABEL = re.compile(r"\b(sql|query|answer)\b[^:\n]*[:：]\s*[*_]*\s*$", re.IGNORECASE)


def _bare_candidates(text: str, dialect: str | None, backslash: bool) -> list[_Candidate]:
    """Queries written straight into the text: on a line of their own or after a label."""
    found: list[_Candidate] = []
    pos = 0
    while True:
        match = _BARE_START.search(text, pos)
        if match is None:
            return found
        line_start = text.rfind("\n", 0, match.start()) + 1
        prefix = text[line_start : match.start()]
        if not (_LINE_PREFIX_OK.match(prefix) or prefix.rstrip(" \t*_").endswith((":", "：", ";"))):
            pos = match.end()
            continue
        scan = _scan(text, match.start(), stop_at_prose=True, backslash=backslash)
        candidate = _make_candidate(text[match.start() : scan.end], match.start(), scan.end,
                                    "labeled" if _labelled(text, line_start, prefix) else "bare",
                                    scan.balanced, runs_to_end=not text[scan.end :].strip())
        if _plausible_bare_sql(candidate, match.group(1), text[match.start() : scan.end], dialect):
            found.append(candidate)
            pos = max(scan.next, match.end())
        else:
            pos = match.end()


def _labelled(text: str, line_start: int, prefix: str) -> bool:
    """``SQL: SELECT ...`` or a ``SQL:`` line right above the query."""
    if prefix.strip():
        return bool(_LABEL.search(prefix))
    previous = text[:line_start].rstrip("\n").rsplit("\n", 1)[-1]
    return bool(_LABEL.search(previous)) and len(previous.strip()) <= 40


def _plausible_bare_sql(candidate: _Candidate, keyword: str, raw: str, dialect: str | None) -> bool:
    """Tell a query in running text from an English sentence that starts with "Select"/"With"."""
    if not candidate.complete:
        # A cut-off query at the very end is still a query (to report as truncated); elsewhere
        # an unparseable fragment is more likely prose.
        return candidate.runs_to_end and bool(re.search(r"\bFROM\b", candidate.sql, re.IGNORECASE))
    if keyword.istitle() and raw.rstrip().endswith("."):
        return False  # "Select all rows from the table." is a sentence, even though it parses
    return _parses(candidate.sql, dialect)


def _parses(sql: str, dialect: str | None) -> bool:
    try:
        with quietly():
            sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return False
    except Exception:  # sqlglot may fail in other ways on odd input; that is still "not SQL"
        return False
    return True


# --- choosing --------------------------------------------------------------------------------------

_FINAL_MARKER = re.compile(
    r"final\s+(?:answer|query|sql|version|solution)|corrected\s+(?:query|sql|version)"
    r"|the\s+answer\s+is|\banswer\s*[:：]|putting\s+it\s+(?:all\s+)?together|so\s+the\s+(?:final\s+)?query",
    re.IGNORECASE,
)
_ALTERNATIVE_MARKER = re.compile(
    r"alternative|another\s+(?:way|approach|option|query)|or\s+you\s+(?:can|could)"
    r"|you\s+(?:can|could)\s+also|equivalent(?:ly)?|if\s+you\s+prefer|option\s+\d",
    re.IGNORECASE,
)


def _normal(sql: str) -> str:
    return " ".join(sql.split()).lower()


# Names a response may give a dialect polysql has no engine for (fence labels and prose), as
# sqlglot dialect names; polysql's engines bring their own (EngineInfo.text_names).
_OTHER_DIALECT_NAMES = {
    "sql server": "tsql", "t-sql": "tsql", "tsql": "tsql", "mssql": "tsql", "oracle": "oracle",
    "plsql": "oracle", "trino": "trino", "presto": "presto",
}


@functools.cache
def _dialect_names() -> dict[str, str]:
    """Every name a response may give a dialect by -> that sqlglot dialect."""
    names = dict(_OTHER_DIALECT_NAMES)
    for info in catalog.infos():
        names.update({name.lower(): info.dialect for name in info.text_names})
    return names


@functools.cache
def _dialect_mention() -> re.Pattern[str]:
    """A dialect named in prose ("For PostgreSQL:"); the longest name wins ("Spark SQL")."""
    names = sorted((re.escape(name) for name in _dialect_names()), key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(names) + r")\b", re.IGNORECASE)


def _for_dialect(text: str, queries: list[_Candidate], dialect: str | None) -> list[_Candidate]:
    """The queries written for ``dialect`` when the response gives versions for several dialects.

    A query is taken to be for the dialect its fence is labelled with (```mysql), else for the
    last dialect named in the text just before it ("For PostgreSQL:"). When none is for the
    target dialect, all queries stay in the running.
    """
    if dialect is None or len(queries) < 2:
        return queries
    names = _dialect_names()
    target = names.get(dialect.lower(), dialect.lower())
    tagged: list[_Candidate] = []
    previous_end = 0
    for query in queries:
        tag = names.get(query.lang)
        if tag is None:
            mentions = _dialect_mention().findall(text[max(previous_end, query.start - 200):query.start])
            tag = names[mentions[-1].lower()] if mentions else None
        if tag == target:
            tagged.append(query)
        previous_end = query.end
    return tagged or queries


def _choose(text: str, queries: list[_Candidate]) -> _Candidate:
    chosen = queries[0]
    locked = bool(_FINAL_MARKER.search(text[: chosen.start]))
    for previous, candidate in zip(queries, queries[1:], strict=False):
        gap = text[previous.end : candidate.start]
        if _FINAL_MARKER.search(gap):
            chosen, locked = candidate, True
        elif not locked and not _ALTERNATIVE_MARKER.search(gap):
            chosen = candidate
    return chosen


# --- entry point -----------------------------------------------------------------------------------


def extract_sql(text: str | None, dialect: str | None = None, *,
                truncated: bool = False) -> Extraction:
    """The query a model's response gives, or the reason there is none. Never raises on ``text``.

    ``dialect`` (a sqlglot dialect name, the one the answer is for) helps tell SQL from prose in
    running text, says whether backslashes escape quotes, and picks that dialect's version when
    the response offers one per dialect. ``truncated`` says the endpoint stopped the answer at its token limit (``finish_reason ==
    "length"``): a query that runs to the very end of such a text may have lost its tail even
    when what is left looks complete, so it becomes ``truncated_response`` rather than SQL.
    """
    if dialect is not None:
        _check_dialect(dialect)
    if text is None or not text.strip():
        return Extraction(None, "none", 0, False, EMPTY_RESPONSE)
    cleaned = _clean(text)
    if _THINK_OPEN.search(cleaned):
        # The reasoning was never closed: the model stopped before writing its answer.
        return Extraction(None, "none", 0, False, TRUNCATED_RESPONSE)
    if not cleaned.strip():
        return Extraction(None, "none", 0, False, EMPTY_RESPONSE)

    backslash = dialect is not None and _backslash_escapes(dialect.lower())
    fences = _fences(cleaned)
    masked = _mask(cleaned, fences)
    non_queries = 0
    for finder in (
        lambda: _json_candidates(cleaned, backslash),
        lambda: _fenced_candidates(cleaned, fences, backslash),
        lambda: _inline_candidates(masked, backslash),
        lambda: _bare_candidates(masked, dialect, backslash),
    ):
        statements = finder()
        queries = [s for s in statements if _is_query(s.sql)]
        non_queries += len(statements) - len(queries)
        if queries:
            return _decide(cleaned, queries, passed_over=non_queries, truncated=truncated,
                           dialect=dialect)
    if non_queries:
        return Extraction(None, "none", 0, False, NOT_A_QUERY)
    if truncated or any(not fence.closed for fence in fences):
        return Extraction(None, "none", 0, False, TRUNCATED_RESPONSE)
    if _REFUSAL.search(cleaned):
        return Extraction(None, "none", 0, False, REFUSAL)
    return Extraction(None, "none", 0, False, NO_SQL_FOUND)


def _decide(text: str, queries: list[_Candidate], *, passed_over: int,
            truncated: bool, dialect: str | None) -> Extraction:
    distinct = len({_normal(q.sql) for q in queries})
    chosen = _choose(text, _for_dialect(text, queries, dialect))
    choice_made = distinct > 1 or passed_over > 0
    if truncated and chosen.runs_to_end:
        return Extraction(None, chosen.method, distinct, choice_made, TRUNCATED_RESPONSE)
    if not chosen.complete:
        failure = TRUNCATED_RESPONSE if chosen.runs_to_end else INCOMPLETE_SQL
        return Extraction(None, chosen.method, distinct, choice_made, failure)
    return Extraction(chosen.sql, chosen.method, distinct, choice_made, None)


def _mask(text: str, fences: list[_Fence]) -> str:
    """The text with fenced blocks blanked out (same length), for the running-text finders."""
    parts, pos = [], 0
    for fence in fences:
        parts.append(text[pos : fence.block_start])
        parts.append(re.sub(r"[^\n]", " ", text[fence.block_start : fence.block_end]))
        pos = fence.block_end
    parts.append(text[pos:])
    return "".join(parts)


def _check_dialect(dialect: str) -> None:
    try:
        sqlglot.Dialect.get_or_raise(dialect)
    except ValueError as exc:
        raise ConfigError(
            f"extract_sql: unknown SQL dialect {dialect!r}; pass a sqlglot dialect name such as "
            f"{', '.join(repr(d) for d in sorted({i.dialect for i in catalog.infos()}))}"
        ) from exc
