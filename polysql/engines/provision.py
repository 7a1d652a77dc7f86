"""``polysql up``: throwaway database servers in Docker containers (testcontainers).

For machines without servers of their own. Needs a running Docker engine, the ``containers`` extra
(``pip install 'polysql[containers]'``) and each engine's own extra. Which engines can be started,
from which image and how, is each engine's ``EngineInfo.container``: its starter
(``module:function``, called as ``function(image, stack, password) -> admin URL``) lives in the
engine's package. Where there is no Docker engine, point polysql at existing servers instead, e.g.
``--engines pg=postgresql://user@host:5432/,my=mysql://root@host:3306/``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from polysql.backends import catalog
from polysql.backends.base import EngineInfo
from polysql.core.errors import ConfigError, EngineUnavailableError
from polysql.engines.registry import missing_clients

PASSWORD = "polysql"  # throwaway containers bound to this machine only

Starter = Callable[[str, ExitStack, str], str]


def container_engines() -> dict[str, EngineInfo]:
    """The installed engines ``polysql up`` can start, by name."""
    return {info.name: info for info in catalog.infos() if info.container is not None}


def default_images() -> dict[str, str]:
    """Each startable engine's default Docker image, by engine name."""
    return {name: info.container.image for name, info in container_engines().items()
            if info.container is not None}


def starter(info: EngineInfo) -> Starter:
    """The function that starts ``info``'s container, imported from its engine package (which
    needs the engine's client library, like everything else done with the server)."""
    if info.container is None:
        raise ConfigError(f"polysql up cannot start {info.name}: it declares no container")
    missing = missing_clients(info)
    if missing:
        raise EngineUnavailableError(
            f"polysql up {info.name} needs its client library ({', '.join(missing)} not "
            f"installed): pip install 'polysql[{info.extra or info.name}]'")
    module_name, _, function_name = info.container.starter.partition(":")
    function = getattr(importlib.import_module(module_name), function_name, None)
    if not callable(function):
        raise ConfigError(f"engine {info.name} names the container starter "
                          f"{info.container.starter!r}, which is not a function")
    return function


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
            "polysql at running servers with --engines NAME=URL,... (see docs/engines.md)"
        ) from exc


@contextmanager
def servers(engines: list[str], images: dict[str, str] | None = None) -> Iterator[dict[str, str]]:
    """Start one container per engine and yield ``{engine: admin URL}``; stopped on exit.
    ``images`` overrides an engine's default image."""
    offered = container_engines()
    unknown = sorted(set(engines) - set(offered))
    if unknown:
        raise ConfigError(f"polysql up can start {', '.join(sorted(offered)) or 'no engine'}; "
                          f"not {', '.join(unknown)}")
    starters = {engine: starter(offered[engine]) for engine in engines}
    _require_docker()
    chosen = {engine: (images or {}).get(engine) or default_images()[engine] for engine in engines}
    with ExitStack() as stack:
        yield {engine: starters[engine](chosen[engine], stack, PASSWORD) for engine in engines}
