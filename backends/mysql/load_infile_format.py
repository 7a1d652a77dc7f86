"""Arrow batches as the data file of a ``LOAD DATA LOCAL INFILE``, rendered by column kernels.

The file is CSV as :data:`FORMAT_CLAUSE` declares it: fields separated by commas, rows ended by
a newline, text enclosed in double quotes with an inner quote doubled, and no escape character
at all. With no escape character a backslash is just a byte, and an enclosed field may hold
commas, newlines, carriage returns and NULs untouched (it only ends at a quote followed by a
comma or a newline). NULL is the bare word ``NULL``, which MySQL reads as NULL only when it is
not enclosed -- the text 'NULL' is written ``"NULL"`` -- so NULL and the empty string ``""``
never meet. Blobs travel as hexadecimal text that the statement turns back into bytes with
UNHEX, so no byte of a blob is ever read as text.

Every column is rendered by Arrow compute functions (blobs by a NumPy table lookup), never value
by value in Python, into ``large_string`` arrays whose 64-bit offsets cannot overflow on a
batch of long texts.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from polysql.backends._common.arrow import null_scalar, text_scalar

NULL_FIELD = "NULL"
FORMAT_CLAUSE = ("FIELDS TERMINATED BY ',' ENCLOSED BY '\"' ESCAPED BY '' "
                 "LINES TERMINATED BY '\n'")
_TEXT = pa.large_string()
_QUOTE = text_scalar('"', large=True)
_EMPTY = text_scalar("", large=True)
_NEWLINE = text_scalar("\n", large=True)
_COMMA = text_scalar(",", large=True)
_TRUE = text_scalar("1", large=True)
_FALSE = text_scalar("0", large=True)
_NULL_TEXT = null_scalar(_TEXT)
_NULL_FIELD_TEXT = text_scalar(NULL_FIELD, large=True)
# Two ASCII hex digits for every byte value.
_HEX_DIGITS = np.frombuffer(b"".join(b"%02x" % i for i in range(256)), np.uint8).reshape(256, 2)


def _enclosed(text: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(_QUOTE, text, _QUOTE, _EMPTY)


def hex_text(array: pa.Array) -> pa.Array:
    """Each blob as lowercase hexadecimal text (a null stays null)."""
    binary = pc.cast(array, pa.large_binary())
    count = len(binary)
    _, offsets_buffer, data_buffer = binary.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int64)[binary.offset:binary.offset + count + 1]
    start, end = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(data_buffer, np.uint8)[start:end] if data_buffer is not None else \
        np.empty(0, np.uint8)
    digits = _HEX_DIGITS[data].reshape(-1)
    hexed = pa.Array.from_buffers(_TEXT, count, [None, pa.py_buffer((offsets - start) * 2),
                                                 pa.py_buffer(digits)])
    # Nulls came back as empty strings above; restore them from the input.
    return pc.if_else(pc.is_valid(binary), hexed, _NULL_TEXT)


def fields(array: pa.Array, kind: str) -> pa.Array:
    """One column as LOAD DATA field text, NULL included (never a null entry)."""
    if kind in ("integer", "decimal", "date", "timestamp"):
        # Digits, signs, points, dashes, colons and spaces: nothing to enclose. A decimal keeps
        # its exact digits ("0E-10" for a zero with scale 10 is read back exactly).
        text = pc.cast(array, _TEXT)
    elif kind == "float":
        # Arrow writes the shortest text that reads back as the same double. NaN/Infinity have
        # no MySQL value; they load as NULL and the load report counts them.
        text = pc.cast(pc.if_else(pc.is_finite(array), array, null_scalar(array.type)), _TEXT)
    elif kind == "boolean":
        text = pc.if_else(array, _TRUE, _FALSE)
    elif kind == "text":
        text = _enclosed(pc.replace_substring(pc.cast(array, _TEXT), '"', '""'))
    elif kind == "blob":
        text = _enclosed(hex_text(array))
    else:
        raise ValueError(f"no LOAD DATA form for logical type {kind!r}")
    return pc.fill_null(text, _NULL_FIELD_TEXT)


def batch_lines(batch: pa.RecordBatch, kinds: list[str]) -> pa.Buffer:
    """The rows of ``batch`` as bytes of the data file, each row ending in a newline."""
    columns = [fields(batch.column(i), kind) for i, kind in enumerate(kinds)]
    rows = pc.binary_join_element_wise(*columns, _COMMA) if len(columns) > 1 else columns[0]
    lines = pc.binary_join_element_wise(rows, _EMPTY, _NEWLINE)
    if isinstance(lines, pa.ChunkedArray):
        lines = lines.combine_chunks()
    _, offsets_buffer, data_buffer = lines.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int64)[lines.offset:lines.offset + len(lines) + 1]
    if data_buffer is None or len(offsets) < 2:
        return pa.py_buffer(b"")
    return data_buffer.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))

