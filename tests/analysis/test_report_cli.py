"""`polysql report` end to end: a real demo sweep (gold and transpile predictors on SQLite,
DuckDB, PostgreSQL and MySQL/MariaDB), then the report over its run folder."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from matplotlib.image import imread
from polysql_testkit import mysql_fixtures, pg_fixtures

from polysql.cli.main import EXIT_CONFIG, EXIT_STORE, main


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pg = pg_fixtures.server_url().render_as_string(hide_password=False)
    my = mysql_fixtures.server_url().render_as_string(hide_password=False)
    run = tmp_path_factory.mktemp("sweep") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POLYSQL_CACHE", str(tmp_path_factory.mktemp("cache")))
        result = CliRunner().invoke(main, [
            "sweep", "--out", str(run), "--predictor", "gold,transpile",
            "--engines", f"sqlite,duckdb,postgres={pg},mysql={my}"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return run


def _report(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["report", *args], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.postgres
@pytest.mark.mysql
def test_report_numbers_match_the_sweep_summary(demo_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    code, output = _report(str(demo_run), "--out", str(out), "--resamples", "2000")
    assert code == 0, output
    summary = json.loads((demo_run / "summary.json").read_text())
    cells = {(c["predictor"], c["engine"]): c for c in summary["cells"]}
    assert len(cells) == 2 * 4
    findings = json.loads((out / "findings.json").read_text())
    rows = {(r["predictor"], r["engine"]): r for r in findings["accuracy"]}
    assert rows.keys() == cells.keys()
    for key, cell in cells.items():
        row = rows[key]
        assert (row["correct"], row["total"]) == (cell["correct"], cell["total"])
        assert row["ci_low"] == pytest.approx(cell["ci_low"])
        assert row["ci_high"] == pytest.approx(cell["ci_high"])
    with (out / "tables" / "accuracy.csv").open(newline="") as fh:
        table = {(r["predictor"], r["engine"]): r for r in csv.DictReader(fh)}
    assert {k: int(r["correct"]) for k, r in table.items()} == {k: c["correct"] for k, c in cells.items()}
    # the gold runs verbatim: perfect on its own engine, so every other engine's delta is a drop
    for (predictor, engine), row in rows.items():
        if engine != "sqlite":
            assert row["delta"] == pytest.approx(row["accuracy"] - rows[(predictor, "sqlite")]["accuracy"])
    md = (out / "report.md").read_text()
    for cell in cells.values():
        assert f"{100 * cell['accuracy']:.1f}%" in md
    assert "pooled" in md.lower()
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "<script" not in html.lower()


@pytest.mark.postgres
@pytest.mark.mysql
def test_report_figures_are_real_images(demo_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    code, output = _report(str(demo_run), "--out", str(out), "--resamples", "500")
    assert code == 0, output
    pngs = sorted((out / "figures").glob("*.png"))
    assert len(pngs) >= 5, [p.name for p in pngs]  # accuracy, heatmap, tiers, ranks, taxonomy
    for png in pngs:
        pixels = imread(png)
        height, width = pixels.shape[:2]
        assert width >= 300 and height >= 200, (png.name, pixels.shape)
        rgb = pixels[..., :3].reshape(-1, 3)
        assert rgb.std() > 0.05, f"{png.name} is blank"
        assert len(np.unique(rgb.round(2), axis=0)) > 8, f"{png.name} has almost no colours"
    assert sorted(p.stem for p in (out / "figures").glob("*.svg")) == [p.stem for p in pngs]


@pytest.mark.postgres
@pytest.mark.mysql
def test_single_run_report_defaults_next_to_the_run(demo_run: Path) -> None:
    code, output = _report(str(demo_run), "--resamples", "200")
    assert code == 0, output
    assert (demo_run / "analysis" / "report.md").is_file()


def test_bad_arguments_fail_with_a_clear_line(tmp_path: Path) -> None:
    code, output = _report(str(tmp_path))
    assert code == EXIT_STORE and "results.jsonl" in output
    code, output = _report(str(tmp_path), "--alpha", "2")
    assert code == EXIT_CONFIG and "--alpha" in output
