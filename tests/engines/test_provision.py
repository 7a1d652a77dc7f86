"""`polysql up` reads which engines it can start, and how, from each engine's EngineInfo.

Starting a container needs Docker, which the suite does not assume: the end-to-end refusal on a
machine without it is tests/test_sweep.py::test_up_without_docker_says_what_is_missing_and_how_to_
proceed. Here: the engines offered are exactly those declaring a container, each starter resolves
to the function its engine package provides, and an engine without one is refused by name.
"""

from __future__ import annotations

import inspect

import pytest
from polysql_testkit import availability

from polysql.backends import catalog
from polysql.core.errors import ConfigError
from polysql.engines.provision import container_engines, default_images, servers, starter


def test_the_engines_offered_are_those_declaring_a_container() -> None:
    declared = {info.name for info in catalog.infos() if info.container is not None}
    assert set(container_engines()) == declared
    assert declared, "no installed engine declares a container for polysql up"
    for name, image in default_images().items():
        info = container_engines()[name]
        assert info.container is not None and image == info.container.image


@pytest.mark.parametrize("name", sorted(container_engines()))
def test_each_starter_is_its_engine_packages_function(name: str) -> None:
    info = container_engines()[name]
    problem = availability.client_problem(name)
    if problem is not None:
        availability.unavailable(name, problem)
    assert info.container is not None
    function = starter(info)
    assert function.__module__ == info.container.starter.partition(":")[0]
    assert function.__module__.startswith(f"polysql.backends.{name}.")
    assert list(inspect.signature(function).parameters) == ["image", "stack", "password"]


def test_an_engine_without_a_container_is_refused_by_name() -> None:
    without = sorted(info.name for info in catalog.infos() if info.container is None)
    assert without
    with (pytest.raises(ConfigError, match=rf"polysql up can start .*; not {without[0]}$"),
          servers([without[0]])):
        pass
