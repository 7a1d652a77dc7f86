"""Time polysql's result comparison against a plain Counter-of-tuples baseline.

Builds two results of N rows x 5 columns (int, Decimal, float, str, date), the predicted one the
same rows in shuffled order (equal variant) or with 10 values changed (unequal variant), and prints
how long ``polysql.compare`` takes relative to ``Counter(gold_rows) == Counter(pred_rows)`` in the
same run. Every timing gets rows built just before it from fresh value objects, as two engine
drivers would return them: str, Decimal and date objects cache their hash, so reusing rows would
let later runs skip work a real comparison has to do. The baseline applies none of the contract
(no tolerance, no 1 == 1.0 == Decimal('1.00'), no column alignment, no reasons); the ratio says
what the contract costs. Peak memory for 1,000,000 rows stays under 1.5 GB.

    python benchmarks/compare_bench.py               # 1,000,000 rows
    python benchmarks/compare_bench.py --rows 100000 --repeats 3
"""

from __future__ import annotations

import argparse
import gc
import random
import time
from collections import Counter
from collections.abc import Callable
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from polysql import Result, compare

COLUMNS = ["id", "amount", "score", "name", "day"]


Spec = tuple[int, int, float, int, int]
START = date(2000, 1, 1)


def make_specs(count: int, seed: int) -> list[Spec]:
    """Plain numbers describing each row; rows are built from them per side."""
    rng = random.Random(seed)
    return [(i, rng.randrange(0, 10_000_000), rng.random() * 1000, rng.randrange(0, count // 3 + 1),
             rng.randrange(0, 9000)) for i in range(count)]


def build_rows(specs: list[Spec]) -> list[tuple[Any, ...]]:
    """Fresh objects for every value, allocated in this side's row order (like a driver).
    ``i + 0`` and ``score + 0.0`` make new int/float objects rather than share the spec's."""
    return [(i + 0, Decimal(cents) / 100, score + 0.0, f"name-{name}", START + timedelta(days=day))
            for i, cents, score, name, day in specs]


def perturbed(specs: list[Spec], changes: int, seed: int) -> list[Spec]:
    rng = random.Random(seed)
    out = list(specs)
    for index in rng.sample(range(len(out)), changes):
        i, cents, score, name, day = out[index]
        out[index] = (i, cents + 100, score, name, day)
    return out


def timed_on_fresh_rows(fn: Callable[[list[tuple[Any, ...]], list[tuple[Any, ...]]], Any],
                        gold_specs: list[Spec], pred_specs: list[Spec]) -> tuple[float, Any]:
    """Time ``fn(gold_rows, pred_rows)`` on rows built just before, so no value carries a hash
    cached by an earlier run (str, Decimal and date objects cache their hash): each timing sees
    values as fresh from a driver, as a real comparison does."""
    gold_rows, pred_rows = build_rows(gold_specs), build_rows(pred_specs)
    gc.collect()
    started = time.perf_counter()
    value = fn(gold_rows, pred_rows)
    elapsed = time.perf_counter() - started
    del gold_rows, pred_rows
    return elapsed, value


def counter_baseline(gold_rows: list[tuple[Any, ...]], pred_rows: list[tuple[Any, ...]]) -> bool:
    return Counter(gold_rows) == Counter(pred_rows)


def polysql_compare(gold_rows: list[tuple[Any, ...]], pred_rows: list[tuple[Any, ...]]) -> Any:
    return compare(Result(COLUMNS, gold_rows), Result(COLUMNS, pred_rows))


def run(rows: int, repeats: int) -> None:
    specs = make_specs(rows, seed=1)
    shuffled = list(specs)
    random.Random(2).shuffle(shuffled)
    variants = {"equal": shuffled, "unequal": perturbed(shuffled, changes=10, seed=3)}
    compare(Result(["x"], [(1,)]), Result(["x"], [(1,)]))  # import and warm up outside the timing
    print(f"{rows:,} rows x {len(COLUMNS)} columns (int, Decimal, float, str, date)")
    for name, pred_specs in variants.items():
        baseline = min(timed_on_fresh_rows(counter_baseline, specs, pred_specs)[0]
                       for _ in range(repeats))
        ours, verdict = min((timed_on_fresh_rows(polysql_compare, specs, pred_specs)
                             for _ in range(repeats)), key=lambda pair: pair[0])
        expected = name == "equal"
        if verdict.match is not expected:
            raise SystemExit(f"{name}: expected match={expected}, got {verdict.reason}")
        # Ratios only: absolute times say more about the machine than about the code.
        print(f"{name:8s} compare / Counter-baseline time ratio: {ours / baseline:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per result")
    parser.add_argument("--repeats", type=int, default=1, help="take the best of this many runs")
    args = parser.parse_args()
    run(args.rows, args.repeats)


if __name__ == "__main__":
    main()
