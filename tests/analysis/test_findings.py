"""Findings from merged outcomes: pairing, pooling, Holm families, tiers and the taxonomy counts,
checked against counts made directly from generated records."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from polysql.analysis.findings import POOLED, Settings, analyze
from polysql.analysis.outcomes import load_runs, merge_records
from polysql.analysis.stats import holm, mcnemar
from polysql.core.errors import ResultsStoreError

ENGINES = {"sqlite": 0.9, "duckdb": 0.8, "postgres": 0.6, "mysql": 0.55}


def _record(predictor: str, engine: str, qid: int, status: str, at: str = "2026-01-01T00:00:00",
            **extra: Any) -> dict[str, Any]:
    return {"dataset": "demo", "question_id": f"q{qid:03d}", "db_id": "db", "predictor": predictor,
            "engine": engine, "dialect": engine, "status": status, "recorded_at": at,
            "details": {}, "pred": None, **extra}


def _generated(seed: int, predictors: tuple[str, ...] = ("m1", "m2"), n: int = 120
               ) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    records = []
    for p, predictor in enumerate(predictors):
        for engine, rate in ENGINES.items():
            for q in range(n):
                right = rng.random() < rate - 0.1 * p
                status = "match" if right else str(rng.choice(["mismatch", "exec_error"]))
                extra: dict[str, Any] = {}
                if status == "exec_error":
                    extra["pred"] = {"error": {"kind": "syntax", "message": "no such column: x",
                                               "sqlstate": None}}
                records.append(_record(predictor, engine, q, status, **extra))
    return records


def _marks(records: list[dict[str, Any]], predictor: str, engine: str) -> dict[str, bool]:
    return {r["question_id"]: r["status"] == "match" for r in records
            if r["predictor"] == predictor and r["engine"] == engine and r["status"] != "invalid_gold"}


def test_accuracy_and_delta_follow_the_records() -> None:
    records = _generated(1)
    findings = analyze(merge_records([("run", records)]), Settings(resamples=2000))
    for row in findings.accuracy:
        marks = _marks(records, row.predictor, row.engine)
        assert (row.correct, row.total) == (sum(marks.values()), len(marks))
        assert row.ci_low <= row.accuracy <= row.ci_high
        if row.engine == "sqlite":
            assert row.delta is None
        else:
            ref = _marks(records, row.predictor, "sqlite")
            assert row.delta == pytest.approx(
                (sum(marks.values()) - sum(ref.values())) / len(marks))
            assert row.delta_low <= row.delta <= row.delta_high
            assert row.paired == len(marks)


def test_mcnemar_per_model_and_pooled_with_holm_per_family() -> None:
    records = _generated(2)
    findings = analyze(merge_records([("run", records)]))
    assert findings.scopes() == ["m1", "m2", POOLED]
    for scope in ("m1", "m2"):
        family = [t for t in findings.pair_tests if t.scope == scope]
        assert len(family) == len(list(combinations(ENGINES, 2)))
        for test in family:
            a, b = _marks(records, scope, test.first), _marks(records, scope, test.second)
            keys = sorted(a)
            direct = mcnemar([a[k] for k in keys], [b[k] for k in keys])
            assert (test.b, test.c, test.n) == (direct.b, direct.c, len(keys))
        assert [t.p_holm for t in family] == pytest.approx(holm([t.p_exact for t in family]))
    pooled = {(t.first, t.second): t for t in findings.pair_tests if t.scope == POOLED}
    for (first, second), test in pooled.items():
        parts = [t for t in findings.pair_tests
                 if t.scope != POOLED and (t.first, t.second) == (first, second)]
        assert test.n == sum(t.n for t in parts)  # (model, question) units
        assert test.b == sum(t.b for t in parts) and test.c == sum(t.c for t in parts)


def test_pairs_use_only_questions_both_engines_evaluated() -> None:
    records = _generated(3, predictors=("m1",), n=50)
    # mysql lost five questions; duckdb had an invalid gold on another
    records = [r for r in records if not (r["engine"] == "mysql" and r["question_id"] < "q005")]
    for r in records:
        if r["engine"] == "duckdb" and r["question_id"] == "q010":
            r["status"] = "invalid_gold"
    findings = analyze(merge_records([("run", records)]))
    tests = {(t.first, t.second): t for t in findings.pair_tests}
    assert tests[("mysql", "sqlite")].n == 45
    assert tests[("duckdb", "sqlite")].n == 49
    assert tests[("duckdb", "mysql")].n == 44
    duck = next(r for r in findings.accuracy if r.engine == "duckdb")
    assert duck.total == 49


def test_single_model_has_no_pooled_scope_and_no_tau() -> None:
    findings = analyze(merge_records([("run", _generated(4, predictors=("only",)))]))
    assert findings.scopes() == ["only"]
    assert all(t.tau is None for t in findings.taus)
    assert any("One model only" in note for note in findings.notes)


def test_tiers_cover_every_engine_once_and_respect_significance() -> None:
    findings = analyze(merge_records([("run", _generated(5, n=300))]))
    for scope in findings.scopes():
        rows = [t for t in findings.tiers if t.scope == scope]
        assert sorted(r.engine for r in rows) == sorted(ENGINES)
        accuracies = [r.accuracy for r in sorted(rows, key=lambda r: (r.tier, -r.accuracy))]
        assert accuracies == sorted(accuracies, reverse=True)
        significant = {frozenset((t.first, t.second)) for t in findings.pair_tests
                       if t.scope == scope and t.significant}
        by_tier: dict[int, list[str]] = {}
        for r in rows:
            by_tier.setdefault(r.tier, []).append(r.engine)
        for members in by_tier.values():
            for pair in combinations(members, 2):
                assert frozenset(pair) not in significant


def test_ranks_and_kendall_tau() -> None:
    findings = analyze(merge_records([("run", _generated(6, predictors=("a", "b", "c")))]))
    for engine in ENGINES:
        ranks = sorted(r.rank for r in findings.ranks if r.engine == engine)
        assert sum(ranks) == pytest.approx(6.0)  # 1 + 2 + 3, ties sharing mean ranks
    assert len(findings.taus) == len(list(combinations(ENGINES, 2)))
    assert all(t.models == 3 for t in findings.taus)


def test_taxonomy_counts_every_failure() -> None:
    records = _generated(7)
    findings = analyze(merge_records([("run", records)]))
    failures = [r for r in records if r["status"] in {"mismatch", "exec_error"}]
    assert sum(t.failures for t in findings.taxonomy) == len(failures)
    for row in findings.taxonomy:
        assert sum(row.signals.values()) == row.failures == sum(row.families.values())
        assert row.categories == {} and row.logical_share is None
    with_categories = analyze(merge_records([("run", records)]), categories={
        ("demo", r["question_id"], r["predictor"], r["engine"]): "dialect_error" for r in failures})
    assert all(t.logical_share == 0.0 for t in with_categories.taxonomy)
    assert with_categories.classified


def test_no_reference_engine_is_said_not_guessed() -> None:
    records = [r for r in _generated(8, predictors=("m",)) if r["engine"] != "sqlite"]
    findings = analyze(merge_records([("run", records)]))
    assert findings.reference is None
    assert all(row.delta is None for row in findings.accuracy)
    assert any("--reference" in note for note in findings.notes)


def test_merging_runs_keeps_the_later_record_and_reports_disagreement() -> None:
    early = [_record("m", "duckdb", 1, "mismatch", at="2026-01-01T00:00:00")]
    late = [_record("m", "duckdb", 1, "match", at="2026-02-01T00:00:00")]
    merged = merge_records([("b", late), ("a", early)])
    assert [r["status"] for r in merged.records] == ["match"]
    assert len(merged.conflicts) == 1 and merged.conflicts[0].kept_run == "b"


def test_load_runs_reads_folders_and_refuses_empty_ones(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(ResultsStoreError, match="results.jsonl"):
        load_runs([run])
    (run / "results.jsonl").write_text(json.dumps(_record("m", "sqlite", 1, "match")) + "\n{broken\n")
    outcomes = load_runs([run])
    assert len(outcomes.records) == 1
    # the damaged line is skipped, and said: nothing is dropped silently
    assert outcomes.damaged == {str(run): [2]}
    (note,) = [n for n in analyze(outcomes).notes if "not a whole record" in n]
    assert note.startswith(f"{run}: 1 line(s)") and "(line 2)" in note
    with pytest.raises(ResultsStoreError):
        load_runs([])
