"""The rewrite ledger and its aggregates: one row per case and method, then the full-denominator
table, the CGOQ sensitivity ranges and the terminal-outcome figure.

Full-denominator table
----------------------
Rows are computed per method over a group of cases: every case (scope ``all``), each pool
(``pool``), and each SCS quartile of the input query (``scs_quartile``). Every case of the group
counts in the denominator N, whatever happened to it. With ``#x`` the number of the group's cases
whose terminal outcome is ``x``, and GATED = {performance_gain, simplification_gain, neutral,
regression} (the rewrite ran and its result passed the case's contract):

``n``                       N, the cases of the group the method was run on.
``source_acceptance_rate``  (N - #source_acceptance_failure) / N: the method took the input.
``generation_rate``         cases that produced a candidate rewrite -- outcome no_op,
                            execution_failure, unsafe_rewrite or GATED -- over N.
``no_rewrite_rate``         #no_rewrite / N.
``execution_coverage``      cases whose rewrite executed -- unsafe_rewrite or GATED -- over N
                            (a no-op is never executed: it is the input).
``result_consistency``      #GATED / N: rewrites that ran and returned the input's result.
``unsafe_rate``             #unsafe_rewrite / N: rewrites that ran and returned another result.
``valid``                   #GATED.
``geomean_speedup``         geometric mean of input median time / rewrite median time over the
                            GATED cases that were timed; None when none were.
``speedup_support``         how many speedups that mean is over.
``cgoq_at_n``               (sum of CGOQ over the GATED cases) / N: every other case scores 0.
``cgoq_at_valid``           (sum of CGOQ over the GATED cases) / #GATED; None when #GATED = 0.
                            A GATED case without a CGOQ (never expected) counts 0 in both, so
                            cgoq_at_n = cgoq_at_valid * valid / n always holds.

SCS quartiles are cut over the case corpus, not per method: each distinct case (pool, case id)
counts once with the SCS of its input query, the cut points are the 25th, 50th and 75th
percentiles of those values (numpy's linear interpolation), and a case is in Q1 when its SCS is
<= the first cut, Q2 when <= the second, Q3 when <= the third, else Q4. Cases whose input has no
SCS (it did not parse) form the group ``unscored``.

Sensitivity
-----------
:func:`sensitivity_table` recomputes every case's CGOQ under each of the 81 configurations of
:func:`polysql.analysis.rewrite.cgoq.sensitivity_grid` from its speedup, input and rewrite SCS and
gate verdict, and reports per method the range of CGOQ@N (and of CGOQ@Valid). A rewrite without an
SCS of its own gets no simplification credit (its SCS is taken to equal the input's).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from polysql.analysis.rewrite.cgoq import CgoqCase, geometric_mean_speedup, sensitivity
from polysql.analysis.rewrite.model import GATED_OUTCOMES, OUTCOMES, CaseOutcome, Timing
from polysql.core.errors import ResultsStoreError

__all__ = [
    "LEDGER_FORMAT",
    "OUTCOME_COLOURS",
    "Row",
    "SensitivityRow",
    "full_denominator_table",
    "load_ledger",
    "outcome_counts",
    "outcome_figure",
    "render_markdown",
    "scs_quartiles",
    "sensitivity_table",
    "write_ledger",
    "write_report",
    "write_tables",
]

LEDGER_FORMAT = "polysql-rewrite-ledger"
LEDGER_VERSION = 1
DPI = 120

# Fixed per outcome so every figure reads the same: greys for declined or failed attempts,
# warm colours for rewrites that broke, greens and blue for rewrites that passed the gate.
OUTCOME_COLOURS: dict[str, str] = {
    "source_acceptance_failure": "#7f7f7f",
    "generation_failure": "#c49c94",
    "no_rewrite": "#d9d9d9",
    "no_op": "#9edae5",
    "execution_failure": "#ff7f0e",
    "unsafe_rewrite": "#d62728",
    "performance_gain": "#2ca02c",
    "simplification_gain": "#98df8a",
    "neutral": "#1f77b4",
    "regression": "#9467bd",
}
assert tuple(OUTCOME_COLOURS) == OUTCOMES, "one colour per outcome, in OUTCOMES order"

_CANDIDATE = frozenset({"no_op", "execution_failure", "unsafe_rewrite"}) | GATED_OUTCOMES
_EXECUTED = frozenset({"unsafe_rewrite"}) | GATED_OUTCOMES
UNSCORED = "unscored"
SCOPES = ("all", "pool", "scs_quartile")


# -- the ledger ----------------------------------------------------------------------------------

_TIMING_COLUMNS = ("input_median", "rewrite_median", "speedup", "warmup", "timeouts")
LEDGER_COLUMNS: tuple[str, ...] = (
    *(f.name for f in fields(CaseOutcome) if f.name not in ("timing", "meta")),
    *_TIMING_COLUMNS, "meta")


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: such numbers are written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(_finite(value), sort_keys=True, default=str)
    return str(value)


def _ledger_record(outcome: CaseOutcome) -> dict[str, Any]:
    record = {name: getattr(outcome, name) for name in LEDGER_COLUMNS
              if name not in _TIMING_COLUMNS and name != "meta"}
    timing = outcome.timing
    record.update(
        input_median=timing.input_median if timing else None,
        rewrite_median=timing.rewrite_median if timing else None,
        speedup=timing.speedup if timing and timing.input_runs and timing.rewrite_runs else None,
        warmup=timing.warmup if timing else None,
        timeouts=timing.timeouts if timing else None,
        meta=outcome.meta)
    return record


def write_ledger(outcomes: Sequence[CaseOutcome], out_dir: str | Path, *,
                 unscored: Mapping[str, str] | None = None) -> list[Path]:
    """``ledger.csv`` (one row per case x method: every field, timing medians and speedup, meta
    as JSON) and ``ledger.json`` (the same rows with every timed run, and ``unscored``: methods
    left out because of an outage -- their model endpoint gave no answer, or their engine went
    away -- with why)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = out / "ledger.csv", out / "ledger.json"
    with csv_path.open("w", encoding="utf-8", newline="") as sink:
        writer = csv.writer(sink)
        writer.writerow(LEDGER_COLUMNS)
        for outcome in outcomes:
            record = _ledger_record(outcome)
            writer.writerow([_csv_cell(record[name]) for name in LEDGER_COLUMNS])
    document = {"format": LEDGER_FORMAT, "version": LEDGER_VERSION,
                "rows": [_finite(outcome.to_dict()) for outcome in outcomes]}
    if unscored:
        document["unscored"] = dict(unscored)
    json_path.write_text(json.dumps(document, indent=2, allow_nan=False, default=str) + "\n",
                         encoding="utf-8")
    return [csv_path, json_path]


def load_ledger(path: str | Path) -> list[CaseOutcome]:
    """The outcomes of a ``ledger.json`` written by :func:`write_ledger`; a ledger of an
    incomplete run (a method left unscored) is refused, so no table built from it leaves that
    method out without a word."""

    file = Path(path)
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ResultsStoreError(f"cannot read rewrite ledger {file}: {exc}") from exc
    if not isinstance(document, dict) or document.get("format") != LEDGER_FORMAT:
        raise ResultsStoreError(f"{file} is not a rewrite ledger (no format {LEDGER_FORMAT!r})")
    if document.get("version") != LEDGER_VERSION:
        raise ResultsStoreError(f"{file}: ledger version {document.get('version')!r} is not "
                                f"{LEDGER_VERSION}")
    unscored = document.get("unscored") or {}
    if unscored:
        listing = "; ".join(f"{name}: {why}" for name, why in unscored.items())
        raise ResultsStoreError(f"{file} is the ledger of an incomplete rewrite run: no outcome "
                                f"of {', '.join(unscored)} was scored because of an outage "
                                f"({listing}); run `polysql rewrite run` again once the model "
                                "endpoint or engine answers")
    outcomes = []
    for number, row in enumerate(document.get("rows", []), start=1):
        try:
            timing = row.pop("timing", None)
            if timing is not None:
                timing = Timing(input_runs=list(timing["input_runs"]),
                                rewrite_runs=list(timing["rewrite_runs"]),
                                warmup=int(timing["warmup"]), timeouts=int(timing["timeouts"]))
            outcomes.append(CaseOutcome(**row, timing=timing))
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultsStoreError(f"{file}: row {number} is not a case outcome: {exc}") from exc
    return outcomes


# -- the full-denominator table -----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Row:
    """One method over one group of cases; see the module docstring for each field."""

    method: str
    scope: str  # all | pool | scs_quartile
    group: str  # "all", the pool name, Q1..Q4 or "unscored"
    detail: str  # what the group covers in words (an SCS quartile's bounds)
    n: int
    source_acceptance_rate: float
    generation_rate: float
    no_rewrite_rate: float
    execution_coverage: float
    result_consistency: float
    unsafe_rate: float
    valid: int
    geomean_speedup: float | None
    speedup_support: int
    cgoq_at_n: float
    cgoq_at_valid: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _methods(outcomes: Iterable[CaseOutcome]) -> list[str]:
    return list(dict.fromkeys(outcome.method for outcome in outcomes))


def _row(method: str, scope: str, group: str, detail: str, cases: Sequence[CaseOutcome]) -> Row:
    n = len(cases)
    count = {name: 0 for name in OUTCOMES}
    for case in cases:
        count[case.outcome] += 1
    gated = [case for case in cases if case.outcome in GATED_OUTCOMES]
    speedups = [case.timing.speedup for case in gated
                if case.timing is not None and case.timing.input_runs and case.timing.rewrite_runs]
    geomean, support = geometric_mean_speedup(speedups)
    cgoq_sum = sum(case.cgoq or 0.0 for case in gated)
    return Row(
        method=method, scope=scope, group=group, detail=detail, n=n,
        source_acceptance_rate=(n - count["source_acceptance_failure"]) / n,
        generation_rate=sum(count[name] for name in _CANDIDATE) / n,
        no_rewrite_rate=count["no_rewrite"] / n,
        execution_coverage=sum(count[name] for name in _EXECUTED) / n,
        result_consistency=len(gated) / n,
        unsafe_rate=count["unsafe_rewrite"] / n,
        valid=len(gated),
        geomean_speedup=geomean, speedup_support=support,
        cgoq_at_n=cgoq_sum / n,
        cgoq_at_valid=cgoq_sum / len(gated) if gated else None,
    )


def _case_key(outcome: CaseOutcome) -> tuple[str, str]:
    return (outcome.pool, outcome.case_id)


def scs_quartiles(outcomes: Sequence[CaseOutcome]) -> tuple[dict[tuple[str, str], str],
                                                            dict[str, str]]:
    """Each case's SCS quartile of the corpus ((pool, case id) -> Q1..Q4 or ``unscored``), and
    each quartile's bounds in words."""
    scs: dict[tuple[str, str], float | None] = {}
    for outcome in outcomes:
        if scs.get(_case_key(outcome)) is None:
            scs[_case_key(outcome)] = outcome.scs_input
    scored = [value for value in scs.values() if value is not None]
    if not scored:
        return {key: UNSCORED for key in scs}, {UNSCORED: "input SCS unknown"}
    cuts = [float(c) for c in np.quantile(np.asarray(scored, dtype=float), [0.25, 0.5, 0.75])]
    assigned: dict[tuple[str, str], str] = {}
    for key, value in scs.items():
        if value is None:
            assigned[key] = UNSCORED
        else:
            assigned[key] = f"Q{1 + sum(value > cut for cut in cuts)}"
    low, high = min(scored), max(scored)
    bounds = [low, *cuts, high]
    details = {f"Q{i + 1}": f"SCS {'[' if i == 0 else '('}{bounds[i]:.1f}, {bounds[i + 1]:.1f}]"
               for i in range(4)}
    details[UNSCORED] = "input SCS unknown"
    return assigned, details


def full_denominator_table(outcomes: Sequence[CaseOutcome]) -> list[Row]:
    """Rows for every method over all cases, then per pool, then per SCS quartile (in that
    order; methods in the order they first appear, pools sorted, quartiles Q1..Q4 then
    ``unscored``). Groups a method has no case in are left out."""
    methods = _methods(outcomes)
    by_method = {method: [o for o in outcomes if o.method == method] for method in methods}
    rows = [_row(method, "all", "all", "every case", by_method[method]) for method in methods]
    for pool in sorted({o.pool for o in outcomes}):
        for method in methods:
            cases = [o for o in by_method[method] if o.pool == pool]
            if cases:
                rows.append(_row(method, "pool", pool, f"pool {pool}", cases))
    quartile, details = scs_quartiles(outcomes)
    for group in ("Q1", "Q2", "Q3", "Q4", UNSCORED):
        for method in methods:
            cases = [o for o in by_method[method] if quartile[_case_key(o)] == group]
            if cases:
                rows.append(_row(method, "scs_quartile", group, details[group], cases))
    return rows


def outcome_counts(outcomes: Sequence[CaseOutcome]) -> dict[str, dict[str, int]]:
    """Per method, how many cases ended in each outcome (every outcome listed, in order)."""
    counts: dict[str, dict[str, int]] = {}
    for method in _methods(outcomes):
        counts[method] = {name: 0 for name in OUTCOMES}
    for outcome in outcomes:
        counts[outcome.method][outcome.outcome] += 1
    return counts


# -- sensitivity ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SensitivityRow:
    """How far a method's CGOQ@N (and CGOQ@Valid) move over the 81 CGOQ configurations."""

    method: str
    n: int
    valid: int
    cgoq_at_n_default: float
    cgoq_at_n_min: float
    cgoq_at_n_max: float
    cgoq_at_n_median: float
    cgoq_at_valid_default: float | None
    cgoq_at_valid_min: float | None
    cgoq_at_valid_max: float | None
    cgoq_at_valid_median: float | None
    configurations: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cgoq_case(outcome: CaseOutcome) -> CgoqCase:
    timing = outcome.timing
    timed = timing is not None and bool(timing.input_runs) and bool(timing.rewrite_runs)
    passed = outcome.outcome in GATED_OUTCOMES and timed
    scs_input = outcome.scs_input if outcome.scs_input is not None else 0.0
    scs_rewrite = outcome.scs_rewrite if outcome.scs_rewrite is not None else scs_input
    return CgoqCase(speedup=timing.speedup if passed and timing else None,
                    scs_input=scs_input, scs_rewrite=scs_rewrite, consistent=passed)


def _mean_counting_zero(values: Sequence[float | None]) -> float:
    """The full-denominator mean: a case without a score counts 0."""
    return sum(value or 0.0 for value in values) / len(values)


def sensitivity_table(outcomes: Sequence[CaseOutcome]) -> list[SensitivityRow]:
    """Per method, the range of CGOQ@N and CGOQ@Valid over the sensitivity grid."""
    rows = []
    for method in _methods(outcomes):
        cases = [o for o in outcomes if o.method == method]
        over_n = sensitivity([_cgoq_case(o) for o in cases], _mean_counting_zero)
        gated = [_cgoq_case(o) for o in cases if o.outcome in GATED_OUTCOMES]
        over_valid = sensitivity(gated, _mean_counting_zero) if gated else None
        rows.append(SensitivityRow(
            method=method, n=len(cases), valid=len(gated),
            cgoq_at_n_default=over_n.at_default, cgoq_at_n_min=over_n.minimum,
            cgoq_at_n_max=over_n.maximum, cgoq_at_n_median=over_n.median,
            cgoq_at_valid_default=over_valid.at_default if over_valid else None,
            cgoq_at_valid_min=over_valid.minimum if over_valid else None,
            cgoq_at_valid_max=over_valid.maximum if over_valid else None,
            cgoq_at_valid_median=over_valid.median if over_valid else None,
            configurations=len(over_n.per_config)))
    return rows


# -- the figure ----------------------------------------------------------------------------------

def outcome_figure(outcomes: Sequence[CaseOutcome], out_dir: str | Path,
                   *, stem: str = "rewrite_outcomes") -> list[Path]:
    """Terminal outcomes per method as stacked horizontal bars (share of the method's cases,
    counts written in the wider segments); PNG and SVG. Nothing to draw: no files, ``[]``."""
    counts = outcome_counts(outcomes)
    if not counts:
        return []
    methods = list(counts)
    height = 1.8 + 0.45 * len(methods)
    figure = Figure(figsize=(9.0, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    positions = np.arange(len(methods))
    left = np.zeros(len(methods))
    present = [name for name in OUTCOMES if any(counts[m][name] for m in methods)]
    totals = np.array([sum(counts[m].values()) for m in methods], dtype=float)
    for name in OUTCOMES:
        values = np.array([counts[m][name] for m in methods], dtype=float)
        shares = 100.0 * values / totals
        axes.barh(positions, shares, left=left, color=OUTCOME_COLOURS[name], edgecolor="white",
                  linewidth=0.5, height=0.7)
        for y, (share, value, start) in enumerate(zip(shares, values, left, strict=True)):
            if share >= 6:
                axes.text(start + share / 2, y, f"{int(value)}", ha="center", va="center",
                          fontsize=8, color="black")
        left += shares
    axes.set_yticks(positions, labels=[_short_label(m) for m in methods])
    axes.invert_yaxis()  # first method on top, as in the table
    axes.set_xlim(0, 100)
    axes.set_xlabel("share of cases (%)")
    axes.set_title("Terminal outcome per method (every case counted)")
    figure.legend(handles=[Patch(color=OUTCOME_COLOURS[name], label=name.replace("_", " "))
                           for name in present],
                  loc="outside lower center", ncols=min(4, len(present)), fontsize=8,
                  frameon=False)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.png", out / f"{stem}.svg"]
    for path in paths:
        figure.savefig(path)
    return paths


def _short_label(name: str, limit: int = 40) -> str:
    if len(name) <= limit:
        return name
    keep = (limit - 3) // 2
    return f"{name[:keep]}...{name[-keep:]}"


# -- tables and report ---------------------------------------------------------------------------

TABLE_FILE = "rewrite_table"
SENSITIVITY_FILE = "rewrite_sensitivity"
REPORT_FILE = "rewrite_report.md"


def _write_csv_json(rows: Sequence[Row] | Sequence[SensitivityRow], out: Path, stem: str,
                    columns: Sequence[str]) -> list[Path]:
    csv_path, json_path = out / f"{stem}.csv", out / f"{stem}.json"
    with csv_path.open("w", encoding="utf-8", newline="") as sink:
        writer = csv.writer(sink)
        writer.writerow(columns)
        for row in rows:
            data = row.to_dict()
            writer.writerow([_csv_cell(data[name]) for name in columns])
    json_path.write_text(json.dumps([_finite(row.to_dict()) for row in rows], indent=2,
                                    allow_nan=False) + "\n", encoding="utf-8")
    return [csv_path, json_path]


def write_tables(outcomes: Sequence[CaseOutcome], out_dir: str | Path, *,
                 sensitivity: bool = False, figures: Sequence[str | Path] = (),
                 unscored: Mapping[str, str] | None = None) -> list[Path]:
    """The full-denominator table as ``rewrite_table.csv``/``.json``, the sensitivity ranges as
    ``rewrite_sensitivity.csv``/``.json`` when asked for, and ``rewrite_report.md`` rendering
    them (linking ``figures``, paths of images written next to it)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = full_denominator_table(outcomes)
    paths = _write_csv_json(table, out, TABLE_FILE, [f.name for f in fields(Row)])
    ranges = sensitivity_table(outcomes) if sensitivity else None
    if ranges is not None:
        paths += _write_csv_json(ranges, out, SENSITIVITY_FILE,
                                 [f.name for f in fields(SensitivityRow)])
    report = out / REPORT_FILE
    report.write_text(render_markdown(table, outcome_counts(outcomes), ranges,
                                      figures=[Path(f).name for f in figures], unscored=unscored),
                      encoding="utf-8")
    return [*paths, report]


def write_report(outcomes: Sequence[CaseOutcome], out_dir: str | Path, *,
                 sensitivity: bool = False,
                 unscored: Mapping[str, str] | None = None) -> list[Path]:
    """Ledger, figure, tables and the markdown report, all into ``out_dir``; ``unscored``
    names methods with no outcome because of an outage (and why)."""
    paths = write_ledger(outcomes, out_dir, unscored=unscored)
    figures = outcome_figure(outcomes, out_dir)
    return [*paths, *figures,
            *write_tables(outcomes, out_dir, sensitivity=sensitivity,
                          figures=[f for f in figures if f.suffix == ".png"], unscored=unscored)]


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def _number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _markdown_table(header: Sequence[str], body: Iterable[Sequence[str]]) -> list[str]:
    escape = str.maketrans({"|": "\\|"})
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.translate(escape) for cell in row) + " |" for row in body]
    return lines


_TABLE_HEADER = ("N", "accepted", "generated", "no rewrite", "executed", "consistent", "unsafe",
                 "geomean speedup (support)", "CGOQ@N", "CGOQ@Valid")


def _table_cells(row: Row) -> list[str]:
    speedup = "-" if row.geomean_speedup is None else f"{row.geomean_speedup:.2f}x"
    return [str(row.n), _percent(row.source_acceptance_rate), _percent(row.generation_rate),
            _percent(row.no_rewrite_rate), _percent(row.execution_coverage),
            _percent(row.result_consistency), _percent(row.unsafe_rate),
            f"{speedup} ({row.speedup_support})", _number(row.cgoq_at_n),
            _number(row.cgoq_at_valid)]


def render_markdown(table: Sequence[Row], counts: Mapping[str, Mapping[str, int]],
                    ranges: Sequence[SensitivityRow] | None = None, *,
                    figures: Sequence[str] = (),
                    unscored: Mapping[str, str] | None = None) -> str:
    """The report: the full-denominator table (all, per pool, per SCS quartile), the outcome
    counts and, when computed, the CGOQ sensitivity ranges; first, any method left unscored."""
    lines = ["# Query rewrite evaluation", "",
             "Every case counts in every rate (full denominator N). A rewrite is *consistent* "
             "when it ran and its result passed the case's contract; CGOQ@N scores every other "
             "case 0, CGOQ@Valid averages over consistent rewrites only.", ""]
    if unscored:
        lines += ["## Not scored (incomplete run)", "",
                  "These methods have no row below: an outage (their model endpoint gave no "
                  "answer, or their engine went away) is not counted as the method's failures. "
                  "Run again once it answers.", ""]
        lines += [f"- `{name}`: {why}" for name, why in unscored.items()] + [""]
    sections = (("all", "All cases", "method"), ("pool", "Per pool", "pool"),
                ("scs_quartile", "By SCS quartile of the input", "quartile"))
    for scope, title, label in sections:
        rows = [row for row in table if row.scope == scope]
        if not rows:
            continue
        lines += [f"## {title}", ""]
        if scope == "all":
            body = [[row.method, *_table_cells(row)] for row in rows]
            lines += _markdown_table(("method", *_TABLE_HEADER), body)
        else:
            body = [[row.group if scope == "pool" else f"{row.group} ({row.detail})",
                     row.method, *_table_cells(row)] for row in rows]
            lines += _markdown_table((label, "method", *_TABLE_HEADER), body)
        lines.append("")
    lines += ["## Terminal outcomes", ""]
    lines += _markdown_table(("method", *OUTCOMES),
                             [[method, *(str(c[name]) for name in OUTCOMES)]
                              for method, c in counts.items()])
    lines.append("")
    for figure in figures:
        lines += [f"![Terminal outcomes per method]({figure})", ""]
    if ranges:
        configurations = ranges[0].configurations
        lines += ["## CGOQ sensitivity", "",
                  f"CGOQ recomputed under each of the {configurations} parameter "
                  "configurations (delta, lambda, reference speedup, simplification ramp).", ""]
        body = [[r.method, str(r.n), _number(r.cgoq_at_n_default), _number(r.cgoq_at_n_min),
                 _number(r.cgoq_at_n_max), _number(r.cgoq_at_n_median),
                 _number(r.cgoq_at_valid_default), _number(r.cgoq_at_valid_min),
                 _number(r.cgoq_at_valid_max)] for r in ranges]
        lines += _markdown_table(("method", "N", "CGOQ@N default", "min", "max", "median",
                                  "CGOQ@Valid default", "min", "max"), body)
        lines.append("")
    return "\n".join(lines)

