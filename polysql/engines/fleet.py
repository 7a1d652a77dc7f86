"""Engines for a sweep: which engines to use, and a loaded evaluation copy of each database on each.

``--engines sqlite,duckdb`` names engines by short name; ``name=URL`` or a bare URL points at a
specific instance (``pg=postgresql://user@host/``). Each engine gets its own copy of every source
database from the evaluation-copy service (:mod:`polysql.engines.copies`): loaded on first use
(idempotent, so later sweeps reuse it) and opened read-only for evaluation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL

from polysql.backends import catalog
from polysql.backends.base import Backend
from polysql.core.digest import content_digest
from polysql.core.errors import ConfigError
from polysql.core.schema import LoadReport
from polysql.core.urls import without_database
from polysql.engines.copies import EvaluationCopies, engine_name, layout_digest, names_existing
from polysql.engines.registry import alias_url, backend_class, parse_url


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
        defaults = ",".join(info.name for info in catalog.infos() if info.default_sweep)
        raise ConfigError(f"no engines given: use e.g. --engines {defaults}")
    specs: list[EngineSpec] = []
    for item in items:
        name, _, url_text = item.partition("=") if "=" in item.split("://")[0] else ("", "", item)
        if "://" not in url_text:
            url_text = alias_url(url_text)
        url = parse_url(url_text)
        cls = backend_class(url)
        specs.append(EngineSpec(name=name.strip() or engine_name(cls, url), url=url, backend=cls))
    names = [s.name for s in specs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(
            f"engine name(s) {', '.join(duplicates)} given twice; name instances apart with "
            "NAME=URL, e.g. 'old=URL1,new=URL2'"
        )
    return specs


class EngineFleet:
    """A sweep's evaluation copies: one per (engine, database) of its dataset, built and opened
    on first use through :class:`~polysql.engines.copies.EvaluationCopies`."""

    def __init__(self, cache_dir: Path, dataset_name: str) -> None:
        self.cache_dir = cache_dir
        self.dataset_name = dataset_name
        self._copies = EvaluationCopies(cache_dir)
        # (engine, db_id) -> (the copy's load report, its fingerprint): asked for every statement,
        # and worth keeping while the same report stands (a copy rebuilt gets a new one)
        self._fingerprints: dict[tuple[str, str], tuple[LoadReport, str]] = {}

    @property
    def load_reports(self) -> dict[tuple[str, str], LoadReport]:
        """What loading each copy did, by (engine name, db_id)."""
        return {(name, db_id): report
                for (name, _dataset, db_id), report in self._copies.reports.items()}

    def target_url(self, spec: EngineSpec, db_id: str) -> URL:
        return spec.backend.evaluation_url(
            spec.url, dataset=self.dataset_name, db_id=db_id, cache_dir=self.cache_dir
        )

    def unused_database(self, spec: EngineSpec, db_id: str) -> str | None:
        """A warning when ``spec``'s URL names a database (a file, a server database) the sweep
        does not use: copies go where the engine keeps them whatever that part says, and only a
        URL holding ``{db_id}`` names databases to evaluate on. None when nothing is ignored."""
        given = spec.url.database
        if not given or names_existing(spec.url):
            return None
        target = self.target_url(spec, db_id)
        unnamed = spec.backend.evaluation_url(without_database(spec.url), dataset=self.dataset_name,
                                              db_id=db_id, cache_dir=self.cache_dir)
        if target != unnamed:
            return None  # the engine builds its copies on what the URL names
        return (f"engine {spec.name}: {given!r} in its URL is not used; a sweep evaluates on copies "
                f"it builds (database {db_id} is at {target.render_as_string(hide_password=True)}). "
                f"To evaluate on databases that already hold the data, write {{db_id}} in its "
                f"place; to see this no more, leave the database out of the URL")

    def backend(self, spec: EngineSpec, db_id: str, source_url: str, slot: int = 0, *,
                waiting: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
                ) -> Backend:
        """The open evaluation copy of ``db_id`` on ``spec``'s engine, through ``slot``'s
        connection (one per worker running statements beside others on the same copy).
        ``waiting`` is entered while another worker is building or opening that copy."""
        return self._copies.get(spec.url, dataset=self.dataset_name, db_id=db_id,
                                source=source_url, name=spec.name, slot=slot,
                                waiting=waiting).backend

    def fingerprint(self, spec: EngineSpec, db_id: str) -> str:
        """Fingerprint of what an opened evaluation copy holds: the source database's, and the
        engine's copy layout when its copies hold more than the source's tables (so results
        cached on a copy of another shape are not served)."""
        key = self._copies.key(spec.url, self.dataset_name, db_id, spec.name)
        report = self._copies.reports[key]
        known = self._fingerprints.get((spec.name, db_id))
        if known is not None and known[0] is report:
            return known[1]
        layout = layout_digest(spec.url)
        fingerprint = report.fingerprint
        if layout is not None:
            fingerprint = content_digest("copy", fingerprint, layout)
        self._fingerprints[(spec.name, db_id)] = (report, fingerprint)
        return fingerprint

    def reconnect(self, spec: EngineSpec, db_id: str, source_url: str, slot: int = 0) -> Backend:
        """Drop ``slot``'s connection, which died, and open a fresh one (reloading if the copy
        is gone)."""
        return self._copies.reopen(spec.url, dataset=self.dataset_name, db_id=db_id,
                                   source=source_url, name=spec.name, slot=slot).backend

    def close(self) -> None:
        self._copies.close()
