"""Results whose rows are Arrow columns (:class:`ArrowRows`) are judged exactly as the same rows
given as Python tuples: same match, same reason, same details, on random results that reach every
fast path and its edges (NULLs, NaN, -0.0, integers at the int64 limits and beyond, float32,
text read as numbers, tolerance noise, hidden ORDER BY columns)."""

from __future__ import annotations

import itertools
import math
import pickle
import random
import subprocess
import sys
from collections.abc import Callable
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from polysql import Result, compare
from polysql.core.columnar import ArrowColumn, ArrowRows

Column = tuple[pa.DataType, Callable[[random.Random], Any]]


def _maybe_null(make: Callable[[random.Random], Any], share: float = 0.1
                ) -> Callable[[random.Random], Any]:
    return lambda rng: None if rng.random() < share else make(rng)


COLUMNS: list[Column] = [
    (pa.int64(), _maybe_null(lambda rng: rng.randrange(-5, 5))),
    (pa.int64(), lambda rng: rng.choice([-(2**63), 2**63 - 1, 0, 7])),
    (pa.int64(), _maybe_null(lambda rng: rng.choice([-(2**63), 3, 2**53 + 1]))),
    (pa.uint64(), lambda rng: rng.choice([0, 2**64 - 1, 2**63])),
    (pa.int8(), _maybe_null(lambda rng: rng.randrange(-128, 128))),
    (pa.float64(), _maybe_null(lambda rng: rng.choice([1.5, 0.1 + 0.2, -0.0, 0.0, 3.0,
                                                        math.nan, math.inf, 1e300]))),
    (pa.float64(), lambda rng: rng.random() * 1000),
    (pa.float32(), _maybe_null(lambda rng: rng.choice([0.1, 2.5, -1.0]))),
    (pa.string(), _maybe_null(lambda rng: rng.choice(["a", "b ", "10", "1.50", "x"]))),
    (pa.large_string(), lambda rng: rng.choice(["true", "2024-01-01", "é"])),
    (pa.bool_(), _maybe_null(lambda rng: rng.random() < 0.5)),
    (pa.null(), lambda rng: None),
    (pa.int64(), lambda rng: None),
    (pa.decimal128(10, 2), _maybe_null(lambda rng: Decimal(rng.randrange(0, 400)) / 100)),
    (pa.date32(), lambda rng: date(2024, 1, 1) + timedelta(days=rng.randrange(3))),
]


def _noisy(value: Any, rng: random.Random) -> Any:
    if isinstance(value, float) and math.isfinite(value) and value:
        return value * (1 + rng.uniform(-1e-9, 1e-9))
    return value


def _variant(rng: random.Random, columns: list[list[Any]], kind: str,
             first: Callable[[random.Random], Any]) -> list[list[Any]]:
    """The predicted columns: the gold's, shuffled, with float noise, or with one value of the
    first column drawn afresh (``first`` draws its values)."""
    rows = list(zip(*columns, strict=True))
    if kind in ("shuffled", "noisy", "changed"):
        rng.shuffle(rows)
    if kind == "noisy":
        rows = [tuple(_noisy(v, rng) for v in row) for row in rows]
    if kind == "changed" and rows:
        i = rng.randrange(len(rows))
        rows[i] = (first(rng), *rows[i][1:])
    return [list(column) for column in zip(*rows, strict=True)] if rows else \
        [[] for _ in columns]


def _chunked(values: list[Any], kind: pa.DataType) -> pa.ChunkedArray:
    cuts = [0, len(values) // 3, 2 * len(values) // 3, len(values)]
    parts = [values[start:end] for start, end in itertools.pairwise(cuts)]
    # A NULL before and after each part: the slice starts at offset 1 in its buffers.
    return pa.chunked_array([pa.array([None, *part, None], type=kind).slice(1, len(part))
                             for part in parts], type=kind)


def _both_ways(names: list[str], types: list[pa.DataType], columns: list[list[Any]]
               ) -> tuple[Result, Result]:
    """The same result as Python tuples and as Arrow columns (tuples taken from the Arrow
    columns, so both hold exactly the same Python values). Each Arrow column comes in three
    chunks, each a slice of a longer array, as engines hand them over: whatever reads the
    buffers must follow chunk offsets and validity bitmaps."""
    table = pa.table([_chunked(values, kind) for values, kind in zip(columns, types, strict=True)],
                     names=names)
    arrow = ArrowRows(table)
    return Result(names, list(arrow.materialized())), Result(names, ArrowRows(table))


def _verdicts(gold: tuple[Result, Result], pred: tuple[Result, Result],
              **options: Any) -> list[tuple[bool, str, dict[str, Any]]]:
    seen = []
    for g in gold:
        for p in pred:
            verdict = compare(g, p, **options)
            seen.append((verdict.match, verdict.reason, verdict.details))
    return seen


@pytest.mark.parametrize("seed", range(60))
def test_arrow_rows_are_judged_as_their_tuples(seed: int) -> None:
    rng = random.Random(seed)
    picked = rng.sample(COLUMNS, rng.randrange(1, 5))
    height = rng.choice([0, 1, 5, 40, 300])
    names = [f"c{j}" for j in range(len(picked))]
    types = [kind for kind, _ in picked]
    gold_columns = [[make(rng) for _ in range(height)] for _, make in picked]
    kind = rng.choice(["same", "shuffled", "noisy", "changed"])
    pred_columns = _variant(rng, gold_columns, kind, picked[0][1])
    gold = _both_ways(names, types, gold_columns)
    pred = _both_ways(names, types, pred_columns)
    for options in ({"ordered": False}, {"ordered": True}, {"ordered": False, "numeric_tolerance": False},
                    {"ordered": False, "nan_equals_nan": False, "bool_as_int": False,
                     "trim_trailing_spaces": True}):
        verdicts = _verdicts(gold, pred, **options)
        assert all(v == verdicts[0] for v in verdicts), (kind, options, verdicts)


def test_int_and_float_columns_meet_across_the_two_forms() -> None:
    """An engine's BIGINT against another's DOUBLE: equal numbers match in either form."""
    ints = _both_ways(["n"], [pa.int64()], [[1, 2, None, 2**53]])
    floats = _both_ways(["n"], [pa.float64()], [[2.0, float(2**53), None, 1.0]])
    verdicts = _verdicts(ints, floats)
    assert all(v[0] for v in verdicts) and all(v == verdicts[0] for v in verdicts)


def test_hidden_order_columns_are_split_off_arrow_rows_too() -> None:
    names = ["name", "key"]
    gold = _both_ways(names, [pa.string(), pa.int64()], [["a", "b", "c"], [1, 2, 2]])
    pred = Result(["name"], [("a",), ("c",), ("b",)])
    verdicts = [compare(g, pred, gold_sql="SELECT name FROM t ORDER BY key", hidden_columns=1)
                for g in gold]
    assert verdicts[0].to_dict() == verdicts[1].to_dict()
    assert verdicts[0].match  # b and c tie on the hidden key


def test_arrow_rows_behave_as_the_list_of_tuples() -> None:
    table = pa.table({"a": [1, None, 3], "b": ["x", "y", None]})
    rows = ArrowRows(table)
    expected = [(1, "x"), (None, "y"), (3, None)]
    assert len(rows) == 3 and rows[:2] == expected[:2] and rows[-2:] == expected[-2:]
    assert rows[1] == (None, "y") and rows[5:] == [] and rows[::2] == expected[::2]
    assert list(rows) == expected and rows == expected and expected == rows
    assert pickle.loads(pickle.dumps(rows)) == expected
    assert Result(["a", "b"], rows) == Result(["a", "b"], expected)
    assert ArrowRows(pa.table({})) == []


def test_a_column_reports_its_python_types_without_reading_values() -> None:
    def kinds(values: list[Any], kind: pa.DataType) -> frozenset[type] | None:
        return ArrowColumn(pa.chunked_array([pa.array(values, type=kind)])).python_types()

    assert kinds([1, None], pa.int32()) == {int, type(None)}
    assert kinds([1.5], pa.float32()) == {float}
    assert kinds([None, None], pa.string()) == {type(None)}
    assert kinds([], pa.float64()) == frozenset()
    assert kinds([Decimal(1)], pa.decimal128(5, 0)) is None  # asked of the values instead
    column = ArrowColumn(pa.chunked_array([pa.array([2**64 - 1, 1], type=pa.uint64())]))
    assert column.int_parts() is None  # beyond int64: the Python ints decide


def test_comparing_arrow_results_imports_no_pandas() -> None:
    """pyarrow's to_numpy() imports pandas (a quarter of a second) on first use; the comparison
    reads Arrow numbers from their buffers instead. Run in a fresh interpreter, where nothing has
    imported pandas yet (where pandas is not installed this holds trivially)."""
    code = """
import sys
import numpy as np, pyarrow as pa
from polysql import Result, compare
from polysql.core.columnar import ArrowRows

def column(values, kind, valid=None):
    bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(kind, len(values), [bitmap, pa.py_buffer(values)])

n = 20_000
ids = np.arange(n, dtype=np.int64)
valid = ids % 7 != 0
gold = pa.table([column(ids, pa.int64()), column(ids * 0.1, pa.float64(), valid),
                 column((ids % 5).astype(np.int32), pa.int32(), valid),
                 column((ids / 3).astype(np.float32), pa.float32())], names=list("abcd"))
order = np.random.default_rng(1).permutation(n)
noisy = pa.table([column(ids[order], pa.int64()),
                  column(ids[order] * 0.1 * (1 + 1e-12), pa.float64(), valid[order]),
                  column((ids[order] % 5).astype(np.int32), pa.int32(), valid[order]),
                  column((ids[order] / 3).astype(np.float32), pa.float32())], names=list("abcd"))
verdict = compare(Result(list("abcd"), ArrowRows(gold)), Result(list("abcd"), ArrowRows(noisy)))
print(verdict.match, "pandas" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]


def test_number_parts_mark_null_slots_whatever_their_bytes_hold() -> None:
    floats = ArrowColumn(_chunked([1.5, None, -0.0, None, 2.5], pa.float32()))
    values, nulls = floats.float_parts()  # type: ignore[misc]
    assert nulls.tolist() == [False, True, False, True, False]
    assert [repr(v) for v in values.tolist()] == ["1.5", "nan", "-0.0", "nan", "2.5"]
    ints = ArrowColumn(_chunked([None, 2**63 - 1, None, -3], pa.int64()))
    values, nulls = ints.int_parts()  # type: ignore[misc]
    assert values.tolist() == [0, 2**63 - 1, 0, -3] and nulls.tolist() == [True, False, True, False]
    unsigned = ArrowColumn(_chunked([None, 2**63, 1], pa.uint64()))
    assert unsigned.int_parts() is None  # beyond int64, NULL or not
