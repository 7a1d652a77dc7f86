"""A short list of Python values as an Arrow array, built from buffers.

``pa.array`` imports pandas (about 0.25 s, holding the GIL) the first time it runs in a process
whenever pandas is installed, whatever it is given. An engine that fetches a result's first rows
as Python values and the rest as Arrow (DuckDB) turns those rows back into Arrow with this
instead, so the first long result of a process does not pay for pandas. The types covered are the
plain ones -- integers, floats, booleans, text, bytes and 128-bit decimals -- for which the Python
value determines the Arrow bytes exactly; any other type is left to ``pa.array`` (None here).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.types as types

from polysql.core.arrow_buffers import numpy_dtype, python_type


def python_array(values: Sequence[Any], type_: pa.DataType) -> pa.Array | None:
    """``values`` (Python values of ``type_``, or None) as an Arrow array of ``type_``, equal to
    ``pa.array(values, type=type_)``. None when ``type_`` is not covered here, or when a value is
    not exactly what a driver returns for it (an int for an integer type, a float for a float
    type, a finite Decimal within the type's precision and scale...): ``pa.array`` then decides,
    refusals included."""
    count = len(values)
    present = [v for v in values if v is not None]
    kinds = set(map(type, present))
    expected = python_type(type_)
    if expected is None or not kinds <= {expected}:
        return None
    valid = np.fromiter((v is not None for v in values), dtype=bool, count=count)
    bitmap = None if len(present) == count else \
        pa.py_buffer(np.packbits(valid, bitorder="little"))
    if expected is int or expected is float:
        dtype = numpy_dtype(type_)
        if expected is int and present:
            limits = np.iinfo(dtype)  # checked here: older NumPy wraps an integer out of range
            if min(present) < limits.min or max(present) > limits.max:
                return None
        zero = dtype.type(0)
        data = np.array([zero if v is None else v for v in values], dtype=dtype)
        return pa.Array.from_buffers(type_, count, [bitmap, pa.py_buffer(data)])
    if expected is bool:
        bits = np.fromiter((v is True for v in values), dtype=bool, count=count)
        return pa.Array.from_buffers(type_, count, [bitmap, pa.py_buffer(
            np.packbits(bits, bitorder="little"))])
    if expected is str:
        return _variable(type_, [b"" if v is None else v.encode("utf-8") for v in values], bitmap)
    if expected is bytes:
        return _variable(type_, [b"" if v is None else v for v in values], bitmap)
    unscaled = [0 if v is None else _unscaled(v, type_.scale) for v in values]
    limit = 10 ** type_.precision
    if any(u is None or not -limit < u < limit for u in unscaled):
        return None
    data = b"".join(u.to_bytes(16, "little", signed=True) for u in unscaled)  # type: ignore[union-attr]
    return pa.Array.from_buffers(type_, count, [bitmap, pa.py_buffer(data)])


def _variable(type_: pa.DataType, encoded: list[bytes], bitmap: pa.Buffer | None) -> pa.Array | None:
    """Text or bytes: offsets into one data buffer."""
    large = types.is_large_string(type_) or types.is_large_binary(type_)
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)),
              out=offsets[1:])
    if not large and offsets[-1] > np.iinfo(np.int32).max:
        return None  # more than 32-bit offsets can address
    return pa.Array.from_buffers(type_, len(encoded), [
        bitmap, pa.py_buffer(offsets if large else offsets.astype(np.int32)),
        pa.py_buffer(b"".join(encoded))])


def _unscaled(value: Decimal, scale: int) -> int | None:
    """``value`` as the integer a decimal of ``scale`` stores (value * 10**scale), computed from
    its digits (no context rounding); None for a non-finite value or one with more fraction
    digits than ``scale``."""
    if not value.is_finite():
        return None
    sign, digits, exponent = value.as_tuple()
    coefficient = int("".join(map(str, digits)))
    shift = int(exponent) + scale
    if shift >= 0:
        unscaled = coefficient * 10 ** shift
    else:
        unscaled, rest = divmod(coefficient, 10 ** -shift)
        if rest:
            return None
    return -unscaled if sign else unscaled
