"""``polysql up``: throwaway database servers in Docker containers, until Ctrl-C."""

from __future__ import annotations

import time

import click
from rich.markup import escape

from polysql.backends import catalog
from polysql.cli.console import stdout
from polysql.engines.provision import servers
from polysql.sweep.config import default_engines

# Engines whose EngineInfo declares a throwaway server (a Docker image) for this command.
_SERVERS = [info for info in catalog.infos() if info.container is not None]


@click.command("up")
@click.option("--engines", "-e", default=",".join(info.name for info in _SERVERS),
              show_default=True,
              help="Servers to start: " + ", ".join(f"{info.name} ({info.container.image} image)"
                                                    for info in _SERVERS if info.container) + ".")
def up_cmd(engines: str) -> None:
    """Start throwaway database servers in containers (needs Docker) until Ctrl-C."""
    wanted = [e.strip() for e in engines.split(",") if e.strip()]
    with servers(wanted) as urls:
        items = ",".join(f"{name}={url}" for name, url in urls.items())
        stdout.print("servers are up; in another terminal run:\n  polysql sweep --engines "
                     f"{default_engines()},{escape(items)}")
        stdout.print("press Ctrl-C to stop and remove them")
        while True:
            time.sleep(3600)
