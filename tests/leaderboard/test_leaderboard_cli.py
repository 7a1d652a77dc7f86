"""`polysql leaderboard pack | validate | build | serve` through the CLI, on a real demo sweep."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from polysql_testkit.bundles import sweep_bundle, wrong_predictions

from polysql.cli.main import EXIT_CONFIG, EXIT_DATA, main
from polysql.leaderboard.bundle import read_bundle


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


# --- two bundles claiming the same (dataset, predictor, engine) ---------------------------------

@pytest.fixture(scope="module")
def clashing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A user's case, from real sweeps of the demo: a.zip holds `gold` and the real `transpile`;
    b.zip holds someone's own system, also submitted as `transpile`, which answers every
    question wrongly (0.0%). Yields the folder holding both; commands run from inside it so the
    bundles are named as a user would type them."""
    root = tmp_path_factory.mktemp("clash")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POLYSQL_CACHE", str(root / "cache"))
        patch.chdir(root)
        sweep_bundle(root, "a.zip", "gold,transpile")
        sweep_bundle(root, "b.zip", f"transpile={wrong_predictions(root / 'wrong.jsonl')}")
        yield root


def _manifest_accuracy(bundle: Path, predictor: str, engine: str) -> float:
    aggregates = read_bundle(bundle).manifest["aggregates"]
    return next(a["accuracy"] for a in aggregates
                if (a["predictor"], a["engine"]) == (predictor, engine))


def _site_accuracy(site: Path) -> dict[tuple[str, str], float | None]:
    data = json.loads((site / "leaderboard.json").read_text(encoding="utf-8"))
    return {(row["model"], engine): cell["accuracy"]
            for row in data["rows"] for engine, cell in row["cells"].items()}


def test_build_refuses_a_clash_naming_both_bundles(clashing: Path) -> None:
    code, output = _run("leaderboard", "build", "a.zip", "b.zip", "--out", "site-clash")
    assert code == EXIT_DATA, output
    line = " ".join(output.split())  # the console may wrap the one-line message
    assert "bundles a.zip and b.zip both hold results" in line
    assert "2 (demo/transpile/duckdb, demo/transpile/sqlite)" in line
    assert "--as b.zip:transpile=transpile-b" in line and "--prefer a.zip" in line
    assert not (clashing / "site-clash").exists()


def test_build_with_as_keeps_both_systems_with_their_own_numbers(clashing: Path) -> None:
    code, output = _run("leaderboard", "build", "a.zip", "b.zip", "--out", "site-as",
                        "--as", "b.zip:transpile=transpile-b")
    assert code == 0, output
    assert "renamed: b.zip:transpile is shown as transpile-b" in output
    shown = _site_accuracy(clashing / "site-as")
    assert {model for model, _engine in shown} == {"gold", "transpile", "transpile-b"}
    for engine in ("sqlite", "duckdb"):
        assert shown[("transpile", engine)] == _manifest_accuracy(clashing / "a.zip",
                                                                   "transpile", engine)
        assert shown[("transpile-b", engine)] == 0.0
    # the user's numbers: the real transpile's 76.4% on DuckDB is not replaced by the 0.0%
    assert f"{100 * shown[('transpile', 'duckdb')]:.1f}%" == "76.4%"


def test_build_with_prefer_takes_that_bundle_and_reports_what_it_overrode(clashing: Path) -> None:
    code, output = _run("leaderboard", "build", "a.zip", "b.zip", "--out", "site-prefer",
                        "--prefer", "b.zip")
    assert code == 0, output
    line = " ".join(output.split())
    assert ("overridden: b.zip wins over a.zip (--prefer b.zip) on 2 result(s): "
            "demo/transpile/duckdb (a.zip's 76.4% (107/140) replaced by b.zip's 0.0% (0/140))"
            in line)
    assert "280 records of a.zip are left out" in line
    shown = _site_accuracy(clashing / "site-prefer")
    assert shown[("transpile", "duckdb")] == shown[("transpile", "sqlite")] == 0.0
    assert shown[("gold", "duckdb")] == _manifest_accuracy(clashing / "a.zip", "gold", "duckdb")
    page = (clashing / "site-prefer" / "index.html").read_text(encoding="utf-8")
    assert "b.zip wins over a.zip" in page  # the site says so too

    code, output = _run("leaderboard", "build", "a.zip", "b.zip", "--out", "site-prefer-a",
                        "--prefer", "a.zip")
    assert code == 0, output
    shown = _site_accuracy(clashing / "site-prefer-a")
    assert f"{100 * shown[('transpile', 'duckdb')]:.1f}%" == "76.4%"


def test_validate_reports_the_clash_of_two_valid_bundles(clashing: Path) -> None:
    code, output = _run("leaderboard", "validate", "a.zip", "b.zip")
    assert code == EXIT_DATA, output
    assert "a.zip: valid" in output and "b.zip: valid" in output
    assert "together: invalid" in output
    assert "clash: bundles a.zip and b.zip" in " ".join(output.split())

    code, output = _run("leaderboard", "validate", "a.zip", "b.zip", "--prefer", "a.zip")
    assert code == 0, output
    assert "together: valid" in output and "warn_overridden: a.zip wins over b.zip" in output
    code, output = _run("leaderboard", "validate", "a.zip", "b.zip",
                        "--as", "b.zip:transpile=transpile-b")
    assert code == 0 and "together: valid" in output, output


def test_the_same_bundle_twice_is_an_error(clashing: Path) -> None:
    code, output = _run("leaderboard", "build", "a.zip", str(clashing / "a.zip"),
                        "--out", "site-twice")
    assert code == EXIT_DATA and "is given twice" in output, output
    code, output = _run("leaderboard", "validate", "a.zip", "a.zip")
    assert code == EXIT_DATA and "duplicate_bundle: a.zip is given twice" in output, output


def test_flags_that_name_nothing_are_usage_errors(clashing: Path) -> None:
    code, output = _run("leaderboard", "build", "a.zip", "b.zip", "--prefer", "c.zip")
    assert code == EXIT_CONFIG and "--prefer c.zip: no such bundle" in output, output
    code, output = _run("leaderboard", "build", "a.zip", "b.zip", "--as", "b.zip:gold=g")
    assert code == EXIT_CONFIG and "names no predictor of a given bundle" in output, output
    code, output = _run("leaderboard", "build", "a.zip", "b.zip", "--as", "transpile=t")
    assert code == EXIT_CONFIG and "BUNDLE:PREDICTOR=NEWNAME" in output, output
