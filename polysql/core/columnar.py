"""Result rows held as an Arrow table, turned into Python values only where something asks.

An engine that hands back Arrow (DuckDB) puts :class:`ArrowRows` in ``Result.rows``: it is a
sequence of row tuples like the list a driver returns -- same length, same values, same types --
but the tuples are built on first use. The comparison never asks for them on its fast paths: it
reads each column through :class:`ArrowColumn`, whose numbers come out as NumPy arrays with no
Python object per value.

A column's Python values are exactly ``pyarrow``'s ``to_pylist()``; an engine only returns Arrow
for the column types where that equals what its own driver returns (see the engine's execute).
pyarrow is not imported here (whoever builds the table has it; a column's type is read through
``pyarrow.types`` only when asked), so importing this module costs only NumPy.

Rows that arrive as a list of tuples are read column by column too, through :class:`RowsColumn`,
which streams a column's values out of the rows instead of copying the column out first.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import itemgetter
from typing import Any

import numpy as np

NoneType = type(None)
# Values of a column read one at a time before the column is converted whole (at least).
_SINGLE_LOOKUPS = 64
# Passes over a column of row tuples streamed straight from the rows before it is built whole.
_STREAMED_PASSES = 3


class ArrowRows(Sequence[tuple[Any, ...]]):
    """A result's rows as an Arrow table (``table``); Python tuples on first use."""

    __slots__ = ("_rows", "table")

    def __init__(self, table: Any) -> None:
        self.table = table  # a pyarrow.Table
        self._rows: list[tuple[Any, ...]] | None = None

    def materialized(self) -> list[tuple[Any, ...]]:
        """The rows as a list of tuples (built once)."""
        if self._rows is None:
            columns = [column.to_pylist() for column in self.table.columns]
            self._rows = list(zip(*columns, strict=True)) if columns else \
                [() for _ in range(self.table.num_rows)]
        return self._rows

    def columns(self) -> list[ArrowColumn]:
        return [ArrowColumn(column) for column in self.table.columns]

    def select(self, indices: Sequence[int]) -> ArrowRows:
        """The same rows with only the columns at ``indices``."""
        return ArrowRows(self.table.select(list(indices)))

    def __len__(self) -> int:
        return int(self.table.num_rows)

    def __getitem__(self, index: Any) -> Any:
        if self._rows is None and isinstance(index, slice) and index.step in (None, 1):
            start, stop, _ = index.indices(len(self))  # the first rows, without building all
            return ArrowRows(self.table.slice(start, max(0, stop - start))).materialized()
        return self.materialized()[index]

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.materialized())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ArrowRows):
            return self.materialized() == other.materialized()
        if isinstance(other, list):
            return self.materialized() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like the list it stands for

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled as its Arrow table: the execution cache stores columns, not Python objects
        return ArrowRows, (self.table,)

    def __repr__(self) -> str:
        return f"ArrowRows({self.table.num_rows} rows x {self.table.num_columns} columns)"


class ArrowColumn(Sequence[Any]):
    """One Arrow column as a sequence of Python values (built on first use), with NumPy views of
    its numbers for the comparison's fast paths."""

    __slots__ = ("_lookups", "_values", "array")

    def __init__(self, array: Any) -> None:
        self.array = array  # a pyarrow.ChunkedArray
        self._values: list[Any] | None = None
        self._lookups = 0  # single values read one by one, before the whole list was built

    def as_list(self) -> list[Any]:
        if self._values is None:
            self._values = self.array.to_pylist()
        return self._values

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, index: Any) -> Any:
        if self._values is None and isinstance(index, int):
            # A few values (an example row, the rows left for the tolerance pass) are read one
            # by one; many, and the whole column is converted once instead.
            self._lookups += 1
            if self._lookups <= max(_SINGLE_LOOKUPS, len(self.array) // 32):
                return self.array[index].as_py()
        return self.as_list()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.as_list())

    def _kind(self) -> type | None:
        """The Python type of this column's values, when its Arrow type has exactly one among
        those the comparison reads off the type (NULL, int, float, bool, str)."""
        import pyarrow.types as types

        from polysql.core.arrow_buffers import python_type

        arrow = self.array.type
        if types.is_null(arrow):
            return NoneType
        kind = python_type(arrow)
        return kind if kind in (int, float, bool, str) else None

    def python_types(self) -> frozenset[type] | None:
        """The set of Python types ``as_list()`` would hold, read off the Arrow type and NULL
        count; None for a type not known here (then ask the values)."""
        kind = self._kind()
        if kind is None:
            return None
        nulls = self.array.null_count
        if kind is NoneType or nulls == len(self.array):
            return frozenset({NoneType}) if len(self.array) else frozenset()
        return frozenset({kind, NoneType}) if nulls else frozenset({kind})

    # The numbers are read from the Arrow buffers (polysql.core.arrow_buffers), not through
    # to_numpy(), which imports pandas on first use.

    def _nulls(self) -> np.ndarray | None:
        if not self.array.null_count:
            return None
        from polysql.core.arrow_buffers import valid_mask

        return ~valid_mask(self.array)

    def _numbers(self) -> np.ndarray:
        from polysql.core.arrow_buffers import numpy_dtype, primitive_values

        return primitive_values(self.array, numpy_dtype(self.array.type))

    def float_parts(self) -> tuple[np.ndarray, np.ndarray | None] | None:
        """(float64 values, NULL mask or None) of a float column; NULL slots hold NaN."""
        if self._kind() is not float:
            return None
        # a copy: Arrow's own buffers are read-only, and the keys may be patched in place
        values = np.array(self._numbers(), dtype=np.float64)
        nulls = self._nulls()
        if nulls is not None:
            values[nulls] = np.nan
        return values, nulls

    def int_parts(self) -> tuple[np.ndarray, np.ndarray | None] | None:
        """(int64 values, NULL mask or None) of an integer column that fits int64; NULL slots
        hold 0. None otherwise (an unsigned 64-bit value above the int64 range)."""
        if self._kind() is not int:
            return None
        values = self._numbers()
        nulls = self._nulls()
        if values.dtype == np.uint64:
            present = values if nulls is None else values[~nulls]  # NULL slots hold any bytes
            if present.size and present.max() > np.iinfo(np.int64).max:
                return None
        values = values.astype(np.int64)  # a copy, writable (NULL slots get marked)
        if nulls is not None:
            values[nulls] = 0
        return values, nulls


class RowsColumn(Sequence[Any]):
    """Column ``index`` of a list of row tuples (a driver's ``fetchall()``), read from the rows.

    Iterating streams the values out of the rows. A transposed copy would touch every value
    three more times (written, read, freed), and on a million rows spread over memory each such
    pass costs about as much as a pass the comparison wants. A single value is read from its
    row; a slice, or more than a few passes, builds the column once.
    """

    __slots__ = ("_get", "_passes", "_rows", "_values")

    def __init__(self, rows: Sequence[Sequence[Any]], index: int) -> None:
        self._rows = rows
        self._get = itemgetter(index)
        self._values: tuple[Any, ...] | None = None
        self._passes = 0

    def as_list(self) -> tuple[Any, ...]:
        """The column's values, built once (a tuple: indexable at C speed, like a list)."""
        if self._values is None:
            self._values = tuple(map(self._get, self._rows))
        return self._values

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> Any:
        if self._values is None and isinstance(index, int | np.integer):
            return self._get(self._rows[index])
        return self.as_list()[index]

    def __iter__(self) -> Iterator[Any]:
        if self._values is None:
            self._passes += 1
            if self._passes <= _STREAMED_PASSES:
                return map(self._get, self._rows)
        return iter(self.as_list())


def values_at(column: Sequence[Any], rows: Sequence[int]) -> list[Any]:
    """``column``'s values at ``rows``: read one by one when they are few, through the whole
    column built once when they are many (an Arrow or rows column indexes in Python)."""
    if isinstance(column, ArrowColumn | RowsColumn) and len(rows) * 16 > len(column):
        column = column.as_list()
    return list(map(column.__getitem__, rows))
