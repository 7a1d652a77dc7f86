"""Find a dataset by spec string.

Spec forms::

    demo                        the bundled demo dataset (database generated into the cache)
    bird:PATH[?split=dev]       a BIRD release folder (dev, train or mini-dev)
    spider:PATH[?split=dev]     a Spider release folder
    archer:PATH[?split=dev]     an Archer release folder (laid out like Spider)
    jsonl:PATH                  the generic layout: PATH/questions.jsonl + PATH/databases/
    PATH[?options]              a folder whose layout says whether it is generic, BIRD or Spider

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
from polysql.core.paths import path_in
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
    DatasetKind("bird", "bird:PATH[?split=dev|train|mini_dev_sqlite][&databases=FOLDER]"
                        "[&gold_<dialect>=FILE]",
                "BIRD release folder: PATH/<split>.json + PATH/<split>_databases/<db>/<db>.sqlite; "
                "mini-dev: PATH/mini_dev_sqlite.json with the other dialects' mini_dev_<dialect>"
                ".json as native gold + PATH/dev_databases/",
                "polysql.datasets.bird:load_bird"),
    DatasetKind("spider", "spider:PATH[?split=dev|train|test|NAME][&databases=FOLDER]",
                "Spider release folder: PATH/dev.json (or train_spider.json, test.json) + "
                "PATH/database/<db>/<db>.sqlite",
                "polysql.datasets.spider:load_spider"),
    DatasetKind("archer", "archer:PATH[?split=dev|train|NAME][&questions=FILE][&databases=FOLDER]",
                "Archer release folder: PATH/<split>.json (gold in query or sql) + "
                "PATH/database/<db>/<db>.sqlite",
                "polysql.datasets.archer:load_archer"),
    DatasetKind("jsonl", "jsonl:PATH[?questions=FILE][&databases=FOLDER][&name=NAME]",
                "generic layout: PATH/questions.jsonl (gold_sql, gold_sql_<dialect>, ...) + "
                "PATH/databases/<db>.sqlite",
                "polysql.datasets.generic:load_generic"),
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
        ("PATH[?options]", "a generic (questions.jsonl), BIRD or Spider folder, recognised by its "
                           "layout")]


_BY_NAME: dict[str, DatasetKind] = {kind.name: kind for kind in KINDS}


def _usage() -> str:
    forms = "; ".join(kind.usage for kind in KINDS)
    return (f"known datasets: {', '.join(kind.name for kind in KINDS)}; accepted forms: {forms}; "
            f"or a generic/BIRD/Spider folder PATH whose layout is detected")


def detect_kind(path: Path) -> str | None:
    """'jsonl', 'bird' or 'spider' from a folder's layout, None when it looks like none of them.

    Archer is laid out like Spider and cannot be told from it: it is named (``archer:PATH``).
    """
    if not path.is_dir():
        return None
    if (path / "questions.jsonl").is_file():
        return "jsonl"
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


def spec_in(folder: Path | None, spec: str) -> str:
    """``spec`` with its dataset path read from ``folder`` when relative (None: as it is): how a
    spec a sweep recorded is read from elsewhere. Options stay as they are (their paths are
    read from the dataset's folder)."""
    if folder is None:
        return spec
    body, option_text = _split_options(spec.strip())
    options = f"?{option_text}" if option_text else ""
    name, sep, rest = body.partition(":")
    kind = _BY_NAME.get(name.lower())
    if kind is not None:
        if not (kind.needs_path and sep and rest):
            return spec
        return f"{name}:{path_in(folder, rest)}{options}"
    return path_in(folder, body) + options


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
                f"cannot tell which dataset {path} is: expected a generic folder (with "
                f"questions.jsonl), a BIRD folder (with a <split>_databases folder) or a Spider "
                f"folder (with a database folder); name the kind explicitly, e.g. 'bird:{body}'"
            )
        return _BY_NAME[detected].load(path, options)
    raise DatasetError(f"unknown dataset {spec!r}; {_usage()}")
