"""Write a sweep's summary as files people read and plot: JSON, CSV, Markdown and an HTML chart."""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path
from typing import Any

from polysql.analysis.summary import Cell, Summary

SUMMARY_JSON = "summary.json"
SUMMARY_CSV = "summary.csv"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"

CSV_FIELDS = ["predictor", "engine", "total", "correct", "accuracy", "ci_low", "ci_high",
              "match", "mismatch", "exec_error", "generation_failure", "invalid_gold"]


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _csv_row(cell: Cell) -> dict[str, Any]:
    row = {k: getattr(cell, k) for k in ("predictor", "engine", "total", "correct")}
    row.update(accuracy=round(cell.accuracy, 6), ci_low=round(cell.ci_low, 6),
               ci_high=round(cell.ci_high, 6))
    for status in ("match", "mismatch", "exec_error", "generation_failure", "invalid_gold"):
        row[status] = cell.statuses.get(status, 0)
    return row


USAGE_FIELDS = ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "errors", "wall_time")


def usage_markdown(models: dict[str, dict[str, Any]]) -> list[str]:
    """The per-model usage table: what this invocation cost (calls made, cache hits, tokens)."""
    lines = ["", "## Model usage", "",
             "Requests of this invocation: calls were answered by the model, cache hits by the",
             "response cache (they cost no tokens); errors failed after all retries; wall time is",
             "the time during which at least one request was in flight.", "",
             "| model | calls | cache hits | prompt tokens | completion tokens | errors | wall time |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, u in models.items():
        lines.append(f"| {name} | {u.get('calls', 0)} | {u.get('cache_hits', 0)} | {u.get('prompt_tokens', 0)} | "
                     f"{u.get('completion_tokens', 0)} | {u.get('errors', 0)} | {u.get('wall_time', 0.0):.1f} s |")
    return lines


def markdown(summary: Summary, run_info: dict[str, Any] | None = None,
             models: dict[str, dict[str, Any]] | None = None) -> str:
    lines = ["# polysql sweep report", ""]
    lines.append(f"Datasets: {', '.join(summary.datasets) or '-'}; questions: {summary.questions}.")
    if run_info:
        settings = run_info.get("settings", {})
        lines.append(f"Timeout {settings.get('timeout')} s, max rows {settings.get('max_rows')}, "
                     f"polysql {run_info.get('polysql')}.")
    lines += ["", "Accuracy = matches / all questions whose gold ran; failures to generate or",
              "execute count as wrong. 95% Wilson intervals.", "",
              "| predictor | engine | accuracy | 95% CI | correct / total | exec errors | no SQL | invalid gold |",
              "|---|---|---:|---|---:|---:|---:|---:|"]
    for c in summary.cells:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(c.error_kinds.items())) or "0"
        lines.append(
            f"| {c.predictor} | {c.engine} | {_pct(c.accuracy)} | {_pct(c.ci_low)}–{_pct(c.ci_high)} | "
            f"{c.correct} / {c.total} | {kinds} | {c.statuses.get('generation_failure', 0)} | "
            f"{c.statuses.get('invalid_gold', 0)} |"
        )
    if summary.by_tag:
        keys = [(c.predictor, c.engine) for c in summary.cells]
        lines += ["", "## Accuracy by dialect hazard", "",
                  "| tag | " + " | ".join(f"{p} @ {e}" for p, e in keys) + " |",
                  "|---|" + "---:|" * len(keys)]
        for tag, cells in summary.by_tag.items():
            found = {(c.predictor, c.engine): c for c in cells}
            values = [f"{_pct(found[k].accuracy)} (n={found[k].total})" if k in found else "-" for k in keys]
            lines.append(f"| {tag} | " + " | ".join(values) + " |")
    if models:
        lines += usage_markdown(models)
    return "\n".join(lines) + "\n"


def html_report(summary: Summary) -> str:
    """A standalone page with an accuracy chart (inline SVG, no scripts) and the table."""
    bar_h, gap, left, width = 22, 8, 220, 460
    rows = summary.cells
    height = len(rows) * (bar_h + gap) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 80}" height="{height}" '
             'role="img" aria-label="accuracy per predictor and engine">']
    for tick in range(0, 101, 25):
        x = left + width * tick / 100
        parts.append(f'<line x1="{x}" y1="10" x2="{x}" y2="{height - 20}" stroke="#ddd"/>'
                     f'<text x="{x}" y="{height - 5}" font-size="11" text-anchor="middle">{tick}%</text>')
    for i, c in enumerate(rows):
        y = 10 + i * (bar_h + gap)
        label = html.escape(f"{c.predictor} @ {c.engine}")
        lo, hi = left + width * c.ci_low, left + width * c.ci_high
        parts.append(
            f'<text x="{left - 8}" y="{y + bar_h * 0.7}" font-size="13" text-anchor="end">{label}</text>'
            f'<rect x="{left}" y="{y}" width="{width * c.accuracy:.1f}" height="{bar_h}" fill="#4a7ab5"/>'
            f'<line x1="{lo:.1f}" y1="{y + bar_h / 2}" x2="{hi:.1f}" y2="{y + bar_h / 2}" '
            'stroke="#111" stroke-width="2"/>'
            f'<text x="{left + width * c.accuracy + 6:.1f}" y="{y + bar_h * 0.7}" font-size="12">'
            f'{_pct(c.accuracy)}</text>'
        )
    parts.append("</svg>")
    table = ["<table><tr><th>predictor</th><th>engine</th><th>accuracy</th><th>95% CI</th>"
             "<th>correct</th><th>total</th></tr>"]
    for c in rows:
        table.append(f"<tr><td>{html.escape(c.predictor)}</td><td>{html.escape(c.engine)}</td>"
                     f"<td>{_pct(c.accuracy)}</td><td>{_pct(c.ci_low)}–{_pct(c.ci_high)}</td>"
                     f"<td>{c.correct}</td><td>{c.total}</td></tr>")
    table.append("</table>")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>polysql sweep report</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}</style></head><body>"
        f"<h1>polysql sweep report</h1><p>Datasets: {html.escape(', '.join(summary.datasets))}; "
        f"questions: {summary.questions}. Bars: accuracy; lines: 95% Wilson intervals.</p>"
        + "".join(parts) + "".join(table) + "</body></html>\n"
    )


def write_reports(summary: Summary, run_dir: Path, run_info: dict[str, Any] | None = None,
                  models: dict[str, dict[str, Any]] | None = None) -> list[Path]:
    """``models``: per model predictor, what this invocation cost (see :data:`USAGE_FIELDS`)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    paths = [run_dir / n for n in (SUMMARY_JSON, SUMMARY_CSV, REPORT_MD, REPORT_HTML)]
    data = summary.to_dict()
    if models:
        data["models"] = models
    paths[0].write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    with paths[1].open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows(_csv_row(c) for c in summary.cells)
    paths[2].write_text(markdown(summary, run_info, models), encoding="utf-8")
    paths[3].write_text(html_report(summary), encoding="utf-8")
    return paths
