"""PostgreSQL (psycopg 3): a server evaluation engine and load target.

URLs: ``postgresql://user:password@host:port/database`` (also ``postgres://``); without a
database, a server URL. Safety comes from the server: evaluated SQL logs in as the reader role a
load creates (``setup.py``) and runs in a read-only transaction that is always rolled back, under
``statement_timeout`` with a client cancel as backstop. There is no ``screen.py``: the shared
guard (``_common/guard.py``) is the only statement screen this engine needs.

Importing the package is cheap and never imports the engine's client library: the backend class
is loaded on first attribute access (the ``polysql.backends`` entry point names it here).
"""

from __future__ import annotations

from typing import Any

from polysql.backends.base import Container, EngineInfo

# What a prompt at the "pitfalls" level tells a model about writing for this engine: (topic,
# text). Keep every text specific and true for the versions polysql supports (the claims are
# checked against the real engines in tests/llm/test_pitfalls.py).
_PITFALLS = (
    ("integer_division",
     "Dividing two integers truncates: 7 / 2 is 3. Cast first: a::numeric / b or 1.0 * a / b."),
    ("rounding",
     "ROUND(x, 2) exists only for numeric, not for double precision or real: write "
     "ROUND(x::numeric, 2)."),
    ("string_concat",
     "Concatenate with || (NULL if either side is NULL) or concat(a, b), which treats NULL as an "
     "empty string."),
    ("identifier_quoting",
     'Unquoted identifiers are folded to lower case, so a column created as "CustomerID" must be '
     "written with double quotes exactly as shown in the schema. Single quotes are only for string "
     "literals."),
    ("null_ordering",
     "NULL sorts as larger than every value: last under ORDER BY x ASC but FIRST under ORDER BY x "
     "DESC. For top-N queries write ORDER BY x DESC NULLS LAST."),
    ("like_case",
     "LIKE and = are case-sensitive; use ILIKE or lower(col) = 'value' for case-insensitive "
     "matching."),
    ("dates",
     "Use EXTRACT(YEAR FROM d) or date_part('year', d), to_char(d, 'YYYY-MM') for formatting, date "
     "literals DATE '2021-03-04', and d2 - d1 (an integer number of days for DATE values); there "
     "is no strftime, YEAR() or DATEDIFF(). Text holding dates needs a cast: col::date."),
    ("string_aggregation",
     "Join strings of a group with string_agg(x, ', ') (the separator is required; non-text values "
     "need x::text); there is no GROUP_CONCAT."),
    ("limit_offset",
     "Use LIMIT n OFFSET m or FETCH FIRST n ROWS ONLY; LIMIT m, n is a syntax error."),
    ("booleans",
     "BOOLEAN is a real type: TRUE/FALSE, and SUM(cond) is an error; count matches with COUNT(*) "
     "FILTER (WHERE cond) or SUM(CASE WHEN cond THEN 1 ELSE 0 END)."),
    ("group_by",
     "Every selected column that is not aggregated must appear in GROUP BY (or be functionally "
     "dependent on the grouped primary key)."),
)

INFO = EngineInfo(
    name="postgres",
    concurrent_statements=True,
    dialect="postgres",
    display_name="PostgreSQL",
    schemes=("postgresql", "postgres"),
    aliases={"postgres": "postgresql://", "postgresql": "postgresql://"},
    extra="postgres",
    client_modules=("psycopg",),
    checksum_sql="SELECT count(*), sum(hashtext(t::text)::bigint) FROM ({sql}) AS t",
    text_names=("postgresql", "postgres", "psql", "pgsql", "plpgsql"),
    error_vocabulary=(
        ("ambiguous_column", r"column reference .* is ambiguous"),
        ("unknown_table", r"relation .* does not exist"),
        ("grouping_error", r"aggregate functions are not allowed"),
        ("type_error", r"invalid input syntax"),
        ("type_error", r"operator does not exist"),
    ),
    pitfalls=_PITFALLS,
    major_only_from=10,
    copy_layout="fold schema 1",
    container=Container("postgres:16", "polysql.backends.postgres.setup:start_container"),
)

__all__ = ["INFO", "PostgresBackend"]


def __getattr__(name: str) -> Any:
    if name == "PostgresBackend":
        from polysql.backends.postgres.backend import PostgresBackend

        return PostgresBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
