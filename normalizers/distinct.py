"""One result's distinct rows, for comparing results as sets (policy ``set_semantics``).

Two rows are the same row when every aligned column's canonical key is equal: the equality the
bag comparison pairs rows by, so a set comparison and a bag comparison agree on what a duplicate
is. Rows are grouped by their 64-bit row hash; a group of several rows is one row only when the
second, independently built checksum agrees too, and, for columns whose hash can collide by
design ("checked" columns), when their keys are equal value by value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from polysql.normalizers.hashing import row_checksums, stable_argsort
from polysql.normalizers.side import Side


def distinct_positions(side: Side) -> np.ndarray | None:
    """Positions (ascending) of the first row of each distinct row of ``side``; None when no
    row repeats another, so the side serves as it is."""
    if side.height < 2:
        return None
    hashes = side.row_hashes()
    order = stable_argsort(hashes)  # equal hashes stay in row order: the first row comes first
    ordered = hashes[order]
    repeats = ordered[1:] == ordered[:-1]
    if not repeats.any():
        return None
    checks = row_checksums(side.hashes, side.height)[order]
    # A repeat of the row hash is a repeat of the row only when the checksum repeats too.
    repeats &= checks[1:] == checks[:-1]
    keep = np.r_[True, ~repeats]
    checked = side.checked()
    if checked:
        keep = _split_checked(side, order, keep, checked)
    return np.sort(order[keep])


def _split_checked(side: Side, order: np.ndarray, keep: np.ndarray,
                   checked: list[int]) -> np.ndarray:
    """``keep`` with the rows that share a hash run but differ in a checked column's keys kept
    as rows of their own (Python's numeric hash collides by design: hash(-1) == hash(-2))."""
    columns = [side.key_column(j) for j in checked]
    run = np.cumsum(keep)  # run number per sorted position
    seen: set[tuple[Any, ...]] = set()
    keep = keep.copy()
    # Only the positions of runs holding several rows need a look, each run's first row included.
    in_long_run = np.zeros(keep.size, dtype=bool)
    in_long_run[:-1] |= ~keep[1:]
    in_long_run[1:] |= ~keep[1:]
    for position in np.flatnonzero(in_long_run).tolist():
        row = int(order[position])
        key = (int(run[position]), *(column[row] for column in columns))
        if key not in seen:
            seen.add(key)
            keep[position] = True
    return keep


def distinct_rows(side: Side) -> Side:
    """``side`` holding each distinct row once, at its first position (``side`` itself when no
    row repeats)."""
    positions = distinct_positions(side)
    return side if positions is None else side.rows(positions.tolist())
