"""The statement screen's view of MySQL/MariaDB SQL: executable comments read as the code they are.

``/*! ... */`` (optionally with a version, ``/*!50000 ... */``) and MariaDB's ``/*M! ... */`` are
comments to every parser but are run by the server, so a write or a forbidden function inside
one would pass a screen that reads them as comments. The screen reads them as plain text instead.
The server's own barriers (a SELECT-only reader, read-only transactions) stay the real guard.
"""

from __future__ import annotations

import re

from polysql.backends._common.guard import screen

_EXECUTABLE_COMMENT = re.compile(r"/\*M?!\d*(.*?)\*/", re.S)


def executable_text(sql: str) -> str:
    """``sql`` with every executable comment replaced by its contents."""
    return _EXECUTABLE_COMMENT.sub(lambda match: f" {match.group(1)} ", sql)


def screen_statement(sql: str, dialect: str) -> str | None:
    """Why ``sql`` must not run on the server, or None (see :func:`guard.screen`)."""
    return screen(executable_text(sql), dialect)
