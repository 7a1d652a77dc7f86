"""The sweep's own report files: the chart keeps labels clear of the interval whiskers, and every
file says whether its numbers are complete."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from polysql.analysis.reports.sweep import html_report, write_reports
from polysql.analysis.summary import summarize


def records(predictor: str, engine: str, statuses: list[str]) -> list[dict[str, object]]:
    return [{"dataset": "d", "question_id": str(i), "predictor": predictor, "engine": engine,
             "status": status, "tags": [], "pred": {"error": None}}
            for i, status in enumerate(statuses)]


def test_value_labels_sit_right_of_the_upper_whisker() -> None:
    rows = (records("a", "sqlite", ["match"] * 7 + ["mismatch"] * 3)
            + records("b", "duckdb", ["match"] * 1 + ["mismatch"] * 9)
            + records("c", "postgres", ["match"] * 10))
    page = html_report(summarize(rows))
    svg = page[page.index("<svg"):page.index("</svg>")]
    whiskers = [float(x) for x in re.findall(r'<line x1="[\d.]+" y1="[\d.]+" x2="([\d.]+)" y2="[\d.]+" '
                                             r'stroke="#111" stroke-width="1.5"/><line', svg)]
    labels = [float(x) for x in re.findall(r'<text x="([\d.]+)" y="[\d.]+" font-size="12">[\d.]+%</text>',
                                           svg)]
    assert len(whiskers) == len(labels) == 3
    for upper, label in zip(whiskers, labels, strict=True):
        assert label > upper  # the label starts after the whisker ends: they never cross


def test_incomplete_summary_files_carry_the_flag_and_the_banner(tmp_path: Path) -> None:
    done = records("a", "sqlite", ["match", "mismatch"])
    pending = [("d", "2", "a", "sqlite"), ("d", "3", "a", "sqlite")]
    paths = write_reports(summarize(done, pending), tmp_path, notes=["Engine x was abandoned: down."])
    data = json.loads(paths[0].read_text())
    assert data["complete"] is False and data["pending"] == 2 and data["status"] == "incomplete"
    (row,) = list(csv.DictReader(paths[1].open()))
    assert row["pending"] == "2" and row["complete"] == "False"
    for path in paths[2:]:
        text = path.read_text()
        assert "INCOMPLETE: 2 of 4 planned records are pending" in text
        assert "Engine x was abandoned" in text


def test_a_cell_with_nothing_to_count_has_no_accuracy_anywhere(tmp_path: Path) -> None:
    paths = write_reports(summarize(records("a", "sqlite", ["invalid_gold", "invalid_gold"])), tmp_path)
    (cell,) = json.loads(paths[0].read_text())["cells"]
    assert cell["accuracy"] is None and cell["invalid_gold"] == 2
    assert "0.0%" not in paths[2].read_text() and "0.0%" not in paths[3].read_text()
    assert "— (n=0)" in paths[3].read_text()
