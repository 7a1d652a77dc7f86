"""How many fractional-second digits a column of timestamps needs.

Engines whose timestamp types declare their fractional digits (MySQL's ``DATETIME(p)``,
ClickHouse's ``DateTime64(p)``) write out every declared digit when a value becomes text: a copy
declared with six digits turns the source's ``'2021-01-01 00:00:00'`` into
``'2021-01-01 00:00:00.000000'``. Loads declare only the digits the data uses, as a database
designed for these values would, and measure them here as the rows stream past.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from polysql.core.arrow_buffers import primitive_values, valid_mask

# Logical timestamps are microsecond Arrow timestamps.
MOST_FRACTION_DIGITS = 6
_MICROSECONDS = 10**MOST_FRACTION_DIGITS


def fraction_digits(timestamps: pa.Array | pa.ChunkedArray) -> int:
    """Fractional-second digits (0 to 6) the microsecond timestamps need; NULLs need none."""
    if timestamps.type != pa.timestamp("us"):
        timestamps = timestamps.cast(pa.timestamp("us"))
    micros = primitive_values(timestamps, np.int64)
    if timestamps.null_count:
        micros = micros[valid_mask(timestamps)]
    fractions = micros % _MICROSECONDS  # NumPy's remainder takes the divisor's sign: never negative
    if not fractions.any():
        return 0
    for digits in range(1, MOST_FRACTION_DIGITS):
        if not (fractions % 10 ** (MOST_FRACTION_DIGITS - digits)).any():
            return digits
    return MOST_FRACTION_DIGITS


class FractionDigits:
    """The most fractional digits seen so far in each of a table's timestamp columns."""

    def __init__(self, columns: list[int]) -> None:
        self.digits = dict.fromkeys(columns, 0)

    def update(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Measures ``batch``'s timestamp columns and hands it back unchanged."""
        for index, most in self.digits.items():
            if most < MOST_FRACTION_DIGITS:
                self.digits[index] = max(most, fraction_digits(batch.column(index)))
        return batch
