"""What a ``spark://`` or ``sc://`` URL asks for.

* ``spark://local[N]/DATABASE`` -- an embedded session in this process (``spark://`` alone and
  ``spark://local`` mean ``local[2]``);
* ``spark://HOST:PORT/DATABASE`` -- a driver in this process on the standalone cluster whose
  master is ``spark://HOST:PORT``;
* ``sc://HOST:PORT/DATABASE`` -- a Spark Connect server (default port 15002).

Query parameters: ``warehouse`` (where loaded tables live; embedded and standalone only,
default ``<polysql cache>/engines/spark``), ``ansi`` (``true``/``false``: the session's
``spark.sql.ansi.enabled``; default: the engine's own default), ``partitions``
(``spark.sql.shuffle.partitions``, default 4) and, for Spark Connect, ``token``, ``use_ssl``,
``user_id`` and ``session_id``, passed on in the Connect connection string.

SQLAlchemy's URL parser reads ``local[2]`` as the host, which is what it is taken for here.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL

from polysql.core.errors import ConfigError
from polysql.core.paths import cache_dir

DEFAULT_LOCAL_MASTER = "local[2]"
DEFAULT_CONNECT_PORT = 15002
DEFAULT_PARTITIONS = 4
_LOCAL_MASTER = re.compile(r"local(\[(\*|\d+)(,\s*\d+)?\])?", re.IGNORECASE)
_CONNECT_KEYS = ("token", "use_ssl", "user_id", "session_id")
_OWN_KEYS = ("warehouse", "ansi", "partitions")
_TRUE = {"1", "true", "on", "yes"}
_FALSE = {"0", "false", "off", "no"}
# Spark lower-cases database names and allows only these characters in them.
_MAX_DATABASE_NAME = 100


@dataclass(frozen=True, slots=True)
class SparkTarget:
    """A parsed Spark URL."""

    connect: bool  # Spark Connect (sc://) rather than a driver in this process
    master: str  # local[N] or spark://HOST:PORT; for Spark Connect the sc:// connection string
    database: str | None
    warehouse: Path | None  # None for Spark Connect: the server keeps the tables
    ansi: bool | None  # None: the engine's default
    partitions: int

    @property
    def local(self) -> bool:
        return not self.connect and self.master.lower().startswith("local")


def _query_value(url: URL, key: str) -> str | None:
    value = url.query.get(key)
    if value is None:
        return None
    return value if isinstance(value, str) else value[-1]


def _flag(url: URL, key: str) -> bool | None:
    value = _query_value(url, key)
    if value is None:
        return None
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ConfigError(f"Spark URL parameter {key}={value!r}: use true or false")


def default_warehouse() -> Path:
    return cache_dir() / "engines" / "spark"


def parse_target(url: URL) -> SparkTarget:
    scheme = url.get_backend_name()
    unknown = sorted(set(url.query) - set(_OWN_KEYS) - set(_CONNECT_KEYS))
    if unknown:
        raise ConfigError(f"unknown Spark URL parameter(s) {', '.join(unknown)}; supported: "
                          f"{', '.join(_OWN_KEYS + _CONNECT_KEYS)}")
    partitions_text = _query_value(url, "partitions")
    try:
        partitions = int(partitions_text) if partitions_text else DEFAULT_PARTITIONS
    except ValueError as exc:
        raise ConfigError(f"Spark URL parameter partitions={partitions_text!r} is not a number") \
            from exc
    database = (url.database or "").strip("/") or None
    if database is not None and not re.fullmatch(r"[A-Za-z0-9_]+", database):
        raise ConfigError(f"Spark database name {database!r} may hold only letters, digits and "
                          f"underscores")
    ansi = _flag(url, "ansi")
    if scheme == "sc":
        if not url.host:
            raise ConfigError("a Spark Connect URL needs a host: sc://HOST:PORT/DATABASE")
        if _query_value(url, "warehouse"):
            raise ConfigError("warehouse= does not apply to Spark Connect: the server keeps the "
                              "tables in its own catalog")
        params = "".join(f";{key}={_query_value(url, key)}" for key in _CONNECT_KEYS
                         if _query_value(url, key) is not None)
        master = f"sc://{url.host}:{url.port or DEFAULT_CONNECT_PORT}/{params}"
        return SparkTarget(True, master, database and database.lower(), None, ansi, partitions)
    connect_only = sorted(set(url.query) & set(_CONNECT_KEYS))
    if connect_only:
        raise ConfigError(f"{', '.join(connect_only)} apply only to Spark Connect (sc://) URLs")
    host = url.host or ""
    if not host or _LOCAL_MASTER.fullmatch(host):
        master = host if "[" in host else DEFAULT_LOCAL_MASTER
    else:
        master = f"spark://{host}:{url.port or 7077}"
    warehouse_text = _query_value(url, "warehouse")
    warehouse = Path(warehouse_text).expanduser().resolve() if warehouse_text \
        else default_warehouse()
    return SparkTarget(False, master, database and database.lower(), warehouse, ansi, partitions)


def evaluation_database_name(dataset: str, db_id: str) -> str:
    """``polysql_<dataset>_<db_id>`` in the characters Spark allows (lower case); a short digest
    of the original names is appended whenever characters had to be replaced or the name
    shortened, so two databases never share a name."""
    raw = f"polysql_{dataset}_{db_id}"
    clean = re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]", "_", raw.lower())).rstrip("_")
    lossy = clean != re.sub(r"_+", "_", raw.lower()).rstrip("_")
    if not lossy and len(clean) <= _MAX_DATABASE_NAME:
        return clean
    suffix = hashlib.sha256(raw.encode("utf-8")).hexdigest()[:8]
    return f"{clean[:_MAX_DATABASE_NAME - len(suffix) - 1].rstrip('_')}_{suffix}"
