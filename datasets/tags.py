"""The fixed vocabulary of question tags.

*Hazard* tags name a way the gold SQL (written for SQLite) can fail or silently change its answer
when run verbatim on another engine; they are what a cross-dialect evaluation is about. *Construct*
tags name the SQL features a question needs, for slicing scores. ``portable`` marks a question
with no known hazard: it should give the same answer on every engine.

docs/datasets.md lists the same tags; a test keeps the two in step.
"""

from __future__ import annotations

from polysql.core.errors import DatasetError

HAZARD_TAGS: dict[str, str] = {
    "integer_division": "int / int truncates in SQLite (and PostgreSQL) but not in DuckDB or MySQL",
    "division_by_zero": "x / 0 is NULL in SQLite and MySQL, an error in PostgreSQL, inf in DuckDB",
    "date_functions": "strftime(), date(), julianday() with SQLite's modifier syntax",
    "date_arithmetic": "adding intervals or subtracting dates: julianday differences, date(d, '+7 days')",
    "date_as_text": "dates and datetimes treated as ISO text: LIKE, substr(), comparison with strings",
    "string_concat": "|| concatenation: logical OR in MySQL, NULL propagation, numbers concatenated",
    "null_ordering": "ORDER BY over NULLs: first ascending in SQLite/MySQL, last in PostgreSQL/DuckDB",
    "case_sensitive_like": "SQLite's LIKE ignores ASCII case; PostgreSQL's and DuckDB's do not",
    "group_concat": "group_concat(): string_agg / listagg elsewhere, separator and order differ",
    "limit_with_ties": "rows tied at the LIMIT boundary: which ones come back is engine-defined",
    "boolean_comparison": "a BOOLEAN column compared with or summed as 0/1, an error in PostgreSQL",
    "boolean_output": "a comparison or BOOLEAN column in the output: 0/1 in SQLite, true/false elsewhere",
    "implicit_type_coercion": "comparing or combining text with numbers relies on SQLite's affinity rules",
    "iif": "iif(): SQLite/SQL Server only; CASE WHEN elsewhere",
    "ifnull": "ifnull(): not in PostgreSQL; coalesce() is portable",
    "substr_instr": "substr()/instr(): instr missing in PostgreSQL, substr of non-text differs",
    "cast": "CAST semantics: SQLite truncates REAL to INTEGER and parses text prefixes, others round or fail",
    "rounding": "round() and averages: float vs exact decimal results, half-way rounding, result type",
    "decimal_arithmetic": "money stored as NUMERIC: SQLite sums floats, other engines exact decimals",
    "mixed_case_identifiers": "mixed-case names (StoreRegion, FirstName) that folding engines only find quoted",
    "quoted_identifiers": "double-quoted identifiers: string literals in MySQL without ANSI_QUOTES",
    "double_quoted_strings": "\"text\" used as a string literal, which only SQLite accepts",
    "trailing_spaces": "CHAR-padded or trailing-blank text: PAD SPACE collations and char(n) ignore them",
    "accents": "non-ASCII text: SQLite's upper()/lower()/LIKE only fold ASCII, MySQL length() counts bytes",
    "collation_order": "ordering or MIN/MAX over text: binary in SQLite, locale or case-insensitive elsewhere",
    "string_comparison": "= or < on text: case-sensitive in SQLite, case-insensitive in MySQL's default collation",
    "typeof": "typeof() and SQLite's dynamic storage classes, which have no equivalent elsewhere",
    "bare_column_aggregate": "a non-aggregated column next to max()/min() without GROUP BY, SQLite only",
    "alias_reference": "a SELECT alias referenced in WHERE/HAVING/GROUP BY, which some engines reject",
    "derived_table_alias": "a subquery in FROM without an alias: an error in PostgreSQL before 16 and in MySQL",
    "scalar_min_max": "min(a, b)/max(a, b) as scalar functions (least/greatest elsewhere)",
    "glob": "GLOB pattern matching, SQLite only",
    "printf": "printf()/format() string formatting, spelled differently on every engine",
}

CONSTRUCT_TAGS: dict[str, str] = {
    "portable": "no known hazard: the gold SQL should give the same answer on every engine",
    "join": "inner joins over two or more tables",
    "outer_join": "LEFT (or other outer) joins that keep unmatched rows",
    "self_join": "a table joined to itself",
    "aggregation": "GROUP BY with aggregate functions",
    "having": "filtering groups with HAVING",
    "distinct": "DISTINCT or COUNT(DISTINCT ...)",
    "subquery": "scalar, IN or correlated subqueries",
    "exists": "EXISTS / NOT EXISTS",
    "cte": "WITH common table expressions",
    "recursive_cte": "WITH RECURSIVE",
    "window_function": "window functions (OVER ...)",
    "set_operation": "UNION / INTERSECT / EXCEPT",
    "case_when": "CASE expressions",
    "null_handling": "IS NULL, coalesce() and three-valued logic",
    "order_limit": "ORDER BY with LIMIT (top-k)",
}

ALL_TAGS: dict[str, str] = {**HAZARD_TAGS, **CONSTRUCT_TAGS}

DIFFICULTIES: tuple[str, ...] = ("simple", "moderate", "challenging")


def check_tags(tags: tuple[str, ...], *, where: str) -> None:
    """Raise DatasetError when a tag is outside the vocabulary, or ``portable`` sits with a hazard."""
    unknown = [tag for tag in tags if tag not in ALL_TAGS]
    if unknown:
        raise DatasetError(
            f"{where}: unknown tag(s) {', '.join(map(repr, unknown))}; the vocabulary is defined in "
            f"polysql.datasets.tags (see docs/datasets.md)"
        )
    hazards = [tag for tag in tags if tag in HAZARD_TAGS]
    if "portable" in tags and hazards:
        raise DatasetError(
            f"{where}: tagged 'portable' and also with hazard(s) {', '.join(hazards)}; pick one"
        )
