"""A result seen column by column, with canonical keys computed once per (column, text reading)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from polysql.core.columnar import ArrowColumn, ArrowRows, RowsColumn
from polysql.core.errors import ComparisonError
from polysql.core.model import Result
from polysql.normalizers.families import (
    Zones,
    canonical_column,
    json_column,
    type_family,
    zones_of,
)
from polysql.normalizers.gold_memo import ColumnsRead, ResultMemo
from polysql.normalizers.policy import ComparePolicy
from polysql.normalizers.values import FloatKeys, Reading, column_keys, column_types

_FLOAT: frozenset[type] = frozenset({float})
_FLOAT_AND_NULL: frozenset[type] = frozenset({float, type(None)})


class ResultColumns:
    """Columns of one :class:`~polysql.Result`, transposed lazily and cached."""

    def __init__(self, result: Result, label: str, policy: ComparePolicy, *,
                 memo: ResultMemo | None = None) -> None:
        """``memo``: where the columns and keys of ``result`` read by an earlier comparison are
        kept (a gold's, see :mod:`polysql.normalizers.gold_memo`), and this one's are left."""
        self.label = label
        self.names = list(result.columns)
        self.height = len(result.rows)
        self.width = len(result.columns)
        self.policy = policy
        self._rows = result.rows
        self._type_names = list(result.types)
        self._raw: list[Sequence[Any]] | None = None
        self._types: dict[int, frozenset[type]] = {}
        self._keys: dict[tuple[int, Reading], Sequence[Any]] = {}
        self._json: set[int] = set()  # columns whose text has been read as JSON
        # columns read as JSON for the column they are compared with: their keys are this
        # comparison's alone, never the memo's
        self._paired_json: set[int] = set()
        self._memo = memo
        self.zones: list[Zones] = []

    @property
    def rows(self) -> Sequence[Sequence[Any]]:
        """The result's rows as it holds them (a list of tuples, or ArrowRows)."""
        return self._rows

    @property
    def type_names(self) -> list[str]:
        """The engine's own type name of each column it reports one for."""
        return self._type_names

    @property
    def raw(self) -> list[Sequence[Any]]:
        if self._raw is None:
            read = self._read() if self._memo is None else self._memo.columns(self._read)
            self._raw = list(read.raw)
            self._types = dict(read.types)
            self.zones = read.zones
            self._json = set(read.json)
        return self._raw

    def _read(self) -> ColumnsRead:
        """The columns, canonical, with their types (one pass over the rows per column)."""
        widths = {self.width} if isinstance(self._rows, ArrowRows) and \
            self._rows.table.num_columns == self.width else set(map(len, self._rows))
        if widths - {self.width}:
            raise ComparisonError(
                f"the {self.label} result is malformed: it has {self.width} column names but rows "
                f"of width {sorted(widths)}; every row must have one value per column"
            )
        raw: list[Sequence[Any]]
        if isinstance(self._rows, ArrowRows):
            # Columns already: no transpose, and their types are read off the Arrow types.
            raw = list(self._rows.columns())
        else:
            # Columns read straight from the rows, not transposed copies (see RowsColumn).
            raw = [RowsColumn(self._rows, j) for j in range(self.width)]
        types: dict[int, frozenset[type]] = {}
        zones: list[Zones] = []
        json: set[int] = set()
        for j, values in enumerate(raw):
            known = values.python_types() if isinstance(values, ArrowColumn) else None
            kinds = known if known is not None else column_types(values)
            column_zones = zones_of(values, kinds)
            zones.append(column_zones)
            canonical = canonical_column(values, kinds, self.type_name(j), self.policy,
                                         column_zones)
            if canonical is not None:
                raw[j] = canonical
                kinds = column_types(canonical)
                if self.is_json(j):
                    json.add(j)
            types[j] = kinds
        return ColumnsRead(raw, types, zones, frozenset(json))

    def type_name(self, j: int) -> str | None:
        """The engine's own type name of column ``j``, when the result reports one."""
        return self._type_names[j] if j < len(self._type_names) else None

    def is_json(self, j: int) -> bool:
        """Whether the engine says column ``j`` holds JSON (by its type, never by its values)."""
        return type_family(self.type_name(j)) == "json"

    def read_as_json(self, j: int) -> None:
        """Read column ``j``'s text as JSON: the column it is compared with is JSON."""
        raw = self.raw
        if j in self._json:
            return
        self._json.add(j)
        if str not in self.types(j):
            return
        raw[j] = json_column(raw[j], self.policy)
        self._paired_json.add(j)
        self._types[j] = column_types(raw[j])
        self._keys = {key: keys for key, keys in self._keys.items() if key[0] != j}

    def types(self, j: int) -> frozenset[type]:
        raw = self.raw  # fills the types of every column
        if j not in self._types:
            self._types[j] = column_types(raw[j])
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
            def make() -> Sequence[Any]:
                return column_keys(self.raw[j], self.policy, reading, self.types(j))
            cached = make() if self._memo is None or j in self._paired_json else \
                self._memo.keys_of((j, reading), make)
            self._keys[(j, reading)] = cached
        return cached
