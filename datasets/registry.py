"""Find a dataset by spec string.

Spec forms::

    demo                        the bundled demo dataset (database generated into the cache)
    bird:PATH[?split=dev]       a BIRD release folder
    spider:PATH[?split=dev]     a Spider release folder
    PATH[?options]              a folder whose layout says whether it is BIRD or Spider

Loaders are listed here as import paths and imported only when a spec asks for them. To add one,
write ``load_<name>(path, options) -> Dataset`` in its own module and add a :class:`DatasetKind`
to ``KINDS`` (see docs/datasets.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

from polysql.core.errors import DatasetError
from polysql.datasets.base import Dataset
from polysql.datasets.demo import DemoDataset
from polysql.datasets.options import check_options, parse_options

Loader = Callable[[Path, dict[str, str]], Dataset]


@dataclass(frozen=True, slots=True)
class DatasetKind:
    """One kind of dataset a spec can name."""

    name: str
    usage: str  # the spec form, as shown to users
    description: str
    loader: str  # "module:function"; function(path, options) -> Dataset
    needs_path: bool = True

    def load(self, path: Path | None, options: dict[str, str]) -> Dataset:
        module_name, _, function_name = self.loader.partition(":")
        loader: Loader = getattr(import_module(module_name), function_name)
        return loader(path if path is not None else Path(), options)


KINDS: tuple[DatasetKind, ...] = (
    DatasetKind("demo", "demo",
                "bundled retail questions tagged with SQL dialect hazards (generated SQLite database)",
                "polysql.datasets.registry:_load_demo", needs_path=False),
    DatasetKind("bird", "bird:PATH[?split=dev|train][&databases=FOLDER]",
                "BIRD release folder: PATH/<split>.json + PATH/<split>_databases/<db>/<db>.sqlite",
                "polysql.datasets.bird:load_bird"),
    DatasetKind("spider", "spider:PATH[?split=dev|train|test|NAME][&databases=FOLDER]",
                "Spider release folder: PATH/dev.json (or train_spider.json, test.json) + "
                "PATH/database/<db>/<db>.sqlite",
                "polysql.datasets.spider:load_spider"),
)


def _load_demo(path: Path, options: dict[str, str]) -> Dataset:
    check_options(options, {}, kind="demo")
    return DemoDataset.load()


def list_datasets() -> list[DatasetKind]:
    """The dataset kinds a spec can name, in the order they are documented."""
    return list(KINDS)


def describe_datasets() -> list[tuple[str, str]]:
    """(spec form, description) per kind, for listings such as ``polysql datasets``."""
    return [(kind.usage, kind.description) for kind in KINDS] + [
        ("PATH[?options]", "a BIRD or Spider folder, recognised by its layout")]


_BY_NAME: dict[str, DatasetKind] = {kind.name: kind for kind in KINDS}


def _usage() -> str:
    forms = "; ".join(kind.usage for kind in KINDS)
    return (f"known datasets: {', '.join(kind.name for kind in KINDS)}; accepted forms: {forms}; "
            f"or a BIRD/Spider folder PATH whose layout is detected")


def detect_kind(path: Path) -> str | None:
    """'bird' or 'spider' from a release folder's layout, None when it looks like neither."""
    if not path.is_dir():
        return None
    if any(child.is_dir() and child.name.endswith("_databases") for child in path.iterdir()):
        return "bird"
    if (path / "database").is_dir() or (path / "test_database").is_dir():
        return "spider"
    return None


def _split_options(text: str) -> tuple[str, str]:
    # Only a trailing "?key=value..." is options; a '?' elsewhere stays part of the path.
    head, sep, tail = text.rpartition("?")
    if sep and "=" in tail:
        return head, tail
    return text, ""


def get_dataset(spec: str) -> Dataset:
    """Load the dataset named by ``spec`` (see the module docstring for the forms)."""
    spec = spec.strip()
    if not spec:
        raise DatasetError(f"empty dataset spec; {_usage()}")
    body, option_text = _split_options(spec)
    options = parse_options(option_text, spec=spec)

    name, sep, rest = body.partition(":")
    kind = _BY_NAME.get(name.lower())
    if kind is not None and not kind.needs_path:
        if sep:
            raise DatasetError(f"dataset {kind.name!r} takes no path (got {spec!r}); use {kind.usage!r}")
        return kind.load(None, options)
    if kind is not None and sep:
        if not rest:
            raise DatasetError(f"dataset spec {spec!r} names no folder; use {kind.usage!r}")
        path = Path(rest).expanduser()
        if not path.is_dir():
            raise DatasetError(f"dataset spec {spec!r}: folder not found: {path}")
        return kind.load(path, options)
    if kind is not None:
        raise DatasetError(f"dataset {kind.name!r} needs a folder: use {kind.usage!r}")

    path = Path(body).expanduser()
    if path.exists():
        detected = detect_kind(path)
        if detected is None:
            raise DatasetError(
                f"cannot tell which dataset {path} is: expected a BIRD folder (with a "
                f"<split>_databases folder) or a Spider folder (with a database folder); "
                f"name the kind explicitly, e.g. 'bird:{body}'"
            )
        return _BY_NAME[detected].load(path, options)
    raise DatasetError(f"unknown dataset {spec!r}; {_usage()}")
