"""`polysql leaderboard pack | validate | build | serve` through the CLI, on a real demo sweep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from polysql.cli import EXIT_CONFIG, EXIT_DATA, main


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-bundle")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POLYSQL_CACHE", str(root / "cache"))
        code, output = _run("sweep", "--out", str(root / "run"), "--predictor", "gold")
        assert code == 0, output
        code, output = _run("leaderboard", "pack", str(root / "run"), "--out", str(root / "bundle"))
        assert code == 0, output
    return root / "bundle"


def test_a_packed_sweep_validates(bundle: Path) -> None:
    code, output = _run("leaderboard", "validate", str(bundle))
    assert code == 0, output
    assert "valid" in output and "invalid" not in output


def test_a_tampered_bundle_is_rejected_and_not_built(bundle: Path, tmp_path: Path) -> None:
    tampered = tmp_path / "tampered"
    tampered.mkdir()
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["aggregates"][0]["correct"] += 5
    (tampered / "manifest.json").write_text(json.dumps(manifest))
    (tampered / "records.jsonl").write_bytes((bundle / "records.jsonl").read_bytes())

    code, output = _run("leaderboard", "validate", str(bundle), str(tampered))
    assert code == EXIT_DATA
    assert "invalid" in output and "aggregate_mismatch" in output

    code, output = _run("leaderboard", "build", str(tampered), "--out", str(tmp_path / "site"))
    assert code == EXIT_DATA and "aggregate_mismatch" in output
    assert not (tmp_path / "site").exists()


def test_an_unfinished_sweep_is_not_packed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYSQL_CACHE", str(tmp_path / "cache"))
    code, output = _run("sweep", "--out", str(tmp_path / "run"), "--limit", "5")
    assert code == 0, output
    code, output = _run("leaderboard", "pack", str(tmp_path / "run"), "--out", str(tmp_path / "b"))
    assert code == EXIT_DATA and "re-run `polysql sweep`" in output


def test_serve_needs_a_built_site(tmp_path: Path) -> None:
    code, output = _run("leaderboard", "serve", str(tmp_path))
    assert code == EXIT_CONFIG and "leaderboard build" in output


def test_build_shows_rewrite_results_from_a_ledger(bundle: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYSQL_CACHE", str(tmp_path / "cache"))
    cases = tmp_path / "cases"
    code, output = _run("rewrite", "new-case", "tiny", "--engine", "duckdb", "--pool", "scratch",
                        "--root", str(cases))
    assert code == 0, output
    code, output = _run("rewrite", "run", "--cases", str(cases), "--runs", "1", "-m", "identity",
                        "-m", "sqlglot-optimize", "--out", str(tmp_path / "rw"))
    assert code == 0, output
    site = tmp_path / "site"
    code, output = _run("leaderboard", "build", str(bundle), "--out", str(site),
                        "--rewrite-ledger", str(tmp_path / "rw" / "ledger.json"))
    assert code == 0, output
    page = (site / "rewrite.html").read_text()
    assert "identity" in page and "sqlglot-optimize" in page
    assert 'href="rewrite.html"' in (site / "index.html").read_text()
