"""Write :class:`~polysql.analysis.findings.Findings` out for people: a Markdown and a standalone
HTML report with the figures, one CSV per table and the findings as JSON.

Both reports are rendered from one list of blocks (headings, text, tables, figures), so they
always say the same thing.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from polysql.analysis import figures
from polysql.analysis.categories import CATEGORIES, UNCLASSIFIED
from polysql.analysis.findings import (
    POOLED,
    AccuracyRow,
    Findings,
    KappaRow,
    PairTest,
    RankRow,
    TauRow,
    TierRow,
)
from polysql.analysis.signals import SIGNAL_FAMILIES, SIGNALS
from polysql.analysis.stats import CHI2_MIN_DISCORDANT

REPORT_MD = "report.md"
REPORT_HTML = "report.html"
FINDINGS_JSON = "findings.json"
FIGURES_DIR = "figures"
TABLES_DIR = "tables"


# --- formatting -----------------------------------------------------------------------------------

def format_pct(x: float | None) -> str:
    return "–" if x is None or math.isnan(x) else f"{100 * x:.1f}%"


def format_pp(x: float | None) -> str:
    """A difference of two accuracies, in percentage points with its sign."""
    return "–" if x is None or math.isnan(x) else f"{100 * x:+.1f} pp"


def format_p(p: float | None) -> str:
    """Three significant digits; tiny values as "<1e-6" (beyond what the tests can resolve)."""
    if p is None or math.isnan(p):
        return "–"
    if p < figures.P_FLOOR:
        return "<1e-6"
    return f"{p:.3g}" if p >= 0.001 else f"{p:.2e}"


def format_number(x: float | None, digits: int = 3) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:.{digits}f}"


# --- blocks both renderers share ------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class Banner:
    """A warning that must not be missed (numbers over incomplete runs)."""

    text: str


@dataclass(frozen=True, slots=True)
class Bullets:
    items: list[str]


@dataclass(frozen=True, slots=True)
class Table:
    header: list[str]
    rows: list[list[str]]
    numeric: frozenset[int] = field(default_factory=frozenset)  # right-aligned columns


@dataclass(frozen=True, slots=True)
class Image:
    caption: str
    png: Path


Block = Heading | Text | Banner | Bullets | Table | Image


def _md_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def render_markdown(blocks: Sequence[Block], out_dir: Path) -> str:
    lines: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            lines += ["#" * block.level + " " + block.text, ""]
        elif isinstance(block, Text):
            lines += [block.text, ""]
        elif isinstance(block, Banner):
            lines += [f"> **{block.text}**", ""]
        elif isinstance(block, Bullets):
            lines += [f"- {item}" for item in block.items] + [""]
        elif isinstance(block, Table):
            lines.append("| " + " | ".join(map(_md_cell, block.header)) + " |")
            lines.append("|" + "|".join("---:" if i in block.numeric else "---"
                                        for i in range(len(block.header))) + "|")
            lines += ["| " + " | ".join(map(_md_cell, row)) + " |" for row in block.rows]
            lines.append("")
        else:
            target = block.png.relative_to(out_dir).as_posix()
            alt = block.caption.replace("[", "(").replace("]", ")")
            lines += [f"![{alt}]({target})", ""]
    return "\n".join(lines).rstrip() + "\n"


_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:72em;padding:0 1em;"
    "color:#222;line-height:1.45}table{border-collapse:collapse;margin:0.5em 0 1.5em}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "figure{margin:1em 0 2em}img{max-width:100%;height:auto}"
    "figcaption{color:#555;font-size:0.9em}"
    ".incomplete{background:#fde8e8;border:2px solid #c62828;padding:0.8em}"
)


def render_html(blocks: Sequence[Block], title: str) -> str:
    """A page with everything inline: figures as data URIs, no scripts, no external files."""
    esc = html.escape
    parts = ["<!doctype html>", "<html lang='en'><head><meta charset='utf-8'>",
             f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>"]
    for block in blocks:
        if isinstance(block, Heading):
            parts.append(f"<h{block.level}>{esc(block.text)}</h{block.level}>")
        elif isinstance(block, Text):
            parts.append(f"<p>{esc(block.text)}</p>")
        elif isinstance(block, Banner):
            parts.append(f"<p class='incomplete' role='alert'><strong>{esc(block.text)}</strong></p>")
        elif isinstance(block, Bullets):
            parts.append("<ul>" + "".join(f"<li>{esc(i)}</li>" for i in block.items) + "</ul>")
        elif isinstance(block, Table):
            head = "".join(f"<th>{esc(h)}</th>" for h in block.header)
            body = "".join(
                "<tr>" + "".join(f"<td class='n'>{esc(c)}</td>" if i in block.numeric
                                 else f"<td>{esc(c)}</td>" for i, c in enumerate(row)) + "</tr>"
                for row in block.rows)
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        else:
            data = base64.b64encode(block.png.read_bytes()).decode("ascii")
            parts.append(f"<figure><img src='data:image/png;base64,{data}' "
                         f"alt='{esc(block.caption, quote=True)}'>"
                         f"<figcaption>{esc(block.caption)}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


# --- the report's content -------------------------------------------------------------------------

def _scope_name(scope: str) -> str:
    return "Pooled over models" if scope == POOLED else f"Model {scope}"


def _figure(blocks: list[Block], written: list[Path], paths: list[Path], caption: str) -> None:
    written += paths
    blocks += [Image(caption, p) for p in paths if p.suffix == ".png"]


def _settings_blocks(f: Findings) -> list[Block]:
    s = f.settings
    requested = s.reference if s.reference is not None else "none"
    reference = (f"{f.reference} (requested: {requested})" if f.reference
                 else f"none (requested: {requested})")
    dialects = {r.engine: r.dialect for r in f.accuracy}
    engines = [f"{e} ({dialects[e]})" if dialects.get(e, e) != e else e for e in f.engines]
    return [
        Heading(2, "Runs and settings"),
        Bullets([
            f"Runs: {', '.join(f.runs) or '–'}",
            f"Datasets: {', '.join(f.datasets) or '–'}",
            f"Models (predictors): {', '.join(f.predictors) or '–'}",
            f"Engines: {', '.join(engines) or '–'}",
            f"Reference engine for drops: {reference}",
            f"Significance level alpha = {s.alpha:g}, after Holm's correction; intervals at "
            f"{100 * s.confidence:g}%; paired bootstrap with {s.resamples:,} resamples, "
            f"seed {s.seed}.",
        ]),
        Heading(3, "Units and pairing"),
        Bullets([
            "The unit is a question, identified by (dataset, question id). Questions whose gold "
            "query failed are left out everywhere: they say nothing about the prediction.",
            "Accuracy intervals are Wilson score intervals over all questions an engine "
            "evaluated for a model.",
            "Paired statistics (the bootstrap drop, McNemar, kappa) use only the questions both "
            "engines evaluated for the model; the n of each row says how many.",
            "Per-model tests pair one model's outcomes on two engines. Pooled tests stack every "
            "model's pairs, so their unit is a (model, question) pair. Outcomes of one question "
            "under different models are not independent, so pooled p-values describe this "
            "sweep rather than a population of questions.",
            "Holm's correction runs over all engine pairs within one scope (one model, or "
            "pooled); tiers are read off the corrected p-values at alpha.",
        ]),
    ]


def _accuracy_blocks(f: Findings, figure_dir: Path, written: list[Path]) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Accuracy")]
    if not f.accuracy:
        return [*blocks, Text("No evaluated questions.")]
    reference = f.reference
    blocks.append(Text(
        "Accuracy = matches / questions whose gold ran; generation and execution failures count "
        "as wrong. "
        + (f"Drop = accuracy minus the accuracy on the reference engine {reference}, on the "
           "questions both evaluated (negative: fewer answers right), with a paired bootstrap "
           "interval." if reference else "No reference engine, so no drops.")))
    rows = []
    for r in f.accuracy:
        if r.engine == reference:
            delta, interval, paired = "reference", "", ""
        else:
            delta = format_pp(r.delta)
            interval = (f"{format_pp(r.delta_low)} to {format_pp(r.delta_high)}"
                        if r.delta_low is not None and r.delta_high is not None else "–")
            paired = str(r.paired) if r.paired is not None else "–"
        rows.append([r.predictor, r.dataset, r.engine, r.dialect, f"{r.correct} / {r.total}",
                     format_pct(r.accuracy), f"{format_pct(r.ci_low)}–{format_pct(r.ci_high)}",
                     delta, interval, paired])
    blocks.append(Table(["model", "dataset", "engine", "dialect", "correct / total", "accuracy",
                         "95% Wilson CI", "Δ vs reference", "bootstrap CI of Δ", "paired n"],
                        rows, frozenset({4, 5, 6, 7, 8, 9})))
    _figure(blocks, written, figures.accuracy_figure(f, figure_dir),
            "Accuracy per engine and model with 95% Wilson intervals")
    return blocks


def _pair_blocks(f: Findings, figure_dir: Path, written: list[Path]) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Pairwise tests (McNemar)")]
    if not f.pair_tests:
        return [*blocks, Text("No engine pairs to test (fewer than two engines with questions "
                              "in common).")]
    blocks.append(Text(
        "b: questions the first engine got right and the second wrong; c: the reverse. The exact "
        "p is the two-sided binomial test on b and c and drives every decision; the continuity-"
        f"corrected chi-square is shown only from {CHI2_MIN_DISCORDANT} discordant questions "
        "on. Holm p: corrected over all pairs of the scope."))
    for scope in f.scopes():
        tests = [t for t in f.pair_tests if t.scope == scope]
        blocks.append(Heading(3, _scope_name(scope)))
        if scope == POOLED:
            blocks.append(Text("Unit: a (model, question) pair; see Units and pairing."))
        blocks.append(Table(
            ["first", "second", "n", "accuracy first", "accuracy second", "b", "c", "exact p",
             "chi2", "chi2 p", "Holm p", "significant"],
            [[t.first, t.second, str(t.n), format_pct(t.first_accuracy),
              format_pct(t.second_accuracy), str(t.b), str(t.c), format_p(t.p_exact),
              format_number(t.chi2, 2), format_p(t.p_chi2), format_p(t.p_holm),
              "yes" if t.significant else "no"] for t in tests],
            frozenset(range(2, 11))))
        _figure(blocks, written, figures.mcnemar_figure(f, scope, figure_dir),
                f"Holm-adjusted McNemar p-values, {figures.scope_title(scope)}")
    return blocks


def _tier_blocks(f: Findings, figure_dir: Path, written: list[Path]) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Difficulty tiers")]
    if not f.tiers:
        return [*blocks, Text("No tiers: no engine was evaluated.")]
    blocks.append(Text(
        "Engines sorted by accuracy (best first); an engine joins the current tier when it is not "
        "significantly different from any engine already in it, else it starts the next tier. "
        "Tier 1 is the easiest."))
    blocks.append(Table(["scope", "tier", "engine", "accuracy"],
                        [[_scope_name(t.scope), str(t.tier), t.engine, format_pct(t.accuracy)]
                         for t in f.tiers], frozenset({1, 3})))
    _figure(blocks, written, figures.tier_figure(f, figure_dir),
            "Difficulty tiers" + (" (pooled over models)" if POOLED in figures.tier_scopes(f)
                                  else ""))
    return blocks


def _kappa_blocks(f: Findings) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Agreement between engines (Cohen's kappa)")]
    if not f.kappas:
        return [*blocks, Text("No engine pairs.")]
    blocks.append(Text(
        "Kappa: agreement on which questions are answered right, beyond chance (1: the same "
        "questions, 0: no more than chance). Undefined when both engines are right, or both "
        "wrong, on every question."))
    blocks.append(Table(["scope", "first", "second", "n", "kappa", "raw agreement"],
                        [[_scope_name(k.scope), k.first, k.second, str(k.n),
                          format_number(k.kappa) if k.kappa is not None else "undefined",
                          format_pct(k.agreement)] for k in f.kappas],
                        frozenset({3, 4, 5})))
    return blocks


def _rank_blocks(f: Findings, figure_dir: Path, written: list[Path]) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Model ranks")]
    ranked = {r.predictor for r in f.ranks}
    models = [p for p in f.predictors if p in ranked] + sorted(ranked - set(f.predictors))
    if len(models) < 2:
        return [*blocks, Text("Ranks need at least two models.")]
    blocks.append(Text(
        "Rank of each model per engine (1 = best, ties share the mean rank), from the accuracy "
        "on the questions every model evaluated on that engine (so it can differ from the "
        "accuracy table)."))
    found = {(r.engine, r.predictor): r for r in f.ranks}
    engines = list(dict.fromkeys(r.engine for r in f.ranks))
    blocks.append(Table(["engine", *models],
                        [[e, *(f"{found[(e, m)].rank:g} ({format_pct(found[(e, m)].accuracy)})"
                               if (e, m) in found else "–" for m in models)] for e in engines],
                        frozenset(range(1, len(models) + 1))))
    if f.taus:
        blocks += [Heading(3, "Kendall's tau between engines"),
                   Text("Do two engines order the models the same way? Tau-b over the models "
                        "both ranked; 1: same order, -1: reversed."),
                   Table(["first", "second", "models", "tau", "p"],
                         [[t.first, t.second, str(t.models), format_number(t.tau),
                           format_p(t.p_value)] for t in f.taus], frozenset({2, 3, 4}))]
    _figure(blocks, written, figures.rank_figure(f, figure_dir), "Model ranks per engine")
    return blocks


def _counts_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
                     if v) or "–"


def _present(order: Sequence[str], counts: Sequence[dict[str, int]]) -> list[str]:
    seen = {k for c in counts for k, v in c.items() if v}
    return [k for k in order if k in seen] + sorted(seen - set(order))


def _taxonomy_blocks(f: Findings, figure_dir: Path, written: list[Path]) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Error taxonomy")]
    rows = [r for r in f.taxonomy if r.failures]
    if not rows:
        return [*blocks, Text("No failed predictions.")]
    families = _present(list(SIGNAL_FAMILIES), [r.families for r in rows])
    blocks += [
        Heading(3, "Execution signals"),
        Text("Every failure labelled from execution alone (SQLSTATE or error message, or the "
             "shape of a result mismatch), grouped in families: "
             + "; ".join(f"{family}: {', '.join(signals)}"
                         for family, signals in SIGNAL_FAMILIES.items()) + "."),
        Table(["model", "engine", "failures", *families, "signals"],
              [[r.predictor, r.engine, str(r.failures),
                *(str(r.families.get(x, 0)) for x in families), _counts_text(r.signals)]
               for r in rows], frozenset(range(2, 3 + len(families))))]
    _figure(blocks, written, figures.taxonomy_figure(f, figure_dir),
            "Failures per model and engine by signal family")
    if not f.classified:
        return blocks
    categories = _present([*CATEGORIES, UNCLASSIFIED], [r.categories for r in rows])
    blocks += [
        Heading(3, "Classifier categories"),
        Text("Each failure as a model classified it. Logical errors (schema linking, filtering, "
             "aggregation) would be wrong on any engine; dialect errors are the engine's. Logical "
             "share = logical / (logical + dialect); unclassified and invalid evaluations are "
             "left out of it."),
        Table(["model", "engine", "failures", *categories, "logical", "dialect", "logical share"],
              [[r.predictor, r.engine, str(r.failures),
                *(str(r.categories.get(c, 0)) for c in categories), str(r.logical),
                str(r.syntactic), format_pct(r.logical_share)] for r in rows],
              frozenset(range(2, 6 + len(categories))))]
    per_engine: dict[str, list[int]] = {}
    for r in rows:
        totals = per_engine.setdefault(r.engine, [0, 0, 0])
        totals[0] += r.failures
        totals[1] += r.logical
        totals[2] += r.syntactic
    blocks += [
        Text("Per engine, all models together:"),
        Table(["engine", "failures", "logical", "dialect", "logical share"],
              [[e, str(n), str(lo), str(sy), format_pct(lo / (lo + sy) if lo + sy else None)]
               for e, (n, lo, sy) in per_engine.items()], frozenset({1, 2, 3, 4}))]
    _figure(blocks, written, figures.category_figure(f, figure_dir),
            "Failures per model and engine by classifier category")
    return blocks


def _skipped_notes(f: Findings, written: list[Path]) -> list[str]:
    """Say which figures are missing and why, so an absent image is not taken for a bug."""
    stems = {p.stem for p in written}
    missing = []
    if f.accuracy and not f.pair_tests:
        missing.append("McNemar heatmaps and tiers (they need two engines)")
    if f.ranks and "ranks" not in stems:
        missing.append("rank chart (it needs two models and two engines)")
    if f.classified and f.taxonomy and "taxonomy_categories" not in stems:
        missing.append("classifier categories (no failure was classified)")
    return [f"Figures not drawn: {'; '.join(missing)}."] if missing else []


def report_blocks(f: Findings, out_dir: Path, written: list[Path]) -> list[Block]:
    """Every block of the report; figures are drawn into out_dir/figures on the way and their
    paths appended to ``written``."""
    figure_dir = out_dir / FIGURES_DIR
    blocks: list[Block] = [Heading(1, "polysql analysis report")]
    if f.pending:
        runs = ", ".join(f"{run} ({count} pending)" for run, count in f.pending.items())
        blocks.append(Banner(
            f"INCOMPLETE: {sum(f.pending.values())} planned record(s) are pending and are in no "
            f"number below ({runs}). Finish the run(s) with the same `polysql sweep` command, "
            "then report again."))
    blocks += _settings_blocks(f)
    blocks += _accuracy_blocks(f, figure_dir, written)
    blocks += _pair_blocks(f, figure_dir, written)
    blocks += _tier_blocks(f, figure_dir, written)
    blocks += _kappa_blocks(f)
    blocks += _rank_blocks(f, figure_dir, written)
    blocks += _taxonomy_blocks(f, figure_dir, written)
    notes = [*f.notes, *_skipped_notes(f, written)]
    if notes:
        blocks += [Heading(2, "Notes"), Bullets(notes)]
    return blocks


# --- machine-readable files -----------------------------------------------------------------------

def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json_safe(v) for v in value]
    return value


def _csv_value(value: Any) -> Any:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return value  # floats keep full precision: p-values far below 1e-6 must survive


def _write_csv(path: Path, header: Sequence[str], rows: Sequence[dict[str, Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(header))
        writer.writeheader()
        writer.writerows({k: _csv_value(row.get(k)) for k in header} for row in rows)
    return path


def _rows_of(cls: type, items: Sequence[Any]) -> tuple[list[str], list[dict[str, Any]]]:
    names = [f.name for f in fields(cls)]
    return names, [{n: getattr(item, n) for n in names} for item in items]


def _taxonomy_table(f: Findings) -> tuple[list[str], list[dict[str, Any]]]:
    families = _present(list(SIGNAL_FAMILIES), [r.families for r in f.taxonomy])
    families = list(SIGNAL_FAMILIES) + [x for x in families if x not in SIGNAL_FAMILIES]
    signals = list(SIGNALS) + [s for s in _present([], [r.signals for r in f.taxonomy])
                               if s not in SIGNALS]
    header = ["predictor", "engine", "failures", *(f"family_{x}" for x in families),
              *(f"signal_{s}" for s in signals)]
    categories: list[str] = []
    if f.classified:
        order = [*CATEGORIES, UNCLASSIFIED]
        categories = order + [c for c in _present([], [r.categories for r in f.taxonomy])
                              if c not in order]
        header += [*(f"category_{c}" for c in categories), "logical", "syntactic",
                   "logical_share"]
    rows = []
    for r in f.taxonomy:
        row: dict[str, Any] = {"predictor": r.predictor, "engine": r.engine,
                               "failures": r.failures}
        row |= {f"family_{x}": r.families.get(x, 0) for x in families}
        row |= {f"signal_{s}": r.signals.get(s, 0) for s in signals}
        if f.classified:
            row |= {f"category_{c}": r.categories.get(c, 0) for c in categories}
            row |= {"logical": r.logical, "syntactic": r.syntactic,
                    "logical_share": r.logical_share}
        rows.append(row)
    return header, rows


TABLES: dict[str, Callable[[Findings], tuple[list[str], list[dict[str, Any]]]]] = {
    "accuracy": lambda f: _rows_of(AccuracyRow, f.accuracy),
    "mcnemar": lambda f: _rows_of(PairTest, f.pair_tests),
    "tiers": lambda f: _rows_of(TierRow, f.tiers),
    "kappa": lambda f: _rows_of(KappaRow, f.kappas),
    "ranks": lambda f: _rows_of(RankRow, f.ranks),
    "kendall_tau": lambda f: _rows_of(TauRow, f.taus),
    "taxonomy": _taxonomy_table,
}


def write_tables(findings: Findings, table_dir: Path) -> list[Path]:
    """One CSV per table (header only when the table is empty), for people who plot their own."""
    table_dir.mkdir(parents=True, exist_ok=True)
    return [_write_csv(table_dir / f"{name}.csv", *build(findings))
            for name, build in TABLES.items()]


def write_analysis(findings: Findings, out_dir: Path) -> list[Path]:
    """Write report.md, report.html, figures/, tables/*.csv and findings.json into ``out_dir``;
    return every path written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    blocks = report_blocks(findings, out_dir, written)
    md, page = out_dir / REPORT_MD, out_dir / REPORT_HTML
    md.write_text(render_markdown(blocks, out_dir), encoding="utf-8")
    page.write_text(render_html(blocks, "polysql analysis report"), encoding="utf-8")
    data = out_dir / FINDINGS_JSON
    data.write_text(json.dumps(_json_safe(findings.to_dict()), indent=2, allow_nan=False) + "\n",
                    encoding="utf-8")
    return [*written, md, page, *write_tables(findings, out_dir / TABLES_DIR), data]
