"""The benchmarks' results drawn: one PNG per run, beside the table each script prints.

Every chart is a set of horizontal bars, one per measured thing, with its number written at its
end; a bar may carry a target (a tick across it) so a ratio can be read against it at a glance.
Nothing here measures anything: the scripts pass what they printed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: where a benchmark draws unless told otherwise (relative to the current folder)
DEFAULT_FOLDER = Path("benchmark-figures")
_OURS, _BASELINE, _TARGET = "#1f6fb4", "#9aa5b1", "#d1495b"


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    value: float | None  # None: not measured (drawn as a gap, labelled "not run")
    text: str = ""  # written at the bar's end (default: the value)
    ours: bool = True  # polysql's own bar (coloured) or a baseline's (grey)
    target: float | None = None  # a tick across the bar at this value


def figure_path(given: Path | None, name: str) -> Path:
    """``given``, or ``benchmark-figures/<name>.png``; its folder is created."""
    path = given if given is not None else DEFAULT_FOLDER / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def draw_bars(path: Path, title: str, bars: list[Bar], *, xlabel: str, note: str = "",
              baseline: float | None = None, baseline_label: str = "baseline") -> Path:
    """Horizontal bars, top to bottom in the given order, saved as a PNG at ``path``;
    ``baseline``: a dashed line where the baseline stands (1.0 on a chart of ratios)."""
    import matplotlib

    matplotlib.use("Agg")  # no display: the figure only goes to a file
    import matplotlib.pyplot as plt

    height = 1.2 + 0.42 * max(1, len(bars))
    fig, ax = plt.subplots(figsize=(9, height))
    positions = list(range(len(bars)))[::-1]
    values = [bar.value or 0.0 for bar in bars]
    ax.barh(positions, values, color=[_OURS if bar.ours else _BASELINE for bar in bars],
            height=0.65)
    ax.set_yticks(positions, [bar.label for bar in bars], fontsize=9)
    widest = max([*values, *(bar.target or 0.0 for bar in bars)], default=0.0) or 1.0
    notes = []
    for position, bar in zip(positions, bars, strict=True):
        text = bar.text or ("not run" if bar.value is None else f"{bar.value:.3g}")
        notes.append(ax.text((bar.value or 0.0) + widest * 0.01, position, text, va="center",
                             fontsize=8))
        if bar.target is not None:
            ax.plot([bar.target, bar.target], [position - 0.4, position + 0.4], color=_TARGET,
                    linewidth=2)
    if baseline is not None:
        ax.axvline(baseline, color="#444444", linestyle="--", linewidth=1,
                   label=baseline_label)
    ax.set_xlim(0, widest * 1.25)
    ax.set_xlabel(xlabel, fontsize=9)
    ax.set_title(title, fontsize=10)
    if any(bar.target is not None for bar in bars):
        ax.plot([], [], color=_TARGET, linewidth=2, label="target")
    if baseline is not None or any(bar.target is not None for bar in bars):
        ax.legend(loc="lower right", fontsize=8)
    if note:
        fig.text(0.01, 0.01, note, fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.04 if note else 0, 1, 1))
    _fit_notes(fig, ax, notes, widest)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _fit_notes(fig: Any, ax: Any, notes: list[Any], widest: float) -> None:
    """Widen the x axis until the text beside every bar ends inside it. A note is as wide in
    pixels whatever the axis spans, so the axis end x must satisfy start + width * x / axis
    width <= x for every note: x >= start / (1 - width / axis width)."""
    renderer = fig.canvas.get_renderer()
    axis_width = ax.get_window_extent(renderer).width
    needed = widest * 1.05
    for text in notes:
        share = text.get_window_extent(renderer).width / axis_width
        if share < 0.9:  # a note wider than the axis itself cannot be fitted by widening
            needed = max(needed, text.get_position()[0] / (1 - share) * 1.02)
    ax.set_xlim(0, max(needed, widest * 1.25))
