"""An engine as the rewrite tests use it: where its case databases go, how to open one, and how
to remove what a suite made on a server."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL

from polysql.datasets.rewrite.cases import RewriteCase
from polysql.engines.copies import EvaluationCopy
from polysql.engines.registry import backend_class
from polysql.rewrite.cases import load_case
from polysql.rewrite.databases import open_database, resolve_engine_url
from polysql.rewrite.scaffold import scaffold_case


@dataclass
class Engine:
    """One engine for the module: where its cases are built and how to remove what was made."""

    name: str
    cache_dir: Path
    pool: str
    overrides: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    admin_url: URL | None = None
    made: set[str] = field(default_factory=set)

    def case(self, root: Path, case_id: str) -> RewriteCase:
        return load_case(scaffold_case(root, case_id, engine=self.name, pool=self.pool))

    def note(self, case: RewriteCase) -> None:
        base = resolve_engine_url(case.engine, self.overrides)
        target = backend_class(base).evaluation_url(
            base, dataset=f"rewrite-{case.pool}", db_id=case.id, cache_dir=self.cache_dir)
        if self.admin_url is not None and target.database:
            self.made.add(target.database)

    def open(self, case: RewriteCase) -> EvaluationCopy:
        self.note(case)
        return open_database(case, engines=self.overrides, cache_dir=self.cache_dir,
                             connect_options=self.options)

    def cleanup(self) -> None:
        if self.name == "postgres":
            from polysql.backends.postgres.setup import drop_evaluation_database, drop_reader

            assert self.admin_url is not None
            for name in self.made:
                drop_evaluation_database(self.admin_url, name)
            drop_reader(self.admin_url, self.options["reader_role"])
        elif self.name == "mysql":
            from polysql.backends.mysql.backend import MySQLBackend

            assert self.admin_url is not None
            for name in self.made:
                MySQLBackend.drop(self.admin_url.set(database=name))


def make_engine(name: str, cache_dir: Path, tag: str) -> Engine:
    """The engine ``name`` for rewrite tests: a pool name of its own (``tag`` tells suites apart)
    and, on servers, the admin URL it cleans up with."""
    pool = f"{tag}{os.getpid()}-{uuid.uuid4().hex[:6]}"
    if name == "postgres":
        from polysql_testkit import pg_fixtures

        url = pg_fixtures.server_url()
        return Engine(name, cache_dir, pool, {"postgres": url.render_as_string(False)},
                      {"reader_role": pg_fixtures.unique(f"polysql_reader_r{tag}")}, url)
    if name == "mysql":
        from polysql_testkit import mysql_fixtures

        url = mysql_fixtures.server_url()
        return Engine(name, cache_dir, pool, {"mysql": url.render_as_string(False)}, {}, url)
    return Engine(name, cache_dir, pool)
