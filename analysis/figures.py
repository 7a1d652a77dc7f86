"""The figures of an analysis report, drawn from :class:`~polysql.analysis.findings.Findings`.

Only matplotlib's object API is used (a ``Figure`` with an Agg canvas, never pyplot), so no
global figure state is touched and figures can be drawn from several threads at once. Every
function writes one PNG and one SVG into ``out_dir`` and returns the two paths; a figure that
would have nothing to show (one engine, one model, no failures) is skipped and returns ``[]``
instead of writing an empty image.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import Normalize, to_rgb
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FixedLocator, PercentFormatter

from polysql.analysis.categories import CATEGORIES, LOGICAL, SYNTACTIC, UNCLASSIFIED
from polysql.analysis.findings import POOLED, Findings, TaxonomyRow
from polysql.analysis.signals import SIGNAL_FAMILIES

DPI = 120
#: p-values below this are drawn (and printed) as "<1e-6": the colour scale stops there
P_FLOOR = 1e-6
#: engine and model names longer than this are shortened in the middle on axes (tables keep them)
LABEL_LIMIT = 40
#: accuracy labels over bars: font size, and the gap (points) above a whisker and above the label
LABEL_FONT = 7.0
LABEL_PAD = 3.0

FAMILY_COLOURS: dict[str, str] = {
    "syntax": "#d62728", "schema": "#ff7f0e", "semantics": "#9467bd",
    "resource": "#8c564b", "refused": "#7f7f7f", "result": "#1f77b4",
}
# Logical categories in cool colours, the dialect category in red: the split the report is about.
CATEGORY_COLOURS: dict[str, str] = {
    "schema_linking_error": "#1f77b4", "filtering_error": "#17becf",
    "aggregation_error": "#2ca02c", "dialect_error": "#d62728",
    "invalid_evaluation": "#8c564b", UNCLASSIFIED: "#c7c7c7",
}
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "h", "<", ">")


# --- helpers --------------------------------------------------------------------------------------

def figure_stem(name: str, scope: str | None = None) -> str:
    """File name (no suffix) of a figure, unique per scope even on case-insensitive disks."""
    if scope is None:
        return name
    if scope == POOLED:
        return f"{name}_pooled"
    slug = re.sub(r"[^a-z0-9._-]+", "_", scope.lower()).strip("._") or "scope"
    if slug != scope:  # characters were replaced or lowered: two scopes could share the slug
        slug += "-" + hashlib.sha1(scope.encode()).hexdigest()[:6]
    return f"{name}_model_{slug}"  # "model_": a model named "pooled" is not the pooled scope


def scope_title(scope: str) -> str:
    return ("pooled over models (unit: a (model, question) pair)" if scope == POOLED
            else f"model {scope}")


def _save(fig: Figure, out_dir: Path, stem: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    png, svg = out_dir / f"{stem}.png", out_dir / f"{stem}.svg"
    fig.savefig(png, format="png", dpi=DPI, facecolor="white")
    # no date in the SVG: the same findings give the same file
    fig.savefig(svg, format="svg", facecolor="white", metadata={"Date": None})
    return [png, svg]


def _shorten(names: Sequence[str], limit: int = LABEL_LIMIT) -> list[str]:
    """Axis labels: over-long names cut in the middle, unless that would make two labels equal."""
    half = (limit - 1) // 2
    short = [n if len(n) <= limit else f"{n[:half]}…{n[-half:]}" for n in names]
    return short if len(set(short)) == len(set(names)) else list(names)


def _label_room(labels: Sequence[str], fontsize: float = 9.0, angle: float = 35.0) -> float:
    """Inches that rotated tick labels need below an axis (about 0.55 em per character)."""
    longest = max((len(label) for label in labels), default=0)
    return longest * fontsize * 0.55 / 72 * math.sin(math.radians(angle)) + 0.2


def _rotation(labels: Sequence[str]) -> float:
    return 0.0 if len(labels) <= 6 and all(len(label) <= 10 for label in labels) else 35.0


def _set_xlabels(ax: Axes, labels: Sequence[str], rotation: float) -> None:
    ax.set_xticks(range(len(labels)), labels, fontsize=9, rotation=rotation,
                  ha="right" if rotation else "center", rotation_mode="anchor")


def _predictor_colours(predictors: Sequence[str]) -> dict[str, tuple[float, ...]]:
    cmap = colormaps["tab10" if len(predictors) <= 10 else "tab20"]
    return {p: cmap(i % cmap.N) for i, p in enumerate(predictors)}


def _ink(background: Sequence[float]) -> str:
    """Black or white text, whichever reads better on ``background``."""
    r, g, b = to_rgb(background)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "white"


def _cell_p(p: float) -> str:
    if p < P_FLOOR:
        return "<1e-6"
    return f"{p:.2g}" if p >= 0.001 else f"{p:.1e}"


def _engine_order(findings: Findings) -> list[str]:
    """Reference first, then by mean accuracy over every model and dataset (best first)."""
    scores: dict[str, list[float]] = {}
    for row in findings.accuracy:
        scores.setdefault(row.engine, []).append(row.accuracy)
    mean = {e: sum(v) / len(v) for e, v in scores.items()}
    return sorted(mean, key=lambda e: (e != findings.reference, -mean[e], e))


def _ordered(present: set[str], preferred: Sequence[str]) -> list[str]:
    known = [x for x in preferred if x in present]
    return known + sorted(present - set(known))


# --- accuracy -------------------------------------------------------------------------------------

def accuracy_figure(findings: Findings, out_dir: Path) -> list[Path]:
    """Accuracy per engine with Wilson intervals, one bar colour per model, a panel per dataset."""
    fig = accuracy_plot(findings)
    return [] if fig is None else _save(fig, out_dir, figure_stem("accuracy"))


def accuracy_plot(findings: Findings) -> Figure | None:
    """The figure :func:`accuracy_figure` writes, laid out and labelled (None: no rows)."""
    rows = findings.accuracy
    if not rows:
        return None
    engines = _engine_order(findings)
    predictors = _ordered({r.predictor for r in rows}, findings.predictors)
    datasets = _ordered({r.dataset for r in rows}, findings.datasets)
    colours = _predictor_colours(predictors)
    labels = _shorten(engines)
    labels = [f"{label} (ref.)" if e == findings.reference else label
              for label, e in zip(labels, engines, strict=True)]
    rotation = _rotation(labels)
    group = 0.8
    width = min(22.0, max(6.5, 1.6 + len(engines) * max(0.8, 0.28 * len(predictors))))
    height = 0.9 + 2.9 * len(datasets) + (_label_room(labels) if rotation else 0.3)
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(len(datasets), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    bar = group / len(predictors)
    annotate = len(engines) * len(predictors) <= 32
    values: list[_BarLabel] = []  # each bar's accuracy, written once the layout is known
    for ax, dataset in zip(axes, datasets, strict=True):
        found = {(r.predictor, r.engine): r for r in rows if r.dataset == dataset}
        for i, predictor in enumerate(predictors):
            xs, acc, low, high = [], [], [], []
            for x, engine in enumerate(engines):
                row = found.get((predictor, engine))
                if row is not None:
                    xs.append(x - group / 2 + bar * (i + 0.5))
                    acc.append(row.accuracy)
                    # at 0% and 100% the interval's bound can miss the estimate by float noise
                    low.append(max(0.0, row.accuracy - row.ci_low))
                    high.append(max(0.0, row.ci_high - row.accuracy))
            if not xs:
                continue
            ax.bar(xs, acc, width=bar * 0.92, color=colours[predictor], label=predictor)
            ax.errorbar(xs, acc, yerr=[low, high], fmt="none", ecolor="#222222", elinewidth=1,
                        capsize=_capsize(bar))
            values += [_BarLabel(ax, x, a + up, f"{100 * a:.1f}")
                       for x, a, up in zip(xs, acc, high, strict=True)]
        ax.set_ylim(0, 1.02)
        ax.yaxis.set_major_locator(FixedLocator([0, 0.25, 0.5, 0.75, 1.0]))
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_ylabel("accuracy")
        ax.grid(axis="y", color="#dddddd", linewidth=0.8)
        ax.set_axisbelow(True)
        ax.set_title(f"dataset {dataset}", fontsize=10, loc="left")
        ax.set_xlim(-0.6, len(engines) - 0.4)
    _set_xlabels(axes[-1], labels, rotation)
    handles = [Patch(color=colours[p], label=p) for p in predictors]
    # beside the plot, not above it: an outside legend on top collides with the title
    fig.legend(handles=handles, loc="outside right upper", fontsize=9, frameon=False,
               title="model", title_fontsize=9)
    title = "Accuracy per engine with 95% Wilson intervals"
    fig.suptitle(title + ("\n(numbers: accuracy in %)" if annotate else ""), fontsize=11)
    if annotate and not _label_bars(fig, list(axes), values, bar, _capsize(bar)):
        fig.suptitle(title, fontsize=11)  # the bars are too narrow for any label
    return fig


def _capsize(bar: float) -> float:
    """Length in points of the whisker caps of bars ``bar`` data units wide."""
    return min(4.0, 40 * bar)


@dataclass(frozen=True, slots=True)
class _BarLabel:
    ax: Axes
    x: float  # the bar's centre
    whisker: float  # the top of its upper whisker (data units)
    text: str


def _label_bars(fig: Figure, axes: list[Axes], labels: Sequence[_BarLabel], slot: float,
                capsize: float) -> bool:
    """Write each bar's value just above its upper whisker, so no whisker crosses a label.

    A label sits ``LABEL_PAD`` points above its own whisker's top; across, it must clear the
    neighbouring bars' whiskers and caps and their labels, which stand ``slot`` data units
    away. That is measured on the laid-out figure, in points: labels are written across when
    they clear, upright when only that clears, and not at all when neither does (False is
    returned). The y axis is then raised just enough for the highest label to stay inside the
    plot. Every panel shares the x and y axes, so the first one's size holds for all.
    """
    if not labels:
        return True
    FigureCanvasAgg(fig)
    fig.draw_without_rendering()  # the final layout: labels are kept out of it (in_layout off)
    renderer = fig.canvas.get_renderer()
    points = fig.dpi / 72.0  # display pixels per point
    box = axes[0].get_window_extent(renderer)
    left, right = axes[0].get_xlim()
    slot_pt = slot * box.width / (right - left) / points
    font = FontProperties(size=LABEL_FONT)
    sizes = [renderer.get_text_width_height_descent(label.text, font, ismath=False)
             for label in labels]
    wide = max(width for width, _, _ in sizes) / points
    tall = max(height for _, height, _ in sizes) / points

    def clears(across: float) -> bool:  # a label this wide, centred on its bar
        return (across + LABEL_PAD <= slot_pt  # the neighbour's label, as wide
                and across / 2 + capsize / 2 + LABEL_PAD <= slot_pt)  # the neighbour's cap

    if clears(wide):
        rotation, upward = 0.0, tall
    elif clears(tall):
        rotation, upward = 90.0, wide
    else:
        return False
    # with the axis ending at `top`, a label on the highest whisker must end below it:
    # whisker + (pad + label + pad) points <= top, and one point is top / height_pt data units
    height_pt = box.height / points
    room = (2 * LABEL_PAD + upward) / height_pt
    if room >= 0.5:
        return False  # panels too short to hold labels above the whiskers
    top = max(1.02, max(label.whisker for label in labels) / (1 - room))
    for ax in axes:
        ax.set_ylim(0, top)
    for label in labels:
        label.ax.annotate(label.text, (label.x, label.whisker), xytext=(0, LABEL_PAD),
                          textcoords="offset points", ha="center", va="bottom",
                          fontsize=LABEL_FONT, rotation=rotation, annotation_clip=False,
                          in_layout=False)
    return True


# --- McNemar heatmap ------------------------------------------------------------------------------

def _scope_engine_order(findings: Findings, scope: str, engines: set[str]) -> list[str]:
    # by the scope's own accuracy, so engines of one tier sit next to each other on the map
    accuracy = {t.engine: t.accuracy for t in findings.tiers if t.scope == scope}
    return sorted(engines, key=lambda e: (-accuracy.get(e, -1.0), e))


def mcnemar_figure(findings: Findings, scope: str, out_dir: Path) -> list[Path]:
    """Holm-adjusted McNemar p of every engine pair within one scope, as an annotated heatmap."""
    tests = [t for t in findings.pair_tests if t.scope == scope]
    if not tests:
        return []
    engines = _scope_engine_order(findings, scope, {t.first for t in tests}
                                  | {t.second for t in tests})
    index = {e: i for i, e in enumerate(engines)}
    n = len(engines)
    p = np.full((n, n), np.nan)
    significant = np.zeros((n, n), dtype=bool)
    for t in tests:
        for x, y in ((t.first, t.second), (t.second, t.first)):
            p[index[x], index[y]] = t.p_holm
            significant[index[x], index[y]] = t.significant
    strength = np.ma.masked_invalid(-np.log10(np.clip(p, P_FLOOR, 1.0)))
    top = -math.log10(P_FLOOR)
    cmap = colormaps["YlOrRd"].with_extremes(bad="#f0f0f0")
    norm = Normalize(0.0, top)

    labels = _shorten(engines)
    rotation = 35.0 if n > 3 or any(len(label) > 8 for label in labels) else 0.0
    cell = 0.85 if n <= 8 else 0.6
    side = max((len(label) for label in labels), default=0) * 9 * 0.55 / 72 + 0.3
    width = max(5.0, n * cell + side + 1.8)
    height = max(3.6, n * cell + (_label_room(labels) if rotation else 0.4) + 1.0)
    fig = Figure(figsize=(width, height), layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(strength, cmap=cmap, norm=norm, aspect="equal")
    fontsize = 9 if n <= 6 else 7 if n <= 10 else 6
    for i in range(n):
        for j in range(n):
            if i == j:
                ax.text(j, i, "–", ha="center", va="center", fontsize=fontsize, color="#888888")
            elif math.isnan(p[i, j]):
                ax.text(j, i, "n/a", ha="center", va="center", fontsize=fontsize, color="#666666")
            else:
                colour = _ink(cmap(norm(float(strength[i, j]))))
                mark = "*" if significant[i, j] else ""
                ax.text(j, i, _cell_p(float(p[i, j])) + mark, ha="center", va="center",
                        fontsize=fontsize, color=colour,
                        fontweight="bold" if significant[i, j] else "normal")
                if significant[i, j]:
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False,
                                           edgecolor="black", linewidth=1.8))
    ax.set_xticks(range(n), labels, fontsize=9, rotation=rotation,
                  ha="right" if rotation else "center", rotation_mode="anchor")
    ax.set_yticks(range(n), labels, fontsize=9)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    bar = fig.colorbar(image, ax=ax, shrink=0.85)
    ticks = list(range(int(top) + 1))
    bar.set_ticks(ticks, labels=["1"] + [f"1e-{k}" for k in ticks[1:-1]] + [_cell_p(0.0)])
    bar.set_label("Holm-adjusted p (log scale)")
    bar.ax.axhline(-math.log10(findings.settings.alpha), color="black", linewidth=1.5)
    ax.set_title(f"McNemar, {scope_title(scope)}\n"
                 f"boxed and *: significant at alpha = {findings.settings.alpha:g}",
                 fontsize=10)
    return _save(fig, out_dir, figure_stem("mcnemar", scope))


# --- tiers ----------------------------------------------------------------------------------------

def tier_scopes(findings: Findings) -> list[str]:
    """The pooled scope when there is one (it summarises the models); else every model's."""
    counts: dict[str, int] = {}
    for row in findings.tiers:
        counts[row.scope] = counts.get(row.scope, 0) + 1
    with_pairs = [s for s, count in counts.items() if count >= 2]  # one engine: nothing to group
    return [POOLED] if POOLED in with_pairs else with_pairs


def tier_figure(findings: Findings, out_dir: Path) -> list[Path]:
    """Engines ordered by accuracy, tiers of engines not told apart drawn as bracketed bands."""
    scopes = tier_scopes(findings)
    if not scopes:
        return []
    panels = {s: sorted((t for t in findings.tiers if t.scope == s),
                        key=lambda t: (t.tier, -t.accuracy, t.engine)) for s in scopes}
    widest = max(len(rows) for rows in panels.values())
    all_labels = [label for rows in panels.values()
                  for label in _shorten([t.engine for t in rows])]
    rotation = _rotation(all_labels)
    room = _label_room(all_labels) if rotation else 0.3
    width = min(20.0, max(6.0, 1.4 + widest * 0.9))
    fig = Figure(figsize=(width, 0.6 + len(scopes) * (2.9 + room)), layout="constrained")
    axes = fig.subplots(len(scopes), 1, squeeze=False)[:, 0]
    palette = colormaps["Set2"]
    for ax, scope in zip(axes, scopes, strict=True):
        rows = panels[scope]
        xs = np.arange(len(rows))
        colours = [palette((t.tier - 1) % palette.N) for t in rows]
        ax.bar(xs, [t.accuracy for t in rows], width=0.6, color=colours, edgecolor="#444444",
               linewidth=0.6)
        for x, t in zip(xs, rows, strict=True):
            ax.text(x, t.accuracy + 0.015, f"{100 * t.accuracy:.1f}%", ha="center",
                    va="bottom", fontsize=8)
        for tier in sorted({t.tier for t in rows}):
            members = [x for x, t in zip(xs, rows, strict=True) if t.tier == tier]
            first, last = min(members) - 0.42, max(members) + 0.42
            colour = palette((tier - 1) % palette.N)
            ax.axvspan(first, last, color=colour, alpha=0.22, linewidth=0)
            ax.plot([first, first, last, last], [1.06, 1.09, 1.09, 1.06], color="#333333",
                    linewidth=1.2)
            ax.text((first + last) / 2, 1.1, f"tier {tier}", ha="center", va="bottom",
                    fontsize=9, fontweight="bold")
        ax.set_ylim(0, 1.22)
        ax.set_xlim(-0.6, len(rows) - 0.4)
        ax.yaxis.set_major_locator(FixedLocator([0, 0.25, 0.5, 0.75, 1.0]))
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_ylabel("accuracy")
        ax.set_axisbelow(True)
        ax.grid(axis="y", color="#e0e0e0", linewidth=0.8)
        _set_xlabels(ax, _shorten([t.engine for t in rows]), rotation)
        ax.set_title(scope_title(scope), fontsize=10, loc="left")
    fig.suptitle("Difficulty tiers\nengines in one tier are not significantly different "
                 f"(Holm, alpha = {findings.settings.alpha:g})", fontsize=10)
    return _save(fig, out_dir, figure_stem("tiers"))


# --- ranks ----------------------------------------------------------------------------------------

def rank_figure(findings: Findings, out_dir: Path) -> list[Path]:
    """Bump chart of model ranks across engines; needs two models and two engines."""
    models = _ordered({r.predictor for r in findings.ranks}, findings.predictors)
    present = {r.engine for r in findings.ranks}
    engines = [e for e in _engine_order(findings) if e in present]
    engines += sorted(present - set(engines))
    if len(models) < 2 or len(engines) < 2:
        return []
    rank = {(r.predictor, r.engine): r.rank for r in findings.ranks}
    colours = _predictor_colours(models)
    labels = _shorten(engines)
    rotation = _rotation(labels)
    width = min(20.0, max(6.5, 2.0 + len(engines) * 1.1))
    height = 1.6 + 0.45 * len(models) + (_label_room(labels) if rotation else 0.3) + 1.0
    fig = Figure(figsize=(width, max(4.0, height)), layout="constrained")
    ax = fig.subplots()
    # tied models sit on the same point; nudge them apart sideways so every marker shows
    nudge: dict[tuple[str, str], float] = {}
    for engine in engines:
        by_rank: dict[float, list[str]] = {}
        for model in models:
            if (model, engine) in rank:
                by_rank.setdefault(rank[(model, engine)], []).append(model)
        for tied in by_rank.values():
            for j, model in enumerate(tied):
                nudge[(model, engine)] = (j - (len(tied) - 1) / 2) * 0.07
    for i, model in enumerate(models):
        points = [(x + nudge[(model, e)], rank[(model, e)]) for x, e in enumerate(engines)
                  if (model, e) in rank]
        if not points:
            continue
        xs, ys = zip(*points, strict=True)
        ax.plot(xs, ys, color=colours[model], linewidth=2.4, marker=_MARKERS[i % len(_MARKERS)],
                markersize=9, markeredgecolor="white", label=model)
    ax.set_ylim(len(models) + 0.5, 0.5)  # rank 1 on top
    ax.yaxis.set_major_locator(FixedLocator(list(range(1, len(models) + 1))))
    ax.set_ylabel("rank (1 = best; ties share the mean rank)")
    ax.set_xlim(-0.3, len(engines) - 0.7)
    ax.grid(color="#e6e6e6", linewidth=0.8)
    _set_xlabels(ax, labels, rotation)
    fig.legend(loc="outside right upper", fontsize=9, frameon=False, title="model",
               title_fontsize=9)
    fig.suptitle("Model ranks per engine", fontsize=11)
    return _save(fig, out_dir, figure_stem("ranks"))


# --- error taxonomy -------------------------------------------------------------------------------

def _stacked(findings: Findings, counts: Callable[[TaxonomyRow], dict[str, int]],
             order: Sequence[str], colours: dict[str, str], names: dict[str, str], title: str,
             out_dir: Path, stem: str) -> list[Path]:
    """Horizontal stacked bars, one per (model, engine), in the order of the other figures."""
    predictors, engine_order = findings.predictors, _engine_order(findings)
    rows: Sequence[TaxonomyRow] = findings.taxonomy
    rows = [r for r in rows if sum(counts(r).values())]
    if not rows:
        return []
    models = {m: i for i, m in enumerate(_ordered({r.predictor for r in rows}, predictors))}
    engines = {e: i for i, e in enumerate(_ordered({r.engine for r in rows}, engine_order))}
    rows = sorted(rows, key=lambda r: (models[r.predictor], engines[r.engine]))
    keys = _ordered({k for r in rows for k, v in counts(r).items() if v}, order)
    extra = colormaps["tab20"]
    colour = {k: colours.get(k, extra(i % extra.N)) for i, k in enumerate(keys)}
    # one group of bars per model, a gap between groups
    ys, y, previous = [], 0.0, None
    for r in rows:
        if previous is not None and r.predictor != previous:
            y += 0.6
        ys.append(y)
        y += 1.0
        previous = r.predictor
    labels = _shorten([f"{r.predictor} @ {r.engine}" for r in rows], limit=2 * LABEL_LIMIT)
    totals = np.array([sum(counts(r).get(k, 0) for k in keys) for r in rows], dtype=float)
    peak = float(totals.max())
    label_width = max(len(label) for label in labels) * 9 * 0.55 / 72
    fig = Figure(figsize=(min(20.0, max(8.0, 5.5 + label_width)),
                          max(3.4, 1.7 + 0.36 * y + 0.25 * math.ceil(len(keys) / 3))),
                 layout="constrained")
    ax = fig.subplots()
    left = np.zeros(len(rows))
    for key in keys:
        values = np.array([counts(r).get(key, 0) for r in rows], dtype=float)
        ax.barh(ys, values, left=left, height=0.8, color=colour[key], label=names.get(key, key),
                edgecolor="white", linewidth=0.6)
        for yy, v, start in zip(ys, values, left, strict=True):
            if v and v >= 0.05 * peak:
                ax.text(start + v / 2, yy, f"{int(v)}", ha="center", va="center", fontsize=8,
                        color=_ink(colour[key]))
        left += values
    for yy, total in zip(ys, totals, strict=True):
        ax.text(total + 0.01 * peak, yy, f"{int(total)}", va="center", fontsize=8)
    ax.set_yticks(ys, labels, fontsize=9)
    ax.set_ylim(y - 0.4, -0.6)  # first row on top
    ax.set_xlim(0, peak * 1.1)
    ax.set_xlabel("failed predictions")
    ax.grid(axis="x", color="#e6e6e6", linewidth=0.8)
    ax.set_axisbelow(True)
    fig.legend(loc="outside lower center", ncols=min(len(keys), 3), fontsize=9, frameon=False)
    fig.suptitle(title, fontsize=11)
    return _save(fig, out_dir, stem)


def taxonomy_figure(findings: Findings, out_dir: Path) -> list[Path]:
    """Failures per (model, engine), stacked by deterministic signal family."""
    return _stacked(findings, lambda r: r.families, list(SIGNAL_FAMILIES),
                    FAMILY_COLOURS, {}, "Failures by execution signal family",
                    out_dir, figure_stem("taxonomy_families"))


def category_figure(findings: Findings, out_dir: Path) -> list[Path]:
    """Failures per (model, engine), stacked by the classifier's category; only if one ran."""
    if not findings.classified:
        return []
    names = {c: f"{c} (logical)" for c in LOGICAL} | {c: f"{c} (dialect)" for c in SYNTACTIC}
    return _stacked(findings, lambda r: r.categories, [*CATEGORIES, UNCLASSIFIED],
                    CATEGORY_COLOURS, names, "Failures by classifier category",
                    out_dir, figure_stem("taxonomy_categories"))
