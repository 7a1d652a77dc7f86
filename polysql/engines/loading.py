"""``polysql.load``: copy a source database into an engine, idempotently.

The source opens read-only, the target for writing; the target backend does the copy (it knows its
own types and bulk-load path) and records the source fingerprint so an unchanged source is not
loaded twice.
"""

from __future__ import annotations

from typing import Any

from polysql.core.errors import EngineUnavailableError, LoadError
from polysql.core.naming import check_mode
from polysql.core.schema import LoadReport
from polysql.engines.registry import backend_class, connect, parse_url


def load(source_url: str, target_url: str, *, replace: bool = False, names: str = "exact",
         **options: Any) -> LoadReport:
    """Copy every table of the database at ``source_url`` into ``target_url``.

    Skipped (``report.skipped``) when the target already holds this exact source, unless
    ``replace``. ``names``: ``exact`` (default), ``lower`` or ``snake`` (see polysql.core.naming).
    ``options`` go to the target's ``connect`` (e.g. ``threads`` for DuckDB).
    """
    check_mode(names)
    source_cls = backend_class(source_url)
    target_cls = backend_class(target_url)
    if "load_source" not in source_cls.capabilities:
        raise LoadError(f"the {source_cls.name} backend cannot serve as a load source "
                        f"(source URL {source_url!r})")
    if "load_target" not in target_cls.capabilities:
        raise LoadError(f"the {target_cls.name} backend cannot be a load target "
                        f"(target URL {target_url!r})")
    source_path = parse_url(source_url).database
    if not source_path or source_path == ":memory:":
        # an in-memory database is empty when polysql opens it: there is nothing to copy
        raise LoadError(f"the load source {source_url!r} names no database: give its file, "
                        f"e.g. sqlite:///path/to/db.sqlite")
    try:
        source = connect(source_url, read_only=True)
    except EngineUnavailableError as exc:
        raise LoadError(f"cannot open the load source {source_path or source_url!r}: {exc}") from exc
    try:
        with connect(target_url, read_only=False, **options) as target:
            return target.load(source, replace=replace, names=names)
    finally:
        source.close()
