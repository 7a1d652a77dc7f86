"""``polysql up``: throwaway PostgreSQL and MariaDB servers in Docker containers (testcontainers).

For machines without servers of their own. Needs a running Docker engine and the ``containers``
extra (``pip install 'polysql[containers]'``). Where there is no Docker engine, point polysql at
existing servers instead: ``--engines pg=postgresql://user@host:5432/,my=mysql://root@host:3306/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from polysql.errors import ConfigError, EngineUnavailableError

PASSWORD = "polysql"  # throwaway containers bound to this machine only


@dataclass(frozen=True, slots=True)
class ServerImage:
    engine: str
    image: str


DEFAULT_IMAGES = {
    "postgres": ServerImage("postgres", "postgres:16"),
    "mysql": ServerImage("mysql", "mariadb:11"),
}


def _require_docker() -> None:
    try:
        import docker  # installed with testcontainers
        from testcontainers.core.container import DockerContainer  # noqa: F401
    except ImportError as exc:
        raise EngineUnavailableError(
            "polysql up needs testcontainers: pip install 'polysql[containers]' "
            f"(missing: {exc.name})"
        ) from exc
    try:
        docker.from_env().ping()
    except Exception as exc:  # the docker SDK raises several unrelated types for "no daemon"
        raise EngineUnavailableError(
            f"no Docker engine is reachable ({type(exc).__name__}: {exc}); start Docker, or point "
            "polysql at running servers with --engines pg=postgresql://user@host:5432/,"
            "my=mysql://root@host:3306/"
        ) from exc


def _start(server: ServerImage, stack: ExitStack) -> str:
    if server.engine == "postgres":
        from testcontainers.postgres import PostgresContainer

        pg = stack.enter_context(PostgresContainer(server.image, username="postgres",
                                                   password=PASSWORD, dbname="postgres"))
        return f"postgresql://postgres:{PASSWORD}@{pg.get_container_host_ip()}:{pg.get_exposed_port(5432)}/"
    from testcontainers.mysql import MySqlContainer

    my = stack.enter_context(MySqlContainer(server.image, root_password=PASSWORD))
    return f"mysql://root:{PASSWORD}@{my.get_container_host_ip()}:{my.get_exposed_port(3306)}/"


@contextmanager
def servers(engines: list[str], images: dict[str, str] | None = None) -> Iterator[dict[str, str]]:
    """Start one container per engine and yield ``{engine: admin URL}``; stopped on exit."""
    unknown = sorted(set(engines) - set(DEFAULT_IMAGES))
    if unknown:
        raise ConfigError(f"polysql up can start {', '.join(DEFAULT_IMAGES)}; not {', '.join(unknown)}")
    _require_docker()
    chosen = {e: ServerImage(e, (images or {}).get(e, DEFAULT_IMAGES[e].image)) for e in engines}
    with ExitStack() as stack:
        yield {engine: _start(server, stack) for engine, server in chosen.items()}
