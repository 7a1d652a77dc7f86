"""Read the gold SQL to learn whether row order is part of its answer.

Only the ORDER BY of the outermost query counts (for a set operation, the ORDER BY applied to the
whole UNION/INTERSECT/EXCEPT). ORDER BY inside OVER(), subqueries, CTEs or aggregates such as
GROUP_CONCAT(... ORDER BY ...) shapes values, not the order of the returned rows, and sqlglot's
tree keeps those on other nodes, so looking at the outermost node's own ``order`` is enough.

Each ORDER BY key is resolved to an output column (by alias, by position, or by matching a
projected expression) so that rows tied on the keys can be recognised in the gold result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError

from polysql.core.sqlglot_quiet import quietly

#: rows the widened gold query returns beyond the original LIMIT, to reveal a cut tie group
WIDEN_EXTRA_ROWS = 1000


@dataclass(frozen=True, slots=True)
class OrderInfo:
    """What the gold SQL says about order.

    ``ordered``: the outermost query has ORDER BY. ``keys``: output-column indices of the ORDER BY
    keys, or None when some key is not an output column (then ``unresolved`` lists those keys as
    SQL). ``limit``/``offset``: the outermost LIMIT and OFFSET when they are integer literals.
    ``parsed``: False when sqlglot could not parse the SQL (nothing else is then known).
    """

    ordered: bool
    keys: tuple[int, ...] | None = None
    unresolved: tuple[str, ...] = ()
    limit: int | None = None
    offset: int | None = None
    parsed: bool = True
    #: per ORDER BY key, in order: whether it sorts descending
    descending: tuple[bool, ...] = ()


UNPARSED = OrderInfo(ordered=False, parsed=False)
UNORDERED = OrderInfo(ordered=False)

# The words of every clause read here: ORDER BY, and LIMIT, OFFSET, FETCH FIRST and TOP (which
# sqlglot reads as a LIMIT). A keyword is never split or escaped, and never runs on into a letter,
# digit, _ or $ (that would make it part of a name: orders, order_id); what comes before it may
# be anything (DuckDB reads "1order by" as 1 ORDER BY). So a statement whose text holds none of
# these words, followed by anything else, has none of those clauses and is known unordered and
# unlimited without parsing it: sqlglot's parse is most of the own time of a question over a small
# database, and most gold queries order nothing. Any of the words anywhere else (a name, a
# string) leaves it to the parse, as always.
_ORDER_WORDS = re.compile(r"(?:order|limit|offset|fetch|top)(?![a-z0-9_$])", re.IGNORECASE)


@lru_cache(maxsize=8192)
def _plain(sql: str) -> bool:
    """Whether ``sql`` certainly has no ORDER BY, LIMIT, OFFSET, FETCH or TOP (cached: every
    reading of one gold asks it again)."""
    return _ORDER_WORDS.search(sql) is None


@lru_cache(maxsize=4096)
def _parse_outermost(sql: str, dialect: str) -> exp.Query | None:
    """The outermost query of the last statement in ``sql``, or None if it is not a query.

    Cached: a sweep compares many predictions against the same gold SQL. Callers must not
    mutate the tree (``widen_limit`` edits a copy).
    """
    try:
        with quietly():
            statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except (ParseError, SqlglotError, ValueError, RecursionError):  # or nested too deep to follow
        return None
    if not statements:
        return None
    node = statements[-1]
    # A parenthesised query is still the outermost query; its own ORDER BY (if any) counts.
    while isinstance(node, exp.Subquery | exp.Paren) and not node.args.get("order"):
        node = node.this
    return node if isinstance(node, exp.Query) else None


def _literal_int(node: exp.Expression | None) -> int | None:
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return int(node.this)
        except ValueError:
            return None
    return None


def _limit_of(query: exp.Expression) -> tuple[int | None, exp.Expression | None]:
    limit = query.args.get("limit")
    if isinstance(limit, exp.Limit):
        return _literal_int(limit.expression), limit
    if isinstance(limit, exp.Fetch):
        return _literal_int(limit.args.get("count")), limit
    return None, None


def _offset_of(query: exp.Expression) -> int | None:
    offset = query.args.get("offset")
    if isinstance(offset, exp.Offset):
        return _literal_int(offset.expression)
    return None


def _casefold_name(node: exp.Expression) -> str:
    return node.name.casefold()


def _resolve_key(key: exp.Expression, projections: list[exp.Expression],
                 output_columns: list[str]) -> int | None:
    """Output-column index an ORDER BY key refers to, or None."""
    position = _literal_int(key)
    if position is not None:
        return position - 1 if 1 <= position <= len(output_columns) else None
    if isinstance(key, exp.Column) and not key.table:
        wanted = key.name.casefold()
        by_alias = [i for i, p in enumerate(projections)
                    if isinstance(p, exp.Alias) and p.alias.casefold() == wanted]
        if len(by_alias) == 1:
            return by_alias[0]
    for i, projection in enumerate(projections):
        if projection.unalias() == key:
            return i
    if isinstance(key, exp.Column):
        wanted = key.name.casefold()
        same_column = [
            i for i, p in enumerate(projections)
            if isinstance(p.unalias(), exp.Column) and _casefold_name(p.unalias()) == wanted
            and (not key.table or not p.unalias().table
                 or p.unalias().table.casefold() == key.table.casefold())
        ]
        if len(same_column) == 1:
            return same_column[0]
        # SELECT *: sqlglot cannot expand it without the schema, the result's headers can.
        if any(p.is_star for p in projections):
            by_header = [i for i, name in enumerate(output_columns) if name.casefold() == wanted]
            if len(by_header) == 1:
                return by_header[0]
    return None


def infer_order(sql: str, dialect: str, output_columns: list[str]) -> OrderInfo:
    """Order information of ``sql``'s outermost query; ``output_columns`` are the gold result's
    headers, used to resolve keys that the SQL alone cannot (``SELECT *``)."""
    if _plain(sql):
        return UNORDERED
    query = _parse_outermost(sql, dialect)
    if query is None:
        return UNPARSED
    limit, _ = _limit_of(query)
    offset = _offset_of(query)
    order = query.args.get("order")
    if not isinstance(order, exp.Order) or not order.expressions:
        return OrderInfo(ordered=False, limit=limit, offset=offset)
    projections = list(query.selects)
    keys: list[int] = []
    unresolved: list[str] = []
    for ordered in order.expressions:
        key = ordered.this if isinstance(ordered, exp.Ordered) else ordered
        index = _resolve_key(key, projections, output_columns)
        if index is None:
            unresolved.append(key.sql(dialect=dialect))
        else:
            keys.append(index)
    descending = tuple(isinstance(o, exp.Ordered) and bool(o.args.get("desc"))
                       for o in order.expressions)
    if unresolved:
        return OrderInfo(ordered=True, keys=None, unresolved=tuple(unresolved),
                         limit=limit, offset=offset, descending=descending)
    return OrderInfo(ordered=True, keys=tuple(keys), limit=limit, offset=offset,
                     descending=descending)


def widen_limit(sql: str, dialect: str, *, extra: int = WIDEN_EXTRA_ROWS) -> str | None:
    """``sql`` with its outermost LIMIT raised by ``extra`` rows, or None when the outermost query
    has no ORDER BY with an integer LIMIT (then there is no tie group a LIMIT could cut).

    The runner executes the result and passes it to ``compare(..., gold_widened=...)``: rows past
    the original LIMIT that tie with the last gold row show that the LIMIT cut a tie group.
    """
    target = _widened_limit(sql, dialect)
    if target is None:
        return None
    query, limit, node = target
    widened = query.copy()
    new_count = exp.Literal.number(limit + extra)
    if isinstance(node, exp.Fetch):
        widened.args["limit"].set("count", new_count)
    else:
        widened.args["limit"].set("expression", new_count)
    return widened.sql(dialect=dialect)


def widens(sql: str, dialect: str) -> bool:
    """Whether :func:`widen_limit` has a widened query for ``sql``, without building it (the
    copy and printing of the tree cost more than the parse)."""
    return _widened_limit(sql, dialect) is not None


def _widened_limit(sql: str, dialect: str) -> tuple[exp.Query, int, exp.Expression] | None:
    """The outermost query, its integer LIMIT and the node holding it, when it also orders."""
    if _plain(sql):
        return None
    query = _parse_outermost(sql, dialect)
    if query is None or not isinstance(query.args.get("order"), exp.Order):
        return None
    limit, node = _limit_of(query)
    if limit is None or node is None:
        return None
    return query, limit, node


#: NULL placement conventions: (label, nulls first for an ASC key?, nulls first for a DESC key?)
NULL_CONVENTIONS = (
    ("nulls_smallest", True, False),  # SQLite, MySQL/MariaDB
    ("nulls_largest", False, True),  # PostgreSQL, Oracle, Snowflake
    ("nulls_last", False, False),  # DuckDB
    ("nulls_first", True, True),
)


@lru_cache(maxsize=4096)
def null_order_variants(sql: str, dialect: str) -> tuple[tuple[str, str], ...]:
    """The gold SQL with its outermost ORDER BY placing NULLs by each other engine convention
    (explicit NULLS FIRST/LAST on every key), as (label, sql); empty without an ORDER BY.

    Cached like the parse: every ordered prediction that misses asks it of its gold again, and
    copying and printing the tree cost more than the parse."""
    if _plain(sql):
        return ()
    query = _parse_outermost(sql, dialect)
    order = query.args.get("order") if query is not None else None
    if not isinstance(order, exp.Order) or not order.expressions:
        return ()
    keys = [o for o in order.expressions if isinstance(o, exp.Ordered)]
    if len(keys) != len(order.expressions):
        return ()
    current = [bool(o.args.get("nulls_first")) for o in keys]
    variants = []
    for label, asc_first, desc_first in NULL_CONVENTIONS:
        wanted = [desc_first if o.args.get("desc") else asc_first for o in keys]
        if wanted == current:
            continue
        changed = query.copy()
        for ordered, first in zip(changed.args["order"].expressions, wanted, strict=True):
            ordered.set("nulls_first", first)
        variants.append((label, changed.sql(dialect=dialect)))
    return tuple(variants)


def limits_rows(sql: str, dialect: str) -> bool:
    """Whether the outermost query has a LIMIT, OFFSET or FETCH (literal or not), or cannot be
    read: then which rows come back may depend on their order."""
    if _plain(sql):
        return False
    query = _parse_outermost(sql, dialect)
    return query is None or any(query.args.get(arg) for arg in ("limit", "offset", "fetch"))


def replaced_nulls(sql: str, dialect: str, columns: list[str],
                   rows: list[tuple[Any, ...]]) -> dict[str, list[tuple[Any, ...]]] | None:
    """The gold's rows as each :func:`null_order_variants` convention would order them, worked
    out from the rows alone, by label; None when only a re-run of the gold can tell.

    Moving NULLs is all a convention changes, and it can be done without knowing how the engine
    orders other values when: there is no LIMIT, OFFSET or FETCH (those would select other rows),
    every ORDER BY key is an output column, only the first key holds NULLs, and its NULL rows
    form one block at the start or the end. Then the other convention is that block moved to the
    other end, the rest in the order the engine gave.
    """
    if _plain(sql):
        return None
    query = _parse_outermost(sql, dialect)
    if query is None or limits_rows(sql, dialect):
        return None
    order = query.args.get("order")
    if not isinstance(order, exp.Order) or not order.expressions:
        return None
    info = infer_order(sql, dialect, columns)
    if info.keys is None or not isinstance(order.expressions[0], exp.Ordered):
        return None
    first, *others = info.keys
    if any(row[k] is None for row in rows for k in others if k != first):
        return None
    nulls = [i for i, row in enumerate(rows) if row[first] is None]
    count = len(nulls)
    if nulls and nulls != list(range(count)) and nulls != list(range(len(rows) - count, len(rows))):
        return None  # NULLs amid the rows: no convention the block rule knows
    block = [rows[i] for i in nulls]
    rest = [row for row in rows if row[first] is not None]
    descending = bool(order.expressions[0].args.get("desc"))
    wanted = {label: desc_first if descending else asc_first
              for label, asc_first, desc_first in NULL_CONVENTIONS}
    return {label: block + rest if wanted[label] else rest + block
            for label, _ in null_order_variants(sql, dialect)}


#: prefix of the columns :func:`keyed_order_sql` appends; compare strips them again
TIE_KEY_PREFIX = "__polysql_tie_key_"


@dataclass(frozen=True, slots=True)
class KeyedSQL:
    """The gold SQL with every outermost ORDER BY key appended as a trailing output column."""

    sql: str
    hidden_columns: int


def keyed_order_sql(sql: str, dialect: str) -> KeyedSQL | None:
    """When the gold orders by something it does not return (``ORDER BY COUNT(*) DESC``, a
    non-projected column), the result alone cannot show which rows tie. This rewrites the gold to
    also return its ORDER BY keys as trailing columns, so ties can be told from the values
    themselves; ``compare(..., hidden_columns=n)`` uses and strips them.

    None when every key is already an output column, or when appending columns would change the
    answer or is not allowed (DISTINCT, set operations, no ORDER BY).
    """
    if _plain(sql):
        return None
    query = _parse_outermost(sql, dialect)
    if not isinstance(query, exp.Select) or query.args.get("distinct"):
        return None
    order = query.args.get("order")
    if not isinstance(order, exp.Order) or not order.expressions:
        return None
    keys = [o.this if isinstance(o, exp.Ordered) else o for o in order.expressions]
    projections = list(query.selects)
    # A position (ORDER BY 2) names an output column, which the result shows: it needs no
    # re-run. Appended as it is written it would be the constant 2, so where a re-run is needed
    # for other keys it is appended as the expression it points at.
    if all(_literal_int(key) is not None for key in keys):
        return None
    if not infer_order(sql, dialect, []).unresolved:
        return None
    appended = []
    for key in keys:
        position = _literal_int(key)
        if position is None:
            appended.append(key)
        elif 1 <= position <= len(projections) and not any(p.is_star for p in projections):
            appended.append(projections[position - 1].unalias())
        else:
            return None  # the column a position names is not known from the SQL
    keyed = query.copy()
    for i, key in enumerate(appended):
        keyed.select(exp.alias_(key.copy(), f"{TIE_KEY_PREFIX}{i + 1}"), copy=False)
    return KeyedSQL(keyed.sql(dialect=dialect), len(keys))
