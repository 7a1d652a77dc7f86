"""DuckDB: an embedded evaluation engine and the usual load target for SQLite sources.

URLs: ``duckdb:///relative/path.duckdb``, ``duckdb:////absolute/path.duckdb``, ``duckdb://``
(in-memory). Safety: every connection has external access and extensions off and its
configuration locked, an evaluation connection opens the file read-only and runs exactly one
SELECT (``screen.py``); the timeout is a timer calling ``interrupt()``.

Importing the package is cheap and never imports the engine's client library: the backend class
is loaded on first attribute access (the ``polysql.backends`` entry point names it here).
"""

from __future__ import annotations

from typing import Any

from polysql.backends.base import EngineInfo

# What a prompt at the "pitfalls" level tells a model about writing for this engine: (topic,
# text). Keep every text specific and true for the versions polysql supports (the claims are
# checked against the real engines in tests/llm/test_pitfalls.py).
_PITFALLS = (
    ("integer_division",
     "/ is always true division: 7 / 2 is 3.5. Use // when integer division is wanted (7 // 2 is "
     "3)."),
    ("string_concat",
     "Concatenate with || (NULL if either side is NULL) or concat(a, b), which skips NULL "
     "arguments."),
    ("identifier_quoting",
     "Quote identifiers with double quotes; names are matched case-insensitively even when quoted, "
     "but names with spaces or reserved words must be quoted. String literals use single quotes; "
     "double-quoted text is never a string."),
    ("null_ordering",
     "NULL sorts last under both ORDER BY x ASC and ORDER BY x DESC (unlike PostgreSQL and "
     "SQLite); write NULLS FIRST / NULLS LAST explicitly when it matters."),
    ("like_case",
     "LIKE and = are case-sensitive ('Abc' LIKE 'a%' is false); use ILIKE or lower(col) LIKE '...' "
     "for case-insensitive matching."),
    ("dates",
     "Dates and timestamps are real types. strftime takes the value FIRST: strftime(col, '%Y') "
     "(the reverse of SQLite). Use EXTRACT(year FROM d) or year(d), date_diff('day', start, end), "
     "and DATE '2021-03-04' literals; cast TEXT with CAST(col AS DATE)."),
    ("string_aggregation",
     "Join strings of a group with string_agg(x, ', ') (group_concat and listagg are aliases); add "
     "ORDER BY inside the call for a stable order: string_agg(x, ', ' ORDER BY x)."),
    ("limit_offset",
     "Use LIMIT n OFFSET m; the MySQL/SQLite form LIMIT m, n is a syntax error."),
    ("booleans",
     "BOOLEAN is a real type: write TRUE/FALSE, and count matches with count(*) FILTER (WHERE "
     "cond) or SUM(CASE WHEN cond THEN 1 ELSE 0 END); arithmetic such as TRUE + 1 is an error."),
    ("group_by",
     "Every selected column that is not aggregated must appear in GROUP BY (GROUP BY ALL groups by "
     "all of them)."),
)

INFO = EngineInfo(
    name="duckdb",
    concurrent_statements=True,
    dialect="duckdb",
    display_name="DuckDB",
    schemes=("duckdb",),
    aliases={"duckdb": "duckdb://"},
    default_sweep=True,
    checksum_sql="SELECT count(*), sum(hash(t)) FROM ({sql}) AS t",
    text_names=("duckdb",),
    error_vocabulary=(
        ("ambiguous_column", r"ambiguous reference"),
        ("unknown_column", r"referenced column .* not found"),
        ("unknown_table", r"table with name .* does not exist"),
        ("unknown_function", r"function with name .* does not exist"),
        ("type_error", r"no function matches"),
        ("type_error", r"could not convert"),
        ("type_error", r"conversion error"),
        ("syntax_error", r"parser error"),
    ),
    pitfalls=_PITFALLS,
)

__all__ = ["INFO", "DuckDBBackend"]


def __getattr__(name: str) -> Any:
    if name == "DuckDBBackend":
        from polysql.backends.duckdb.backend import DuckDBBackend

        return DuckDBBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
