"""Arrow columns read as NumPy arrays straight from their buffers.

pyarrow's own conversions to NumPy (``Array.to_numpy``, ``np.asarray(array)``) go through its
pandas bridge, which imports pandas (about 0.25 s, holding the GIL) the first time it runs in a
process whenever pandas is installed. Reading a fixed-width column's data buffer and its validity
bitmap directly gives the same numbers with no import, so neither a load nor a comparison of
Arrow results pays for pandas it never uses.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.types as types


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
    mask them with :func:`valid_mask`. Read-only when it is a view of a single chunk."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    parts = [np.frombuffer(chunk.buffers()[1], dtype)[chunk.offset:chunk.offset + len(chunk)]
             for chunk in chunks if len(chunk)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def numpy_dtype(type_: pa.DataType) -> np.dtype:
    """The NumPy dtype of a fixed-width integer or floating Arrow type (no pandas involved:
    ``to_pandas_dtype`` only maps the type)."""
    return np.dtype(type_.to_pandas_dtype())


def python_type(type_: pa.DataType) -> type | None:
    """The one Python type every value of ``type_`` is as a Python object (``as_py()``, or a
    driver's row); None for a type not covered here."""
    if types.is_integer(type_):
        return int
    if types.is_float32(type_) or types.is_float64(type_):  # float16 gives numpy scalars
        return float
    if types.is_boolean(type_):
        return bool
    if types.is_string(type_) or types.is_large_string(type_):
        return str
    if types.is_binary(type_) or types.is_large_binary(type_):
        return bytes
    if types.is_decimal128(type_):
        return Decimal
    return None
