"""A result seen column by column, with canonical keys computed once per (column, text reading)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from polysql.core.errors import ComparisonError
from polysql.core.model import Result
from polysql.normalizers.policy import ComparePolicy
from polysql.normalizers.values import FloatKeys, Reading, column_keys, column_types

_FLOAT: frozenset[type] = frozenset({float})
_FLOAT_AND_NULL: frozenset[type] = frozenset({float, type(None)})


class ResultColumns:
    """Columns of one :class:`~polysql.Result`, transposed lazily and cached."""

    def __init__(self, result: Result, label: str, policy: ComparePolicy) -> None:
        self.label = label
        self.names = list(result.columns)
        self.height = len(result.rows)
        self.width = len(result.columns)
        self.policy = policy
        self._rows = result.rows
        self._raw: list[Sequence[Any]] | None = None
        self._types: dict[int, frozenset[type]] = {}
        self._keys: dict[tuple[int, Reading], Sequence[Any]] = {}

    @property
    def raw(self) -> list[Sequence[Any]]:
        if self._raw is None:
            widths = set(map(len, self._rows))
            if widths - {self.width}:
                raise ComparisonError(
                    f"the {self.label} result is malformed: it has {self.width} column names but rows "
                    f"of width {sorted(widths)}; every row must have one value per column"
                )
            self._raw = list(zip(*self._rows, strict=True)) if self._rows else [()] * self.width
        return self._raw

    def types(self, j: int) -> frozenset[type]:
        if j not in self._types:
            self._types[j] = column_types(self.raw[j])
        return self._types[j]

    def key_types(self, j: int, reading: Reading) -> frozenset[type]:
        """The set of Python types among column ``j``'s keys under ``reading``."""
        keys = self.keys(j, reading)
        if isinstance(keys, FloatKeys):
            parts = keys.nullable_array
            if parts is not None:  # known from the array: no need to list the keys
                return _FLOAT_AND_NULL if parts[1] is not None else _FLOAT
        if keys is self.raw[j] or (not (reading.numbers or reading.temporal or reading.booleans)
                                   and self.types(j) <= {str, type(None)}):
            return self.types(j)  # keys are the raw values, or text that stayed text
        return column_types(keys)

    def keys(self, j: int, reading: Reading) -> Sequence[Any]:
        cached = self._keys.get((j, reading))
        if cached is None:
            cached = column_keys(self.raw[j], self.policy, reading, self.types(j))
            self._keys[(j, reading)] = cached
        return cached
