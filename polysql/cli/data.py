"""``polysql load`` and ``polysql schema``: copy a database between engines, show what one holds."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from polysql.cli.console import console, stdout
from polysql.core.naming import NAME_MODES
from polysql.engines.loading import load
from polysql.engines.registry import connect


@click.command("load")
@click.argument("source_url")
@click.argument("target_url")
@click.option("--replace", is_flag=True, help="Reload even if the target already holds this source.")
@click.option("--names", type=click.Choice(list(NAME_MODES)), default="exact",
              show_default=True,
              help="Keep source names exactly, or make them engine-idiomatic: lower, snake, or "
                   "fold (lower case where SQL can leave a name unquoted, as pgloader does).")
def load_cmd(source_url: str, target_url: str, replace: bool, names: str) -> None:
    """Copy the database at SOURCE_URL into TARGET_URL (idempotent)."""
    report = load(source_url, target_url, replace=replace, names=names)
    if report.skipped:
        stdout.print(f"{escape(target_url)} already holds this source (fingerprint {report.fingerprint[:16]}…); "
                  "nothing to do (use --replace to reload)")
        return
    table = Table(title=f"loaded {source_url} → {target_url} in {report.elapsed:.2f} s")
    table.add_column("table")
    table.add_column("rows", justify="right")
    for name, rows in report.tables.items():
        table.add_row(name, str(rows))
    stdout.print(table)
    for coercion in report.coercions:
        # a note about the whole load (e.g. how rows were sent) names no table or column
        where = ".".join(part for part in (coercion.table, coercion.column) if part)
        text = f"{where}: {coercion.message}" if where else coercion.message
        console.print(f"[yellow]coercion:[/] {escape(text)} ({coercion.count} value(s))",
                      highlight=False)


@click.command("schema")
@click.argument("url")
@click.option("--sample-rows", default=0, show_default=True, help="Append N example rows per table.")
def schema_cmd(url: str, sample_rows: int) -> None:
    """Print the schema held at URL as CREATE TABLE statements in that engine's dialect."""
    with connect(url) as backend:
        # imported here: sqlglot, which renders the DDL, is not needed by `polysql load`
        from polysql.engines.ddl import render_schema

        click.echo(render_schema(backend, sample_rows=sample_rows), nl=False)
