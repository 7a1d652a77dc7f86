"""polysql.analysis.rewrite.scs: feature counts recounted by hand, caps and scores recomputed."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from polysql.analysis.rewrite.scs import (
    FEATURE_GROUPS,
    FEATURES,
    PARSER,
    FeatureCounts,
    ScsStatus,
    features,
    fit_caps,
    score,
    scs,
    z_score,
)
from polysql.core.errors import ConfigError

ZERO = dict.fromkeys(FEATURES, 0)


def counts_of(sql: str, dialect: str = "postgres") -> dict[str, int]:
    result = features(sql, dialect)
    assert result.status is ScsStatus.OK, result.error
    return dict(result.counts)


def nonzero(sql: str, dialect: str = "postgres") -> dict[str, int]:
    return {f: n for f, n in counts_of(sql, dialect).items() if n}


def test_feature_groups_are_the_six_documented_ones() -> None:
    assert list(FEATURE_GROUPS) == [
        "relational",
        "nesting",
        "predicates",
        "aggregation",
        "expressions",
        "advanced",
    ]
    assert len(FEATURES) == len(set(FEATURES)) == 26


def test_trivial_select_counts_and_score_by_hand() -> None:
    result = features("SELECT a FROM t", "postgres")
    assert result.ok and result.parser == PARSER and PARSER.startswith("sqlglot ")
    assert dict(result.counts) == {
        **ZERO,
        "table_refs": 1,
        "select_blocks": 1,
        "projected_expressions": 1,
    }
    assert result.by_group()["relational"] == {
        "table_refs": 1,
        "joins": 0,
        "outer_joins": 0,
        "set_operations": 0,
    }
    caps = {**dict.fromkeys(FEATURES, 1.0), "table_refs": 3.0, "projected_expressions": 7.0}
    scored = score(result, caps)
    # z(table_refs) = ln 2 / ln 4 = 1/2, z(select_blocks) = ln 2 / ln 2 = 1,
    # z(projected_expressions) = ln 2 / ln 8 = 1/3; every other z is 0
    assert scored.z["table_refs"] == pytest.approx(0.5)
    assert scored.z["select_blocks"] == pytest.approx(1.0)
    assert scored.z["projected_expressions"] == pytest.approx(1 / 3)
    assert scored.group_scores == pytest.approx(
        {
            "relational": 0.5 / 4,
            "nesting": 1 / 5,
            "predicates": 0.0,
            "aggregation": 0.0,
            "expressions": (1 / 3) / 4,
            "advanced": 0.0,
        }
    )
    assert scored.scs == pytest.approx(100 / 6 * (1 / 8 + 1 / 5 + 1 / 12))
    assert scored.status is ScsStatus.OK and scored.parser == PARSER
    assert scored.raw == result.counts and scored.caps == caps


COMPLEX = """
WITH a AS (SELECT * FROM t),
     b AS (SELECT * FROM a WHERE x > 1),
     c AS (SELECT b.x, count(*) AS n FROM b JOIN u ON b.id = u.id GROUP BY b.x)
SELECT c.x, row_number() OVER (ORDER BY c.n DESC)
FROM c LEFT JOIN v ON v.x = c.x
WHERE EXISTS (SELECT 1 FROM w WHERE w.x = c.x AND (w.y = 1 OR w.z IS NOT NULL))
ORDER BY 1
LIMIT 10
"""


def test_joins_ctes_window_and_correlated_subquery_recounted_by_hand() -> None:
    assert counts_of(COMPLEX) == {
        # t, a, b, u, c, v, w
        "table_refs": 7,
        # b JOIN u, c LEFT JOIN v
        "joins": 2,
        "outer_joins": 1,
        "set_operations": 0,
        # a, b, c, the main query, the EXISTS subquery
        "select_blocks": 5,
        # only the EXISTS subquery is nested; CTE bodies are not
        "max_nesting_depth": 1,
        "ctes": 3,
        # c reads b reads a
        "cte_chain_depth": 3,
        # the EXISTS subquery names c.x, which it does not introduce
        "correlated_subqueries": 1,
        # x > 1; b.id = u.id; v.x = c.x; EXISTS; w.x = c.x, w.y = 1, w.z IS NOT NULL
        "predicate_atoms": 7,
        # AND over (OR)
        "boolean_depth": 2,
        "or_branches": 2,
        "case_expressions": 0,
        # count(*); row_number() is a window function, not an aggregate
        "aggregate_calls": 1,
        "grouping_keys": 1,
        "having_clauses": 0,
        "window_functions": 1,
        "distinct": 0,
        # a: *, b: *, c: b.x and n, main: c.x and row_number, EXISTS: 1
        "projected_expressions": 7,
        "scalar_function_calls": 0,
        "casts": 0,
        "arithmetic_operators": 0,
        # the OVER (ORDER BY ...) is not a query's ORDER BY
        "order_by_limit": 2,
        "lateral_unnest": 0,
        "recursion": 0,
        "json_array_map_ops": 0,
    }


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        # unqualified columns are taken as local: not correlated
        ("SELECT * FROM t WHERE a IN (SELECT b FROM u)", 0),
        ("SELECT * FROM t WHERE a IN (SELECT b FROM u WHERE u.k = t.k)", 1),
        ("SELECT t.a, (SELECT count(*) FROM u WHERE u.k = t.k) FROM t", 1),
        # the middle subquery depends on the outer row through the inner one: both count
        (
            "SELECT * FROM t AS x WHERE EXISTS (SELECT 1 FROM u WHERE EXISTS "
            "(SELECT 1 FROM v WHERE v.k = x.k))",
            2,
        ),
        # references to the subquery's own sources, at any depth, are local
        (
            "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u WHERE EXISTS "
            "(SELECT 1 FROM v WHERE v.k = u.k))",
            1,
        ),
        ("SELECT * FROM (SELECT a FROM u) AS s JOIN t ON s.a = t.a", 0),
        ("SELECT * FROM t, LATERAL (SELECT * FROM u WHERE u.a = t.a) AS s", 1),
    ],
)
def test_correlation(sql: str, expected: int) -> None:
    assert counts_of(sql)["correlated_subqueries"] == expected


@pytest.mark.parametrize(
    ("where", "atoms", "depth", "or_branches"),
    [
        ("a = 1", 1, 0, 0),
        ("a = 1 AND b = 2 AND c = 3", 3, 1, 0),
        ("(a = 1 AND b = 2) AND c = 3", 3, 1, 0),
        ("a = 1 AND (b = 2 OR c = 3)", 3, 2, 2),
        ("a = 1 OR b = 2 OR c = 3", 3, 1, 3),
        ("(a = 1 OR b = 2) AND (c = 3 OR d = 4)", 4, 2, 4),
        ("NOT (a = 1 OR b IN (1, 2))", 2, 2, 2),
        # NOT over a leaf is part of the leaf
        ("a IS NOT NULL AND b NOT IN (1) AND NOT EXISTS (SELECT 1)", 3, 1, 0),
        ("c LIKE 'x%' AND d BETWEEN 1 AND 2 AND flag", 3, 1, 0),
        ("NOT (a = 1 AND NOT (b = 2 OR c = 3))", 3, 4, 2),
    ],
)
def test_predicate_features(where: str, atoms: int, depth: int, or_branches: int) -> None:
    counts = counts_of(f"SELECT 1 FROM t WHERE {where}")
    assert (counts["predicate_atoms"], counts["boolean_depth"], counts["or_branches"]) == (
        atoms,
        depth,
        or_branches,
    )


def test_join_conditions_having_and_using_are_predicates() -> None:
    counts = counts_of(
        "SELECT a, sum(b) FROM t JOIN u USING (k, j) JOIN v ON v.x = t.x OR v.y = t.y "
        "GROUP BY a HAVING sum(b) > 1"
    )
    # USING: 2 equalities; ON: 2 atoms in one OR; HAVING: 1
    assert counts["predicate_atoms"] == 5
    assert counts["or_branches"] == 2
    assert counts["having_clauses"] == 1
    assert counts["aggregate_calls"] == 2


def test_nesting_depth_ignores_ctes_and_set_operation_branches() -> None:
    assert counts_of("WITH c AS (SELECT 1 AS x) SELECT x FROM c")["max_nesting_depth"] == 0
    assert counts_of("SELECT a FROM t UNION SELECT b FROM u")["max_nesting_depth"] == 0
    nested = counts_of(
        "SELECT * FROM (SELECT * FROM (SELECT a FROM t) AS x WHERE a IN (SELECT b FROM u)) AS y"
    )
    assert nested["max_nesting_depth"] == 2
    assert nested["select_blocks"] == 4
    in_subquery = counts_of("SELECT * FROM (WITH c AS (SELECT 1 AS x) SELECT x FROM c) AS s")
    assert in_subquery["max_nesting_depth"] == 1


def test_cte_chain_depth_counts_only_references_to_earlier_ctes() -> None:
    independent = "WITH a AS (SELECT 1 AS x), b AS (SELECT 2 AS x) SELECT * FROM a, b"
    assert counts_of(independent)["cte_chain_depth"] == 1
    diamond = (
        "WITH a AS (SELECT 1 AS x), b AS (SELECT x FROM a), c AS (SELECT x FROM a), "
        "d AS (SELECT b.x FROM b JOIN c ON b.x = c.x) SELECT * FROM d"
    )
    assert counts_of(diamond)["cte_chain_depth"] == 3
    recursive = (
        "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) "
        "SELECT * FROM r"
    )
    counts = counts_of(recursive)
    # a recursive CTE reading itself is not a chain
    assert (counts["cte_chain_depth"], counts["recursion"], counts["set_operations"]) == (1, 1, 1)
    assert counts_of("SELECT 1")["cte_chain_depth"] == 0


def test_aggregation_features() -> None:
    counts = counts_of(
        "SELECT DISTINCT a, count(DISTINCT b), sum(c) OVER w, rank() OVER (PARTITION BY a) "
        "FROM t GROUP BY GROUPING SETS ((a, b), (a), ()) WINDOW w AS (PARTITION BY b)"
    )
    # SELECT DISTINCT and count(DISTINCT ...)
    assert counts["distinct"] == 2
    # the named WINDOW definition is not a call
    assert counts["window_functions"] == 2
    assert counts["aggregate_calls"] == 1
    # a and b, each counted once
    assert counts["grouping_keys"] == 2
    assert counts_of("SELECT a, b, sum(c) FROM t GROUP BY ROLLUP (a, b)")["grouping_keys"] == 2


def test_expression_features() -> None:
    assert nonzero(
        "SELECT CASE WHEN a > 0 THEN upper(b) WHEN a < 0 THEN 'n' ELSE lower(b) END, "
        "IIF(a, 1, 2), CAST(c AS INT), c::text, a + b * 2 - -1, power(a, 2), coalesce(a, 0), "
        "b || 'x' FROM t",
        "sqlite",
    ) == {
        "table_refs": 1,
        "select_blocks": 1,
        # the CASE (its WHEN branches are part of it) and IIF
        "case_expressions": 2,
        "projected_expressions": 8,
        # upper, lower, coalesce and ||
        "scalar_function_calls": 4,
        "casts": 2,
        # +, *, - and power; the unary minus is not counted
        "arithmetic_operators": 4,
    }


def test_order_by_limit_counts_query_clauses_only() -> None:
    assert (
        counts_of("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1 LIMIT 3")["order_by_limit"] == 2
    )
    assert counts_of("SELECT a FROM t ORDER BY a FETCH FIRST 3 ROWS ONLY")["order_by_limit"] == 2
    assert (
        counts_of("SELECT string_agg(a, ',' ORDER BY b), rank() OVER (ORDER BY a) FROM t")[
            "order_by_limit"
        ]
        == 0
    )


def test_mysql_backticks_change_nothing() -> None:
    quoted = "SELECT `o`.`id`, COUNT(DISTINCT `o`.`cust`) FROM `orders` AS `o` GROUP BY `o`.`id`"
    plain = "SELECT o.id, COUNT(DISTINCT o.cust) FROM orders AS o GROUP BY o.id"
    assert counts_of(quoted, "mysql") == counts_of(plain, "mysql")
    assert nonzero(quoted, "mysql") == {
        "table_refs": 1,
        "select_blocks": 1,
        "aggregate_calls": 1,
        "grouping_keys": 1,
        "distinct": 1,
        "projected_expressions": 2,
    }


def test_spark_lateral_view_explode_is_one_lateral() -> None:
    assert nonzero(
        "SELECT id, tag FROM posts LATERAL VIEW explode(tags) t AS tag WHERE id > 3", "spark"
    ) == {
        "table_refs": 1,
        "select_blocks": 1,
        "predicate_atoms": 1,
        "projected_expressions": 2,
        # the explode inside LATERAL VIEW is that lateral, not a second one nor a scalar call
        "lateral_unnest": 1,
    }
    assert counts_of("SELECT explode(tags) FROM posts", "spark")["lateral_unnest"] == 1


def test_lateral_and_unnest() -> None:
    counts = counts_of(
        "SELECT * FROM t, LATERAL (SELECT * FROM u WHERE u.a = t.a) AS s "
        "CROSS JOIN LATERAL unnest(t.arr) AS x"
    )
    assert (counts["lateral_unnest"], counts["joins"], counts["table_refs"]) == (2, 2, 2)
    assert counts_of("SELECT * FROM t, unnest(t.arr) AS u(x)")["lateral_unnest"] == 1


def test_postgres_json_operators_are_advanced() -> None:
    assert nonzero(
        "SELECT doc ->> 'name', doc -> 'tags' FROM items WHERE (doc ->> 'kind')::int = 2"
    ) == {
        "table_refs": 1,
        "select_blocks": 1,
        "predicate_atoms": 1,
        "projected_expressions": 2,
        "casts": 1,
        "json_array_map_ops": 3,
    }
    arrays = counts_of("SELECT ARRAY[1, 2], arr[1] FROM t WHERE tags @> ARRAY['a']")
    assert arrays["json_array_map_ops"] == 4
    assert arrays["scalar_function_calls"] == 0
    spark = counts_of("SELECT m['k'], size(arr), map_keys(m) FROM t", "spark")
    assert spark["json_array_map_ops"] == 3


@pytest.mark.parametrize(
    ("sql", "dialect", "message"),
    [
        ("SELEC * FROM t", "postgres", "Required keyword"),
        ("SELECT * FROM", "postgres", "Expected table name"),
        ("SELECT 'abc", "duckdb", "Error tokenizing"),
        ("SELECT 1; SELECT 2", "duckdb", "exactly one statement, found 2"),
        ("", "duckdb", "exactly one statement, found 0"),
        ("this is not sql", "duckdb", "not a query"),
        ("SHOW TABLES", "postgres", "not a query: sqlglot read it as Command"),
    ],
)
def test_parse_errors_are_results_not_exceptions(sql: str, dialect: str, message: str) -> None:
    counts = features(sql, dialect)
    assert counts.status is ScsStatus.PARSE_ERROR and not counts.ok
    assert counts.error is not None and message in counts.error
    assert dict(counts.counts) == {}
    result = scs(sql, dialect, dict.fromkeys(FEATURES, 1.0))
    assert result.status is ScsStatus.PARSE_ERROR
    assert result.scs is None and result.error == counts.error


def test_unknown_dialect_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no_such_dialect"):
        features("SELECT 1", "no_such_dialect")


CORPUS = [
    "SELECT a FROM t",
    "SELECT a FROM t JOIN u ON t.k = u.k",
    "SELECT a FROM t JOIN u ON t.k = u.k JOIN v ON v.k = u.k",
    "SELECT a FROM t JOIN u ON t.k = u.k JOIN v ON v.k = u.k JOIN w ON w.k = v.k",
    "SELECT a FROM t1 JOIN t2 ON 1=1 JOIN t3 ON 1=1 JOIN t4 ON 1=1 JOIN t5 ON 1=1 "
    "JOIN t6 ON 1=1 JOIN t7 ON 1=1 JOIN t8 ON 1=1 JOIN t9 ON 1=1 JOIN t10 ON 1=1 JOIN t11 ON 1=1",
]


def test_caps_are_the_95th_percentile_floored_at_one() -> None:
    corpus = [features(sql, "postgres") for sql in CORPUS]
    assert [c.counts["joins"] for c in corpus] == [0, 1, 2, 3, 10]
    caps = fit_caps(corpus)
    assert set(caps) == set(FEATURES)
    # linear interpolation: rank 0.95 * 4 = 3.8, so 3 + 0.8 * (10 - 3)
    assert caps["joins"] == pytest.approx(8.6)
    for feature in FEATURES:
        values = [c.counts[feature] for c in corpus]
        # an independent implementation of the same linear (inclusive) percentile
        inclusive = statistics.quantiles(values, n=20, method="inclusive")[18]
        assert caps[feature] == pytest.approx(max(1.0, inclusive))
        assert caps[feature] == pytest.approx(max(1.0, float(np.percentile(values, 95))))
    # no query has a CTE: the cap stays at its floor
    assert caps["ctes"] == 1.0
    # plain mappings (e.g. read back from JSON) fit the same caps
    assert fit_caps([dict(c.counts) for c in corpus]) == caps


def test_caps_refuse_empty_corpus_and_unparsed_queries() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        fit_caps([])
    with pytest.raises(ValueError, match="unparsed"):
        fit_caps([features("SELECT a FROM t", "postgres"), features("SELEC", "postgres")])


def test_z_saturates_at_the_cap() -> None:
    assert z_score(0, 5) == 0.0
    assert z_score(5, 5) == pytest.approx(1.0)
    assert z_score(6, 5) == 1.0
    assert z_score(10_000, 1) == 1.0
    assert z_score(3, 7) == pytest.approx(math.log(4) / math.log(8))
    with pytest.raises(ValueError):
        z_score(1, 0.5)
    everything = FeatureCounts(ScsStatus.OK, dict.fromkeys(FEATURES, 50), "postgres")
    saturated = score(everything, dict.fromkeys(FEATURES, 3.0))
    assert saturated.scs == pytest.approx(100.0)
    assert set(saturated.group_scores.values()) == {1.0}


def test_score_needs_every_cap() -> None:
    with pytest.raises(ValueError, match="joins"):
        score(features("SELECT 1", "postgres"), {f: 1.0 for f in FEATURES if f != "joins"})


def test_scs_orders_queries_by_complexity() -> None:
    caps = fit_caps([features(sql, "postgres") for sql in [*CORPUS, COMPLEX]])
    simple = scs("SELECT a FROM t", "postgres", caps).scs
    complex_ = scs(COMPLEX, "postgres", caps).scs
    assert simple is not None and complex_ is not None
    assert 0 < simple < complex_ <= 100
