"""MySQL 8 and MariaDB (PyMySQL): a server evaluation engine and load target.

URLs: ``mysql://user:password@host:port/database`` (also ``mysql+pymysql://``, ``mariadb://``);
without a database, a server URL. Safety comes from the server: evaluated SQL logs in as the
SELECT-only reader a load creates (``setup.py``) inside ``START TRANSACTION READ ONLY``, always
rolled back, under the server's statement timeout with a ``KILL QUERY`` backstop. There is no
``screen.py``: the shared guard (``_common/guard.py``) is the only statement screen it needs.

Importing the package is cheap and never imports the engine's client library: the backend class
is loaded on first attribute access (the ``polysql.backends`` entry point names it here).
"""

from __future__ import annotations

from typing import Any

from polysql.backends._common.statement_text import CommentSyntax
from polysql.backends.base import Container, EngineInfo

# What a prompt at the "pitfalls" level tells a model about writing for this engine: (topic,
# text). Keep every text specific and true for the versions polysql supports (the claims are
# checked against the real engines in tests/llm/test_pitfalls.py).
_PITFALLS = (
    ("integer_division",
     "/ returns a decimal even for integers (7 / 2 is 3.5000); use DIV for integer division (7 DIV "
     "2 is 3)."),
    ("string_concat",
     "|| means logical OR, not concatenation: use CONCAT(a, b) (NULL if any argument is NULL) or "
     "CONCAT_WS(sep, a, b), which skips NULLs."),
    ("identifier_quoting",
     "Quote identifiers with backticks (`order date`); double-quoted text is a string literal, not "
     "a name. Table names may be case-sensitive depending on the server, so spell them exactly as "
     "in the schema."),
    ("null_ordering",
     "NULL sorts before every other value: first under ORDER BY x ASC, last under DESC. There is "
     "no NULLS FIRST / NULLS LAST: use ORDER BY x IS NULL, x to put NULLs last."),
    ("like_case",
     "With the default collations LIKE and = are case-insensitive ('abc' = 'ABC' is true); use "
     "BINARY col = 'value' or a _bin collation for case-sensitive comparison."),
    ("dates",
     "Use YEAR(d), MONTH(d), EXTRACT(YEAR FROM d), DATE_FORMAT(d, '%Y-%m'), DATEDIFF(end, start) "
     "for days (end first) and TIMESTAMPDIFF(MONTH, start, end); there is no strftime, date_part "
     "or to_char, and no :: casts (write CAST(col AS DATE))."),
    ("string_aggregation",
     "Join strings of a group with GROUP_CONCAT(x ORDER BY x SEPARATOR ', ') (default separator "
     "','); the result is cut at group_concat_max_len (1024 bytes by default). There is no "
     "STRING_AGG."),
    ("limit_offset",
     "Use LIMIT n OFFSET m; the short form LIMIT m, n puts the OFFSET first. There is no TOP, and "
     "no LIMIT inside IN (...) subqueries."),
    ("booleans",
     "BOOLEAN is TINYINT(1): TRUE and FALSE are 1 and 0, and comparisons yield 1 or 0, so SUM(x > "
     "5) counts matching rows."),
    ("casts",
     "Cast with SIGNED, UNSIGNED, DECIMAL(p, s), CHAR, DATE or DATETIME: CAST(x AS INT) and CAST(x "
     "AS TEXT) fail on MySQL, so write CAST(x AS SIGNED) or CAST(x AS CHAR)."),
)

INFO = EngineInfo(
    name="mysql",
    concurrent_statements=True,
    dialect="mysql",
    display_name="MySQL",
    schemes=("mysql", "mariadb"),
    aliases={"mysql": "mysql://", "mariadb": "mysql://"},
    flavors={"mariadb": "MariaDB"},
    text_names=("mysql", "mariadb"),
    error_vocabulary=(
        ("grouping_error", r"isn't in group by"),
        ("grouping_error", r"nonaggregated column"),
        ("type_error", r"incorrect .* value"),
        ("syntax_error", r"you have an error in your sql syntax"),
        # MariaDB checks the EXECUTE privilege before it looks a routine up: an unknown function
        # reads "execute command denied ... for routine" (records made before the backend looked
        # the routine up hold it as a refusal)
        ("unknown_function", r"execute command denied .* for routine"),
    ),
    pitfalls=_PITFALLS,
    extra="mysql",
    client_modules=("pymysql",),
    container=Container("mariadb:11", "polysql.backends.mysql.setup:start_container"),
    comments=CommentSyntax(dash_needs_space=True, hash="always"),
    # a TIME within a day is a time of day (it was its text before)
    result_form="time of day",
    # DATETIME columns declare the fractional digits their values use (always 6 before), which
    # shows wherever a value becomes text
    copy_layout="datetime digits as used",
)

__all__ = ["INFO", "MySQLBackend"]


def __getattr__(name: str) -> Any:
    if name == "MySQLBackend":
        from polysql.backends.mysql.backend import MySQLBackend

        return MySQLBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
