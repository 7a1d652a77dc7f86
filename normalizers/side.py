"""One result's rows as the row comparison sees them: raw values, canonical keys and hashes,
column by column, restricted to the aligned columns and in gold column order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polysql.core.columnar import RowsColumn, values_at
from polysql.normalizers.hashing import NULL_INT, HashScheme, row_hashes
from polysql.normalizers.policy import ComparePolicy
from polysql.normalizers.values import FloatKeys, NoneType, Reading, fine_value, materialize

FineRow = Callable[[int], tuple[Any, ...]]
#: schemes of columns that hold no approximate numbers (ints compare exactly with ints)
EXACT_SCHEMES = frozenset({"int64", "strong"})
_INTS: frozenset[type] = frozenset({int, NoneType})


class PickedColumn(Sequence[Any]):
    """``column``'s values at ``rows``, read one by one when asked: a Side of some rows of
    another (a tolerance pass's residue, a result's distinct rows) looks at only a few raw
    values, for reasons and non-numbers, so they are not copied out whole."""

    __slots__ = ("_column", "_rows")

    def __init__(self, column: Sequence[Any], rows: np.ndarray) -> None:
        self._column, self._rows = column, rows

    def __len__(self) -> int:
        return int(self._rows.size)

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return [self._column[int(i)] for i in self._rows[k]]
        return self._column[int(self._rows[k])]


@dataclass(slots=True)
class Side:
    """One result's rows, restricted to the aligned columns, in gold column order."""

    label: str
    raw: list[Sequence[Any]]  # raw values per aligned column
    lazy_keys: list[Sequence[Any]]  # canonical keys per aligned column (FloatKeys stay arrays)
    reading: list[Reading]
    policy: ComparePolicy
    height: int
    schemes: list[HashScheme]  # per column, shared by every side compared with this one
    hashes: list[np.ndarray]  # per column, hashed under ``schemes``
    #: per column, the Python types of the raw values (empty when not known)
    types: list[frozenset[type]] = field(default_factory=list)
    _row_hashes: np.ndarray | None = field(default=None, repr=False)
    _keys: list[Sequence[Any]] | None = field(default=None, repr=False)

    @property
    def keys(self) -> list[Sequence[Any]]:
        """Canonical keys per aligned column, indexable at C speed (built on first use)."""
        if self._keys is None:
            self._keys = [materialize(keys) for keys in self.lazy_keys]
        return self._keys

    def key_column(self, j: int) -> Sequence[Any]:
        """Column ``j``'s keys, indexable at C speed, building no other column's list."""
        return self._keys[j] if self._keys is not None else materialize(self.lazy_keys[j])

    def keys_to_pick(self, j: int) -> Sequence[Any]:
        """Column ``j``'s keys for reading a few of them: a column read straight from the rows
        is read row by row rather than built whole."""
        lazy = self.lazy_keys[j]
        if self._keys is None and isinstance(lazy, RowsColumn):
            return lazy
        return self.key_column(j)

    def raw_values(self, j: int, rows: Sequence[int]) -> list[Any]:
        """Column ``j``'s raw values at ``rows`` (see :func:`values_at`)."""
        return values_at(self.raw[j], rows)

    def floats_at(self, j: int, at: np.ndarray) -> tuple[np.ndarray, np.ndarray | None] | None:
        """Column ``j``'s own float values at the rows ``at`` (NULL slots hold NaN) and where
        they are NULL (None: nowhere), read off the array its keys were made from; None when
        the column is not one of floats and NULLs."""
        keys = self.lazy_keys[j]
        parts = keys.floats if isinstance(keys, FloatKeys) else None
        if parts is None:
            return None
        values, nulls = parts
        picked = None if nulls is None else nulls[at]
        return values[at], picked if picked is not None and picked.any() else None

    def ints_at(self, j: int, at: np.ndarray) -> tuple[np.ndarray, np.ndarray | None] | None:
        """Column ``j``'s ints at the rows ``at`` and where they are NULL (None: nowhere), read
        off its int64 hashes; None unless the column holds only ints (no bools) and NULLs."""
        if self.schemes[j] != "int64" or not self.types or not self.types[j] <= _INTS:
            return None
        values = self.hashes[j][at].view(np.int64)
        if NoneType not in self.types[j]:
            return values, None
        # NULL hashes to the most negative int64, which no int of a column with NULLs is
        nulls = values == NULL_INT
        return values, nulls if nulls.any() else None

    def row_hashes(self) -> np.ndarray:
        if self._row_hashes is None:
            self._row_hashes = row_hashes(self.hashes, self.height)
        return self._row_hashes

    def checked(self) -> list[int]:
        """Columns whose hash can collide, so proposed pairs must be compared by value."""
        return [j for j, scheme in enumerate(self.schemes) if scheme == "checked"]

    def raw_row(self, i: int) -> tuple[Any, ...]:
        return tuple(column[i] for column in self.raw)

    def fine_row(self, i: int) -> tuple[Any, ...]:
        """Row ``i`` as the tolerance pass sees it. Columns hashed as int64 or strong hold no
        approximate numbers (ints compare exactly with ints), so their keys serve as they are."""
        return tuple(self.keys_to_pick(j)[i] if scheme in EXACT_SCHEMES
                     else fine_value(raw[i], self.policy, reading)
                     for j, (raw, reading, scheme)
                     in enumerate(zip(self.raw, self.reading, self.schemes, strict=True)))

    def rows(self, positions: Sequence[int]) -> Side:
        """A Side holding only the rows at ``positions`` (in that order)."""
        where = np.asarray(positions, dtype=np.intp)
        # Keys held as float arrays stay arrays (hashing and the tolerance pass read them so).
        keys = [lazy.take(where) if isinstance(lazy, FloatKeys)
                else values_at(self.key_column(j), positions)
                for j, lazy in enumerate(self.lazy_keys)]
        return Side(self.label, [PickedColumn(c, where) for c in self.raw], keys,
                    self.reading, self.policy, len(positions), self.schemes,
                    [hashed[where] for hashed in self.hashes], self.types)
