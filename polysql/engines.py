"""Engines for a sweep: which engines to use, and a loaded evaluation copy of each database on each.

``--engines sqlite,duckdb`` names engines by short name; ``name=URL`` or a bare URL points at a
specific instance (``pg=postgresql://user@host/``). Each engine gets its own copy of every source
database, loaded on first use through :func:`polysql.load` (idempotent, so later sweeps reuse it)
and then opened read-only for evaluation.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL

from polysql.backends.base import Backend
from polysql.errors import ConfigError
from polysql.loading import load
from polysql.registry import alias_url, backend_class, parse_url
from polysql.schema import LoadReport


@dataclass(frozen=True, slots=True)
class EngineSpec:
    name: str  # the engine's key in results and reports
    url: URL  # base URL; the database part is chosen per dataset database
    backend: type[Backend]

    @property
    def dialect(self) -> str:
        return self.backend.dialect


def parse_engine_specs(text: str | list[str]) -> list[EngineSpec]:
    items = [p.strip() for p in (text.split(",") if isinstance(text, str) else text) if p.strip()]
    if not items:
        raise ConfigError("no engines given: use e.g. --engines sqlite,duckdb")
    specs: list[EngineSpec] = []
    for item in items:
        name, _, url_text = item.partition("=") if "=" in item.split("://")[0] else ("", "", item)
        if "://" not in url_text:
            url_text = alias_url(url_text)
        url = parse_url(url_text)
        cls = backend_class(url)
        # an emulator's results must never pass for the real service's
        default_name = f"{cls.name}-emulated" if cls.is_emulated(url) else cls.name
        specs.append(EngineSpec(name=name.strip() or default_name, url=url, backend=cls))
    names = [s.name for s in specs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(
            f"engine name(s) {', '.join(duplicates)} given twice; name instances apart with "
            "NAME=URL, e.g. 'pg15=postgresql://host1/,pg16=postgresql://host2/'"
        )
    return specs


class EngineFleet:
    """Evaluation connections per (engine, database), loaded and opened on first use."""

    def __init__(self, cache_dir: Path, dataset_name: str) -> None:
        self.cache_dir = cache_dir
        self.dataset_name = dataset_name
        self._backends: dict[tuple[str, str], Backend] = {}
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()
        self.load_reports: dict[tuple[str, str], LoadReport] = {}

    def _lock_for(self, key: tuple[str, str]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def target_url(self, spec: EngineSpec, db_id: str) -> URL:
        return spec.backend.evaluation_url(
            spec.url, dataset=self.dataset_name, db_id=db_id, cache_dir=self.cache_dir
        )

    def backend(self, spec: EngineSpec, db_id: str, source_url: str) -> Backend:
        key = (spec.name, db_id)
        with self._lock_for(key):
            backend = self._backends.get(key)
            if backend is None:
                target = self.target_url(spec, db_id)
                report = load(source_url, target.render_as_string(hide_password=False))
                with self._guard:
                    self.load_reports[key] = report
                backend = spec.backend.connect(target, read_only=True)
                self._backends[key] = backend
            return backend

    def fingerprint(self, spec: EngineSpec, db_id: str) -> str:
        """Fingerprint of the source database behind an opened evaluation copy."""
        return self.load_reports[(spec.name, db_id)].fingerprint

    def reconnect(self, spec: EngineSpec, db_id: str, source_url: str) -> Backend:
        """Drop a connection that died and open a fresh one (reloading if the copy is gone)."""
        key = (spec.name, db_id)
        with self._lock_for(key):
            old = self._backends.pop(key, None)
        if old is not None:
            # the connection is already broken; closing it is best effort
            with contextlib.suppress(Exception):
                old.close()
        return self.backend(spec, db_id, source_url)

    def close(self) -> None:
        with self._guard:
            backends = list(self._backends.values())
            self._backends.clear()
        for backend in backends:
            # closing at shutdown must not mask the sweep's own outcome
            with contextlib.suppress(Exception):
                backend.close()
