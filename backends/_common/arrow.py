"""Logical column types (polysql.core.schema) as Arrow types: the interchange form between engines."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from polysql.core.schema import ColumnType, Table


def arrow_type(column_type: ColumnType) -> pa.DataType:
    kind = column_type.kind
    if kind == "decimal":
        return pa.decimal128(column_type.precision or 18, column_type.scale or 0)
    return {
        "boolean": pa.bool_(),
        "integer": pa.int64(),
        "float": pa.float64(),
        "text": pa.string(),
        "blob": pa.binary(),
        "date": pa.date32(),
        "timestamp": pa.timestamp("us"),
    }[kind]


def arrow_schema(table: Table) -> pa.Schema:
    return pa.schema([pa.field(c.name, arrow_type(c.type), nullable=True) for c in table.columns])


# -- values into Arrow without pyarrow's Python conversions ---------------------------------------
# pyarrow imports pandas (0.2 s, holding the GIL) the first time it converts any Python or NumPy
# object (pa.scalar, pa.array, Array.to_numpy, a Python value passed to a compute function). The
# load path builds what it needs from buffers instead (and reads columns back through
# polysql.core.arrow_buffers), so a load pays for no import it does not use.

def number_scalar(value: float, type_: pa.DataType) -> pa.Scalar:
    """``value`` as an Arrow scalar of the fixed-width numeric type ``type_`` (int64, float64...)."""
    data = np.array([value], dtype=type_.to_pandas_dtype())  # a NumPy dtype; imports no pandas
    return pa.Array.from_buffers(type_, 1, [None, pa.py_buffer(data)])[0]


def text_scalar(value: str, *, large: bool = False) -> pa.Scalar:
    """``value`` as an Arrow string scalar (``large_string`` when ``large``)."""
    encoded = value.encode("utf-8")
    type_ = pa.large_string() if large else pa.string()
    offsets = np.array([0, len(encoded)], np.int64 if large else np.int32)
    return pa.Array.from_buffers(type_, 1, [None, pa.py_buffer(offsets),
                                            pa.py_buffer(encoded)])[0]


def null_scalar(type_: pa.DataType) -> pa.Scalar:
    """A NULL scalar of ``type_``."""
    return pa.nulls(1, type_)[0]
