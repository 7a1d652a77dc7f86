"""Which ClickHouse a ``clickhouse://`` URL reaches, and the settings it asks for.

``clickhouse:///dir`` (no host) is the embedded engine (:mod:`.connect_embedded`);
``clickhouse://user@host:8123/database`` a server over HTTP (:mod:`.connect_server`). Other query
parameters are ClickHouse settings applied to every evaluated statement.
"""

from __future__ import annotations

import re

from sqlalchemy.engine import URL

from polysql.core.errors import ConfigError

_SETTING_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SETTING_VALUE = re.compile(r"[A-Za-z0-9_.:+-]*")
# URL query parameters that configure the connection rather than the evaluated statements.
_CONNECTION_PARAMS = frozenset({"secure", "verify"})
# Settings polysql sets itself: a URL may not loosen them (log_comment names a connection's
# statements for cancelling them).
_RESERVED_SETTINGS = frozenset({"readonly", "max_execution_time", "timeout_overflow_mode",
                                "session_timezone", "log_comment"})


def is_server(url: URL) -> bool:
    """True when ``url`` names a server (it has a host), False for the embedded engine."""
    return bool(url.host)


def statement_settings(url: URL) -> dict[str, str]:
    """The ClickHouse settings a URL's query parameters ask for."""
    settings = {}
    for key, value in url.query.items():
        if key in _CONNECTION_PARAMS:
            continue
        text = value if isinstance(value, str) else value[-1]
        if not _SETTING_NAME.fullmatch(key) or not _SETTING_VALUE.fullmatch(text):
            raise ConfigError(f"URL parameter {key}={text!r} is not a ClickHouse setting")
        if key in _RESERVED_SETTINGS:
            raise ConfigError(f"the ClickHouse setting {key!r} is set by polysql and cannot be "
                              f"given in the URL")
        settings[key] = text
    return settings
