"""The words every server engine uses when it will not run evaluated SQL as a URL's login.

Evaluated SQL runs either as the SELECT-only reader a polysql load created, or as the URL's own
login when that login can only read. An administrator's login on a database polysql did not load
is refused, and every engine says so the same way, so a user with two engines reads one message.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["not_loaded", "privileged_login_refusal"]

_SHOWN = 5


def not_loaded(database: str | None, records: str) -> str:
    """Why polysql has no reader of its own for ``database``; ``records`` says where loads are
    recorded on this engine."""
    if not database:
        return "the URL names no database"
    return f"database {database!r} was not loaded by polysql (no reader recorded in {records})"


def privileged_login_refusal(user: str, rights: Sequence[str], why_no_reader: str,
                             database: str | None = None) -> str:
    """The refusal for ``user``, which holds ``rights`` beyond reading (the weightiest first, as
    the engine lists them: the first few are shown), naming the command that makes a reader for
    ``database``."""
    distinct = list(dict.fromkeys(rights))
    shown = ", ".join(distinct[:_SHOWN])
    if len(distinct) > _SHOWN:
        shown += f" and {len(distinct) - _SHOWN} more"
    create = f"polysql reader create URL --database {database or 'NAME'}"
    return (f"evaluated SQL never runs as {user!r}, which holds {shown}; {why_no_reader}. To "
            f"evaluate on this existing database, create a SELECT-only login once with "
            f"`{create}` (URL: this administrator URL) and use the URL it prints; or copy the "
            f"data into a database of polysql's own with `polysql load`")
