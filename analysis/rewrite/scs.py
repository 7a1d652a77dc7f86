"""Static SQL complexity score (SCS) of one query, read from its sqlglot syntax tree.

``features(sql, dialect)`` counts 26 features in six groups; ``fit_caps`` freezes a cap per feature
from a corpus; ``score`` turns counts into a number from 0 to 100. Nothing is executed and no schema
is needed. SQL that sqlglot cannot parse gets status ``PARSE_ERROR`` (with sqlglot's own message);
there is no fallback to pattern matching, and no exception escapes for bad SQL.

Feature definitions
-------------------
The statement must be exactly one query (SELECT, set operation or parenthesised query). Counts run
over the whole tree, CTE bodies and subqueries included, after sqlglot's identifier normalization
for the dialect. A "SELECT block" is one ``SELECT ... FROM ...`` of any kind.

relational
  ``table_refs``       every table named in a FROM or JOIN, CTE references and table functions
                       included (``FROM t, t`` is 2); derived tables and UNNEST are not tables.
  ``joins``            every JOIN and every comma in a FROM list (``FROM a, b`` is 1).
  ``outer_joins``      joins with side LEFT, RIGHT or FULL, except SEMI/ANTI joins.
  ``set_operations``   UNION / INTERSECT / EXCEPT operators (``a UNION b UNION c`` is 2).
nesting
  ``select_blocks``          SELECT blocks (a plain query is 1).
  ``max_nesting_depth``      for each SELECT block, the number of SELECT blocks enclosing it other
                             than through their own WITH clause (a CTE body is not nested; a
                             set-operation branch is not nested in its sibling); the maximum, so 0
                             without subqueries.
  ``ctes``                   CTE definitions.
  ``cte_chain_depth``        per WITH clause, chain(c) = 1 + the largest chain(d) over the CTEs d
                             defined *earlier* in the same WITH that c's body names (0 if none); the
                             maximum over all CTEs. 0 without CTEs, 1 for independent CTEs, 3 for
                             ``a``, ``b`` reading ``a``, ``c`` reading ``b``.
  ``correlated_subqueries``  scalar / IN / EXISTS / ANY / LATERAL subqueries in which a column --
                             at any depth inside them -- is qualified by a table name or alias not
                             introduced inside the subquery (sqlglot's scope analysis). Unqualified
                             columns are taken as local: without a schema no one can tell, and SQL
                             resolves names innermost-first.
predicates -- read from every WHERE (an aggregate's ``FILTER (WHERE ...)`` included), HAVING,
QUALIFY and JOIN ON condition. Parentheses are transparent. A condition is a tree of AND / OR (and
MySQL XOR) connectives over leaves; ``NOT`` over a leaf is part of the leaf (sqlglot reads
``x IS NOT NULL``, ``x NOT IN (...)``, ``NOT EXISTS`` that way), ``NOT`` over a connective is a node.
  ``predicate_atoms``  leaves: ``a = 1``, ``b IN (...)``, ``c LIKE 'x'``, ``d BETWEEN 1 AND 2``,
                       ``e IS NULL``, ``EXISTS (...)``, a bare boolean column each count 1 (a
                       subquery inside a leaf counts in its own clauses); each column of a
                       ``JOIN ... USING (...)`` counts 1 (it is an equality).
  ``boolean_depth``    the largest nesting of connectives in one condition, where a chain of the
                       same connective is one level: ``a AND b AND c`` is 1, ``a AND (b OR c)`` is
                       2, ``NOT (a OR b)`` is 2, a single leaf is 0.
  ``or_branches``      operands of each maximal OR chain, summed: ``a OR b OR c`` is 3,
                       ``(a OR b) AND (c OR d)`` is 4.
  ``case_expressions`` CASE expressions and the two-way IF / IIF functions, anywhere.
aggregation
  ``aggregate_calls``   aggregate function calls sqlglot knows (COUNT, SUM, STRING_AGG, ARRAY_AGG,
                        ...) that are not the function of a window.
  ``grouping_keys``     per SELECT block, the distinct expressions in GROUP BY, looking inside
                        ROLLUP / CUBE / GROUPING SETS; summed over blocks (``GROUP BY ALL`` lists 0).
  ``having_clauses``    HAVING clauses.
  ``window_functions``  function calls with OVER (named ``WINDOW w AS (...)`` definitions are not
                        calls).
  ``distinct``          DISTINCT keywords: ``SELECT DISTINCT``, ``DISTINCT ON``, ``agg(DISTINCT x)``
                        (a plain UNION's implicit dedup is not counted).
expressions
  ``projected_expressions``  items in SELECT lists, summed over blocks (``*`` is 1).
  ``scalar_function_calls``  function calls that fall in no other feature: not aggregates, window
                             functions, CASE/IF, casts, UNNEST/EXPLODE, JSON/array/map operations,
                             POWER, predicates written as functions (EXISTS, REGEXP_LIKE) or
                             AND/OR/XOR. ``CURRENT_DATE``, ``COLLATE`` and ``||`` (the CONCAT it
                             abbreviates) count.
  ``casts``                  CAST, TRY_CAST and ``::``.
  ``arithmetic_operators``   ``+ - * / %``, integer division and power (``^``/POWER); unary minus
                             is not counted.
advanced
  ``order_by_limit``      ORDER BY, LIMIT and FETCH clauses of queries (an OVER or aggregate
                          ORDER BY is not one); ``ORDER BY x LIMIT 5`` is 2.
  ``lateral_unnest``      each LATERAL (subquery, function, Spark ``LATERAL VIEW``) counts 1; each
                          UNNEST / EXPLODE call not directly under a LATERAL counts 1.
  ``recursion``           WITH RECURSIVE clauses.
  ``json_array_map_ops``  JSON, array and map operations: non-aggregate sqlglot functions whose
                          class name starts with JSON, Array or Map (``->``, ``->>``,
                          ``JSON_EXTRACT``, ``ARRAY[...]``, ``@>``, ``map_keys`` ...), VarMap, and
                          subscripts ``x[i]``.

Scoring
-------
Per feature f, cap tau_f = max(1, 95th percentile of f over a frozen corpus) and
z_f = min(1, ln(1 + x_f) / ln(1 + tau_f)); a group's score is the mean z of its features, and
SCS = 100/6 * sum of the six group scores, so 0 <= SCS <= 100.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.scope import ScopeType, traverse_scope

from polysql.core.errors import ConfigError

__all__ = [
    "CAP_PERCENTILE",
    "FEATURES",
    "FEATURE_GROUPS",
    "PARSER",
    "FeatureCounts",
    "ScsResult",
    "ScsStatus",
    "features",
    "fit_caps",
    "scs",
    "score",
    "z_score",
]

FEATURE_GROUPS: dict[str, tuple[str, ...]] = {
    "relational": ("table_refs", "joins", "outer_joins", "set_operations"),
    "nesting": (
        "select_blocks",
        "max_nesting_depth",
        "ctes",
        "cte_chain_depth",
        "correlated_subqueries",
    ),
    "predicates": ("predicate_atoms", "boolean_depth", "or_branches", "case_expressions"),
    "aggregation": (
        "aggregate_calls",
        "grouping_keys",
        "having_clauses",
        "window_functions",
        "distinct",
    ),
    "expressions": (
        "projected_expressions",
        "scalar_function_calls",
        "casts",
        "arithmetic_operators",
    ),
    "advanced": ("order_by_limit", "lateral_unnest", "recursion", "json_array_map_ops"),
}
FEATURES: tuple[str, ...] = tuple(f for group in FEATURE_GROUPS.values() for f in group)
CAP_PERCENTILE = 95.0
PARSER = "sqlglot " + ".".join(sqlglot.__version__.split(".")[:2])
# The reason given for SQL nested deeper than sqlglot's recursive parser can follow (about 500
# parentheses): RecursionError, which is no parse error of sqlglot's own.
_TOO_DEEP = "nested too deeply for sqlglot to read"


class ScsStatus(StrEnum):
    OK = "ok"
    #: sqlglot could not read the text as exactly one query (its message is kept)
    PARSE_ERROR = "parse_error"


@dataclass(frozen=True, slots=True)
class FeatureCounts:
    """Raw feature counts of one query (empty when the query could not be parsed)."""

    status: ScsStatus
    counts: Mapping[str, int]
    dialect: str
    parser: str = PARSER
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is ScsStatus.OK

    def by_group(self) -> dict[str, dict[str, int]]:
        return {g: {f: self.counts[f] for f in fs} for g, fs in FEATURE_GROUPS.items()}


@dataclass(frozen=True, slots=True)
class ScsResult:
    """A score with everything needed to recompute it: raw counts, caps, per-feature z."""

    status: ScsStatus
    scs: float | None
    group_scores: Mapping[str, float]
    caps: Mapping[str, float]
    raw: Mapping[str, int]
    parser: str
    z: Mapping[str, float] = field(default_factory=dict)
    error: str | None = None


# -- parsing -----------------------------------------------------------------------------------


def _check_dialect(dialect: str) -> None:
    try:
        sqlglot.Dialect.get_or_raise(dialect)
    except ValueError as error:
        raise ConfigError(f"unknown SQL dialect {dialect!r}: {error}") from error


def _parse_query(sql: str, dialect: str) -> exp.Query | str:
    """The one query in ``sql``, or the reason there is none."""
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except SqlglotError as error:
        return str(error)
    except RecursionError:
        return _TOO_DEEP
    if len(statements) != 1:
        return f"expected exactly one statement, found {len(statements)}"
    root = statements[0]
    if not isinstance(root, exp.Query):
        # exp.Command is sqlglot giving up on the statement: it keeps the text, not a tree
        return f"not a query: sqlglot read it as {type(root).__name__}"
    return root


# -- counting ----------------------------------------------------------------------------------

_OUTER_SIDES = frozenset({"LEFT", "RIGHT", "FULL"})
_NOT_OUTER_KINDS = frozenset({"SEMI", "ANTI"})
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.Pow)
_COLLECTION_PREFIXES = ("JSON", "Array", "Map")
# wrappers between an OVER and the function it applies to
_WINDOW_WRAPPERS = (exp.Filter, exp.WithinGroup, exp.IgnoreNulls, exp.RespectNulls)


def _window_function(window: exp.Window) -> exp.Expression | None:
    node = window.this
    while isinstance(node, _WINDOW_WRAPPERS):
        node = node.this
    return node if isinstance(node, exp.Expression) else None


def _is_collection_op(node: exp.Expression) -> bool:
    if isinstance(node, (exp.Bracket, exp.VarMap)):
        return True
    return (
        isinstance(node, exp.Func)
        and not isinstance(node, exp.AggFunc)
        and type(node).__name__.startswith(_COLLECTION_PREFIXES)
    )


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _chain_operands(node: exp.Expression, kind: type[exp.Expression]) -> list[exp.Expression]:
    """Operands of a chain of one connective, read through parentheses: a AND (b AND c) -> 3."""
    node = _unparen(node)
    if type(node) is kind:
        return _chain_operands(node.this, kind) + _chain_operands(node.expression, kind)
    return [node]


@dataclass(slots=True)
class _Condition:
    depth: int = 0
    atoms: int = 0
    or_branches: int = 0


def _condition(node: exp.Expression) -> _Condition:
    node = _unparen(node)
    if isinstance(node, exp.Connector):
        operands = _chain_operands(node, type(node))
        parts = [_condition(o) for o in operands]
        return _Condition(
            depth=1 + max(p.depth for p in parts),
            atoms=sum(p.atoms for p in parts),
            or_branches=sum(p.or_branches for p in parts)
            + (len(operands) if isinstance(node, exp.Or) else 0),
        )
    if isinstance(node, exp.Not):
        inner = _unparen(node.this)
        part = _condition(inner)
        if isinstance(inner, exp.Connector):
            part.depth += 1
        return part
    return _Condition(atoms=1)


def _grouping_keys(group: exp.Group) -> int:
    keys: set[str] = set()

    def add(node: exp.Expression) -> None:
        if isinstance(node, (exp.Rollup, exp.Cube, exp.GroupingSets, exp.Tuple)):
            for item in node.expressions:
                add(item)
        elif isinstance(node, exp.Paren):
            add(node.this)
        else:
            keys.add(node.sql())

    for value in group.args.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Expression):
                add(item)
    return len(keys)


def _nesting_depth(select: exp.Select) -> int:
    depth = 0
    child: exp.Expression = select
    node = select.parent
    while node is not None:
        if isinstance(node, exp.Select) and not isinstance(child, exp.With):
            depth += 1
        child, node = node, node.parent
    return depth


def _cte_chain_depth(with_: exp.With) -> int:
    chain: dict[str, int] = {}
    longest = 0
    for cte in with_.expressions:
        earlier = {
            t.name for t in cte.this.find_all(exp.Table) if not t.args.get("db") and t.name in chain
        }
        depth = 1 + max((chain[name] for name in earlier), default=0)
        chain[cte.alias_or_name] = depth
        longest = max(longest, depth)
    return longest


def _correlated_subqueries(root: exp.Expression) -> int:
    return sum(
        1
        for scope in traverse_scope(root)
        if scope.scope_type is ScopeType.SUBQUERY
        and any(column.table for column in scope.external_columns)
    )


def _count(root: exp.Expression) -> dict[str, int]:
    c = dict.fromkeys(FEATURES, 0)
    nodes = list(root.walk())
    window_functions = {
        id(f) for w in nodes if isinstance(w, exp.Window) and (f := _window_function(w)) is not None
    }
    conditions: list[exp.Expression] = []
    for node in nodes:
        if isinstance(node, exp.Table):
            c["table_refs"] += 1
        elif isinstance(node, exp.Join):
            c["joins"] += 1
            if node.side.upper() in _OUTER_SIDES and node.kind.upper() not in _NOT_OUTER_KINDS:
                c["outer_joins"] += 1
            if node.args.get("on") is not None:
                conditions.append(node.args["on"])
            c["predicate_atoms"] += len(node.args.get("using") or [])
        elif isinstance(node, exp.SetOperation):
            c["set_operations"] += 1
        elif isinstance(node, exp.Select):
            c["select_blocks"] += 1
            c["max_nesting_depth"] = max(c["max_nesting_depth"], _nesting_depth(node))
            c["projected_expressions"] += len(node.expressions)
            group = node.args.get("group")
            if isinstance(group, exp.Group):
                c["grouping_keys"] += _grouping_keys(group)
        elif isinstance(node, exp.CTE):
            c["ctes"] += 1
        elif isinstance(node, exp.With):
            c["cte_chain_depth"] = max(c["cte_chain_depth"], _cte_chain_depth(node))
            c["recursion"] += bool(node.args.get("recursive"))
        elif isinstance(node, (exp.Where, exp.Having, exp.Qualify)):
            conditions.append(node.this)
            c["having_clauses"] += isinstance(node, exp.Having)
        elif isinstance(node, exp.Window):
            c["window_functions"] += node.arg_key != "windows"
        elif isinstance(node, exp.Distinct):
            c["distinct"] += 1
        elif isinstance(node, (exp.Order, exp.Limit, exp.Fetch)):
            c["order_by_limit"] += isinstance(node.parent, exp.Query)
        elif isinstance(node, exp.Lateral):
            c["lateral_unnest"] += 1
        elif isinstance(node, exp.DPipe):
            c["scalar_function_calls"] += 1
        elif id(node) in window_functions:
            pass  # counted through its OVER
        elif isinstance(node, exp.AggFunc):
            c["aggregate_calls"] += 1
        elif isinstance(node, exp.Case):
            c["case_expressions"] += 1
        elif isinstance(node, exp.If):
            # sqlglot also stores each WHEN ... THEN of a CASE as an If: part of that CASE
            c["case_expressions"] += not isinstance(node.parent, exp.Case)
        elif isinstance(node, exp.Cast):
            c["casts"] += 1
        elif isinstance(node, (exp.Unnest, exp.Explode)):
            c["lateral_unnest"] += not isinstance(node.parent, exp.Lateral)
        elif _is_collection_op(node):
            c["json_array_map_ops"] += 1
        elif isinstance(node, _ARITHMETIC):
            c["arithmetic_operators"] += 1
        elif isinstance(node, exp.Func) and not isinstance(node, (exp.Predicate, exp.Connector)):
            c["scalar_function_calls"] += 1
    for condition in conditions:
        part = _condition(condition)
        c["predicate_atoms"] += part.atoms
        c["boolean_depth"] = max(c["boolean_depth"], part.depth)
        c["or_branches"] += part.or_branches
    c["correlated_subqueries"] = _correlated_subqueries(root)
    return c


def features(sql: str, dialect: str) -> FeatureCounts:
    """Raw counts of every feature of ``sql`` read as ``dialect`` (a sqlglot dialect name)."""
    _check_dialect(dialect)
    parsed = _parse_query(sql, dialect)
    if isinstance(parsed, str):
        return FeatureCounts(ScsStatus.PARSE_ERROR, {}, dialect, error=parsed)
    try:
        counts = _count(normalize_identifiers(parsed, dialect=dialect))
    except SqlglotError as error:  # scope analysis refused the tree
        return FeatureCounts(ScsStatus.PARSE_ERROR, {}, dialect, error=str(error))
    except RecursionError:
        return FeatureCounts(ScsStatus.PARSE_ERROR, {}, dialect, error=_TOO_DEEP)
    return FeatureCounts(ScsStatus.OK, counts, dialect)


# -- scoring -----------------------------------------------------------------------------------


def _raw(counts: FeatureCounts | Mapping[str, int]) -> Mapping[str, int]:
    if isinstance(counts, FeatureCounts):
        if not counts.ok:
            raise ValueError(f"counts of an unparsed query cannot be used: {counts.error}")
        return counts.counts
    return counts


def fit_caps(corpus_counts: Iterable[FeatureCounts | Mapping[str, int]]) -> dict[str, float]:
    """Per-feature cap: max(1, 95th percentile over the corpus), numpy's default linear method."""
    rows = [_raw(c) for c in corpus_counts]
    if not rows:
        raise ValueError("caps need a non-empty corpus")
    caps: dict[str, float] = {}
    for feature in FEATURES:
        values = np.array([row[feature] for row in rows], dtype=float)
        caps[feature] = max(1.0, float(np.percentile(values, CAP_PERCENTILE)))
    return caps


def z_score(x: float, cap: float) -> float:
    """min(1, ln(1 + x) / ln(1 + cap)): log-compressed and saturating at the cap."""
    if cap < 1:
        raise ValueError(f"a cap is at least 1, got {cap}")
    if x < 0:
        raise ValueError(f"feature counts are not negative, got {x}")
    return min(1.0, math.log1p(x) / math.log1p(cap))


def score(counts: FeatureCounts, caps: Mapping[str, float]) -> ScsResult:
    """SCS of one query's counts under frozen ``caps`` (see the module docstring)."""
    missing = [f for f in FEATURES if f not in caps]
    if missing:
        raise ValueError(f"caps lack features: {', '.join(missing)}")
    frozen_caps = {f: float(caps[f]) for f in FEATURES}
    if not counts.ok:
        return ScsResult(
            counts.status, None, {}, frozen_caps, {}, counts.parser, error=counts.error
        )
    z = {f: z_score(counts.counts[f], frozen_caps[f]) for f in FEATURES}
    group_scores = {g: sum(z[f] for f in fs) / len(fs) for g, fs in FEATURE_GROUPS.items()}
    total = 100.0 / len(FEATURE_GROUPS) * sum(group_scores.values())
    return ScsResult(
        ScsStatus.OK, total, group_scores, frozen_caps, dict(counts.counts), counts.parser, z
    )


def scs(sql: str, dialect: str, caps: Mapping[str, float]) -> ScsResult:
    """``score(features(sql, dialect), caps)``."""
    return score(features(sql, dialect), caps)
