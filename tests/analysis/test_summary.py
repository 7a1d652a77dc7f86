from __future__ import annotations

import pytest

from polysql.analysis.summary import summarize, wilson_interval


def rec(qid: str, status: str, engine: str = "duckdb", tags: tuple[str, ...] = (),
        kind: str | None = None) -> dict[str, object]:
    pred = {"error": {"kind": kind, "message": "x", "sqlstate": None}} if kind else {"error": None}
    return {"dataset": "demo", "question_id": qid, "predictor": "gold", "engine": engine,
            "status": status, "tags": list(tags), "pred": pred}


def test_wilson_interval_known_values() -> None:
    low, high = wilson_interval(8, 10)
    # Wilson score interval for 8/10 at 95%: 0.4902 .. 0.9433
    assert low == pytest.approx(0.4902, abs=1e-3)
    assert high == pytest.approx(0.9433, abs=1e-3)
    assert wilson_interval(0, 0) == (0.0, 0.0)
    # agrees with scipy's implementation across the range, including the edges
    from scipy.stats import binomtest

    for k, n in [(0, 5), (5, 5), (37, 140), (1, 3)]:
        ci = binomtest(k, n).proportion_ci(method="wilson")
        assert wilson_interval(k, n) == pytest.approx((ci.low, ci.high), abs=1e-9)


def test_invalid_gold_leaves_the_denominator_everything_else_stays() -> None:
    records = [
        rec("1", "match", tags=("integer_division",)),
        rec("2", "mismatch", tags=("integer_division",)),
        rec("3", "exec_error", kind="syntax"),
        rec("4", "generation_failure"),
        rec("5", "invalid_gold"),
        rec("1", "match", engine="sqlite"),
    ]
    summary = summarize(records)
    cell = summary.cell("gold", "duckdb")
    assert (cell.correct, cell.total) == (1, 4)
    assert cell.accuracy == 0.25
    assert cell.statuses["invalid_gold"] == 1
    assert dict(cell.error_kinds) == {"syntax": 1}
    assert cell.ci_low < 0.25 < cell.ci_high
    assert summary.questions == 5
    (tag_cell,) = summary.by_tag["integer_division"]
    assert (tag_cell.correct, tag_cell.total) == (1, 2)
