"""The comparison contract on results produced by real engines: the gold runs on SQLite, the
prediction on DuckDB (or SQLite), over the same table (see conftest.py)."""

from __future__ import annotations

import pytest

import polysql
from polysql.backends.base import Backend
from polysql.normalizers.ordering import widen_limit


def judge(sqlite: Backend, gold_sql: str, engine: Backend, pred_sql: str, **kwargs: object):
    gold = sqlite.execute(gold_sql)
    pred = engine.execute(pred_sql)
    assert gold.ok, gold.error
    return polysql.compare(gold, pred, gold_sql=gold_sql, **kwargs)


# -- rows -------------------------------------------------------------------------------------------

def test_duplicate_rows_count(sqlite: Backend, duckdb: Backend) -> None:
    same = judge(sqlite, "SELECT region FROM sales", duckdb, "SELECT region FROM sales")
    assert same.match, same.reason
    distinct = judge(sqlite, "SELECT region FROM sales", duckdb, "SELECT DISTINCT region FROM sales")
    assert not distinct.match
    assert "gold has 6 rows, predicted 3" in distinct.reason


def test_bag_ignores_row_order(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT id, region FROM sales", duckdb,
                    "SELECT id, region FROM sales ORDER BY id DESC")
    assert verdict.match, verdict.reason
    assert verdict.details["ordered"] is False


def test_order_by_ties_may_come_in_any_order(sqlite: Backend, duckdb: Backend) -> None:
    gold_sql = "SELECT region, id FROM sales ORDER BY region"
    pred_sql = "SELECT region, id FROM sales ORDER BY region, id DESC"
    # The two engines really return the tied rows in different orders:
    assert sqlite.execute(gold_sql).rows != duckdb.execute(pred_sql).rows
    verdict = judge(sqlite, gold_sql, duckdb, pred_sql)
    assert verdict.match, verdict.reason
    assert verdict.details["ordered"] is True
    assert verdict.details["order_keys"] == ["region"]


def test_order_by_violated_is_a_mismatch(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT region, id FROM sales ORDER BY region", duckdb,
                    "SELECT region, id FROM sales ORDER BY region DESC")
    assert not verdict.match
    assert "same rows but in a different order" in verdict.reason


def test_ties_any_order_off_demands_the_gold_sequence(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT region, id FROM sales ORDER BY region", duckdb,
                    "SELECT region, id FROM sales ORDER BY region, id DESC", ties_any_order=False)
    assert not verdict.match
    assert "row 1 differs at column 'id'" in verdict.reason


def test_ordered_argument_overrides_inference(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT id FROM sales ORDER BY id", duckdb,
                    "SELECT id FROM sales ORDER BY id DESC", ordered=False)
    assert verdict.match, verdict.reason
    forced = judge(sqlite, "SELECT id FROM sales", duckdb, "SELECT id FROM sales ORDER BY id DESC",
                   ordered=True)
    assert not forced.match
    assert forced.details["order_source"] == "argument"


def test_order_by_inside_subquery_or_window_does_not_count(sqlite: Backend, duckdb: Backend) -> None:
    subquery = judge(sqlite, "SELECT region FROM (SELECT region FROM sales ORDER BY id)", duckdb,
                     "SELECT region FROM sales ORDER BY region")
    assert subquery.match, subquery.reason
    assert subquery.details["ordered"] is False
    window = judge(sqlite, "SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS rn FROM sales", duckdb,
                   "SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS rn FROM sales ORDER BY id DESC")
    assert window.match, window.reason
    assert window.details["ordered"] is False


def test_order_by_non_projected_key_requires_exact_order(sqlite: Backend, duckdb: Backend) -> None:
    gold_sql = "SELECT region FROM sales ORDER BY id"
    exact = judge(sqlite, gold_sql, duckdb, "SELECT region FROM sales ORDER BY id")
    assert exact.match, exact.reason
    assert exact.details["unresolved_order_keys"] == ["id"]
    shuffled = judge(sqlite, gold_sql, duckdb, "SELECT region FROM sales ORDER BY region")
    assert not shuffled.match
    as_bag = judge(sqlite, gold_sql, duckdb, "SELECT region FROM sales ORDER BY region",
                   unresolved_order_keys="bag")
    assert as_bag.match, as_bag.reason


# -- values -----------------------------------------------------------------------------------------

def test_null_is_not_zero(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT amount FROM sales WHERE id = 4", duckdb,
                    "SELECT COALESCE(amount, 0) AS amount FROM sales WHERE id = 4")
    assert not verdict.match
    assert "NULL" in verdict.reason


def test_decimal_equals_float_within_tolerance(sqlite: Backend, duckdb: Backend) -> None:
    gold_sql = "SELECT SUM(price) AS total FROM sales WHERE id <= 3"
    pred_sql = "SELECT SUM(CAST(price AS DECIMAL(10,2))) AS total FROM sales WHERE id <= 3"
    gold, pred = sqlite.execute(gold_sql), duckdb.execute(pred_sql)
    assert gold.rows[0][0] != 0.3 and str(pred.rows[0][0]) == "0.30"  # 0.30000000000000004
    assert polysql.compare(gold, pred, gold_sql=gold_sql).match
    exact = polysql.compare(gold, pred, gold_sql=gold_sql, numeric_tolerance=False)
    assert not exact.match
    assert "0.30" in exact.reason


def test_mixed_int_and_float_column_equals_decimal(sqlite: Backend, duckdb: Backend) -> None:
    # SQLite returns 20 (int) and 10.5 (float) from a DECIMAL column; DuckDB returns Decimals.
    verdict = judge(sqlite, "SELECT id, amount FROM sales", duckdb, "SELECT id, amount FROM sales")
    assert verdict.match, verdict.reason


def test_int_equals_float(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT COUNT(*) FROM sales", duckdb,
                    "SELECT CAST(COUNT(*) AS DOUBLE) FROM sales")
    assert verdict.match, verdict.reason
    wrong = judge(sqlite, "SELECT COUNT(*) FROM sales", duckdb,
                  "SELECT CAST(COUNT(*) AS DOUBLE) + 0.5 FROM sales")
    assert not wrong.match


def test_numeric_text_equals_number(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT CAST(qty AS TEXT) AS qty FROM sales", duckdb,
                    "SELECT qty FROM sales")
    assert verdict.match, verdict.reason
    off = judge(sqlite, "SELECT CAST(qty AS TEXT) AS qty FROM sales", duckdb,
                "SELECT qty FROM sales", numeric_strings=False)
    assert not off.match


def test_date_and_datetime_equal_their_iso_text(sqlite: Backend, duckdb: Backend) -> None:
    # SQLite returns text; DuckDB returns date and datetime (one at midnight, one with .5 s).
    verdict = judge(sqlite, "SELECT id, day, ts FROM sales", duckdb, "SELECT id, day, ts FROM sales")
    assert verdict.match, verdict.reason
    off = judge(sqlite, "SELECT id, day FROM sales", duckdb, "SELECT id, day FROM sales",
                temporal_text=False)
    assert not off.match


def test_datetime_at_midnight_equals_date(sqlite: Backend, duckdb: Backend) -> None:
    gold_sql = "SELECT day FROM sales WHERE id IN (1, 5)"
    pred_sql = "SELECT ts AS day FROM sales WHERE id IN (1, 5)"  # both at 00:00:00
    assert judge(duckdb, gold_sql, duckdb, pred_sql).match
    off = judge(duckdb, gold_sql, duckdb, pred_sql, midnight_as_date=False)
    assert not off.match


def test_booleans_equal_one_and_zero(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT id, flag FROM sales", duckdb, "SELECT id, flag FROM sales")
    assert verdict.match, verdict.reason
    off = judge(sqlite, "SELECT id, flag FROM sales", duckdb, "SELECT id, flag FROM sales",
                bool_as_int=False)
    assert not off.match


def test_trailing_spaces_are_ignored(sqlite: Backend, duckdb: Backend) -> None:
    gold_sql = "SELECT region FROM sales"
    pred_sql = "SELECT region || '  ' AS region FROM sales"
    assert judge(sqlite, gold_sql, duckdb, pred_sql).match
    assert not judge(sqlite, gold_sql, duckdb, pred_sql, trim_trailing_spaces=False).match


# -- columns ----------------------------------------------------------------------------------------

def test_header_case_is_ignored(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT id AS Id, region AS Region FROM sales", duckdb,
                    "SELECT region AS REGION, id AS ID FROM sales")
    assert verdict.match, verdict.reason
    assert verdict.details["alignment"] == "name"


def test_column_order_does_not_matter_when_names_match(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT id, region FROM sales", duckdb, "SELECT region, id FROM sales")
    assert verdict.match, verdict.reason
    assert verdict.details["column_map"] == [1, 0]


def test_different_names_align_by_position(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT region, COUNT(*) FROM sales GROUP BY region", duckdb,
                    "SELECT region AS r, COUNT(*) AS n FROM sales GROUP BY region")
    assert verdict.match, verdict.reason
    assert verdict.details["alignment"] == "position"


def test_extra_predicted_column_is_ignored(sqlite: Backend, duckdb: Backend) -> None:
    gold_sql = "SELECT region, COUNT(*) AS n FROM sales GROUP BY region"
    pred_sql = "SELECT region, COUNT(*) AS n, SUM(qty) AS total FROM sales GROUP BY region"
    verdict = judge(sqlite, gold_sql, duckdb, pred_sql)
    assert verdict.match, verdict.reason
    assert verdict.details["ignored_pred_columns"] == ["total"]
    strict = judge(sqlite, gold_sql, duckdb, pred_sql, allow_extra_columns=False)
    assert not strict.match


def test_count_star_found_among_predicted_columns_by_value(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT COUNT(*) FROM sales", duckdb,
                    "SELECT 'all' AS scope, COUNT(*) AS n FROM sales")
    assert verdict.match, verdict.reason
    assert verdict.details["alignment"] == "value"
    assert verdict.details["column_map"] == [1]
    off = judge(sqlite, "SELECT COUNT(*) FROM sales", duckdb,
                "SELECT 'all' AS scope, COUNT(*) AS n FROM sales", align_by_value=False)
    assert not off.match


def test_columns_holding_the_same_values_try_their_other_pairing(sqlite: Backend,
                                                                  duckdb: Backend) -> None:
    """Every team plays as often at home as away: the two columns hold the same values, so only
    the rows can say which answers which. The prediction lists them the other way round under
    other names, and an extra column makes the widths differ: the second pairing matches."""
    gold_sql = ("SELECT 'ann' AS home, 'bob' AS away UNION ALL SELECT 'bob', 'cy' "
                "UNION ALL SELECT 'cy', 'ann'")
    verdict = judge(sqlite, gold_sql, duckdb,
                    "SELECT day, away AS guest, home AS host FROM (VALUES ('ann', 'bob', 1), "
                    "('bob', 'cy', 2), ('cy', 'ann', 3)) AS m(home, away, day)")
    assert verdict.match, verdict.reason
    assert verdict.details["alignment"] == "value"
    assert verdict.details["column_map"] == [2, 1]
    # teams paired otherwise are not the answer under any pairing
    wrong = judge(sqlite, gold_sql, duckdb,
                  "SELECT 1 AS day, 'ann' AS guest, 'bob' AS host UNION ALL "
                  "SELECT 2, 'bob', 'ann' UNION ALL SELECT 3, 'cy', 'cy'")
    assert not wrong.match, wrong.reason


# -- empty, errors, truncation --------------------------------------------------------------------

def test_both_empty_match(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT id FROM sales WHERE id > 100", duckdb,
                    "SELECT id FROM sales WHERE id < 0")
    assert verdict.match, verdict.reason
    assert verdict.reason == "both results are empty"


def test_empty_prediction_of_a_non_empty_gold_fails(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT id FROM sales", duckdb, "SELECT id FROM sales WHERE id < 0")
    assert not verdict.match
    assert "gold has 6 rows, predicted 0" in verdict.reason


def test_empty_results_with_incompatible_columns_fail(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT id, region FROM sales WHERE id > 100", duckdb,
                    "SELECT id FROM sales WHERE id > 100")
    assert not verdict.match
    assert "columns cannot be aligned" in verdict.reason


def test_invalid_gold_is_never_just_wrong(sqlite: Backend, duckdb: Backend) -> None:
    gold = sqlite.execute("SELECT no_such_column FROM sales")
    pred = duckdb.execute("SELECT id FROM sales")
    verdict = polysql.compare(gold, pred)
    assert not verdict.match
    assert verdict.details["invalid_gold"] is True
    assert verdict.reason.startswith("invalid gold")
    assert "no_such_column" in verdict.reason


def test_prediction_error_names_kind_and_message(sqlite: Backend, duckdb: Backend) -> None:
    verdict = judge(sqlite, "SELECT id FROM sales", duckdb, "SELECT id FROM no_such_table")
    assert not verdict.match
    assert verdict.details["invalid_gold"] is False
    assert verdict.details["pred_error"]["kind"] == "runtime"
    assert "runtime error" in verdict.reason and "no_such_table" in verdict.reason
    syntax = judge(sqlite, "SELECT id FROM sales", duckdb, "SELEC id FROM sales")
    assert "syntax error" in syntax.reason


def test_truncated_results_are_flagged(sqlite: Backend, duckdb: Backend) -> None:
    gold = sqlite.execute("SELECT id FROM sales ORDER BY id", max_rows=3)
    pred = duckdb.execute("SELECT id FROM sales ORDER BY id", max_rows=3)
    assert gold.truncated and pred.truncated
    verdict = polysql.compare(gold, pred, gold_sql="SELECT id FROM sales ORDER BY id")
    assert verdict.details["truncated"] is True
    assert "truncated" in verdict.reason


# -- ties cut by LIMIT --------------------------------------------------------------------------------

TIE_GOLD = "SELECT id, region FROM sales ORDER BY region LIMIT 2"  # 'east' has 3 rows


def _tie_verdict(sqlite: Backend, engine: Backend, pred_sql: str, **kwargs: object):
    widened_sql = widen_limit(TIE_GOLD, "sqlite")
    assert widened_sql is not None
    gold, widened = sqlite.execute(TIE_GOLD), sqlite.execute(widened_sql)
    pred = engine.execute(pred_sql)
    return polysql.compare(gold, pred, gold_sql=TIE_GOLD, gold_widened=widened, **kwargs), gold, pred


def test_tie_cut_by_limit_accepts_other_tied_rows(sqlite: Backend, duckdb: Backend) -> None:
    verdict, gold, pred = _tie_verdict(
        sqlite, duckdb, "SELECT id, region FROM sales ORDER BY region, id DESC LIMIT 2")
    assert sorted(gold.rows) != sorted(pred.rows)  # really different rows of the tie group
    assert verdict.match, verdict.reason
    assert verdict.details["tie_at_limit"] is True


def test_tie_cut_by_limit_still_rejects_rows_outside_the_group(sqlite: Backend,
                                                               duckdb: Backend) -> None:
    verdict, _, _ = _tie_verdict(
        sqlite, duckdb, "SELECT id, region FROM sales ORDER BY region DESC LIMIT 2")
    assert not verdict.match
    assert verdict.details["tie_at_limit"] is True


def test_tie_cut_by_limit_needs_the_widened_gold(sqlite: Backend, duckdb: Backend) -> None:
    pred = duckdb.execute("SELECT id, region FROM sales ORDER BY region, id DESC LIMIT 2")
    verdict = polysql.compare(sqlite.execute(TIE_GOLD), pred, gold_sql=TIE_GOLD)
    assert not verdict.match
    assert verdict.details["tie_at_limit"] is False
    off, _, _ = _tie_verdict(sqlite, duckdb,
                             "SELECT id, region FROM sales ORDER BY region, id DESC LIMIT 2",
                             ties_at_limit=False)
    assert not off.match


def test_tie_at_limit_prefix_must_still_match(sqlite: Backend, duckdb: Backend) -> None:
    gold_sql = "SELECT id, region FROM sales ORDER BY region DESC LIMIT 3"  # west, west, north
    widened_sql = widen_limit(gold_sql, "sqlite")
    assert widened_sql is not None
    gold, widened = sqlite.execute(gold_sql), sqlite.execute(widened_sql)
    good = duckdb.execute("SELECT id, region FROM sales ORDER BY region DESC, id LIMIT 3")
    verdict = polysql.compare(gold, good, gold_sql=gold_sql, gold_widened=widened)
    assert verdict.match, verdict.reason
    assert verdict.details["tie_at_limit"] is False  # north is alone: nothing is cut

    gold_sql = "SELECT region FROM sales ORDER BY region DESC LIMIT 5"  # cuts 'east'
    widened_sql = widen_limit(gold_sql, "sqlite")
    assert widened_sql is not None
    gold, widened = sqlite.execute(gold_sql), sqlite.execute(widened_sql)
    bad = duckdb.execute("SELECT region FROM sales ORDER BY region LIMIT 5")
    verdict = polysql.compare(gold, bad, gold_sql=gold_sql, gold_widened=widened)
    assert not verdict.match


@pytest.mark.parametrize("pred_sql", [
    "SELECT id, region FROM sales ORDER BY region, id DESC LIMIT 2",
    "SELECT id, region FROM sales ORDER BY region, id LIMIT 2",
])
def test_tie_at_limit_on_same_engine(sqlite: Backend, pred_sql: str) -> None:
    verdict, _, _ = _tie_verdict(sqlite, sqlite, pred_sql)
    assert verdict.match, verdict.reason


def test_tie_cut_by_limit_in_bag_mode(sqlite: Backend, duckdb: Backend) -> None:
    gold_sql = "SELECT id, region FROM sales ORDER BY region DESC LIMIT 4"  # west x2, north, 1 east
    widened_sql = widen_limit(gold_sql, "sqlite")
    assert widened_sql is not None
    gold, widened = sqlite.execute(gold_sql), sqlite.execute(widened_sql)
    # Any one 'east' row fills the last slot; the other rows may come in any order.
    pred = duckdb.execute("SELECT id, region FROM sales WHERE region <> 'east' OR id = 6")
    verdict = polysql.compare(gold, pred, gold_sql=gold_sql, gold_widened=widened, ordered=False)
    assert verdict.match, verdict.reason
    assert verdict.details["tie_at_limit"] is True
    missing_west = duckdb.execute("SELECT id, region FROM sales WHERE region = 'east' OR id = 4")
    verdict = polysql.compare(gold, missing_west, gold_sql=gold_sql, gold_widened=widened,
                              ordered=False)
    assert not verdict.match
    assert "missing from prediction" in verdict.reason


def test_failed_widened_gold_is_reported_and_ignored(sqlite: Backend, duckdb: Backend) -> None:
    gold = sqlite.execute(TIE_GOLD)
    pred = duckdb.execute("SELECT id, region FROM sales ORDER BY region, id DESC LIMIT 2")
    broken = sqlite.execute("SELECT nope FROM sales")
    verdict = polysql.compare(gold, pred, gold_sql=TIE_GOLD, gold_widened=broken)
    assert not verdict.match
    assert verdict.details["widened_gold_error"]["kind"] == "runtime"


def test_uuid_equals_its_text(sqlite: Backend, duckdb: Backend) -> None:
    text = "0f8fad5b-d9cb-469f-a165-70867728950e"
    verdict = judge(sqlite, f"SELECT '{text}' AS u", duckdb, f"SELECT '{text}'::UUID AS u")
    assert verdict.match, verdict.reason
