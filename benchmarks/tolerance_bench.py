"""How the tolerance pairing grows on its worst case: near-equal floats whose windows overlap.

Rows of one label whose floats differ from their neighbours by far less than the tolerance, the
predicted side one row longer (so the sort-and-zip fast path cannot settle the group and every
row goes through the window search). The pairing is timed at two sizes in the same run and the
growth printed against the named baseline, linear growth (the size ratio); the target is at most
1.5x linear (10k -> 30k rows: <= 4.5x). A rescan of taken rows made this quadratic (9x).

    python benchmarks/tolerance_bench.py                  # 10,000 and 30,000 rows
    python benchmarks/tolerance_bench.py --small 20000 --large 60000 --repeats 5
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from figures import Bar, draw_bars, figure_path

from polysql.normalizers.policy import ComparePolicy
from polysql.normalizers.tolerance import pair_within_tolerance
from polysql.normalizers.values import Number

POLICY = ComparePolicy()


def straddling(n: int, offset: float) -> list[tuple[Number, str]]:
    return [(Number(1.0 + offset + k * 1e-15, None), "x") for k in range(n)]


def best_time(n: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        gold, pred = straddling(n, 0.0), straddling(n + 1, 1e-12)
        started = time.perf_counter()
        unpaired_gold, unpaired_pred = pair_within_tolerance(gold, pred, POLICY)
        best = min(best, time.perf_counter() - started)
        assert unpaired_gold == [] and len(unpaired_pred) == 1  # the pairing is also right
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=30_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--figure", type=Path, default=None,
                        help="PNG to draw (default benchmark-figures/tolerance_bench.png)")
    args = parser.parse_args()
    small, large = best_time(args.small, args.repeats), best_time(args.large, args.repeats)
    linear = args.large / args.small
    growth = large / small
    print(f"{args.small:>9,} straddling rows: {small * 1000:8.1f} ms")
    print(f"{args.large:>9,} straddling rows: {large * 1000:8.1f} ms")
    print(f"growth {growth:.2f}x against linear {linear:.2f}x (baseline): "
          f"{growth / linear:.2f}x linear; target <= 1.50x")
    drawn = draw_bars(
        figure_path(args.figure, "tolerance_bench"),
        f"Tolerance pairing, worst case: growth from {args.small:,} to {args.large:,} rows",
        [Bar("polysql's growth", growth / linear, f"{growth / linear:.2f}x linear", target=1.5)],
        xlabel="growth relative to linear (lower is better)",
        note=f"{small * 1000:.1f} ms at {args.small:,} rows, {large * 1000:.1f} ms at "
             f"{args.large:,}; best of {args.repeats}", baseline=1.0,
        baseline_label="linear (the baseline)")
    print(f"drew {drawn}")


if __name__ == "__main__":
    main()
