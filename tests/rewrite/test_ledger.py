"""polysql.analysis.rewrite.ledger: the full-denominator table by hand, the ledger files read back,
the sensitivity ranges and a figure that really shows the outcomes' colours."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.image import imread

from polysql.analysis.rewrite.ledger import (
    LEDGER_COLUMNS,
    OUTCOME_COLOURS,
    Row,
    full_denominator_table,
    load_ledger,
    outcome_counts,
    outcome_figure,
    scs_quartiles,
    sensitivity_table,
    write_ledger,
    write_report,
    write_tables,
)
from polysql.analysis.rewrite.model import OUTCOMES, CaseOutcome, Timing
from polysql.core.errors import ResultsStoreError

# R(s) written out from the definition: a = ln 1.05, tau = ln(2 / 1.05)
A, TAU = math.log(1.05), math.log(2 / 1.05)
R4 = math.tanh((math.log(4) - A) / TAU)  # speedup 4
CGOQ_C7 = 100 * R4  # no simplification credit: the rewrite is as complex as the input
CGOQ_C8 = -100 * math.tanh(1.0)  # speedup 0.5 is the mirrored reference speedup
CGOQ_B3 = 100 * 0.4 * 1.0  # inside the neutral band (R = 0), SCS 30 -> 21 is a 30% drop: K = 1

POOL = {f"c{i}": ("p1" if i <= 4 else "p2") for i in range(1, 10)}
SCS = {f"c{i}": 10.0 * i for i in range(1, 9)} | {"c9": None}


def outcome(method: str, case: str, kind: str, *, timing: Timing | None = None,
            scs_rewrite: float | None = None, cgoq: float | None = None,
            consistent: bool | None = None) -> CaseOutcome:
    return CaseOutcome(case_id=case, pool=POOL[case], engine="duckdb", dialect="duckdb",
                       method=method, outcome=kind, consistent=consistent, timing=timing,
                       scs_input=SCS[case], scs_rewrite=scs_rewrite, cgoq=cgoq,
                       rewrite_sql=None if kind in ("no_rewrite", "generation_failure",
                                                    "source_acceptance_failure") else "SELECT 1",
                       reason=f"{kind} of {case}", meta={"case": case, "tokens": [1, 2]})


def method_a() -> list[CaseOutcome]:
    return [
        outcome("A", "c1", "source_acceptance_failure"),
        outcome("A", "c2", "generation_failure"),
        outcome("A", "c3", "no_rewrite"),
        outcome("A", "c4", "no_op"),
        outcome("A", "c5", "execution_failure"),
        outcome("A", "c6", "unsafe_rewrite", consistent=False, scs_rewrite=55.0),
        outcome("A", "c7", "performance_gain", consistent=True, scs_rewrite=70.0, cgoq=CGOQ_C7,
                timing=Timing([4.0, 4.0, 4.0], [1.0, 1.0, 1.0], warmup=1)),
        outcome("A", "c8", "regression", consistent=True, scs_rewrite=80.0, cgoq=CGOQ_C8,
                timing=Timing([1.0], [2.0], warmup=1)),
        outcome("A", "c9", "neutral", consistent=True, scs_rewrite=None, cgoq=0.0,
                timing=Timing([2.0, 2.0], [2.0, 2.0], warmup=0, timeouts=1)),
    ]


def method_b() -> list[CaseOutcome]:
    rows = [outcome("B", f"c{i}", "no_op") for i in range(1, 9) if i != 3]
    rows.insert(2, outcome("B", "c3", "simplification_gain", consistent=True, scs_rewrite=21.0,
                           cgoq=CGOQ_B3, timing=Timing([1.02], [1.0], warmup=1)))
    rows.append(outcome("B", "c9", "no_rewrite"))
    return rows


@pytest.fixture
def outcomes() -> list[CaseOutcome]:
    return method_a() + method_b()


def rows_by(table: list[Row]) -> dict[tuple[str, str, str], Row]:
    return {(row.method, row.scope, row.group): row for row in table}


# -- the table ------------------------------------------------------------------------------------


def test_rates_over_every_case(outcomes: list[CaseOutcome]) -> None:
    rows = rows_by(full_denominator_table(outcomes))
    a = rows["A", "all", "all"]
    assert a.n == 9
    assert a.source_acceptance_rate == pytest.approx(8 / 9)
    # candidates: no_op, execution_failure, unsafe, performance_gain, regression, neutral
    assert a.generation_rate == pytest.approx(6 / 9)
    assert a.no_rewrite_rate == pytest.approx(1 / 9)
    assert a.execution_coverage == pytest.approx(4 / 9)  # unsafe + three gated
    assert a.result_consistency == pytest.approx(3 / 9)
    assert a.unsafe_rate == pytest.approx(1 / 9)
    assert a.valid == 3
    # speedups 4, 0.5 and 1: their product is 2
    assert a.geomean_speedup == pytest.approx(2 ** (1 / 3))
    assert a.speedup_support == 3
    assert a.cgoq_at_n == pytest.approx((CGOQ_C7 + CGOQ_C8) / 9)
    assert a.cgoq_at_valid == pytest.approx((CGOQ_C7 + CGOQ_C8) / 3)

    b = rows["B", "all", "all"]
    assert (b.n, b.valid, b.speedup_support) == (9, 1, 1)
    assert b.source_acceptance_rate == 1.0
    assert b.generation_rate == pytest.approx(8 / 9)
    assert b.no_rewrite_rate == pytest.approx(1 / 9)
    assert b.execution_coverage == pytest.approx(1 / 9)
    assert b.result_consistency == pytest.approx(1 / 9)
    assert b.unsafe_rate == 0.0
    assert b.geomean_speedup == pytest.approx(1.02)
    assert b.cgoq_at_n == pytest.approx(40 / 9)
    assert b.cgoq_at_valid == pytest.approx(40.0)


def test_cgoq_at_n_is_at_valid_scaled_by_the_valid_share(outcomes: list[CaseOutcome]) -> None:
    for row in full_denominator_table(outcomes):
        if row.valid:
            assert row.cgoq_at_valid is not None
            assert row.cgoq_at_n == pytest.approx(row.cgoq_at_valid * row.valid / row.n)
        else:
            assert (row.cgoq_at_n, row.cgoq_at_valid) == (0.0, None)
            assert (row.geomean_speedup, row.speedup_support) == (None, 0)


def test_per_pool_rows(outcomes: list[CaseOutcome]) -> None:
    rows = rows_by(full_denominator_table(outcomes))
    p1 = rows["A", "pool", "p1"]  # c1..c4: rejected, failed, declined, no-op
    assert p1.n == 4
    assert (p1.source_acceptance_rate, p1.generation_rate, p1.no_rewrite_rate) == (0.75, 0.25,
                                                                                   0.25)
    assert (p1.execution_coverage, p1.result_consistency, p1.cgoq_at_valid) == (0.0, 0.0, None)
    p2 = rows["A", "pool", "p2"]  # c5..c9
    assert p2.n == 5
    assert (p2.generation_rate, p2.execution_coverage) == (1.0, 0.8)
    assert (p2.result_consistency, p2.unsafe_rate) == (0.6, 0.2)
    assert p2.cgoq_at_n == pytest.approx((CGOQ_C7 + CGOQ_C8) / 5)
    assert rows["B", "pool", "p1"].cgoq_at_n == pytest.approx(40 / 4)
    assert rows["B", "pool", "p2"].cgoq_at_n == 0.0


def test_scs_quartiles_over_the_case_corpus(outcomes: list[CaseOutcome]) -> None:
    # the 8 scored inputs 10..80: linear-interpolated quartiles 27.5, 45 and 62.5
    assigned, details = scs_quartiles(outcomes)
    expected = {"c1": "Q1", "c2": "Q1", "c3": "Q2", "c4": "Q2", "c5": "Q3", "c6": "Q3",
                "c7": "Q4", "c8": "Q4", "c9": "unscored"}
    assert assigned == {(POOL[case], case): q for case, q in expected.items()}
    assert details["Q1"] == "SCS [10.0, 27.5]" and details["Q4"] == "SCS (62.5, 80.0]"

    rows = rows_by(full_denominator_table(outcomes))
    q4 = rows["A", "scs_quartile", "Q4"]
    assert q4.n == 2 and q4.result_consistency == 1.0
    assert q4.geomean_speedup == pytest.approx(math.sqrt(4 * 0.5))
    assert q4.cgoq_at_n == pytest.approx((CGOQ_C7 + CGOQ_C8) / 2)
    q2 = rows["B", "scs_quartile", "Q2"]  # c3 (simplified) and c4 (no-op)
    assert (q2.n, q2.valid, q2.cgoq_at_n) == (2, 1, pytest.approx(20.0))
    assert rows["A", "scs_quartile", "unscored"].result_consistency == 1.0
    assert rows["B", "scs_quartile", "unscored"].no_rewrite_rate == 1.0
    scopes = [(row.scope, row.group) for row in full_denominator_table(outcomes)]
    assert scopes == [("all", "all")] * 2 + [("pool", "p1")] * 2 + [("pool", "p2")] * 2 + [
        (("scs_quartile", q)) for q in ("Q1", "Q2", "Q3", "Q4", "unscored") for _ in "AB"]


def test_quartiles_of_a_flat_corpus() -> None:
    flat = [CaseOutcome(case_id=f"k{i}", pool="p", engine="duckdb", dialect="duckdb",
                        method="m", outcome="no_rewrite", scs_input=12.0) for i in range(5)]
    assigned, _ = scs_quartiles(flat)
    assert set(assigned.values()) == {"Q1"}


def test_empty_input() -> None:
    assert full_denominator_table([]) == []
    assert sensitivity_table([]) == []
    assert outcome_counts([]) == {}


def test_outcome_counts(outcomes: list[CaseOutcome]) -> None:
    counts = outcome_counts(outcomes)
    assert list(counts) == ["A", "B"]
    assert list(counts["A"]) == list(OUTCOMES)
    assert counts["B"] == {name: 0 for name in OUTCOMES} | {"no_op": 7, "no_rewrite": 1,
                                                          "simplification_gain": 1}


# -- sensitivity ---------------------------------------------------------------------------------


def test_sensitivity_by_hand(outcomes: list[CaseOutcome]) -> None:
    rows = {row.method: row for row in sensitivity_table(outcomes)}
    b = rows["B"]
    assert (b.n, b.valid, b.configurations) == (9, 1, 81)
    # speedup 1.02 is inside every neutral band (delta >= 2.5%), so CGOQ = 100 * lambda * K with
    # r_C = 0.3: K = 1 on the ramps (0.05, 0.25) and (0.10, 0.30), 0.6 on (0.15, 0.40)
    assert b.cgoq_at_n_default == pytest.approx(40 / 9)
    assert b.cgoq_at_n_min == pytest.approx(100 * 0.2 * 0.6 / 9)
    assert b.cgoq_at_n_max == pytest.approx(100 * 0.6 * 1.0 / 9)
    assert (b.cgoq_at_valid_min, b.cgoq_at_valid_max) == (pytest.approx(12.0),
                                                          pytest.approx(60.0))
    a = rows["A"]
    table = rows_by(full_denominator_table(outcomes))
    # recomputed at the default configuration, the stored CGOQ comes back
    assert a.cgoq_at_n_default == pytest.approx(table["A", "all", "all"].cgoq_at_n)
    assert a.cgoq_at_valid_default == pytest.approx(table["A", "all", "all"].cgoq_at_valid)
    assert a.cgoq_at_n_min <= a.cgoq_at_n_median <= a.cgoq_at_n_max
    # c8's slowdown by the reference speedup scores -100 tanh(1) whatever s_ref: with s_ref = 3
    # the speedup 4 earns less, so the range really moves
    assert a.cgoq_at_n_min < a.cgoq_at_n_default < a.cgoq_at_n_max


def test_sensitivity_without_valid_rewrites() -> None:
    rows = sensitivity_table([CaseOutcome(case_id="x", pool="p", engine="duckdb",
                                          dialect="duckdb", method="m", outcome="no_op")])
    assert (rows[0].cgoq_at_n_min, rows[0].cgoq_at_n_max) == (0.0, 0.0)
    assert rows[0].cgoq_at_valid_default is None


# -- files -----------------------------------------------------------------------------------------


def test_ledger_csv_round_trip(outcomes: list[CaseOutcome], tmp_path: Path) -> None:
    csv_path, json_path = write_ledger(outcomes, tmp_path / "out")
    with csv_path.open(encoding="utf-8", newline="") as source:
        reader = csv.DictReader(source)
        assert tuple(reader.fieldnames or ()) == LEDGER_COLUMNS
        read = list(reader)
    assert len(read) == len(outcomes)
    for row, original in zip(read, outcomes, strict=True):
        assert (row["case_id"], row["pool"], row["method"], row["outcome"], row["reason"]) == (
            original.case_id, original.pool, original.method, original.outcome, original.reason)
        assert row["rewrite_sql"] == (original.rewrite_sql or "")
        assert row["consistent"] == {None: "", True: "true", False: "false"}[original.consistent]
        for name in ("scs_input", "scs_rewrite", "cgoq"):
            value = getattr(original, name)
            assert (float(row[name]) if row[name] else None) == value
        assert json.loads(row["meta"]) == original.meta
        timing = original.timing
        if timing is None:
            assert row["speedup"] == row["input_median"] == row["warmup"] == ""
        else:
            assert float(row["input_median"]) == float(np.median(timing.input_runs))
            assert float(row["rewrite_median"]) == float(np.median(timing.rewrite_runs))
            assert float(row["speedup"]) == pytest.approx(
                np.median(timing.input_runs) / np.median(timing.rewrite_runs))
            assert (int(row["warmup"]), int(row["timeouts"])) == (timing.warmup,
                                                                  timing.timeouts)
    # the JSON keeps every run and reads back into the same outcomes
    document = json.loads(json_path.read_text(encoding="utf-8"))
    assert document["rows"][6]["timing"]["input_runs"] == [4.0, 4.0, 4.0]
    assert document["rows"][6]["timing"]["speedup"] == 4.0
    assert load_ledger(json_path) == outcomes


def test_ledger_json_without_runs_stays_valid_json(tmp_path: Path) -> None:
    untimed = CaseOutcome(case_id="x", pool="p", engine="duckdb", dialect="duckdb", method="m",
                          outcome="neutral", consistent=True, timing=Timing([], [], warmup=0))
    _, json_path = write_ledger([untimed], tmp_path)
    text = json_path.read_text(encoding="utf-8")
    assert "NaN" not in text
    assert json.loads(text)["rows"][0]["timing"]["input_median"] is None
    row = full_denominator_table([untimed])[0]
    assert (row.geomean_speedup, row.speedup_support) == (None, 0)


def test_load_ledger_refuses_other_files(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps([{"case_id": "x"}]), encoding="utf-8")
    with pytest.raises(ResultsStoreError, match="is not a rewrite ledger"):
        load_ledger(other)
    with pytest.raises(ResultsStoreError, match="cannot read rewrite ledger"):
        load_ledger(tmp_path / "missing.json")


def test_the_ledger_of_an_incomplete_run_says_so_and_is_not_read_as_complete(
        outcomes: list[CaseOutcome], tmp_path: Path) -> None:
    why = "model 'emu' at http://127.0.0.1:9/v1 failed after 2 attempt(s): cannot connect"
    paths = write_report(outcomes, tmp_path, unscored={"llm:emu": why})
    document = json.loads((tmp_path / "ledger.json").read_text(encoding="utf-8"))
    assert document["unscored"] == {"llm:emu": why}
    assert "llm:emu" not in {row["method"] for row in document["rows"]}
    report = (tmp_path / "rewrite_report.md").read_text(encoding="utf-8")
    assert report.index("## Not scored") < report.index("## All cases")
    assert f"- `llm:emu`: {why}" in report
    assert tmp_path / "rewrite_report.md" in paths
    with pytest.raises(ResultsStoreError, match="incomplete rewrite run: no outcome of llm:emu"):
        load_ledger(tmp_path / "ledger.json")


def test_tables_and_report(outcomes: list[CaseOutcome], tmp_path: Path) -> None:
    paths = write_tables(outcomes, tmp_path, sensitivity=True)
    assert [p.name for p in paths] == ["rewrite_table.csv", "rewrite_table.json",
                                       "rewrite_sensitivity.csv", "rewrite_sensitivity.json",
                                       "rewrite_report.md"]
    table = full_denominator_table(outcomes)
    with (tmp_path / "rewrite_table.csv").open(encoding="utf-8", newline="") as source:
        read = list(csv.DictReader(source))
    assert len(read) == len(table)
    for row, expected in zip(read, table, strict=True):
        assert (row["method"], row["scope"], row["group"], int(row["n"])) == (
            expected.method, expected.scope, expected.group, expected.n)
        assert float(row["cgoq_at_n"]) == expected.cgoq_at_n
        assert row["cgoq_at_valid"] == ("" if expected.cgoq_at_valid is None
                                        else repr(expected.cgoq_at_valid))
    assert json.loads((tmp_path / "rewrite_table.json").read_text()) == [r.to_dict()
                                                                        for r in table]
    report = (tmp_path / "rewrite_report.md").read_text(encoding="utf-8")
    for heading in ("## All cases", "## Per pool", "## By SCS quartile of the input",
                    "## Terminal outcomes", "## CGOQ sensitivity"):
        assert heading in report
    a_line = next(line for line in report.splitlines() if line.startswith("| A |"))
    # N, accepted 8/9, generated 6/9, no rewrite 1/9, executed 4/9, consistent 3/9, unsafe 1/9
    assert a_line.startswith("| A | 9 | 88.9% | 66.7% | 11.1% | 44.4% | 33.3% | 11.1% | 1.26x (3) |")
    assert f"| {(CGOQ_C7 + CGOQ_C8) / 9:.1f} | {(CGOQ_C7 + CGOQ_C8) / 3:.1f} |" in a_line


def test_write_report_writes_everything(outcomes: list[CaseOutcome], tmp_path: Path) -> None:
    names = sorted(p.name for p in write_report(outcomes, tmp_path))
    assert names == sorted(["ledger.csv", "ledger.json", "rewrite_outcomes.png",
                            "rewrite_outcomes.svg", "rewrite_table.csv", "rewrite_table.json",
                            "rewrite_report.md"])
    assert "![Terminal outcomes per method](rewrite_outcomes.png)" in (
        tmp_path / "rewrite_report.md").read_text(encoding="utf-8")


# -- the figure ------------------------------------------------------------------------------------


def _has_colour(image: np.ndarray, colour: str, at_least: int = 50) -> bool:
    target = np.array(to_rgb(colour))
    close = np.all(np.abs(image[..., :3] - target) < 2 / 255, axis=-1)
    return int(close.sum()) >= at_least


def test_outcome_figure_is_a_real_image(outcomes: list[CaseOutcome], tmp_path: Path) -> None:
    png, svg = outcome_figure(outcomes, tmp_path)
    assert (png.name, svg.name) == ("rewrite_outcomes.png", "rewrite_outcomes.svg")
    image = imread(png)
    assert image.ndim == 3 and image.shape[0] > 150 and image.shape[1] > 600
    assert float(image[..., :3].std()) > 0.05  # not a blank canvas
    # every outcome the runs produced is drawn in its own fixed colour
    for name in OUTCOMES:
        assert _has_colour(image, OUTCOME_COLOURS[name]), name
    text = svg.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text


def test_outcome_figure_draws_only_what_happened(tmp_path: Path) -> None:
    image = imread(outcome_figure(method_b(), tmp_path)[0])
    for name in ("no_op", "no_rewrite", "simplification_gain"):
        assert _has_colour(image, OUTCOME_COLOURS[name]), name
    for name in ("unsafe_rewrite", "performance_gain", "execution_failure"):
        assert not _has_colour(image, OUTCOME_COLOURS[name], at_least=1), name
    assert outcome_figure([], tmp_path / "none") == []
    assert not (tmp_path / "none").exists()
