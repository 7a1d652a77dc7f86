"""Time polysql's result comparison against a plain Counter-of-tuples baseline, per workload.

Each workload builds a gold result of N rows and a predicted one, and prints side by side how long
a plain baseline (``Counter(gold_rows) == Counter(pred_rows)`` for bags) and ``polysql.compare``
take in the same run, and their ratio:

* ``typed``: int, Decimal, float, str, date columns; the prediction is the gold shuffled
  (``equal``) or with 10 values changed (``unequal``).
* ``nulls``: int, int, str, float, str columns, three of them about 10% NULL (most real columns
  hold some NULL); the prediction is the gold shuffled.
* ``tolerance``: int and two float columns (one with NULLs); the prediction's floats carry
  relative noise far below the tolerance, as when another engine sums in another order, so every
  float is bucketed and the rows whose noise crosses a bucket edge go through the tolerance pass
  (``equal``). Its ``wrong`` variant has the right ids and every price off by half: every row
  is left over and rejected by the tolerance pass (the target is for ``equal``).
* ``ordered``: the ``nulls`` rows compared as a sequence (``ordered=True``), the prediction in
  the gold's order; its baseline is list equality, ``gold_rows == pred_rows``.

The ``nulls`` and ``tolerance`` workloads are also timed with both results as Arrow columns
(``arrow`` lines): the form DuckDB hands back for number and text columns, where the comparison
reads NumPy views of the columns instead of Python values. The Arrow tables are built before the
clock starts, as an engine delivers them; the baseline stays the Counter over the same values as
Python rows, the form a driver's fetchall() returns.

Every timing gets rows built just before it from fresh value objects, as two engine drivers would
return them: str, Decimal and date objects cache their hash, so reusing rows would let later runs
skip work a real comparison has to do. The baseline applies none of the contract (no tolerance,
no 1 == 1.0 == Decimal('1.00'), no column alignment, no reasons); the ratio says what the
contract costs. Peak memory for 1,000,000 rows stays under 1.5 GB.

    python benchmarks/compare_bench.py                     # 1,000,000 rows, every workload
    python benchmarks/compare_bench.py --rows 100000 --repeats 3 --workload nulls
"""

from __future__ import annotations

import argparse
import gc
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
from figures import Bar, draw_bars, figure_path

from polysql import Result, compare
from polysql.core.columnar import ArrowRows

Row = tuple[Any, ...]
Spec = tuple[Any, ...]
START = date(2000, 1, 1)


@dataclass(frozen=True, slots=True)
class Workload:
    """Plain-number specs of both sides, and how to turn a spec into a row of fresh objects."""

    columns: list[str]
    build: Callable[[Spec], Row]
    gold: list[Spec]
    variants: dict[str, tuple[list[Spec], bool]]  # name -> (predicted specs, expected match)
    ordered: bool = False  # compare as a sequence (baseline: list equality) instead of a bag
    target: float | None = None  # the ratio aimed at, printed alongside
    arrow: bool = False  # also time the comparison of the results as Arrow columns


def shuffled(specs: list[Spec], seed: int) -> list[Spec]:
    out = list(specs)
    random.Random(seed).shuffle(out)
    return out


# -- typed: int, Decimal, float, str, date ---------------------------------------------------------

def typed_row(spec: Spec) -> Row:
    """``i + 0`` and ``score + 0.0`` make new int/float objects rather than share the spec's."""
    i, cents, score, name, day = spec
    return (i + 0, Decimal(cents) / 100, score + 0.0, f"name-{name}", START + timedelta(days=day))


def typed(count: int) -> Workload:
    rng = random.Random(1)
    specs = [(i, rng.randrange(0, 10_000_000), rng.random() * 1000, rng.randrange(0, count // 3 + 1),
              rng.randrange(0, 9000)) for i in range(count)]
    pred = shuffled(specs, 2)
    changed = list(pred)
    for index in random.Random(3).sample(range(count), min(10, count)):
        i, cents, score, name, day = changed[index]
        changed[index] = (i, cents + 100, score, name, day)
    return Workload(["id", "amount", "score", "name", "day"], typed_row, specs,
                    {"equal": (pred, True), "unequal": (changed, False)})


# -- nulls: int, text and float columns holding NULLs ---------------------------------------------

def _fresh(value: Any, make: Callable[[Any], Any]) -> Any:
    return None if value is None else make(value)


def nulls_row(spec: Spec) -> Row:
    i, qty, name, score, city = spec
    return (i + 0, _fresh(qty, lambda q: q + 0), _fresh(name, lambda n: f"name-{n}"),
            _fresh(score, lambda s: s + 0.0), f"city-{city}")


def nulls(count: int) -> Workload:
    rng = random.Random(4)

    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.1 else value

    specs = [(i, maybe(rng.randrange(0, 1000)), maybe(rng.randrange(0, count // 3 + 1)),
              maybe(rng.random() * 1000), rng.randrange(0, 500)) for i in range(count)]
    return Workload(["id", "qty", "name", "score", "city"], nulls_row, specs,
                    {"equal": (shuffled(specs, 5), True)}, target=0.5, arrow=True)


# -- tolerance: floats that differ by noise below the tolerance -----------------------------------

def tolerance_row(spec: Spec) -> Row:
    i, price, ratio = spec
    return (i + 0, price + 0.0, _fresh(ratio, lambda r: r + 0.0))


def tolerance(count: int) -> Workload:
    rng = random.Random(6)
    specs = [(i, rng.random() * 1e6, None if rng.random() < 0.1 else rng.random())
             for i in range(count)]
    # Relative noise of 1e-9 against rel_tol 1e-5: equal under the contract, rarely bit-equal.
    noisy = [(i, price * (1 + rng.uniform(-1e-9, 1e-9)),
              None if ratio is None else ratio * (1 + rng.uniform(-1e-9, 1e-9)))
             for i, price, ratio in specs]
    # A wrong answer with the right keys: every price off by half, so every row is left over
    # after hashing and has its one candidate checked (the common shape of a wrong aggregate).
    wrong = [(i, price * 1.5, ratio) for i, price, ratio in specs]
    return Workload(["id", "price", "ratio"], tolerance_row, specs,
                    {"equal": (shuffled(noisy, 7), True), "wrong": (shuffled(wrong, 8), False)},
                    target=1.5, arrow=True)


def ordered(count: int) -> Workload:
    bag = nulls(count)
    return Workload(bag.columns, bag.build, bag.gold, {"equal": (bag.gold, True)}, ordered=True)


WORKLOADS: dict[str, Callable[[int], Workload]] = {"typed": typed, "nulls": nulls,
                                                   "tolerance": tolerance, "ordered": ordered}


# -- timing ---------------------------------------------------------------------------------------

def timed_on_fresh_rows(fn: Callable[[list[Row], list[Row]], Any], build: Callable[[Spec], Row],
                        gold_specs: list[Spec], pred_specs: list[Spec]) -> tuple[float, Any]:
    """Time ``fn(gold_rows, pred_rows)`` on rows built just before, so no value carries a hash
    cached by an earlier run (str, Decimal and date objects cache their hash): each timing sees
    values as fresh from a driver, as a real comparison does."""
    gold_rows, pred_rows = list(map(build, gold_specs)), list(map(build, pred_specs))
    gc.collect()
    started = time.perf_counter()
    value = fn(gold_rows, pred_rows)
    elapsed = time.perf_counter() - started
    del gold_rows, pred_rows
    return elapsed, value


def as_arrow(columns: list[str], rows: list[Row]) -> ArrowRows:
    """``rows`` as Arrow columns, as DuckDB returns them (types inferred from the values)."""
    values = [list(column) for column in zip(*rows, strict=True)] if rows else \
        [[] for _ in columns]
    return ArrowRows(pa.table([pa.array(v) for v in values], names=columns))


def counter_baseline(gold_rows: list[Row], pred_rows: list[Row]) -> bool:
    return Counter(gold_rows) == Counter(pred_rows)


def list_baseline(gold_rows: list[Row], pred_rows: list[Row]) -> bool:
    return gold_rows == pred_rows


def run(name: str, workload: Workload, repeats: int, drawn: list[Bar]) -> None:
    def polysql_compare(gold_rows: list[Row], pred_rows: list[Row]) -> Any:
        return compare(Result(workload.columns, gold_rows), Result(workload.columns, pred_rows),
                       ordered=workload.ordered)

    baseline_fn, baseline_name = ((list_baseline, "list ==") if workload.ordered
                                  else (counter_baseline, "Counter"))
    for variant, (pred_specs, expected) in workload.variants.items():
        baseline = min(timed_on_fresh_rows(baseline_fn, workload.build, workload.gold,
                                           pred_specs)[0] for _ in range(repeats))
        ours, verdict = min((timed_on_fresh_rows(polysql_compare, workload.build, workload.gold,
                                                 pred_specs) for _ in range(repeats)),
                            key=lambda pair: pair[0])
        if verdict.match is not expected:
            raise SystemExit(f"{name} {variant}: expected match={expected}, got {verdict.reason}")
        # The ratio is the result; absolute times say more about the machine than about the code.
        target = f"   (target <= {workload.target:.1f}x)" if workload.target and expected else ""
        print(f"{name:10s} {variant:8s} {baseline_name:8s} {baseline:7.3f} s   "
              f"compare {ours:7.3f} s   ratio {ours / baseline:5.2f}x{target}")
        goal = workload.target if workload.target and expected else None
        drawn.append(Bar(f"{name} {variant} (Python rows)", ours / baseline,
                         f"{ours / baseline:.2f}x ({ours:.3f} s)", target=goal))
        if not workload.arrow:
            continue
        arrow, verdict = min((timed_on_arrow(workload, pred_specs) for _ in range(repeats)),
                             key=lambda pair: pair[0])
        if verdict.match is not expected:
            raise SystemExit(f"{name} {variant} (arrow): expected match={expected}, "
                             f"got {verdict.reason}")
        print(f"{name:10s} {variant:8s} {baseline_name:8s} {baseline:7.3f} s   "
              f"  arrow {arrow:7.3f} s   ratio {arrow / baseline:5.2f}x{target}")
        drawn.append(Bar(f"{name} {variant} (Arrow)", arrow / baseline,
                         f"{arrow / baseline:.2f}x ({arrow:.3f} s)", target=goal))


def timed_on_arrow(workload: Workload, pred_specs: list[Spec]) -> tuple[float, Any]:
    """Time ``compare`` on both results as Arrow columns, built from fresh rows untimed."""
    gold = as_arrow(workload.columns, list(map(workload.build, workload.gold)))
    pred = as_arrow(workload.columns, list(map(workload.build, pred_specs)))
    gc.collect()
    started = time.perf_counter()
    verdict = compare(Result(workload.columns, gold), Result(workload.columns, pred),  # type: ignore[arg-type]
                      ordered=workload.ordered)
    return time.perf_counter() - started, verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per result")
    parser.add_argument("--repeats", type=int, default=1, help="take the best of this many runs")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), action="append",
                        help="run only this workload (repeatable); default: all")
    parser.add_argument("--figure", type=Path, default=None,
                        help="PNG to draw (default benchmark-figures/compare_bench.png)")
    args = parser.parse_args()
    compare(Result(["x"], [(1,)]), Result(["x"], [(1,)]))  # import and warm up outside the timing
    print(f"{args.rows:,} rows per result; best of {args.repeats}")
    bars: list[Bar] = []
    for name in args.workload or list(WORKLOADS):
        workload = WORKLOADS[name](args.rows)
        run(name, workload, args.repeats, bars)
        del workload
        gc.collect()
    drawn = draw_bars(figure_path(args.figure, "compare_bench"),
                      f"polysql compare against a plain Counter / list == ({args.rows:,} rows "
                      f"per result)", bars,
                      xlabel="time relative to the baseline in the same run (lower is better)",
                      note=f"best of {args.repeats}; the baseline applies none of the comparison "
                           "contract", baseline=1.0)
    print(f"drew {drawn}")


if __name__ == "__main__":
    main()
