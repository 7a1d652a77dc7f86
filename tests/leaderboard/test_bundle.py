"""Submission bundles from real sweeps: pack (folder, .zip, .tar.gz), read back, validate, and
catch every kind of tampering by the problem it causes."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import sqlite3
import tarfile
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from polysql.cli import main
from polysql.core.errors import BundleError
from polysql.core.store import ResultsStore
from polysql.datasets.registry import get_dataset
from polysql.leaderboard.bundle import (
    Problem,
    compute_aggregates,
    is_valid,
    pack_bundle,
    read_bundle,
    validate_bundle,
)
from polysql.leaderboard.fingerprint import database_fingerprints

ENGINES = "sqlite,duckdb"


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POLYSQL_CACHE", str(root))
        yield root


def _sweep(out: Path, *args: str) -> None:
    result = CliRunner().invoke(main, ["sweep", "--out", str(out), "--engines", ENGINES, *args],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def demo_run(cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("demo") / "run"
    _sweep(run)  # the whole demo: 140 questions x gold,transpile x sqlite,duckdb
    return run


@pytest.fixture(scope="module")
def demo_bundle(demo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pack_bundle(demo_run, tmp_path_factory.mktemp("bundles") / "demo-bundle")


@pytest.fixture
def bundle_copy(demo_bundle: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "bundle"
    shutil.copytree(demo_bundle, copy)
    return copy


# -- helpers that tamper like a submitter would: edit, then make the hash agree again ----------
def _load(path: Path) -> tuple[dict[str, Any], list[str]]:
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    return manifest, (path / "records.jsonl").read_text(encoding="utf-8").splitlines()


def _save(path: Path, manifest: dict[str, Any], lines: list[str], *, fix_hash: bool = True) -> None:
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    (path / "records.jsonl").write_bytes(data)
    if fix_hash:
        manifest["records_sha256"] = hashlib.sha256(data).hexdigest()
    (path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def _codes(problems: list[Problem]) -> set[str]:
    return {p.code for p in problems}


# -- packing a complete run ------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["bundle", "bundle.zip", "bundle.tar.gz"])
def test_packed_bundle_validates_clean_and_holds_the_run(demo_run: Path, tmp_path: Path,
                                                         name: str) -> None:
    path = pack_bundle(demo_run, tmp_path / name)
    assert path == tmp_path / name
    assert path.is_dir() == (name == "bundle")
    assert validate_bundle(path) == []

    bundle = read_bundle(path)
    latest = ResultsStore(demo_run).latest_records()
    assert len(bundle.records) == len(latest) == 140 * 2 * 2
    canonical = sorted(json.dumps(r, sort_keys=True) for r in latest)
    assert sorted(json.dumps(r, sort_keys=True) for r in bundle.records) == canonical
    keys = [(r["question_id"], r["predictor"], r["engine"]) for r in bundle.records]
    assert keys == sorted(keys)

    manifest = bundle.manifest
    assert (manifest["format"], manifest["format_version"]) == ("polysql-bundle", 1)
    demo = get_dataset("demo")
    assert manifest["dataset"]["question_ids"] == sorted(q.id for q in demo.questions)
    assert manifest["dataset"]["questions"] == 140
    assert manifest["settings"] == {"timeout": 30.0, "max_rows": 100000, "policy": {}}
    assert [p["name"] for p in manifest["predictors"]] == ["gold", "transpile"]
    # aggregates counted here straight from the run's statuses, and against the sweep's summary
    statuses: dict[tuple[str, str], Counter[str]] = {}
    for record in latest:
        statuses.setdefault((record["predictor"], record["engine"]), Counter())[record["status"]] += 1
    summary = {(c["predictor"], c["engine"]): c
               for c in json.loads((demo_run / "summary.json").read_text())["cells"]}
    assert len(manifest["aggregates"]) == 4
    for entry in manifest["aggregates"]:
        counts = statuses[(entry["predictor"], entry["engine"])]
        total = sum(counts.values()) - counts["invalid_gold"]
        assert (entry["correct"], entry["total"]) == (counts["match"], total)
        assert entry["accuracy"] == pytest.approx(counts["match"] / total)
        cell = summary[(entry["predictor"], entry["engine"])]
        assert (entry["correct"], entry["total"]) == (cell["correct"], cell["total"])
    versions = {(r["engine"], r["dialect"], r["engine_version"]) for r in latest}
    assert {(e, v["dialect"], v["version"]) for e, v in manifest["engines"].items()} == versions


def test_records_file_is_hashed_and_packing_is_repeatable(demo_run: Path, demo_bundle: Path,
                                                          tmp_path: Path) -> None:
    data = (demo_bundle / "records.jsonl").read_bytes()
    manifest = json.loads((demo_bundle / "manifest.json").read_text())
    assert manifest["records_sha256"] == hashlib.sha256(data).hexdigest()
    again = pack_bundle(demo_run, tmp_path / "again")
    assert (again / "records.jsonl").read_bytes() == data
    assert json.loads((again / "manifest.json").read_text())["dataset"] == manifest["dataset"]


def test_archives_hold_one_folder_with_the_same_files(demo_bundle: Path, demo_run: Path,
                                                      tmp_path: Path) -> None:
    zipped = pack_bundle(demo_run, tmp_path / "sub.zip")
    with zipfile.ZipFile(zipped) as archive:
        assert sorted(archive.namelist()) == ["sub/manifest.json", "sub/records.jsonl"]
        assert archive.read("sub/records.jsonl") == (demo_bundle / "records.jsonl").read_bytes()
    tarred = pack_bundle(demo_run, tmp_path / "sub.tar.gz")
    with tarfile.open(tarred) as archive:
        assert sorted(archive.getnames()) == ["sub/manifest.json", "sub/records.jsonl"]


def test_database_fingerprint_is_the_file_digest_and_survives_a_rebuild(
        demo_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    demo = get_dataset("demo")
    source = demo.database_path("retail")
    assert database_fingerprints(demo) == {
        "retail": "sha256:" + hashlib.sha256(source.read_bytes()).hexdigest()}
    # a reviewer's machine builds the demo database afresh; the bundle must still check out
    monkeypatch.setenv("POLYSQL_CACHE", str(tmp_path / "elsewhere"))
    assert validate_bundle(demo_bundle) == []
    assert (tmp_path / "elsewhere").is_dir()


# -- packing refusals ------------------------------------------------------------------------------
def test_a_limited_run_is_refused_with_the_missing_count_and_the_fix(tmp_path: Path) -> None:
    run = tmp_path / "limited"
    _sweep(run, "--limit", "10")
    with pytest.raises(BundleError) as caught:
        pack_bundle(run, tmp_path / "out")
    message = str(caught.value)
    assert "incomplete" in message
    assert f"{130 * 2 * 2} of {140 * 2 * 2}" in message
    assert "demo-011" in message
    assert "re-run `polysql sweep` with the same --out to finish it" in message
    assert not (tmp_path / "out").exists()


def test_pack_refuses_a_folder_that_is_no_run_and_an_occupied_target(demo_run: Path,
                                                                     tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="run.json is missing"):
        pack_bundle(tmp_path, tmp_path / "out")
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "keep.txt").write_text("mine")
    with pytest.raises(BundleError, match="already exists"):
        pack_bundle(demo_run, occupied)
    assert (occupied / "keep.txt").read_text() == "mine"
    with pytest.raises(BundleError, match="cannot load dataset"):
        pack_bundle(demo_run, tmp_path / "x", dataset_spec="spider:/no/such/folder")


# -- tampering -------------------------------------------------------------------------------------
def test_an_edited_aggregate_is_named_with_both_numbers(bundle_copy: Path) -> None:
    manifest, lines = _load(bundle_copy)
    entry = next(a for a in manifest["aggregates"] if (a["predictor"], a["engine"]) == ("transpile", "duckdb"))
    real = entry["correct"]
    entry["correct"] += 5
    entry["accuracy"] = entry["correct"] / entry["total"]
    _save(bundle_copy, manifest, lines, fix_hash=False)
    problems = validate_bundle(bundle_copy)
    assert _codes(problems) == {"aggregate_mismatch"}
    assert not is_valid(problems)
    text = problems[0].message
    assert "transpile/duckdb" in text and f"{real + 5}/140" in text and f"{real}/140" in text


def _flip_first_match(lines: list[str]) -> list[str]:
    index = next(i for i, line in enumerate(lines) if json.loads(line)["status"] == "match")
    record = json.loads(lines[index])
    record["status"], record["match"] = "mismatch", False
    return [*lines[:index], json.dumps(record), *lines[index + 1:]]


def test_a_cell_where_every_gold_failed_has_no_accuracy_and_validates(bundle_copy: Path) -> None:
    # an engine where the gold query fails on every question: n=0, nothing to score
    manifest, lines = _load(bundle_copy)
    records = [json.loads(line) for line in lines]
    for record in records:
        if (record["predictor"], record["engine"]) == ("transpile", "duckdb"):
            record["status"], record["match"] = "invalid_gold", False
    manifest["aggregates"] = compute_aggregates(records)
    cell = next(a for a in manifest["aggregates"]
                if (a["predictor"], a["engine"]) == ("transpile", "duckdb"))
    assert (cell["correct"], cell["total"]) == (0, 0)
    lines = [json.dumps(r, sort_keys=True, separators=(",", ":")) for r in records]
    for claimed in (None, 0.0):  # no accuracy; 0.0 is what bundles packed before said
        cell["accuracy"] = claimed
        _save(bundle_copy, manifest, lines)
        assert is_valid(validate_bundle(bundle_copy, check_dataset=False)), claimed
    cell["accuracy"] = 0.5
    _save(bundle_copy, manifest, lines)
    assert _codes(validate_bundle(bundle_copy, check_dataset=False)) == {"aggregate_mismatch"}


def test_a_flipped_status_breaks_the_hash_and_then_the_aggregates(bundle_copy: Path) -> None:
    manifest, lines = _load(bundle_copy)
    _save(bundle_copy, manifest, _flip_first_match(lines), fix_hash=False)
    assert _codes(validate_bundle(bundle_copy)) == {"records_hash", "aggregate_mismatch"}
    manifest, lines = _load(bundle_copy)
    _save(bundle_copy, manifest, lines, fix_hash=True)
    assert _codes(validate_bundle(bundle_copy)) == {"aggregate_mismatch"}


def test_dropped_records_fail_completeness_even_when_everything_else_agrees(bundle_copy: Path) -> None:
    manifest, lines = _load(bundle_copy)
    failures = [line for line in lines if json.loads(line)["status"] != "match"]
    assert len(failures) >= 4
    kept = [line for line in lines if line not in failures[:4]]
    manifest["aggregates"] = compute_aggregates(json.loads(line) for line in kept)
    _save(bundle_copy, manifest, kept)
    problems = validate_bundle(bundle_copy)
    assert _codes(problems) == {"missing_records"}
    assert "4 of 560" in problems[0].message
    dropped = json.loads(failures[0])
    assert f"{dropped['question_id']}/{dropped['predictor']}/{dropped['engine']}" in problems[0].message


def test_a_duplicated_record_is_reported(bundle_copy: Path) -> None:
    manifest, lines = _load(bundle_copy)
    _save(bundle_copy, manifest, [*lines, lines[7]])
    problems = validate_bundle(bundle_copy)
    assert "duplicate_record" in _codes(problems)
    record = json.loads(lines[7])
    duplicate = next(p for p in problems if p.code == "duplicate_record")
    assert f"{record['question_id']}/{record['predictor']}/{record['engine']}" in duplicate.message


def test_a_record_for_an_unknown_question_is_reported(bundle_copy: Path) -> None:
    manifest, lines = _load(bundle_copy)
    extra = json.loads(lines[0])
    extra["question_id"] = "demo-999"
    _save(bundle_copy, manifest, [*lines, json.dumps(extra)])
    problems = validate_bundle(bundle_copy)
    assert "unknown_question" in _codes(problems)
    assert "demo-999" in next(p for p in problems if p.code == "unknown_question").message


def test_a_record_of_another_dataset_is_reported(bundle_copy: Path) -> None:
    manifest, lines = _load(bundle_copy)
    other = json.loads(lines[0])
    other["dataset"] = "spider-dev"
    _save(bundle_copy, manifest, [json.dumps(other), *lines[1:]])
    assert _codes(validate_bundle(bundle_copy)) == {"dataset_mismatch"}


def test_an_edited_dataset_fingerprint_is_caught(bundle_copy: Path) -> None:
    manifest, lines = _load(bundle_copy)
    manifest["dataset"]["fingerprint"] = "0" * 64
    _save(bundle_copy, manifest, lines)
    assert _codes(validate_bundle(bundle_copy)) == {"dataset_fingerprint"}
    assert validate_bundle(bundle_copy, check_dataset=False) == []


def test_a_question_left_out_of_the_dataset_list_is_caught(bundle_copy: Path) -> None:
    manifest, lines = _load(bundle_copy)
    dropped = manifest["dataset"]["question_ids"].pop()
    manifest["dataset"]["questions"] -= 1
    kept = [line for line in lines if json.loads(line)["question_id"] != dropped]
    manifest["aggregates"] = compute_aggregates(json.loads(line) for line in kept)
    _save(bundle_copy, manifest, kept)
    problems = validate_bundle(bundle_copy)
    assert _codes(problems) == {"dataset_fingerprint"}
    assert dropped in problems[0].message


def test_an_unloadable_dataset_is_only_a_warning(bundle_copy: Path) -> None:
    manifest, lines = _load(bundle_copy)
    manifest["dataset"]["spec"] = "bird:/no/such/folder"
    _save(bundle_copy, manifest, lines)
    problems = validate_bundle(bundle_copy)
    assert _codes(problems) == {"warn_dataset_unavailable"}
    assert problems[0].is_warning and is_valid(problems)
    assert validate_bundle(bundle_copy, check_dataset=False) == []


def test_an_unknown_format_version_stops_validation(bundle_copy: Path) -> None:
    manifest, lines = _load(bundle_copy)
    manifest["format_version"] = 2
    _save(bundle_copy, manifest, lines)
    assert _codes(validate_bundle(bundle_copy)) == {"format"}


def test_a_policy_this_polysql_cannot_read_is_caught(bundle_copy: Path) -> None:
    """A board compares bundles by their comparison policy; one it cannot read would otherwise
    pass as the default policy."""
    manifest, lines = _load(bundle_copy)
    for policy, said in (("set_semantics=true", "settings.policy must be an object"),
                         ({"set_semantic": True}, "unknown comparison policy option(s) set_semantic"),
                         ({"null_order": "sometimes"}, "null_order must be 'either' or 'strict'")):
        manifest["settings"]["policy"] = policy
        _save(bundle_copy, manifest, lines)
        problems = validate_bundle(bundle_copy, check_dataset=False)
        assert _codes(problems) == {"format"}, policy
        assert said in problems[0].message
    manifest["settings"] = ["not", "an", "object"]
    _save(bundle_copy, manifest, lines)
    assert "settings must be an object" in validate_bundle(bundle_copy)[0].message
    manifest["settings"] = {"policy": {"set_semantics": True}}
    _save(bundle_copy, manifest, lines)
    assert validate_bundle(bundle_copy, check_dataset=False) == []


# -- a second, folder dataset: the spec points elsewhere, or the data changes underneath -----------
def _spider_folder(root: Path) -> Path:
    database = root / "database" / "shop"
    database.mkdir(parents=True)
    with sqlite3.connect(database / "shop.sqlite") as conn:
        conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL)")
        conn.executemany("INSERT INTO items VALUES (?, ?, ?)",
                         [(1, "pen", 1.5), (2, "ink", 4.0), (3, "pad", 2.25)])
    conn.close()
    questions = [
        {"db_id": "shop", "question": "How many items?", "query": "SELECT COUNT(*) FROM items"},
        {"db_id": "shop", "question": "Cheapest item?",
         "query": "SELECT name FROM items ORDER BY price LIMIT 1"},
    ]
    (root / "dev.json").write_text(json.dumps(questions), encoding="utf-8")
    return root


@pytest.fixture
def spider_bundle(tmp_path: Path) -> tuple[Path, Path]:
    folder = _spider_folder(tmp_path / "spider")
    run = tmp_path / "spider-run"
    _sweep(run, "--dataset", f"spider:{folder}")
    # run.json records the spec the sweep was given, so a folder dataset packs without one
    bundle = pack_bundle(run, tmp_path / "spider-bundle")
    assert read_bundle(bundle).manifest["dataset"]["spec"] == f"spider:{folder}"
    assert validate_bundle(bundle) == []
    return folder, bundle


def test_a_changed_gold_query_changes_the_fingerprint(spider_bundle: tuple[Path, Path]) -> None:
    folder, bundle = spider_bundle
    questions = json.loads((folder / "dev.json").read_text())
    questions[1]["query"] = "SELECT name FROM items ORDER BY price DESC LIMIT 1"
    (folder / "dev.json").write_text(json.dumps(questions))
    assert _codes(validate_bundle(bundle)) == {"dataset_fingerprint"}


def test_changed_database_content_changes_the_fingerprint(spider_bundle: tuple[Path, Path]) -> None:
    folder, bundle = spider_bundle
    with sqlite3.connect(folder / "database" / "shop" / "shop.sqlite") as conn:
        conn.execute("UPDATE items SET price = 9.0 WHERE id = 1")
    conn.close()
    assert _codes(validate_bundle(bundle)) == {"dataset_fingerprint"}


def test_a_spec_pointing_at_another_dataset_is_caught(spider_bundle: tuple[Path, Path],
                                                      bundle_copy: Path) -> None:
    folder, _ = spider_bundle
    manifest, lines = _load(bundle_copy)
    manifest["dataset"]["spec"] = f"spider:{folder}"
    _save(bundle_copy, manifest, lines)
    problems = validate_bundle(bundle_copy)
    assert _codes(problems) == {"dataset_fingerprint"}
    assert any("spider-dev" in p.message for p in problems)


# -- unreadable bundles ----------------------------------------------------------------------------
def test_a_corrupt_record_line_is_named_by_number(bundle_copy: Path) -> None:
    manifest, lines = _load(bundle_copy)
    lines[4] = lines[4][:40]
    _save(bundle_copy, manifest, lines)
    with pytest.raises(BundleError, match=r"records\.jsonl line 5 is not valid JSON"):
        read_bundle(bundle_copy)
    problems = validate_bundle(bundle_copy)
    assert _codes(problems) == {"unreadable"} and "line 5" in problems[0].message


def test_missing_or_non_json_manifest_is_named(bundle_copy: Path) -> None:
    (bundle_copy / "manifest.json").write_text("{not json")
    with pytest.raises(BundleError, match=r"manifest\.json is not valid JSON"):
        read_bundle(bundle_copy)
    (bundle_copy / "manifest.json").unlink()
    with pytest.raises(BundleError, match=r"manifest\.json is missing") as caught:
        read_bundle(bundle_copy)
    assert str(bundle_copy) in str(caught.value)


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def _files(bundle: Path) -> dict[str, bytes]:
    return {name: (bundle / name).read_bytes() for name in ("manifest.json", "records.jsonl")}


@pytest.mark.parametrize("make", [_zip, _tar], ids=["zip", "tar"])
def test_archive_members_escaping_the_bundle_are_refused(make: Any, demo_bundle: Path,
                                                         tmp_path: Path) -> None:
    files = {f"b/{name}": data for name, data in _files(demo_bundle).items()}
    evil = make(tmp_path / ("evil.zip" if make is _zip else "evil.tar.gz"),
                {**files, "b/../../escape.txt": b"x"})
    with pytest.raises(BundleError, match="points outside the bundle"):
        read_bundle(evil)
    assert _codes(validate_bundle(evil)) == {"unreadable"}
    assert not (tmp_path / "escape.txt").exists()


def test_archive_with_several_roots_or_files_at_root(demo_bundle: Path, tmp_path: Path) -> None:
    files = _files(demo_bundle)
    two = _zip(tmp_path / "two.zip", {**{f"a/{n}": d for n, d in files.items()},
                                      **{f"b/{n}": d for n, d in files.items()}})
    with pytest.raises(BundleError, match="several roots"):
        read_bundle(two)
    flat = _tar(tmp_path / "flat.tar.gz", files)
    assert validate_bundle(flat) == []
    partial = _zip(tmp_path / "partial.zip", {"b/manifest.json": files["manifest.json"]})
    with pytest.raises(BundleError, match=r"b/records\.jsonl is missing"):
        read_bundle(partial)
