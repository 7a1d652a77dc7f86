"""SQLite: the engine most datasets ship their databases in, and an evaluation engine too.

URLs: ``sqlite:///relative/path.sqlite``, ``sqlite:////absolute/path.sqlite``, ``sqlite://``
(in-memory). Safety: an evaluation connection opens the file with ``mode=ro`` under an authorizer
that allows reading only (``screen.py``), with extension loading off; the timeout is a progress
handler. ``introspect_rows.py`` streams table rows for loads from SQLite.

Importing the package is cheap and never imports the engine's client library: the backend class
is loaded on first attribute access (the ``polysql.backends`` entry point names it here).
"""

from __future__ import annotations

from typing import Any

from polysql.backends._common.statement_text import CommentSyntax
from polysql.backends.base import EngineInfo

# What a prompt at the "pitfalls" level tells a model about writing for this engine: (topic,
# text). Keep every text specific and true for the versions polysql supports (the claims are
# checked against the real engines in tests/llm/test_pitfalls.py).
_PITFALLS = (
    ("integer_division",
     "Dividing two integers truncates: 7 / 2 is 3. For ratios and averages of counts write 1.0 * a "
     "/ b or CAST(a AS REAL) / b."),
    ("string_concat",
     "Concatenate strings with ||; the result is NULL if either side is NULL (wrap nullable parts "
     "in COALESCE(x, ''))."),
    ("identifier_quoting",
     'Quote identifiers with double quotes ("Order Date"); a double-quoted name that matches no '
     "column silently becomes a string literal, so spell quoted names exactly. String literals use "
     "single quotes."),
    ("null_ordering",
     "NULL sorts before every other value: first under ORDER BY x ASC, last under DESC. Add NULLS "
     "FIRST / NULLS LAST or a WHERE x IS NOT NULL filter when it matters."),
    ("like_case",
     "LIKE is case-insensitive for ASCII letters ('Abc' LIKE 'a%' is true) while = is "
     "case-sensitive; there is no ILIKE."),
    ("dates",
     "There is no DATE type: dates are TEXT such as '2021-03-04'. Use strftime('%Y', col) (format "
     "first), date(col), and julianday(b) - julianday(a) for a difference in days; there is no "
     "EXTRACT, YEAR() or DATEDIFF()."),
    ("string_aggregation",
     "Join strings of a group with group_concat(x, ', ') (the separator defaults to ','); "
     "STRING_AGG exists only from SQLite 3.44."),
    ("limit_offset",
     "Use LIMIT n OFFSET m. The short form LIMIT m, n puts the OFFSET first. There is no TOP or "
     "FETCH FIRST."),
    ("booleans",
     "There is no BOOLEAN type: TRUE and FALSE are the integers 1 and 0, and a comparison yields 1 "
     "or 0, so SUM(x > 5) counts matching rows."),
    ("group_by",
     "A bare column next to MAX() or MIN() takes its value from the row holding that extreme, and "
     "other bare columns in an aggregate query take one arbitrary row's value; do not rely on it, "
     "use a join or ORDER BY ... LIMIT 1."),
)

INFO = EngineInfo(
    name="sqlite",
    concurrent_statements=True,
    dialect="sqlite",
    display_name="SQLite",
    schemes=("sqlite",),
    aliases={"sqlite": "sqlite://"},
    default_sweep=True,
    text_names=("sqlite", "sqlite3"),
    error_vocabulary=(
        ("unknown_column", r"no such column"),
        ("unknown_table", r"no such table"),
        ("unknown_function", r"no such function"),
        ("grouping_error", r"misuse of aggregate"),
        ("type_error", r"datatype mismatch"),
        ("syntax_error", r"incomplete input"),
        ("syntax_error", r"unrecognized token"),
    ),
    pitfalls=_PITFALLS,
    comments=CommentSyntax(block_may_run_to_end=True),
)

__all__ = ["INFO", "SQLiteBackend"]


def __getattr__(name: str) -> Any:
    if name == "SQLiteBackend":
        from polysql.backends.sqlite.backend import SQLiteBackend

        return SQLiteBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
