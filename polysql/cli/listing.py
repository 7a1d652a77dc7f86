"""``polysql engines`` and ``polysql datasets``: what this installation can use."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from polysql.cli.console import stdout
from polysql.datasets.registry import describe_datasets
from polysql.engines.registry import available_schemes, engine_status


@click.command("engines")
def engines_cmd() -> None:
    """List the engine URL schemes polysql can use here, and whether each is ready (its client
    library is installed)."""
    table = Table(title="engines")
    for col in ("scheme", "backend", "dialect", "status"):
        table.add_column(col)
    for scheme in available_schemes():
        status = engine_status(scheme)
        cls = status.backend
        # escaped: rich would take the extra's "[spark]" for a style tag and drop it
        state = "ready" if status.ready else escape(f"client missing: {status.problem}")
        table.add_row(scheme, cls.name if cls else "-", cls.dialect if cls else "-", state)
    stdout.print(table)


@click.command("datasets")
def datasets_cmd() -> None:
    """List the datasets polysql knows and the forms a dataset can be given in."""
    table = Table(title="datasets")
    table.add_column("dataset")
    table.add_column("description")
    for name, description in describe_datasets():
        table.add_row(name, description)
    stdout.print(table)
