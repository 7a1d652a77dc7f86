"""The rewriting page of the static leaderboard: rewrite ledgers shown as the full-denominator
table (per method over every case, per pool, per SCS quartile), the terminal outcomes per method
(counts and the stacked-bar figure) and the table as ``rewrite.csv`` and ``rewrite.json``.

Every number comes from :func:`polysql.analysis.rewrite.ledger.full_denominator_table`; the page
only formats it. Numeric cells carry the exact value in ``data-value`` so a reader (or a test)
can check the rounding against the downloads.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from polysql.analysis.rewrite.ledger import (
    Row,
    full_denominator_table,
    load_ledger,
    outcome_counts,
    outcome_figure,
)
from polysql.analysis.rewrite.model import OUTCOMES, CaseOutcome
from polysql.core.errors import ConfigError
from polysql.leaderboard.site.pages import blank as _blank
from polysql.leaderboard.site.pages import escape as _e
from polysql.leaderboard.site.pages import page as _page

__all__ = ["REWRITE_CSV_FIELDS", "REWRITE_FORMAT", "load_rewrite_ledgers", "write_rewrite_page"]

REWRITE_FORMAT = "polysql-rewrite-leaderboard"
REWRITE_CSV_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Row))
FIGURE_STEM = "rewrite_outcomes"

# (Row field, column header, how the value is shown)
_RATE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("source_acceptance_rate", "Accepted"),
    ("generation_rate", "Generated"),
    ("no_rewrite_rate", "No rewrite"),
    ("execution_coverage", "Executed"),
    ("result_consistency", "Consistent"),
    ("unsafe_rate", "Unsafe"),
)
_SCOPES = (("all", "All cases", None),
           ("pool", "Per pool", "Pool"),
           ("scs_quartile", "By SCS quartile of the input", "Quartile"))


def load_rewrite_ledgers(paths: Sequence[Path]) -> list[CaseOutcome]:
    """The case outcomes of every ledger, merged. A (pool, case, method) held twice -- in two
    files or in one -- is refused, naming where both copies are: the table would count it twice."""
    seen: dict[tuple[str, str, str], Path] = {}
    merged: list[CaseOutcome] = []
    for path in map(Path, paths):
        for outcome in load_ledger(path):
            key = (outcome.pool, outcome.case_id, outcome.method)
            if key in seen:
                raise ConfigError(
                    f"rewrite case {outcome.case_id!r} of pool {outcome.pool!r} under method "
                    f"{outcome.method!r} is in both {seen[key]} and {path}")
            seen[key] = path
            merged.append(outcome)
    if not merged:
        raise ConfigError("the rewrite ledgers hold no rows")
    return merged


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


# why a cell has no value: shown on hover over its dash
NO_SPEEDUP = "no consistent rewrite was timed, so there is no speedup to average"
NO_VALID = "no consistent rewrite, so CGOQ@Valid averages over nothing"


def _num_cell(value: float | int | None, shown: str, why: str = "") -> str:
    if value is None:
        return f'<td class="num">{_blank(why or "no value")}</td>'
    return f'<td class="num" data-value="{_e(repr(value))}">{_e(shown)}</td>'


def _row_cells(row: Row) -> str:
    cells = [_num_cell(row.n, str(row.n))]
    cells += [_num_cell(getattr(row, name), _percent(getattr(row, name)))
              for name, _header in _RATE_COLUMNS]
    speedup = "" if row.geomean_speedup is None else f"{row.geomean_speedup:.2f}×"
    cells.append(_num_cell(row.geomean_speedup, speedup, NO_SPEEDUP))
    cells.append(_num_cell(row.speedup_support, str(row.speedup_support)))
    cells.append(_num_cell(row.cgoq_at_n, f"{row.cgoq_at_n:.1f}"))
    cells.append(_num_cell(row.cgoq_at_valid,
                           "" if row.cgoq_at_valid is None else f"{row.cgoq_at_valid:.1f}",
                           NO_VALID))
    return "".join(cells)


def _scope_table(scope: str, label: str | None, rows: Sequence[Row]) -> str:
    numeric = ["N", *(header for _name, header in _RATE_COLUMNS), "Geomean speedup",
               "Support", "CGOQ@N", "CGOQ@Valid"]
    head = (f"<th>{_e(label)}</th>" if label else "") + "<th>Method</th>" + "".join(
        f"<th class=num>{_e(h)}</th>" for h in numeric)
    body = []
    for row in rows:
        group = ""
        if label:
            shown = row.group if scope == "pool" else f"{row.group} ({row.detail})"
            group = f'<td data-group="{_e(row.group)}">{_e(shown)}</td>'
        body.append(f'<tr data-scope="{_e(scope)}" data-method="{_e(row.method)}">{group}'
                    f"<th scope=row>{_e(row.method)}</th>{_row_cells(row)}</tr>\n")
    return (f'<div class="table-wrap"><table class="rewrite" data-scope="{_e(scope)}">'
            f"<thead><tr>{head}</tr></thead>\n<tbody>\n{''.join(body)}</tbody></table></div>")


def _counts_table(counts: dict[str, dict[str, int]]) -> str:
    head = "<th>Method</th>" + "".join(f"<th class=num>{_e(name.replace('_', ' '))}</th>"
                                       for name in OUTCOMES)
    body = "".join(
        f'<tr data-method="{_e(method)}"><th scope=row>{_e(method)}</th>'
        + "".join(f'<td class="num" data-outcome="{_e(name)}">{_e(per[name])}</td>'
                  for name in OUTCOMES) + "</tr>\n"
        for method, per in counts.items())
    return (f'<div class="table-wrap"><table class="outcomes"><thead><tr>{head}</tr></thead>\n'
            f"<tbody>\n{body}</tbody></table></div>")


def _csv(rows: Sequence[Row]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(REWRITE_CSV_FIELDS)
    for row in rows:
        data = row.to_dict()
        writer.writerow(["" if data[name] is None else data[name] for name in REWRITE_CSV_FIELDS])
    return buffer.getvalue()


def _document(rows: Sequence[Row], counts: dict[str, dict[str, int]]) -> dict[str, Any]:
    return {"format": REWRITE_FORMAT, "format_version": 1,
            "outcomes": list(OUTCOMES), "outcome_counts": counts,
            "rows": [row.to_dict() for row in rows]}


def _body(rows: Sequence[Row], counts: dict[str, dict[str, int]],
          figure: Path | None, figure_svg: Path | None) -> str:
    parts = ["<h1>Query rewriting</h1>",
             '<p class="note">Every case counts in every rate (full denominator N). A rewrite is '
             "<em>consistent</em> when it ran and its result passed the case's contract; the "
             "geometric-mean speedup is over the consistent rewrites that were timed (support = "
             "how many); CGOQ@N scores every other case 0, CGOQ@Valid averages over consistent "
             "rewrites only.</p>",
             '<p>Downloads: <a href="rewrite.csv">rewrite.csv</a> · '
             '<a href="rewrite.json">rewrite.json</a></p>']
    for scope, title, label in _SCOPES:
        scoped = [row for row in rows if row.scope == scope]
        if scoped:
            parts.append(f"<h2>{_e(title)}</h2>")
            parts.append(_scope_table(scope, label, scoped))
    parts.append("<h2>Terminal outcomes</h2>")
    if figure is not None:
        svg = (f' (<a href="figures/{_e(figure_svg.name)}">SVG</a>)'
               if figure_svg is not None else "")
        parts.append(f'<figure><img src="figures/{_e(figure.name)}" '
                     f'alt="Terminal outcome per method, share of cases">'
                     f"<figcaption class=\"muted\">Share of each method's cases by terminal "
                     f"outcome{svg}.</figcaption></figure>")
    parts.append(_counts_table(counts))
    return "\n".join(parts)


def write_rewrite_page(outcomes: Sequence[CaseOutcome], out_dir: Path) -> list[Path]:
    """``rewrite.html``, ``rewrite.csv``, ``rewrite.json`` and the outcome figure (under
    ``figures/``) for ``outcomes`` into the site folder ``out_dir``; returns the files written."""
    if not outcomes:
        raise ConfigError("no rewrite outcomes to show")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = full_denominator_table(outcomes)
    counts = outcome_counts(outcomes)
    figures = outcome_figure(outcomes, out / "figures", stem=FIGURE_STEM)
    png = next((p for p in figures if p.suffix == ".png"), None)
    svg = next((p for p in figures if p.suffix == ".svg"), None)
    files = {
        "rewrite.csv": _csv(rows),
        "rewrite.json": json.dumps(_document(rows, counts), indent=1, sort_keys=True,
                                   allow_nan=False) + "\n",
        "rewrite.html": _page("Rewriting", _body(rows, counts, png, svg), "", rewrite=True),
    }
    written = list(figures)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
        written.append(out / name)
    return written
