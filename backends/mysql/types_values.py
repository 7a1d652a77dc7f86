"""What MySQL/MariaDB results look like in Python: value decoders and result column type names.

Result values stay within the types the comparison layer knows (int, float, Decimal, str, bytes,
date, datetime, time, bool, None).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import time
from typing import Any

from pymysql.constants import FIELD_TYPE
from pymysql.converters import conversions


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


# [-]H..H:MM:SS[.ffffff], as the server sends a TIME in the text protocol
_TIME_TEXT = re.compile(r"(-?)(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?")


def _time(value: bytes | str) -> time | str:
    """A TIME within one day, as the time of day it is; any other (negative, 24 hours or more:
    MySQL's TIME is also a duration up to 838:59:59) as its text. SQLite gives times as text
    and the other engines as ``time`` values; both compare equal to a ``time``."""
    text = _text(value)
    parts = _TIME_TEXT.fullmatch(text)
    if parts is None or parts[1] or int(parts[2]) > 23:
        return text
    micro = int((parts[5] or "").ljust(6, "0"))
    return time(int(parts[2]), int(parts[3]), int(parts[4]), micro)


def _bit(value: bytes | str) -> int:
    return int.from_bytes(value.encode("latin-1") if isinstance(value, str) else value, "big")


# SET stays its comma-separated text instead of a Python set; a TIME is a time of day instead
# of PyMySQL's timedelta (which equals no other engine's time value), or its text when it is a
# duration no clock shows; BIT becomes the integer it spells.
DECODERS: dict[Any, Callable[..., Any]] = {
    **conversions,
    FIELD_TYPE.SET: _text,
    FIELD_TYPE.TIME: _time,
    FIELD_TYPE.BIT: _bit,
}


_BINARY_CHARSET = 63  # the "binary" character set: BLOB/BINARY/VARBINARY rather than text

_TYPE_NAMES: dict[int, str] = {
    FIELD_TYPE.DECIMAL: "DECIMAL",
    FIELD_TYPE.NEWDECIMAL: "DECIMAL",
    FIELD_TYPE.TINY: "TINYINT",
    FIELD_TYPE.SHORT: "SMALLINT",
    FIELD_TYPE.LONG: "INT",
    FIELD_TYPE.INT24: "MEDIUMINT",
    FIELD_TYPE.LONGLONG: "BIGINT",
    FIELD_TYPE.FLOAT: "FLOAT",
    FIELD_TYPE.DOUBLE: "DOUBLE",
    FIELD_TYPE.NULL: "NULL",
    FIELD_TYPE.TIMESTAMP: "TIMESTAMP",
    FIELD_TYPE.DATE: "DATE",
    FIELD_TYPE.NEWDATE: "DATE",
    FIELD_TYPE.TIME: "TIME",
    FIELD_TYPE.DATETIME: "DATETIME",
    FIELD_TYPE.YEAR: "YEAR",
    FIELD_TYPE.BIT: "BIT",
    FIELD_TYPE.JSON: "JSON",
    FIELD_TYPE.ENUM: "ENUM",
    FIELD_TYPE.SET: "SET",
    FIELD_TYPE.GEOMETRY: "GEOMETRY",
}
# Types whose name depends on whether the column is text or binary.
_STRING_NAMES: dict[int, tuple[str, str]] = {
    FIELD_TYPE.VARCHAR: ("VARCHAR", "VARBINARY"),
    FIELD_TYPE.VAR_STRING: ("VARCHAR", "VARBINARY"),
    FIELD_TYPE.STRING: ("CHAR", "BINARY"),
    FIELD_TYPE.TINY_BLOB: ("TEXT", "BLOB"),
    FIELD_TYPE.BLOB: ("TEXT", "BLOB"),
    FIELD_TYPE.MEDIUM_BLOB: ("TEXT", "BLOB"),
    FIELD_TYPE.LONG_BLOB: ("TEXT", "BLOB"),
}


def type_name(type_code: int, charset: int | None) -> str:
    """An engine type name for a result column (the wire protocol carries no length for
    TEXT/BLOB sizes, so all sizes report as TEXT or BLOB)."""
    if type_code in _STRING_NAMES:
        text, binary = _STRING_NAMES[type_code]
        return binary if charset == _BINARY_CHARSET else text
    return _TYPE_NAMES.get(type_code, f"TYPE{type_code}")
