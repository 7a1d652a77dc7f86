"""SQL nested deeper than sqlglot's recursive parser can follow (it gives up near 500
parentheses, with a RecursionError rather than one of its own errors) is text sqlglot cannot
read, wherever polysql reads SQL it did not write: golds, predictions, rewrites, translations.
It is never a crash (the statement screens are covered in tests/backends/common/test_guard.py)."""

from __future__ import annotations

from polysql.analysis.rewrite.noop import is_noop
from polysql.analysis.rewrite.scs import ScsStatus, features
from polysql.audit.transpile import transpile_back
from polysql.core.predictor import TargetEngine
from polysql.datasets.base import Question
from polysql.debug.metrics import canonical_sql, graph_match
from polysql.normalizers.ordering import infer_order, keyed_order_sql, widens
from polysql.sweep.predictors import TranspilePredictor

DEEP = "SELECT " + "(" * 3000 + "a" + ")" * 3000 + " AS x FROM t ORDER BY b LIMIT 3"


def test_a_gold_too_deep_to_read_has_no_order_to_infer() -> None:
    assert keyed_order_sql(DEEP, "sqlite") is None
    assert not widens(DEEP, "sqlite")
    assert not infer_order(DEEP, "sqlite", ["x"]).parsed  # said unread, as any unparsable gold


def test_a_translation_of_it_is_a_transpile_failure() -> None:
    assert transpile_back(DEEP, "duckdb", "sqlite") == (None, "nested too deeply for sqlglot to "
                                                              "read")
    prediction = TranspilePredictor().predict(
        Question("q1", "db", "?", DEEP), TargetEngine("duckdb", "duckdb"))
    assert prediction.sql is None
    assert prediction.failure == ("transpile_failure: the gold is nested too deeply for sqlglot "
                                  "to read")


def test_a_rewrite_of_it_scores_as_unparsed_and_is_no_no_op() -> None:
    counted = features(DEEP, "postgres")
    assert counted.status == ScsStatus.PARSE_ERROR
    assert counted.error == "nested too deeply for sqlglot to read"
    assert not is_noop("SELECT a AS x FROM t ORDER BY b LIMIT 3", DEEP, "postgres")


def test_a_debug_prediction_of_it_does_not_graph_match() -> None:
    assert canonical_sql(DEEP, "sqlite", None) is None
    assert not graph_match(DEEP, ["SELECT a AS x FROM t ORDER BY b LIMIT 3"], "sqlite", None)
