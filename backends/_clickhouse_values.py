"""ClickHouse results as Python values, and ClickHouse failures as error kinds.

Results travel in ClickHouse's Native format, decoded by clickhouse-connect, which knows every
ClickHouse type (Arrow output would turn ``DateTime`` into an integer and ``Enum`` into its code).
Strings are decoded here: valid UTF-8 becomes ``str``, anything else stays ``bytes`` (ClickHouse
keeps blobs in ``String`` columns). UUIDs and IP addresses become their text form.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from clickhouse_connect.driver.ctypes import RespBuffCls
from clickhouse_connect.driver.query import QueryContext
from clickhouse_connect.driver.transform import NativeTransform

from polysql.model import ErrorKind

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
    context = QueryContext(query_formats=QUERY_FORMATS, use_none=True)
    result = NativeTransform.parse_response(RespBuffCls(_Chunk(data)), context)
    rows = [tuple(python_value(v) for v in row) for row in result.result_rows]
    return list(result.column_names), [t.name for t in result.column_types], rows


# ClickHouse error codes (src/Common/ErrorCodes.cpp) whose kind is not "runtime".
_BY_CODE: dict[int, ErrorKind] = {
    62: "syntax",  # SYNTAX_ERROR
    159: "timeout",  # TIMEOUT_EXCEEDED
    209: "timeout",  # SOCKET_TIMEOUT
    164: "forbidden",  # READONLY
    497: "forbidden",  # ACCESS_DENIED
    291: "forbidden",  # DATABASE_ACCESS_DENIED
    241: "too_large",  # MEMORY_LIMIT_EXCEEDED
    158: "too_large",  # TOO_MANY_ROWS
    396: "too_large",  # TOO_MANY_ROWS_OR_BYTES
    307: "too_large",  # TOO_MANY_BYTES
    306: "too_large",  # TOO_DEEP_RECURSION
    243: "too_large",  # NOT_ENOUGH_SPACE
    210: "unavailable",  # NETWORK_ERROR
    516: "unavailable",  # AUTHENTICATION_FAILED
    194: "unavailable",  # REQUIRED_PASSWORD
}
_CODE = re.compile(r"Code: (\d+)\.")
_NOISE = re.compile(r"^(?:Streaming query failed: |Failed to create connection: )+")


def error_code(message: str) -> int | None:
    match = _CODE.search(message)
    return int(match.group(1)) if match else None


def clean_message(message: str) -> str:
    """ClickHouse's own words, without the client's prefixes."""
    return _NOISE.sub("", message.strip()) or message


def classify(message: str, code: int | None = None) -> ErrorKind:
    """The ``ExecError.kind`` of a ClickHouse failure (by error code; unknown codes are runtime:
    unknown tables, columns and functions, type errors, division by zero ...)."""
    code = code if code is not None else error_code(message)
    if code is None:
        return "runtime"
    if code == 394:  # QUERY_WAS_CANCELLED: only polysql cancels, and only on timeout
        return "timeout"
    return _BY_CODE.get(code, "runtime")
