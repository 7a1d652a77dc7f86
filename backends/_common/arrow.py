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


# -- values in and out of Arrow without pyarrow's Python conversions ------------------------------
# pyarrow imports pandas (0.2 s, holding the GIL) the first time it converts any Python or NumPy
# object (pa.scalar, pa.array, Array.to_numpy, a Python value passed to a compute function). The
# load path builds what it needs from buffers instead, so a load pays for no import it does not use.

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


def valid_mask(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Which slots of ``values`` hold a value (not NULL), as a NumPy boolean array."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    parts = []
    for chunk in chunks:
        bitmap = chunk.buffers()[0]
        if chunk.type == pa.null():
            parts.append(np.zeros(len(chunk), dtype=bool))
        elif bitmap is None:
            parts.append(np.ones(len(chunk), dtype=bool))
        else:
            bits = np.unpackbits(np.frombuffer(bitmap, np.uint8), bitorder="little")
            parts.append(bits[chunk.offset:chunk.offset + len(chunk)].astype(bool))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)


def primitive_values(values: pa.Array | pa.ChunkedArray, dtype: type[np.generic]) -> np.ndarray:
    """The data of a fixed-width column (int64, float64...) as one NumPy array of ``dtype``,
    which must be the column's own width. NULL slots hold whatever their bytes hold: callers
    mask them with :func:`valid_mask`."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    parts = [np.frombuffer(chunk.buffers()[1], dtype)[chunk.offset:chunk.offset + len(chunk)]
             for chunk in chunks if len(chunk)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def null_scalar(type_: pa.DataType) -> pa.Scalar:
    """A NULL scalar of ``type_``."""
    return pa.nulls(1, type_)[0]
