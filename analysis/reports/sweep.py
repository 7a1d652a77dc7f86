"""Write a sweep's summary as files people read and plot: JSON, CSV, Markdown and an HTML chart.

Every file says whether the numbers are complete. A summary written while work is pending
(interrupted, an engine abandoned, a model unreachable, or the sweep still running) carries
``complete: false`` and the pending count in JSON and CSV, and an INCOMPLETE banner in Markdown
and HTML, so a partial number is never read as a final one.
"""

from __future__ import annotations

import csv
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from polysql.analysis.summary import Cell, Summary
from polysql.normalizers.policy import ROW_CAP_GROWTH, changed_options, options_text

SUMMARY_JSON = "summary.json"
SUMMARY_CSV = "summary.csv"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"

CSV_FIELDS = ["predictor", "engine", "total", "correct", "accuracy", "ci_low", "ci_high",
              "match", "mismatch", "exec_error", "generation_failure", "invalid_gold", "pending",
              "complete"]

#: what ``status`` says about a summary's numbers
STATUS_TEXT = {
    "complete": "complete",
    "incomplete": "INCOMPLETE",
    "interrupted": "INCOMPLETE (interrupted)",
    "running": "INCOMPLETE (sweep in progress)",
}
NO_VALUE = "—"  # an accuracy over n=0 does not exist; it is not 0%


def _pct(x: float | None) -> str:
    return NO_VALUE if x is None else f"{100 * x:.1f}%"


def _ci(cell: Cell) -> str:
    if cell.ci_low is None or cell.ci_high is None:
        return NO_VALUE
    return f"{_pct(cell.ci_low)}–{_pct(cell.ci_high)}"


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def resolve_status(summary: Summary, status: str | None) -> str:
    """``status`` as given, else complete/incomplete from the pending count."""
    if status is None:
        return "complete" if summary.complete else "incomplete"
    if status not in STATUS_TEXT:
        raise ValueError(f"unknown report status {status!r}; one of {', '.join(STATUS_TEXT)}")
    return status


def policy_note(run_info: dict[str, Any] | None) -> str | None:
    """The comparison policy options a run changed from the contract's defaults, said in one
    sentence (None when it changed none): its numbers are not comparable with a default run's."""
    changed = options_text(changed_options(((run_info or {}).get("settings") or {}).get("policy")))
    if not changed:
        return None
    return (f"Comparison policy changed from the contract's defaults: {changed}; these accuracies "
            "compare only with runs under the same policy.")


def cut_note(summary: Summary, run_info: dict[str, Any] | None) -> str | None:
    """What the verdicts on results cut at the row cap mean, in one sentence (None for none)."""
    if not summary.cut:
        return None
    cap = ((run_info or {}).get("settings") or {}).get("max_rows")
    at = f" of {cap:,} rows" if isinstance(cap, int) else ""
    return (f"{summary.cut} verdict(s) compared results cut at the row cap{at}, even after a "
            f"re-run under a cap {ROW_CAP_GROWTH} times higher ('cut at cap'): the rows cut off "
            "could change them; raise --max-rows to judge them in full.")


def timeout_note(summary: Summary, run_info: dict[str, Any] | None) -> str | None:
    """How many predictions ran out of time, on which engines, and what that counts as, in one
    sentence (None for none): a timeout is a wrong answer, yet an engine can be slow for reasons
    of its own, and the 'errors' count alone does not say which errors these are."""
    by_engine: dict[str, int] = {}
    for cell in summary.cells:
        count = cell.error_kinds.get("timeout", 0)
        if count:
            by_engine[cell.engine] = by_engine.get(cell.engine, 0) + count
    if not by_engine:
        return None
    limit = ((run_info or {}).get("settings") or {}).get("timeout")
    at = f" of {limit:g} s" if isinstance(limit, int | float) else ""
    where = ", ".join(f"{engine} {count}" for engine, count in sorted(by_engine.items()))
    return (f"{sum(by_engine.values())} prediction(s) ran past the timeout{at} ({where}) and count "
            "as wrong answers; where the engine rather than the SQL is slow (a copy larger than "
            "the memory the server caches it in, such as MySQL's innodb_buffer_pool_size), raise "
            "--timeout or that memory.")


def banner_text(summary: Summary, status: str, notes: Sequence[str] = ()) -> str | None:
    """One paragraph saying why the numbers are not final; None when they are."""
    if status == "complete":
        return None
    planned = summary.records + summary.pending
    parts = [f"{STATUS_TEXT[status]}: {summary.pending} of {planned} planned records are pending "
             "(not evaluated yet) and are in no number below."]
    if status == "running":
        parts.append("This file was written when the sweep started; if the sweep is no longer "
                     "running it was stopped before it could finish.")
    parts.extend(notes)
    parts.append("Re-run the same `polysql sweep` command to finish the run.")
    return " ".join(parts)


def _csv_row(cell: Cell, complete: bool) -> dict[str, Any]:
    row: dict[str, Any] = {k: getattr(cell, k) for k in ("predictor", "engine", "total", "correct")}
    row.update(accuracy=_round(cell.accuracy), ci_low=_round(cell.ci_low),
               ci_high=_round(cell.ci_high), pending=cell.pending, complete=complete)
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
             models: dict[str, dict[str, Any]] | None = None, *, status: str | None = None,
             notes: Sequence[str] = ()) -> str:
    status = resolve_status(summary, status)
    lines = ["# polysql sweep report", ""]
    banner = banner_text(summary, status, notes)
    if banner:
        lines += [f"> **{banner}**", ""]
    lines.append(f"Datasets: {', '.join(summary.datasets) or '-'}; questions: {summary.questions}; "
                 f"records: {summary.records}; pending: {summary.pending}; "
                 f"invalid gold: {summary.invalid_gold}.")
    if run_info:
        settings = run_info.get("settings", {})
        lines.append(f"Timeout {settings.get('timeout')} s, max rows {settings.get('max_rows')}, "
                     f"polysql {run_info.get('polysql')}.")
        changed = policy_note(run_info)
        if changed:
            lines.append(f"**{changed}**")
    for note in (cut_note(summary, run_info), timeout_note(summary, run_info)):
        if note:
            lines.append(f"**{note}**")
    lines += ["", "Accuracy = matches / all questions whose gold ran; failures to generate or",
              "execute count as wrong. Questions whose gold failed (invalid gold) and pending",
              f"work are in no denominator; {NO_VALUE} means nothing was left to count. 95% Wilson "
              "intervals.", "",
              "| predictor | engine | accuracy | 95% CI | correct / total | exec errors | no SQL | "
              "invalid gold | pending |",
              "|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for c in summary.cells:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(c.error_kinds.items())) or "0"
        lines.append(
            f"| {c.predictor} | {c.engine} | {_pct(c.accuracy)} | {_ci(c)} | "
            f"{c.correct} / {c.total} | {kinds} | {c.statuses.get('generation_failure', 0)} | "
            f"{c.invalid_gold} | {c.pending} |"
        )
    if summary.by_tag:
        keys = [(c.predictor, c.engine) for c in summary.cells]
        lines += ["", "## Accuracy by dialect hazard", "",
                  "| tag | " + " | ".join(f"{p} @ {e}" for p, e in keys) + " |",
                  "|---|" + "---:|" * len(keys)]
        for tag, cells in summary.by_tag.items():
            found = {(c.predictor, c.engine): c for c in cells}
            values = [f"{_pct(found[k].accuracy)} (n={found[k].total})" if k in found else NO_VALUE
                      for k in keys]
            lines.append(f"| {tag} | " + " | ".join(values) + " |")
    if models:
        lines += usage_markdown(models)
    return "\n".join(lines) + "\n"


def _chart(rows: list[Cell]) -> str:
    """Bars for accuracy, a capped line for the 95% interval; the value label sits right of the
    interval's upper end, so a whisker never runs through it."""
    bar_h, gap, left, width = 22, 8, 220, 460
    height = len(rows) * (bar_h + gap) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 110}" height="{height}" '
             'role="img" aria-label="accuracy per predictor and engine">']
    for tick in range(0, 101, 25):
        x = left + width * tick / 100
        parts.append(f'<line x1="{x}" y1="10" x2="{x}" y2="{height - 20}" stroke="#ddd"/>'
                     f'<text x="{x}" y="{height - 5}" font-size="11" text-anchor="middle">{tick}%</text>')
    for i, c in enumerate(rows):
        y = 10 + i * (bar_h + gap)
        mid = y + bar_h / 2
        label = html.escape(f"{c.predictor} @ {c.engine}")
        parts.append(f'<text x="{left - 8}" y="{y + bar_h * 0.7}" font-size="13" '
                     f'text-anchor="end">{label}</text>')
        if c.accuracy is None or c.ci_low is None or c.ci_high is None:
            parts.append(f'<text x="{left + 6}" y="{y + bar_h * 0.7}" font-size="12" fill="#666">'
                         f'{NO_VALUE} (n=0)</text>')
            continue
        lo, hi = left + width * c.ci_low, left + width * c.ci_high
        parts.append(
            f'<rect x="{left}" y="{y}" width="{width * c.accuracy:.1f}" height="{bar_h}" fill="#4a7ab5"/>'
            f'<line x1="{lo:.1f}" y1="{mid}" x2="{hi:.1f}" y2="{mid}" stroke="#111" stroke-width="1.5"/>'
            f'<line x1="{lo:.1f}" y1="{mid - 5}" x2="{lo:.1f}" y2="{mid + 5}" stroke="#111" stroke-width="1.5"/>'
            f'<line x1="{hi:.1f}" y1="{mid - 5}" x2="{hi:.1f}" y2="{mid + 5}" stroke="#111" stroke-width="1.5"/>'
            f'<text x="{hi + 6:.1f}" y="{y + bar_h * 0.7}" font-size="12">{_pct(c.accuracy)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def html_report(summary: Summary, *, status: str | None = None, notes: Sequence[str] = (),
                run_info: dict[str, Any] | None = None) -> str:
    """A standalone page with an accuracy chart (inline SVG, no scripts) and the table."""
    status = resolve_status(summary, status)
    rows = summary.cells
    table = ["<table><tr><th>predictor</th><th>engine</th><th>accuracy</th><th>95% CI</th>"
             "<th>correct</th><th>total</th><th>invalid gold</th><th>pending</th></tr>"]
    for c in rows:
        table.append(f"<tr><td>{html.escape(c.predictor)}</td><td>{html.escape(c.engine)}</td>"
                     f"<td>{_pct(c.accuracy)}</td><td>{_ci(c)}</td>"
                     f"<td>{c.correct}</td><td>{c.total}</td><td>{c.invalid_gold}</td>"
                     f"<td>{c.pending}</td></tr>")
    table.append("</table>")
    banner = banner_text(summary, status, notes)
    banner_html = (f'<p class="incomplete" role="alert"><strong>{html.escape(banner)}</strong></p>'
                   if banner else "")
    for note in (policy_note(run_info), cut_note(summary, run_info),
                 timeout_note(summary, run_info)):
        if note:
            banner_html += f"<p><strong>{html.escape(note)}</strong></p>"
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>polysql sweep report</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
        ".incomplete{background:#fde8e8;border:2px solid #c62828;padding:0.8em;max-width:60em}"
        "</style></head><body>"
        f"<h1>polysql sweep report</h1>{banner_html}<p>Datasets: "
        f"{html.escape(', '.join(summary.datasets))}; questions: {summary.questions}; records: "
        f"{summary.records}; pending: {summary.pending}; invalid gold: {summary.invalid_gold}. "
        "Bars: accuracy; lines: 95% Wilson intervals.</p>"
        + _chart(rows) + "".join(table) + "</body></html>\n"
    )


def write_reports(summary: Summary, run_dir: Path, run_info: dict[str, Any] | None = None,
                  models: dict[str, dict[str, Any]] | None = None, *, status: str | None = None,
                  notes: Sequence[str] = ()) -> list[Path]:
    """``models``: per model predictor, what this invocation cost (see :data:`USAGE_FIELDS`).
    ``status``: complete | incomplete | interrupted | running (default: from the pending count);
    ``notes``: why work is pending (abandoned engines, unreachable models), shown in the banner."""
    status = resolve_status(summary, status)
    run_dir.mkdir(parents=True, exist_ok=True)
    paths = [run_dir / n for n in (SUMMARY_JSON, SUMMARY_CSV, REPORT_MD, REPORT_HTML)]
    data = summary.to_dict()
    data["complete"] = status == "complete"
    data["status"] = status
    if notes:
        data["notes"] = list(notes)
    if models:
        data["models"] = models
    paths[0].write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    with paths[1].open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows(_csv_row(c, status == "complete") for c in summary.cells)
    paths[2].write_text(markdown(summary, run_info, models, status=status, notes=notes),
                        encoding="utf-8")
    paths[3].write_text(html_report(summary, status=status, notes=notes, run_info=run_info),
                        encoding="utf-8")
    return paths
