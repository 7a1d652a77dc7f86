"""get_dataset / list_datasets: spec forms, layout detection and errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from polysql_testkit.bird_layout import make_bird

from polysql.core.errors import DatasetError
from polysql.datasets.demo import DemoDataset
from polysql.datasets.folder import FolderDataset
from polysql.datasets.registry import (
    describe_datasets,
    detect_kind,
    get_dataset,
    list_datasets,
    spec_in,
)

BIRD_ENTRY = {"question_id": 1, "db_id": "shop", "question": "q?", "SQL": "SELECT 1"}
SPIDER_ENTRY = {"db_id": "shop", "question": "q?", "query": "SELECT 1"}


def test_list_datasets_names_every_kind_with_its_form() -> None:
    kinds = {kind.name: kind for kind in list_datasets()}
    assert set(kinds) == {"demo", "bird", "spider", "archer", "jsonl"}
    assert kinds["bird"].usage.startswith("bird:PATH")
    assert all(kind.description for kind in kinds.values())


def test_describe_datasets_gives_every_form() -> None:
    forms = [form for form, _ in describe_datasets()]
    assert forms[:-1] == [kind.usage for kind in list_datasets()]
    assert forms[-1].startswith("PATH")
    assert all(description for _, description in describe_datasets())


def test_demo(isolated_cache: Path) -> None:
    dataset = get_dataset("demo")
    assert isinstance(dataset, DemoDataset)
    assert len(dataset.questions) >= 80
    assert dataset.database_path("retail").is_relative_to(isolated_cache)
    assert get_dataset(" DEMO ").name == "demo"


def test_demo_rejects_a_path_and_options() -> None:
    with pytest.raises(DatasetError, match="takes no path"):
        get_dataset("demo:somewhere")
    with pytest.raises(DatasetError, match=r"demo dataset does not accept option\(s\) 'split'"):
        get_dataset("demo?split=dev")


def test_bird_and_spider_specs(bird_folder: Callable[..., Path],
                               spider_folder: Callable[..., Path]) -> None:
    bird_root = bird_folder([BIRD_ENTRY], split="train")
    spider_root = spider_folder({"dev.json": [SPIDER_ENTRY]})
    bird = get_dataset(f"bird:{bird_root}?split=train")
    spider = get_dataset(f"spider:{spider_root}")
    assert isinstance(bird, FolderDataset) and bird.name == "bird-train"
    assert isinstance(spider, FolderDataset) and spider.name == "spider-dev"


def test_bare_paths_are_detected_by_layout(bird_folder: Callable[..., Path],
                                           spider_folder: Callable[..., Path]) -> None:
    bird_root = bird_folder([BIRD_ENTRY])
    spider_root = spider_folder({"dev.json": [SPIDER_ENTRY]})
    assert detect_kind(bird_root) == "bird"
    assert detect_kind(spider_root) == "spider"
    assert get_dataset(str(bird_root)).name == "bird-dev"
    assert get_dataset(f"{spider_root}?split=dev").name == "spider-dev"


def test_undetectable_folder(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="cannot tell which dataset"):
        get_dataset(str(tmp_path))


@pytest.mark.parametrize("spec", ["nope", "sqlite:x.db", "birdd:/data"])
def test_unknown_spec_lists_names_and_forms(spec: str) -> None:
    with pytest.raises(DatasetError) as info:
        get_dataset(spec)
    message = str(info.value)
    assert f"unknown dataset {spec!r}" in message
    for kind in list_datasets():
        assert kind.name in message and kind.usage in message


def test_empty_spec() -> None:
    with pytest.raises(DatasetError, match="empty dataset spec; known datasets: demo"):
        get_dataset("  ")


def test_kind_without_folder(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="needs a folder"):
        get_dataset("spider")
    with pytest.raises(DatasetError, match="names no folder"):
        get_dataset("bird:")
    with pytest.raises(DatasetError, match="folder not found"):
        get_dataset(f"bird:{tmp_path / 'missing'}")


def test_malformed_options(bird_folder: Callable[..., Path]) -> None:
    root = bird_folder([BIRD_ENTRY])
    with pytest.raises(DatasetError, match="key=value"):
        get_dataset(f"bird:{root}?split=dev&oops")
    with pytest.raises(DatasetError, match="given twice"):
        get_dataset(f"bird:{root}?split=dev&split=train")
    with pytest.raises(DatasetError, match="'split' is empty"):
        get_dataset(f"bird:{root}?split=")


@pytest.mark.parametrize(("spec", "read"), [
    ("bird:data/bird", "bird:/runs/here/data/bird"),
    ("bird:data/bird?split=train&databases=dbs", "bird:/runs/here/data/bird?split=train&databases=dbs"),
    ("spider:/abs/spider", "spider:/abs/spider"),
    ("data/generic?name=x", "/runs/here/data/generic?name=x"),
    ("demo", "demo"),
    ("demo?limit=3", "demo?limit=3"),
    ("bird:", "bird:"),  # no path: left for get_dataset to refuse
])
def test_a_recorded_spec_is_read_from_the_folder_its_sweep_ran_in(spec: str, read: str) -> None:
    assert spec_in(Path("/runs/here"), spec) == read
    assert spec_in(None, spec) == spec


def test_a_spec_read_from_another_folder_loads_from_there(tmp_path: Path) -> None:
    make_bird(tmp_path / "bird")
    dataset = get_dataset(spec_in(tmp_path, "bird:bird"))
    assert Path.cwd() != tmp_path
    assert len(dataset.questions) == 4
