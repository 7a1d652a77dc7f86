"""Idempotent, atomic loads into single-file engines (SQLite, DuckDB), and what every loader
shares: the source's name and coercions, and the error of a load the engine stopped.

A load builds the whole database in a temporary file next to the target and renames it into place,
so a crash never leaves a half-loaded target. What was loaded is recorded in a sidecar
``<target>.polysql.json`` (never inside the database: the evaluated schema must be exactly the
source's). A later load whose source fingerprint matches the sidecar is skipped.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from polysql.core.errors import EngineError, EngineUnavailableError, LoadError
from polysql.core.schema import Coercion, LoadReport
from polysql.core.version import __version__

SIDECAR_SUFFIX = ".polysql.json"
# Bump when what a load produces changes (type rules, mapping): older copies are then reloaded.
SIDECAR_FORMAT = 2  # 2: secondary indexes and UNIQUE constraints are copied


def sidecar_path(target: Path) -> Path:
    return target.with_name(target.name + SIDECAR_SUFFIX)


def _polysql_version() -> str:
    return __version__


def read_sidecar(target: Path) -> dict[str, Any] | None:
    """The sidecar's content, or None when there is none or it is unreadable (then reload)."""
    path = sidecar_path(target)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def skipped_report(target: Path, source: str, fingerprint: str) -> LoadReport | None:
    """A ``skipped`` report when ``target`` already holds the source with ``fingerprint``."""
    data = read_sidecar(target)
    if (data is None or data.get("fingerprint") != fingerprint
            or data.get("format") != SIDECAR_FORMAT or not target.is_file()):
        return None
    coercions = [Coercion(**c) for c in data.get("coercions", []) if isinstance(c, dict)]
    return LoadReport(source=source, target=str(data.get("target", target)),
                      fingerprint=fingerprint, skipped=True,
                      tables=dict(data.get("tables", {})), coercions=coercions)


def write_sidecar(target: Path, report: LoadReport, engine: str, engine_version: str) -> None:
    data = {
        "format": SIDECAR_FORMAT,
        "fingerprint": report.fingerprint,
        "source": report.source,
        "target": report.target,
        "engine": engine,
        "engine_version": engine_version,
        "polysql_version": _polysql_version(),
        "loaded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "elapsed": round(report.elapsed, 3),
        "tables": report.tables,
        "coercions": [asdict(c) for c in report.coercions],
    }
    path = sidecar_path(target)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        temporary.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                             encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise LoadError(f"loaded {str(target)!r} but cannot record it in {str(path)!r}: {exc}; "
                        f"the next load will rebuild it") from exc


@contextmanager
def atomic_build(target: Path, companions: tuple[str, ...]) -> Iterator[Path]:
    """Yield a temporary path to build the database in; on success move it onto ``target``.

    ``companions`` are suffixes of files the engine keeps beside a database (``.wal``,
    ``-journal``): stale ones belonging to the old target are removed first, since an engine
    would otherwise replay them onto the new file. A target that cannot be written (a folder,
    or a path through a file) is refused before anything is built.
    """
    if target.is_dir():
        raise LoadError(f"the load target {str(target)!r} is a folder: name the database file "
                        f"to create, e.g. {str(target / 'copy')!r} plus the engine's extension")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise LoadError(f"cannot create the load target {str(target)!r}: {exc.filename!r} is a "
                        f"file, not a folder; choose a path through folders only") from exc
    except OSError as exc:  # no permission, read-only file system, ...
        raise LoadError(f"cannot create the folder of the load target {str(target)!r}: "
                        f"{exc.strerror or exc} ({exc.filename or target.parent})") from exc
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    try:
        yield temporary
        # The old sidecar goes first: if we stop between the steps below, the target has no
        # sidecar and the next load rebuilds it.
        sidecar_path(target).unlink(missing_ok=True)
        for suffix in companions:
            target.with_name(target.name + suffix).unlink(missing_ok=True)
        os.replace(temporary, target)
    except OSError as exc:
        raise LoadError(f"cannot write the load target {str(target)!r}: {exc}") from exc
    finally:
        for path in (temporary, *(temporary.with_name(temporary.name + s) for s in companions)):
            # never hiding the error that ended the build: on a read-only file system even
            # removing a file that is not there fails
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)


def copy_not_written(engine: str, target: Path, exc: BaseException) -> LoadError:
    """The error of a file-engine load that failed on the copy's own file (a full disk, a
    folder it may not write in) rather than on a table; ``exc`` is the engine's error."""
    said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return LoadError(f"cannot write the {engine} copy {str(target)!r}: {said}; the previous "
                     f"copy, if any, is kept")


def timed(build: Callable[[], LoadReport]) -> LoadReport:
    started = time.perf_counter()
    report = build()
    report.elapsed = time.perf_counter() - started
    return report


def load_file_once(path: Path | None, *, origin: str, fingerprint: str, replace: bool,
                   build: Callable[[], LoadReport], engine: str, engine_version: str) -> LoadReport:
    """The idempotent shell of a file-engine load: skip when the sidecar already records this
    source, otherwise build (timed) and record it. In-memory targets (``path`` None) always build."""
    if path is not None and not replace:
        skipped = skipped_report(path, origin, fingerprint)
        if skipped is not None:
            return skipped
    report = timed(build)
    if path is not None:
        write_sidecar(path, report, engine, engine_version)
    return report


def source_coercions(source: Any) -> list[Coercion]:
    """Coercions a source reports for its type decisions (``Backend.coercions``)."""
    return list(source.coercions())


def source_name(source: Any) -> str:
    return source.url.render_as_string(hide_password=True)


def load_stopped(engine: str, where: str, database: str, detail: str, *,
                 lost: bool) -> EngineError:
    """The error of a server load its driver stopped: the server gone (shut down, crashed, the
    connection dropped) is an outage, which a sweep counts against the engine and not the
    predictions; anything else is a failed load. Either way the database keeps its previous
    copy, as server loads build the new one aside."""
    if lost:
        return EngineUnavailableError(
            f"{engine} at {where} stopped answering while database {database!r} was being "
            f"loaded ({detail}); the database keeps its previous content, and the next load "
            f"starts over")
    return LoadError(f"loading database {database!r} into {engine} failed ({detail})")
