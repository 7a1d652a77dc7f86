"""Merging bundles: a clash between two bundles is an error until --as or --prefer resolve it,
and neither way loses or hides a result. Generated bundles (fast); the CLI tests do the same on
real sweeps."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from polysql_testkit.bundles import generated_records, write_bundle

from polysql.core.errors import BundleError, ConfigError
from polysql.leaderboard.bundle import Bundle, read_bundle
from polysql.leaderboard.merge import merge_bundles, set_problems
from polysql.leaderboard.site.build import build_site

CHANCES = {"sqlite": 0.8, "duckdb": 0.7, "pg16": 0.6}


def _bundle(root: Path, name: str, model: str, chances: dict[str, float] | None = None,
            seed: int = 0) -> Bundle:
    records = generated_records(model, "demo", 20, chances or CHANCES, seed=seed)
    return read_bundle(write_bundle(root / name, model, "demo", records))


def _accuracy(bundle: Bundle, model: str, engine: str) -> float:
    scored = [r for r in bundle.records if r["predictor"] == model and r["engine"] == engine
              and r["status"] != "invalid_gold"]
    return sum(r["status"] == "match" for r in scored) / len(scored)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Bundle, Bundle]:
    """Two submissions both calling their system ``transpile``: a good one and a broken one."""
    good = _bundle(tmp_path, "a", "transpile", seed=1)
    broken = _bundle(tmp_path, "b", "transpile", {"sqlite": 0.0, "duckdb": 0.0, "pg16": 0.0})
    return good, broken


def test_a_clash_names_both_bundles_the_results_and_the_way_out(pair: tuple[Bundle, Bundle],
                                                                 tmp_path: Path) -> None:
    a, b = pair
    with pytest.raises(BundleError) as caught:
        merge_bundles([a, b])
    message = str(caught.value)
    assert f"bundles {a.source} and {b.source}" in message
    assert "3 (demo/transpile/duckdb, demo/transpile/pg16, demo/transpile/sqlite)" in message
    assert f"--as {b.source}:transpile=transpile-b" in message
    assert f"--prefer {a.source} or --prefer {b.source}" in message
    assert "\n" not in message
    # the site refuses them too rather than letting one replace the other
    with pytest.raises(BundleError, match="both hold results"):
        build_site([a, b], tmp_path / "site")
    assert not (tmp_path / "site").exists()


def test_many_clashes_are_counted_and_the_first_few_listed(tmp_path: Path) -> None:
    records = [dict(r, engine=f"e{n}") for n in range(8)
               for r in generated_records("m", "demo", 5, {"sqlite": 0.5}, seed=n)]
    a = read_bundle(write_bundle(tmp_path / "a", "m", "demo", records))
    b = read_bundle(write_bundle(tmp_path / "b", "m", "demo", records[::-1]))
    with pytest.raises(BundleError) as caught:
        merge_bundles([a, b])
    assert "8 (demo/m/e0, demo/m/e1, demo/m/e2, demo/m/e3, demo/m/e4 and 3 more)" in str(
        caught.value)


def test_rename_keeps_both_with_their_own_numbers(pair: tuple[Bundle, Bundle]) -> None:
    a, b = pair
    merged = merge_bundles([a, b], renames=[f"{b.source}:transpile=transpile-b"])
    kept, renamed = merged.bundles
    assert kept is a  # untouched
    assert {r["predictor"] for r in renamed.records} == {"transpile-b"}
    assert len(renamed.records) == len(b.records)
    assert _accuracy(renamed, "transpile-b", "sqlite") == 0.0
    assert _accuracy(kept, "transpile", "sqlite") == _accuracy(a, "transpile", "sqlite") > 0.5
    entry = renamed.manifest["predictors"][0]
    assert (entry["name"], entry["renamed_from"]) == ("transpile-b", "transpile")
    assert {x["predictor"] for x in renamed.manifest["aggregates"]} == {"transpile-b"}
    assert b.records[0]["predictor"] == "transpile"  # the bundle read from disk is not changed
    assert merged.report() == [f"renamed: {b.source}:transpile is shown as transpile-b"]


def test_bundles_are_named_as_given_by_path_or_by_file_name(pair: tuple[Bundle, Bundle]) -> None:
    a, b = pair
    for ref in (str(b.source), "b", str(Path(b.source).resolve())):
        merged = merge_bundles([a, b], renames=[f"{ref}:transpile=other"])
        assert {r["predictor"] for r in merged.bundles[1].records} == {"other"}
        assert len(merge_bundles([a, b], prefer=[ref]).overrides) == 3


def test_colons_in_predictor_names_are_not_a_problem(tmp_path: Path) -> None:
    a = _bundle(tmp_path, "a", "llm:gpt-4o")
    b = _bundle(tmp_path, "b", "llm:gpt-4o", seed=3)
    merged = merge_bundles([a, b], renames=["b:llm:gpt-4o=llm:gpt-4o (run 2)"])
    assert {r["predictor"] for r in merged.bundles[1].records} == {"llm:gpt-4o (run 2)"}


@pytest.mark.parametrize(("flag", "match"), [
    ("b:transpile", "expected BUNDLE:PREDICTOR=NEWNAME"),
    ("b:transpile=", "expected BUNDLE:PREDICTOR=NEWNAME"),
    ("transpile=x", "expected BUNDLE:PREDICTOR=NEWNAME"),
    ("c:transpile=x", "names no predictor of a given bundle"),
    ("b:gold=x", "names no predictor of a given bundle"),
])
def test_a_rename_that_names_nothing_is_a_usage_error(pair: tuple[Bundle, Bundle], flag: str,
                                                      match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        merge_bundles(list(pair), renames=[flag])


def test_a_rename_may_not_create_a_clash_inside_its_bundle(tmp_path: Path) -> None:
    records = (generated_records("gold", "demo", 5, CHANCES, seed=1)
               + generated_records("transpile", "demo", 5, CHANCES, seed=2))
    folder = write_bundle(tmp_path / "two", "gold", "demo", records)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["predictors"] = [{"name": "gold"}, {"name": "transpile"}]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    bundle = read_bundle(folder)
    with pytest.raises(ConfigError, match="already has a predictor 'gold'"):
        merge_bundles([bundle], renames=["two:transpile=gold"])
    with pytest.raises(ConfigError, match="the name 'x'"):
        merge_bundles([bundle], renames=["two:transpile=x", "two:gold=x"])
    with pytest.raises(ConfigError, match="rename it once"):
        merge_bundles([bundle], renames=["two:gold=x", "two:gold=y"])


def test_prefer_wins_and_reports_what_it_overrides(pair: tuple[Bundle, Bundle]) -> None:
    a, b = pair
    merged = merge_bundles([a, b], prefer=["b"])
    assert merged.bundles[1] is b
    assert merged.bundles[0].records == []  # every result of a was overridden
    assert merged.bundles[0].manifest["predictors"] == []
    assert [(o.claim, o.winner, o.loser) for o in merged.overrides] == [
        (("demo", "transpile", e), str(b.source), str(a.source))
        for e in ("duckdb", "pg16", "sqlite")]
    sqlite = next(o for o in merged.overrides if o.claim[2] == "sqlite")
    assert sqlite.records == 20
    assert sqlite.kept.correct == 0 and sqlite.dropped.correct > 0
    (line,) = merged.report()
    assert line.startswith(f"overridden: {b.source} wins over {a.source} (--prefer {b.source}) "
                           "on 3 result(s): demo/transpile/duckdb")
    assert f"{a.source}'s {sqlite.dropped} replaced by {b.source}'s {sqlite.kept}" in line
    assert "60 records of" in line


def test_an_earlier_prefer_wins_and_an_unpreferred_pair_still_clashes(tmp_path: Path) -> None:
    a, b, c = (_bundle(tmp_path, n, "transpile", seed=i) for i, n in enumerate("abc"))
    merged = merge_bundles([a, b, c], prefer=["c", "a"])
    assert {o.winner for o in merged.overrides} == {str(c.source)}
    assert {o.loser for o in merged.overrides} == {str(a.source), str(b.source)}
    assert [len(x.records) for x in merged.bundles] == [0, 0, len(c.records)]
    # a wins where it is in the clash; b and c also share pg16, where a has no result
    a = _bundle(tmp_path, "a2", "transpile", {"sqlite": 0.5, "duckdb": 0.5})
    with pytest.raises(BundleError) as caught:
        merge_bundles([a, b, c], prefer=["a2"])
    assert str(caught.value).startswith(f"bundles {b.source} and {c.source} both hold results "
                                        "for the same (dataset/predictor/engine): "
                                        "1 (demo/transpile/pg16)")


def test_prefer_and_rename_combine(tmp_path: Path) -> None:
    # both bundles hold gold and transpile; rename one transpile, take gold from a
    def two(name: str, seed: int) -> Bundle:
        records = (generated_records("gold", "demo", 10, CHANCES, seed=seed)
                   + generated_records("transpile", "demo", 10, CHANCES, seed=seed + 1))
        folder = write_bundle(tmp_path / name, "gold", "demo", records)
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["predictors"] = [{"name": "gold"}, {"name": "transpile"}]
        (folder / "manifest.json").write_text(json.dumps(manifest))
        return read_bundle(folder)

    a, b = two("a", 1), two("b", 5)
    with pytest.raises(BundleError, match="demo/gold/duckdb"):
        merge_bundles([a, b], renames=["b:transpile=transpile-b"])
    merged = merge_bundles([a, b], renames=["b:transpile=transpile-b"], prefer=["a"])
    assert {o.claim[1] for o in merged.overrides} == {"gold"}
    assert {r["predictor"] for r in merged.bundles[1].records} == {"transpile-b"}
    assert {r["predictor"] for r in merged.bundles[0].records} == {"gold", "transpile"}


def test_a_partial_clash_only_overrides_the_shared_engines(tmp_path: Path) -> None:
    a = _bundle(tmp_path, "a", "m", {"sqlite": 0.5, "duckdb": 0.5})
    b = _bundle(tmp_path, "b", "m", {"duckdb": 0.9, "pg16": 0.9})
    merged = merge_bundles([a, b], prefer=["b"])
    assert [o.claim for o in merged.overrides] == [("demo", "m", "duckdb")]
    assert {r["engine"] for r in merged.bundles[0].records} == {"sqlite"}
    assert [x["engine"] for x in merged.bundles[0].manifest["aggregates"]] == ["sqlite"]


def test_the_same_bundle_twice_is_refused(pair: tuple[Bundle, Bundle], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    a, _ = pair
    with pytest.raises(BundleError, match=r"is given twice: .*give each bundle once"):
        merge_bundles([a, a])
    monkeypatch.chdir(Path(a.source).parent)
    again = read_bundle(Path("a"))  # the same folder, spelt another way
    with pytest.raises(BundleError, match=rf"is given twice \(as {a.source} and a\)"):
        merge_bundles([a, again])
    assert [p.code for p in set_problems([a, again])] == ["duplicate_bundle"]
    # a copy under another name is a clash that says they hold the same records
    shutil.copytree(Path(a.source), tmp_path / "copy")
    with pytest.raises(BundleError, match="holds the very records of"):
        merge_bundles([a, read_bundle(tmp_path / "copy")])


def test_set_problems_for_validate(pair: tuple[Bundle, Bundle]) -> None:
    a, b = pair
    (clash,) = set_problems([a, b])
    assert clash.code == "clash" and not clash.is_warning
    assert str(a.source) in clash.message and str(b.source) in clash.message
    (override,) = set_problems([a, b], prefer=["a"])
    assert override.code == "warn_overridden" and override.is_warning
    assert set_problems([a, b], renames=["b:transpile=t2"]) == []
    assert set_problems([a]) == []


def test_the_site_shows_renamed_and_overridden_results(pair: tuple[Bundle, Bundle],
                                                       tmp_path: Path) -> None:
    a, b = pair
    merged = merge_bundles([a, b], renames=["b:transpile=transpile-b"])
    build_site(merged.bundles, tmp_path / "renamed")
    page = (tmp_path / "renamed" / "index.html").read_text(encoding="utf-8")
    assert "transpile-b" in page and "(submitted as transpile)" in page
    models = {p.name for p in (tmp_path / "renamed" / "models").iterdir()}
    assert models == {"transpile.html", "transpile-b.html"}
    assert "Submitted as" in (tmp_path / "renamed" / "models" / "transpile-b.html").read_text()

    merged = merge_bundles([a, b], prefer=["a"])
    build_site(merged.bundles, tmp_path / "preferred", overrides=merged.overrides)
    page = (tmp_path / "preferred" / "index.html").read_text(encoding="utf-8")
    assert "a wins over b (--prefer a) on 3 result(s)" in page
    data = json.loads((tmp_path / "preferred" / "leaderboard.json").read_text())
    (row,) = data["rows"]
    assert row["cells"]["sqlite"]["accuracy"] == _accuracy(a, "transpile", "sqlite")
    # the overridden bundle's settings are not shown as if they described the winner
    model_page = (tmp_path / "preferred" / "models" / "transpile.html").read_text()
    assert "<h3><span class=\"name\">a</span></h3>" in model_page
    assert "<h3><span class=\"name\">b</span></h3>" not in model_page


def test_one_dataset_name_with_two_fingerprints_is_not_one_board(tmp_path: Path) -> None:
    """Two sweeps of different versions of 'demo' (say, questions fixed in between) would sit
    side by side as if comparable: refused, naming both bundles and both fingerprints."""
    first = _bundle(tmp_path, "a", "m1", seed=1)
    folder = write_bundle(tmp_path / "b", "m2", "demo",
                          generated_records("m2", "demo", 20, CHANCES, seed=2))
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["dataset"]["fingerprint"] = "1" * 64
    (folder / "manifest.json").write_text(json.dumps(manifest))
    second = read_bundle(folder)
    with pytest.raises(BundleError) as caught:
        merge_bundles([first, second])
    message = str(caught.value)
    assert f"bundles {first.source} and {second.source} both report dataset 'demo'" in message
    assert "0" * 64 in message and "1" * 64 in message
    assert [p.code for p in set_problems([first, second])] == ["dataset_versions"]
    with pytest.raises(BundleError, match="different fingerprints"):
        build_site([first, second], tmp_path / "site")
    assert not (tmp_path / "site").exists()
    # the same version of the dataset merges as before
    assert len(merge_bundles([first, _bundle(tmp_path, "c", "m3", seed=3)]).bundles) == 2


def test_one_dataset_judged_under_two_contract_versions_is_not_one_board(tmp_path: Path) -> None:
    """Records carry the comparison contract that judged them; bundles of one dataset judged
    under two versions of it are refused, naming both. Bundles whose records do not say (packed
    before records carried their inputs) are not held against any."""
    def judged_under(name: str, model: str, seed: int, contract: str | None) -> Bundle:
        records = generated_records(model, "demo", 20, CHANCES, seed=seed)
        if contract is not None:
            for record in records:
                record["inputs"] = {"contract": contract, "gold": "sha256:0"}
        return read_bundle(write_bundle(tmp_path / name, model, "demo", records))

    older = judged_under("a", "m1", 1, "compare-3")
    newer = judged_under("b", "m2", 2, "compare-4")
    with pytest.raises(BundleError) as caught:
        merge_bundles([older, newer])
    assert (f"bundles {older.source} and {newer.source} judged dataset 'demo' under different "
            "versions of the comparison contract (compare-3 and compare-4)") in str(caught.value)
    assert [p.code for p in set_problems([older, newer])] == ["contract_versions"]
    with pytest.raises(BundleError, match="versions of the comparison contract"):
        build_site([older, newer], tmp_path / "site")
    same = judged_under("c", "m3", 3, "compare-4")
    unsaid = judged_under("d", "m4", 4, None)
    assert len(merge_bundles([newer, same, unsaid]).bundles) == 3


def test_one_dataset_judged_under_two_policies_is_not_one_board(tmp_path: Path) -> None:
    """A sweep that compared rows as sets next to one that compared them as bags would rank
    the same answers differently: refused, naming both bundles and both policies. Options left
    at their defaults count as the defaults."""
    first = _bundle(tmp_path, "a", "m1", seed=1)
    folder = write_bundle(tmp_path / "b", "m2", "demo",
                          generated_records("m2", "demo", 20, CHANCES, seed=2))
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["settings"]["policy"] = {"set_semantics": True, "rel_tol": 1e-5}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    second = read_bundle(folder)
    with pytest.raises(BundleError) as caught:
        merge_bundles([first, second])
    message = str(caught.value)
    assert (f"bundles {first.source} and {second.source} judged dataset 'demo' under different "
            "comparison policies (the defaults and set_semantics=true)") in message
    assert [p.code for p in set_problems([first, second])] == ["policy_versions"]
    with pytest.raises(BundleError, match="different comparison policies"):
        build_site([first, second], tmp_path / "site")
    assert not (tmp_path / "site").exists()
    # a policy that spells out a default is the default policy
    manifest["settings"]["policy"] = {"set_semantics": False}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert len(merge_bundles([first, read_bundle(folder)]).bundles) == 2
    # a board whose bundles all changed the policy says so on its front page
    manifest["settings"]["policy"] = {"set_semantics": True}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    build_site([read_bundle(folder)], tmp_path / "sets")
    page = (tmp_path / "sets" / "index.html").read_text(encoding="utf-8")
    assert "Comparison policy changed from the contract&#x27;s defaults in every run: " \
        "set_semantics=true" in page
    build_site([first], tmp_path / "defaults")
    assert "Comparison policy" not in (tmp_path / "defaults" / "index.html").read_text()
