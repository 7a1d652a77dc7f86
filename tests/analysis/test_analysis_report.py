"""The analysis report written out: real PNG/SVG figures, Markdown and standalone HTML that state
the findings' numbers, and CSV/JSON tables that read back to the same values.

Findings are built by hand (every field chosen, so the expected text is known in advance) and
computed by ``analyze`` from generated sweep records (so the report is checked against what the
statistics really produce, including one-engine and one-model runs).
"""

from __future__ import annotations

import base64
import csv
import io
import json
import math
import re
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from polysql.analysis import figures
from polysql.analysis.findings import (
    POOLED,
    AccuracyRow,
    Findings,
    KappaRow,
    PairTest,
    RankRow,
    Settings,
    TauRow,
    TaxonomyRow,
    TierRow,
    analyze,
)
from polysql.analysis.outcomes import merge_records
from polysql.analysis.reports.analysis import write_analysis
from polysql.analysis.stats import wilson_interval
from polysql.core.store import record_key

LONG = "mysql-8.4-on-a-remote-host-with-a-rather-long-engine-name"
ODD = "acme/sql-coder <v2> & co"  # a model name HTML must escape
GPT = "gpt-4o-mini"
DATASET = "bird-mini"
SVG_NS = "{http://www.w3.org/2000/svg}"

# correct answers out of 60 per (model, engine), and how the report must print each accuracy
CORRECT = {(GPT, "sqlite"): 51, (GPT, "duckdb"): 44, (GPT, LONG): 37,
           (ODD, "sqlite"): 46, (ODD, "duckdb"): 45, (ODD, LONG): 29}
PRINTED = {(GPT, "sqlite"): "85.0%", (GPT, "duckdb"): "73.3%", (GPT, LONG): "61.7%",
           (ODD, "sqlite"): "76.7%", (ODD, "duckdb"): "75.0%", (ODD, LONG): "48.3%"}
# Holm p per (scope, first, second), chosen to cover every p format, and its printed form
HOLM = {
    (GPT, "duckdb", LONG): (0.0123, "0.0123"), (GPT, "duckdb", "sqlite"): (0.2468, "0.247"),
    (GPT, LONG, "sqlite"): (2.5e-05, "2.50e-05"),
    (ODD, "duckdb", LONG): (0.000731, "7.31e-04"), (ODD, "duckdb", "sqlite"): (1.0, "1"),
    (ODD, LONG, "sqlite"): (0.04, "0.04"),
    (POOLED, "duckdb", LONG): (3e-09, "<1e-6"), (POOLED, "duckdb", "sqlite"): (0.5, "0.5"),
    (POOLED, LONG, "sqlite"): (0.00456, "0.00456"),
}
TOTAL = 60


def hand_findings(classified: bool = True) -> Findings:
    engines = ["duckdb", LONG, "sqlite"]
    accuracy = []
    for (model, engine), correct in CORRECT.items():
        low, high = wilson_interval(correct, TOTAL)
        row = AccuracyRow(model, DATASET, engine, engine.split("-")[0], correct, TOTAL,
                          correct / TOTAL, low, high)
        if engine != "sqlite":
            diff = (correct - CORRECT[(model, "sqlite")]) / TOTAL
            row.delta, row.delta_low, row.delta_high, row.paired = diff, diff - 0.08, diff + 0.07, TOTAL
        accuracy.append(row)
    tests = []
    for (scope, first, second), (p_holm, _) in HOLM.items():
        units = 2 * TOTAL if scope == POOLED else TOTAL
        b, c = (18, 4) if p_holm < 0.05 else (9, 7)
        chi2 = (abs(b - c) - 1) ** 2 / (b + c) if b + c >= 25 else None
        tests.append(PairTest(scope, first, second, units, 0.7, 0.6, b, c, min(1.0, p_holm / 3),
                              chi2, 0.01 if chi2 is not None else None, p_holm, p_holm < 0.05))
    tiers = [TierRow(GPT, 1, "sqlite", 51 / 60), TierRow(GPT, 1, "duckdb", 44 / 60),
             TierRow(GPT, 2, LONG, 37 / 60),
             TierRow(ODD, 1, "sqlite", 46 / 60), TierRow(ODD, 1, "duckdb", 45 / 60),
             TierRow(ODD, 2, LONG, 29 / 60),
             TierRow(POOLED, 1, "sqlite", 97 / 120), TierRow(POOLED, 1, "duckdb", 89 / 120),
             TierRow(POOLED, 2, LONG, 66 / 120)]
    kappas = [KappaRow(GPT, "duckdb", "sqlite", TOTAL, 0.412, 0.8),
              KappaRow(ODD, "duckdb", "sqlite", TOTAL, None, 1.0),
              KappaRow(POOLED, "duckdb", LONG, 2 * TOTAL, -0.05, 0.45)]
    ranks = [RankRow(e, m, CORRECT[(m, e)] / TOTAL, rank)
             for e in engines for m, rank in zip((GPT, ODD), (1.0, 2.0), strict=True)]
    ranks[-2:] = [RankRow("sqlite", GPT, 0.8, 1.5), RankRow("sqlite", ODD, 0.8, 1.5)]  # a tie
    taus = [TauRow("duckdb", LONG, 2, 1.0, 1.0), TauRow("duckdb", "sqlite", 2, math.nan, None),
            TauRow(LONG, "sqlite", 2, None, None)]
    taxonomy = []
    for (model, engine), correct in CORRECT.items():
        failures = TOTAL - correct
        syntax = failures // 3
        row = TaxonomyRow(model, engine, failures,
                          {"syntax_error": syntax, "wrong_values": failures - syntax},
                          {"syntax": syntax, "result": failures - syntax})
        if classified:
            dialect = syntax // 2
            row.categories = {"dialect_error": dialect, "filtering_error": failures - dialect - 1,
                              "unclassified": 1}
            row.logical, row.syntactic = failures - dialect - 1, dialect
        taxonomy.append(row)
    return Findings(
        settings=Settings(reference="sqlite", alpha=0.05, resamples=2000, seed=3),
        runs=["runs/a", "runs/b"], datasets=[DATASET], predictors=[GPT, ODD], engines=engines,
        reference="sqlite", accuracy=accuracy, pair_tests=tests, tiers=tiers, kappas=kappas,
        ranks=ranks, taus=taus, taxonomy=taxonomy, classified=classified,
        notes=["runs/a and runs/b disagree on one outcome; the later record is used."])


# --- records for analyze --------------------------------------------------------------------------

MESSAGES = ("no such column: x", "syntax error at or near \"LIMIT\"", "no such function: IFF")


def generated_records(seed: int, predictors: tuple[str, ...], engines: dict[str, float],
                      n: int = 80) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    records = []
    for p, predictor in enumerate(predictors):
        for engine, rate in engines.items():
            for q in range(n):
                status = ("match" if rng.random() < rate - 0.08 * p
                          else str(rng.choice(["mismatch", "exec_error", "generation_failure"])))
                record: dict[str, Any] = {
                    "dataset": "demo", "question_id": f"q{q:03d}", "db_id": "db",
                    "predictor": predictor, "engine": engine, "dialect": engine,
                    "status": status, "recorded_at": "2026-01-01T00:00:00", "pred": None,
                    "details": {"mismatch": str(rng.choice(["values", "row_count", "order"]))}}
                if status == "exec_error":
                    record["pred"] = {"error": {"kind": "runtime", "sqlstate": None,
                                                "message": str(rng.choice(MESSAGES))}}
                records.append(record)
    return records


def analyzed(predictors: tuple[str, ...], engines: dict[str, float], classify: bool = False,
             seed: int = 5, n: int = 80) -> Findings:
    records = generated_records(seed, predictors, engines, n)
    categories = None
    if classify:
        rng = np.random.default_rng(seed + 1)
        labels = ["schema_linking_error", "aggregation_error", "dialect_error", "unclassified"]
        categories = {record_key(r): str(rng.choice(labels)) for r in records
                      if r["status"] != "match"}
    return analyze(merge_records([("run", records)]), Settings(resamples=500), categories)


# --- readers --------------------------------------------------------------------------------------

def check_png(path: Path) -> None:
    with Image.open(path) as image:
        width, height = image.size
        pixels = np.asarray(image.convert("RGB"), dtype=float) / 255
    assert width >= 300 and height >= 200, (path.name, image.size)
    assert pixels.std() > 0.05, f"{path.name} is blank"
    assert len(np.unique(pixels.reshape(-1, 3).round(2), axis=0)) > 8, f"{path.name}: no colour"


def figure_stems(out: Path) -> set[str]:
    pngs = {p.stem for p in (out / "figures").glob("*.png")}
    svgs = {p.stem for p in (out / "figures").glob("*.svg")}
    assert pngs == svgs
    return pngs


def read_csv(out: Path, name: str) -> list[dict[str, str]]:
    with (out / "tables" / f"{name}.csv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def md_tables(md: str) -> list[list[list[str]]]:
    """Every Markdown table as rows of cells (header first), splitting on unescaped pipes."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*md.splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            if not all(re.fullmatch(r"-+:?", c) for c in cells):
                current.append(cells)
        elif current:
            tables.append(current)
            current = []
    return tables


def md_table_with(md: str, *header: str) -> list[dict[str, str]]:
    """Rows (as dicts) of every table whose header starts with ``header``."""
    rows = []
    for table in md_tables(md):
        if tuple(table[0][:len(header)]) == header:
            rows += [dict(zip(table[0], row, strict=True)) for row in table[1:]]
    return rows


def parse_p(text: str) -> tuple[float, float]:
    """Bounds of the p-value a printed form stands for."""
    if text == "<1e-6":
        return 0.0, 1e-6
    value = float(text)
    return value * (1 - 5e-3), value * (1 + 5e-3)


PCT_ROUNDING = 5e-4 + 1e-9  # half of the last printed digit (0.1%), plus float noise


def parse_pct(text: str) -> float:
    assert re.fullmatch(r"-?\d+\.\d%", text), text  # one decimal
    return float(text[:-1]) / 100


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.links += [(tag, name, value or "") for name, value in attrs
                       if name in {"src", "href", "srcset", "data"}]


# --- tests ----------------------------------------------------------------------------------------

HandReport = tuple[Findings, Path, list[Path]]


@pytest.fixture(scope="module")
def hand_report(tmp_path_factory: pytest.TempPathFactory) -> HandReport:
    """The hand-built findings written once; the tests below only read the files."""
    findings = hand_findings()
    out = tmp_path_factory.mktemp("report")
    return findings, out, write_analysis(findings, out)


def test_every_figure_is_a_real_image(hand_report: HandReport) -> None:
    findings, out, paths = hand_report
    assert all(p.is_file() for p in paths)
    stems = figure_stems(out)
    expected = {"accuracy", "tiers", "ranks", "taxonomy_families", "taxonomy_categories"}
    expected |= {figures.figure_stem("mcnemar", s) for s in findings.scopes()}
    assert stems == expected
    for stem in stems:
        check_png(out / "figures" / f"{stem}.png")
        root = ET.parse(out / "figures" / f"{stem}.svg").getroot()
        assert root.tag == f"{SVG_NS}svg"
        assert len(list(root.iter())) > 50, f"{stem}.svg draws almost nothing"
    figure_paths = {p for p in paths if p.parent.name == "figures"}
    assert figure_paths == set((out / "figures").iterdir())


def test_markdown_states_the_findings_numbers(hand_report: HandReport) -> None:
    findings, out, _ = hand_report
    md = (out / "report.md").read_text(encoding="utf-8")
    rows = md_table_with(md, "model", "dataset", "engine")
    assert len(rows) == len(CORRECT)
    for row in rows:
        key = (row["model"], row["engine"])
        assert row["accuracy"] == PRINTED[key]
        assert row["correct / total"] == f"{CORRECT[key]} / {TOTAL}"
        if row["engine"] == "sqlite":
            assert row["Δ vs reference"] == "reference"
        else:
            drop = (CORRECT[key] - CORRECT[(key[0], "sqlite")]) / TOTAL
            assert row["Δ vs reference"] == f"{100 * drop:+.1f} pp"
            assert row["paired n"] == str(TOTAL)
    tests = md_table_with(md, "first", "second", "n", "accuracy first")
    assert len(tests) == len(HOLM)
    printed = {(t["first"], t["second"], t["Holm p"], t["significant"]) for t in tests}
    assert printed == {(f, s, text, "yes" if p < 0.05 else "no")
                       for (_, f, s), (p, text) in HOLM.items()}
    # the pooled section says what its unit is
    pooled = md[md.index("### Pooled over models"):]
    assert "(model, question)" in pooled[:300]
    for text in ("reference", "alpha = 0.05", "2,000 resamples", "seed 3", "Holm",
                 "runs/a, runs/b", "disagree on one outcome"):
        assert text in md
    # every embedded figure exists
    for target in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md):
        assert (out / target).is_file(), target
    assert len(re.findall(r"!\[", md)) == len(figure_stems(out))


def test_markdown_tables_stay_rectangular_and_logical_share_adds_up(hand_report: HandReport) -> None:
    findings, out, _ = hand_report
    md = (out / "report.md").read_text(encoding="utf-8")
    for table in md_tables(md):
        assert len({len(row) for row in table}) == 1, table[0]
    kappa = {(r["scope"], r["first"]): r["kappa"] for r in md_table_with(md, "scope", "first")}
    assert kappa[(f"Model {ODD}", "duckdb")] == "undefined"
    assert kappa[(f"Model {GPT}", "duckdb")] == "0.412"
    per_engine = md_table_with(md, "engine", "failures", "logical", "dialect")
    assert {r["engine"] for r in per_engine} == set(findings.engines)
    for row in per_engine:
        own = [t for t in findings.taxonomy if t.engine == row["engine"]]
        logical, dialect = sum(t.logical for t in own), sum(t.syntactic for t in own)
        assert parse_pct(row["logical share"]) == pytest.approx(logical / (logical + dialect),
                                                                abs=PCT_ROUNDING)
    ranks = {r["engine"]: r for r in md_table_with(md, "engine", GPT)}
    assert ranks["sqlite"][GPT] == "1.5 (80.0%)"
    taus = {(r["first"], r["second"]): r["tau"] for r in md_table_with(md, "first", "second",
                                                                         "models")}
    assert taus[("duckdb", "sqlite")] == "–" and taus[("duckdb", LONG)] == "1.000"


def test_html_is_standalone_and_escaped(hand_report: HandReport) -> None:
    _, out, _ = hand_report
    page_text = (out / "report.html").read_text(encoding="utf-8")
    page = _Page()
    page.feed(page_text)
    assert "script" not in page.tags and "link" not in page.tags
    images = [value for tag, name, value in page.links if tag == "img"]
    assert all(v.startswith("data:image/png;base64,") for v in images)
    assert not [link for link in page.links if link[0] != "img"]
    # the embedded images are the figures' PNGs, byte for byte
    pngs = {p.read_bytes() for p in (out / "figures").glob("*.png")}
    embedded = {base64.b64decode(v.split(",", 1)[1]) for v in images}
    assert embedded == pngs and len(images) == len(pngs)
    with Image.open(io.BytesIO(next(iter(embedded)))) as image:
        assert image.format == "PNG"
    assert "<v2>" not in page_text and "&lt;v2&gt; &amp; co" in page_text
    for printed in [*PRINTED.values(), *(text for _, text in HOLM.values())]:
        assert printed.replace("<", "&lt;") in page_text


def test_csv_tables_read_back_to_the_findings(hand_report: HandReport) -> None:
    findings, out, _ = hand_report
    accuracy = read_csv(out, "accuracy")
    assert [(r["predictor"], r["engine"], int(r["correct"]), int(r["total"])) for r in accuracy] \
        == [(r.predictor, r.engine, r.correct, r.total) for r in findings.accuracy]
    for row, original in zip(accuracy, findings.accuracy, strict=True):
        assert float(row["ci_low"]) == original.ci_low and float(row["ci_high"]) == original.ci_high
        assert row["delta"] == ("" if original.delta is None else repr(original.delta))
    mcnemar = read_csv(out, "mcnemar")
    # full precision: a p far below what the report prints survives
    assert {(r["scope"], r["first"], r["second"]): float(r["p_holm"]) for r in mcnemar} \
        == {k: p for k, (p, _) in HOLM.items()}
    assert [(r["scope"], int(r["tier"]), r["engine"]) for r in read_csv(out, "tiers")] \
        == [(t.scope, t.tier, t.engine) for t in findings.tiers]
    assert [r["kappa"] for r in read_csv(out, "kappa")] == ["0.412", "", "-0.05"]
    assert [(r["engine"], r["predictor"], float(r["rank"])) for r in read_csv(out, "ranks")] \
        == [(r.engine, r.predictor, r.rank) for r in findings.ranks]
    assert [r["tau"] for r in read_csv(out, "kendall_tau")] == ["1.0", "", ""]
    taxonomy = read_csv(out, "taxonomy")
    assert len(taxonomy) == len(findings.taxonomy)
    for row, original in zip(taxonomy, findings.taxonomy, strict=True):
        assert int(row["failures"]) == original.failures
        assert int(row["family_syntax"]) == original.families["syntax"]
        assert int(row["family_schema"]) == 0
        assert int(row["signal_wrong_values"]) == original.signals["wrong_values"]
        assert int(row["category_dialect_error"]) == original.categories["dialect_error"]
        assert float(row["logical_share"]) == pytest.approx(original.logical_share)


def test_findings_json_is_strict_json(hand_report: HandReport) -> None:
    findings, out, _ = hand_report

    def refuse(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    data = json.loads((out / "findings.json").read_text(encoding="utf-8"),
                      parse_constant=refuse)
    assert data["taus"][1]["tau"] is None  # NaN in the findings
    assert data["settings"]["seed"] == 3 and data["reference"] == "sqlite"
    assert [r["p_holm"] for r in data["pair_tests"]] == [p for p, _ in HOLM.values()]
    assert data["taxonomy"][0]["logical_share"] == pytest.approx(findings.taxonomy[0].logical_share)


def test_report_of_analyzed_records_matches_its_findings(tmp_path: Path) -> None:
    engines = {"sqlite": 0.85, "duckdb": 0.8, "postgres": 0.6, "mysql": 0.5}
    findings = analyzed(("m1", "m2", "m3"), engines, classify=True)
    write_analysis(findings, tmp_path)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    found = {(r.predictor, r.engine): r for r in findings.accuracy}
    rows = md_table_with(md, "model", "dataset", "engine")
    assert len(rows) == len(found)
    for row in rows:
        original = found[(row["model"], row["engine"])]
        assert parse_pct(row["accuracy"]) == pytest.approx(original.accuracy, abs=PCT_ROUNDING)
    tests = {(t.scope, t.first, t.second): t for t in findings.pair_tests}
    scope = None
    for line in md.splitlines():  # a test's scope is the heading above its table
        if line.startswith("### "):
            scope = POOLED if line == "### Pooled over models" else line.removeprefix("### Model ")
        elif line.startswith("| ") and scope in {*findings.predictors, POOLED}:
            cells = [c.strip() for c in line.strip("|").split("|")]
            if (scope, cells[0], cells[1]) not in tests:
                continue
            test = tests.pop((scope, cells[0], cells[1]))
            assert (int(cells[2]), int(cells[5]), int(cells[6])) == (test.n, test.b, test.c)
            for text, p in ((cells[7], test.p_exact), (cells[10], test.p_holm)):
                low, high = parse_p(text)
                assert low <= p <= high, (text, p)
    assert not tests, "pair tests missing from the report"
    stems = figure_stems(tmp_path)
    assert {"ranks", "tiers", "taxonomy_categories", "mcnemar_pooled"} <= stems
    assert len(read_csv(tmp_path, "mcnemar")) == len(findings.pair_tests)


def test_one_engine_draws_no_pairwise_figures(tmp_path: Path) -> None:
    findings = analyzed(("m1", "m2"), {"duckdb": 0.7})
    assert not findings.pair_tests
    write_analysis(findings, tmp_path)
    assert figure_stems(tmp_path) == {"accuracy", "taxonomy_families"}
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "Figures not drawn" in md and "mcnemar" not in md
    assert read_csv(tmp_path, "mcnemar") == [] and read_csv(tmp_path, "kappa") == []
    for stem in figure_stems(tmp_path):
        check_png(tmp_path / "figures" / f"{stem}.png")


def test_one_model_draws_no_rank_chart_and_no_pooled_scope(tmp_path: Path) -> None:
    findings = analyzed(("solo",), {"sqlite": 0.9, "duckdb": 0.6, "postgres": 0.55})
    write_analysis(findings, tmp_path)
    assert figure_stems(tmp_path) == {"accuracy", "mcnemar_model_solo", "tiers", "taxonomy_families"}
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "Ranks need at least two models." in md and "### Pooled" not in md
    assert "Classifier categories" not in md
    header = read_csv(tmp_path, "taxonomy")[0].keys()
    assert not [k for k in header if k.startswith("category_")]
    for stem in figure_stems(tmp_path):
        check_png(tmp_path / "figures" / f"{stem}.png")


def test_no_classifier_and_no_failures(tmp_path: Path) -> None:
    unclassified = hand_findings(classified=False)
    write_analysis(unclassified, tmp_path / "a")
    assert "taxonomy_categories" not in figure_stems(tmp_path / "a")
    assert "logical share" not in (tmp_path / "a" / "report.md").read_text(encoding="utf-8")

    perfect = analyzed(("gold",), {"sqlite": 1.01, "duckdb": 1.01})  # every answer right
    assert not perfect.taxonomy
    write_analysis(perfect, tmp_path / "b")
    assert "taxonomy_families" not in figure_stems(tmp_path / "b")
    assert "No failed predictions." in (tmp_path / "b" / "report.md").read_text(encoding="utf-8")


def test_accuracy_of_0_and_100_percent_is_drawn(tmp_path: Path) -> None:
    # 40 questions: Wilson's bounds at 0/40 and 40/40 miss the estimate by rounding noise
    findings = analyzed(("m1",), {"sqlite": 1.01, "duckdb": -1.0}, n=40)
    assert sorted(r.accuracy for r in findings.accuracy) == [0.0, 1.0]
    write_analysis(findings, tmp_path)
    check_png(tmp_path / "figures" / "accuracy.png")
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| 0.0% |" in md and "| 100.0% |" in md and "-100.0 pp" in md


def test_empty_findings_write_a_report_without_figures(tmp_path: Path) -> None:
    empty = Findings(settings=Settings(reference=None), runs=["run"], datasets=[], predictors=[],
                     engines=[], reference=None, accuracy=[], pair_tests=[], tiers=[], kappas=[],
                     ranks=[], taus=[], taxonomy=[], classified=False, notes=[])
    paths = write_analysis(empty, tmp_path)
    assert not any((tmp_path / "figures").glob("*"))
    assert {p.name for p in paths} >= {"report.md", "report.html", "findings.json", "accuracy.csv"}
    for name in ("accuracy", "mcnemar", "tiers", "kappa", "ranks", "kendall_tau", "taxonomy"):
        assert read_csv(tmp_path, name) == []
    assert "data:image" not in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_figures_drawn_in_threads_equal_figures_drawn_alone(tmp_path: Path) -> None:
    findings = hand_findings()
    alone = figures.accuracy_figure(findings, tmp_path / "alone")[0]
    with ThreadPoolExecutor(max_workers=4) as pool:
        drawn = list(pool.map(
            lambda i: (figures.accuracy_figure(findings, tmp_path / f"a{i}")[0],
                       figures.mcnemar_figure(findings, POOLED, tmp_path / f"m{i}")[0]),
            range(4)))
    expected = np.asarray(Image.open(alone))
    heatmap = np.asarray(Image.open(drawn[0][1]))
    for accuracy_png, mcnemar_png in drawn:
        assert np.array_equal(np.asarray(Image.open(accuracy_png)), expected)
        assert np.array_equal(np.asarray(Image.open(mcnemar_png)), heatmap)


def test_figure_file_names_stay_apart() -> None:
    scopes = ["gpt-4o", "GPT-4o", "openai/gpt-4o", "openai:gpt-4o", POOLED, "pooled"]
    stems = [figures.figure_stem("mcnemar", s) for s in scopes]
    assert len({s.lower() for s in stems}) == len(scopes)  # distinct on case-insensitive disks
    assert all(re.fullmatch(r"[a-z0-9._-]+", s) for s in stems)
    assert figures.figure_stem("mcnemar", "gpt-4o") == "mcnemar_model_gpt-4o"
