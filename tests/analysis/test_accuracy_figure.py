"""The accuracy figure's value labels never touch a confidence-interval whisker, a whisker cap,
another label or the plot's frame: checked on the laid-out figure, in display coordinates, for
layouts that crowd the bars (many models, many engines, a wide legend, 100% bars, two panels).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from PIL import Image

from polysql.analysis import figures
from polysql.analysis.findings import AccuracyRow, Findings, Settings
from polysql.analysis.stats import wilson_interval


def findings(models: list[str], engines: list[str], datasets: tuple[str, ...] = ("demo",),
             seed: int = 0) -> Findings:
    """Accuracies with wide and narrow intervals, some at 100% (whiskers up to the top)."""
    rnd = random.Random(seed)
    rows = []
    for dataset in datasets:
        for model in models:
            for engine in engines:
                total = rnd.choice([8, 20, 140, 500])
                correct = total if rnd.random() < 0.25 else rnd.randint(total // 4, total)
                low, high = wilson_interval(correct, total)
                rows.append(AccuracyRow(model, dataset, engine, engine, correct, total,
                                        correct / total, low, high))
    return Findings(settings=Settings(reference=engines[0]), runs=["run"],
                    datasets=list(datasets), predictors=models, engines=engines,
                    reference=engines[0], accuracy=rows, pair_tests=[], tiers=[], kappas=[],
                    ranks=[], taus=[], taxonomy=[], classified=False, notes=[])


LAYOUTS = {
    "two models, a long engine name": findings(
        ["gpt-4o-mini", "acme/sql-coder <v2> & co"],
        ["sqlite", "duckdb", "mysql-8.4-on-a-remote-host-with-a-rather-long-engine-name"], seed=1),
    "one model": findings(["solo"], ["sqlite", "duckdb", "postgres", "mysql"], seed=2),
    "four models": findings(["m1", "m2", "m3", "m4"],
                            ["sqlite", "duckdb", "postgres", "mysql", "spark"], seed=3),
    "eight models": findings([f"model-{i}" for i in range(8)],
                             ["sqlite", "duckdb", "postgres", "mysql"], seed=4),
    "two datasets": findings(["gold", "transpile"],
                             ["sqlite", "duckdb", "postgres", "mysql", "spark", "clickhouse"],
                             datasets=("demo", "bird"), seed=5),
    # the legend takes half the width: horizontal labels would reach the neighbours' whiskers
    "wide legend": findings(["qwen2.5-coder-32b-instruct-q4_k_m-with-a-very-long-suffix",
                             "llama-3.1-8b-instruct"],
                            ["sqlite", "duckdb", "postgres", "mysql", "spark", "clickhouse",
                             "snowflake", "bigquery"], seed=7),
    "sixteen engines": findings(["gold", "transpile"], [f"engine{i}" for i in range(16)], seed=8),
}


def _display_segments(ax) -> list[tuple[float, float, float, float]]:  # type: ignore[no-untyped-def]
    """Every whisker and cap as a display-space segment (x0, y0, x1, y1)."""
    segments = []
    for collection in ax.collections:
        if isinstance(collection, LineCollection):  # the whiskers
            for segment in collection.get_segments():
                (x0, y0), (x1, y1) = ax.transData.transform(np.asarray(segment))
                segments.append((x0, y0, x1, y1))
    points = ax.figure.dpi / 72
    for line in ax.lines:
        if isinstance(line, Line2D) and line.get_marker() == "_":  # the caps
            half = line.get_markersize() / 2 * points
            for x, y in ax.transData.transform(np.column_stack(line.get_data())):
                segments.append((x - half, y, x + half, y))
    return segments


def _crosses(box: Bbox, segment: tuple[float, float, float, float]) -> bool:
    x0, y0, x1, y1 = segment
    return (min(x0, x1) <= box.x1 and max(x0, x1) >= box.x0
            and min(y0, y1) <= box.y1 and max(y0, y1) >= box.y0)


def _laid_out(name: str) -> Figure:
    fig = figures.accuracy_plot(LAYOUTS[name])
    assert fig is not None
    fig.draw_without_rendering()
    return fig


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_value_labels_clear_whiskers_caps_each_other_and_the_frame(name: str) -> None:
    fig = _laid_out(name)
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    found = LAYOUTS[name]
    for ax in fig.axes:
        labels = [t for t in ax.texts if isinstance(t, Text)]
        dataset = ax.get_title(loc="left").removeprefix("dataset ")
        rows = [r for r in found.accuracy if r.dataset == dataset]
        # every bar is labelled with its accuracy
        assert sorted(t.get_text() for t in labels) == sorted(f"{100 * r.accuracy:.1f}"
                                                               for r in rows)
        boxes = [t.get_window_extent(renderer) for t in labels]
        segments = _display_segments(ax)
        assert len(segments) >= 2 * len(rows)  # a whisker and its caps per bar
        frame = ax.get_window_extent(renderer)
        for text, box in zip(labels, boxes, strict=True):
            crossing = [s for s in segments if _crosses(box, s)]
            assert not crossing, f"{name}: label {text.get_text()} crosses {crossing}"
            assert box.y1 <= frame.y1 and box.y0 >= frame.y0, \
                f"{name}: label {text.get_text()} leaves the plot"
        for i, box in enumerate(boxes):
            for other in boxes[i + 1:]:
                assert not box.overlaps(other), f"{name}: two labels overlap"


def test_labels_turn_upright_only_when_they_do_not_fit_across() -> None:
    across = _laid_out("two models, a long engine name")
    assert {t.get_rotation() for t in across.axes[0].texts} == {0.0}
    upright = _laid_out("wide legend")
    assert {t.get_rotation() for t in upright.axes[0].texts} == {90.0}


def test_too_many_bars_get_no_labels_and_the_title_says_so(tmp_path: Path) -> None:
    crowded = findings([f"m{i}" for i in range(6)], [f"e{i}" for i in range(8)], seed=9)
    fig = figures.accuracy_plot(crowded)
    assert fig is not None
    assert not any(ax.texts for ax in fig.axes)
    assert fig.get_suptitle() == "Accuracy per engine with 95% Wilson intervals"
    png = figures.accuracy_figure(crowded, tmp_path)[0]
    assert Image.open(png).size[0] > 500
