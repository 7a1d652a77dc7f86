"""ClickHouse results as Python values.

Results travel in ClickHouse's Native format, decoded by clickhouse-connect, which knows every
ClickHouse type (Arrow output would turn ``DateTime`` into an integer and ``Enum`` into its code).
Strings are decoded here: valid UTF-8 becomes ``str``, anything else stays ``bytes`` (ClickHouse
keeps blobs in ``String`` columns). UUIDs and IP addresses become their text form.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC
from typing import Any

from clickhouse_connect.driver.ctypes import RespBuffCls
from clickhouse_connect.driver.query import QueryContext
from clickhouse_connect.driver.transform import NativeTransform

# Values the Native decoder should hand over raw or as text rather than as its own objects.
QUERY_FORMATS = {"String": "bytes", "FixedString": "bytes", "IPv*": "string", "UUID": "string"}


class _Chunk:
    """One Native block as the byte source clickhouse-connect's decoder reads from."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.last_message: bytes | None = None
        self.exception_tag: str | None = None

    @property
    def gen(self) -> Iterator[bytes]:
        yield self.data

    def close(self) -> None:
        return None


def python_value(value: Any) -> Any:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value
    if isinstance(value, list):
        return [python_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(python_value(v) for v in value)
    if isinstance(value, dict):
        return {python_value(k): python_value(v) for k, v in value.items()}
    return value


def decode_native(data: bytes) -> tuple[list[str], list[str], list[tuple[Any, ...]]]:
    """Column names, ClickHouse type names and rows of one self-contained Native block."""
    # A DateTime without a zone of its own is in the session's zone, which polysql makes UTC;
    # left to itself the decoder would read it in the machine's zone and hand back aware
    # datetimes there (naive UTC only on a machine that happens to run in UTC).
    context = QueryContext(query_formats=QUERY_FORMATS, use_none=True, server_tz=UTC,
                           apply_server_tz=True)
    result = NativeTransform.parse_response(RespBuffCls(_Chunk(data)), context)
    rows = [tuple(python_value(v) for v in row) for row in result.result_rows]
    return list(result.column_names), [t.name for t in result.column_types], rows
