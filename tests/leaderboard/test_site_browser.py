"""The leaderboard site in a real browser (headless Chromium driven by Playwright), in a
1,400 px wide window: every page fits it and shows no raw null.

Skipped when Playwright or Chromium is missing, unless POLYSQL_REQUIRE lists "browser": then
the tests fail instead.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from click.testing import CliRunner
from polysql_testkit import availability
from polysql_testkit.bundles import LONG_MODEL, ODD_MODEL, make_bundles, make_edge_bundles

from polysql.analysis.rewrite.ledger import write_ledger
from polysql.analysis.rewrite.model import CaseOutcome, Timing
from polysql.cli import main
from polysql.leaderboard.site.build import build_site, model_slug, serve_site

CHROMIUM = os.environ.get("POLYSQL_CHROMIUM", "/usr/bin/chromium")
# the narrowest window the site is made for: no page may scroll sideways in it
VIEWPORT = {"width": 1400, "height": 900}


def artifacts(tmp_path: Path) -> Path:
    """Where screenshots go: $POLYSQL_ARTIFACTS (CI keeps them there), else the test's tmp_path."""
    folder = Path(os.environ.get("POLYSQL_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _unavailable(reason: str) -> NoReturn:
    availability.unavailable("browser", reason)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser-site")
    build_site(make_bundles(root / "bundles"), root / "site")
    return root / "site"


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    server = serve_site(site, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    yield f"http://{host}:{port}"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    availability.require_module("browser", "playwright", "pip install 'polysql[browser]'")
    from playwright.sync_api import Error, sync_playwright

    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        _unavailable(f"no Chromium at {CHROMIUM}: install it with apt-get install chromium, or "
                     "set POLYSQL_CHROMIUM to a Chromium executable")
    with sync_playwright() as playwright:
        try:
            launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                  args=["--no-sandbox"])
        except Error as error:
            _unavailable(f"Chromium at {CHROMIUM} does not start: {error}")
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[tuple[Any, list[str]]]:
    """A fresh page and the console errors and uncaught exceptions it reports."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    yield page, errors
    context.close()


def _models(page: Any) -> list[str]:
    return page.eval_on_selector_all("#leaderboard tbody tr",
                                     "rows => rows.map(r => r.dataset.model)")


def _check_table(page: Any, errors: list[str]) -> None:
    odd = ODD_MODEL
    page.wait_for_selector("#leaderboard tbody tr")
    # default view: pooled over both datasets, one row per model, in name order
    assert _models(page) == ["alpha", odd]
    assert page.inner_text("#row-count") == "2 models"

    header = page.locator('#leaderboard th[data-key="sqlite"] button')
    header.click()  # best accuracy first: the odd model answers more
    assert _models(page) == [odd, "alpha"]
    assert page.get_attribute('#leaderboard th[data-key="sqlite"]', "aria-sort") == "descending"
    page.locator('#leaderboard th[data-key="sqlite"] button').click()
    assert _models(page) == ["alpha", odd]
    assert page.get_attribute('#leaderboard th[data-key="sqlite"]', "aria-sort") == "ascending"
    page.locator('#leaderboard th[data-key="model"] button').click()
    assert _models(page) == ["alpha", odd]
    page.locator('#leaderboard th[data-key="model"] button').click()
    assert _models(page) == [odd, "alpha"]

    page.select_option("#dataset-filter", "dataset:extra")  # alpha alone answered "extra"
    assert _models(page) == ["alpha"]
    assert page.inner_text("#row-count") == "1 model"
    page.select_option("#dataset-filter", "dataset:demo")
    assert sorted(_models(page)) == sorted(["alpha", odd])
    cell = page.inner_text('#leaderboard tr[data-model="alpha"] td[data-engine="duckdb"]')
    assert "%" in cell and "pts" in cell
    assert errors == []


def test_table_sorts_filters_and_links(page: tuple[Any, list[str]], base_url: str,
                                       tmp_path: Path) -> None:
    tab, errors = page
    tab.goto(f"{base_url}/index.html")
    _check_table(tab, errors)

    shot = artifacts(tmp_path) / "leaderboard.png"
    tab.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}")
    assert shot.stat().st_size > 0

    odd = ODD_MODEL
    tab.get_by_role("link", name=odd, exact=True).first.click()
    tab.wait_for_load_state()
    assert tab.inner_text("h1") == odd  # the name reaches the page as text, not as markup
    assert "/models/" in tab.url
    tab.screenshot(path=str(artifacts(tmp_path) / "model.png"), full_page=True)
    tab.get_by_role("link", name="← Back to the leaderboard").click()
    tab.wait_for_selector("#leaderboard tbody tr")

    tab.goto(f"{base_url}/significance.html")
    images = tab.eval_on_selector_all("img", "imgs => imgs.map(i => [i.naturalWidth, i.src])")
    assert images and all(width > 0 for width, _src in images), images
    tab.screenshot(path=str(artifacts(tmp_path) / "significance.png"), full_page=True)
    assert errors == []


def test_index_works_from_disk(page: tuple[Any, list[str]], site: Path) -> None:
    tab, errors = page
    tab.goto((site / "index.html").as_uri())
    _check_table(tab, errors)
    tab.get_by_role("link", name="alpha", exact=True).first.click()
    tab.wait_for_load_state()
    assert tab.inner_text("h1") == "alpha"
    assert errors == []


# --- a newcomer's path: sweep, pack, build, browse ------------------------------------------------

def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def demo_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's three commands on the real demo: sweep, pack, build."""
    root = tmp_path_factory.mktemp("demo-site")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POLYSQL_CACHE", str(root / "cache"))
        _cli("sweep", "--out", str(root / "run"))
        _cli("leaderboard", "pack", str(root / "run"), "--out", str(root / "demo.zip"))
        assert "valid" in _cli("leaderboard", "validate", str(root / "demo.zip"))
        _cli("leaderboard", "build", str(root / "demo.zip"), "--out", str(root / "site"))
    return root / "site"


def test_demo_bundle_site_in_the_browser(page: tuple[Any, list[str]], demo_site: Path,
                                         tmp_path: Path) -> None:
    tab, errors = page
    tab.goto((demo_site / "index.html").as_uri())
    tab.wait_for_selector("#leaderboard tbody tr")
    assert sorted(_models(tab)) == ["gold", "transpile"]
    # on DuckDB the transpiled gold beats the verbatim gold: best first puts it on top
    tab.locator('#leaderboard th[data-key="duckdb"] button').click()
    assert _models(tab) == ["transpile", "gold"]
    tab.locator('#leaderboard th[data-key="duckdb"] button').click()
    assert _models(tab) == ["gold", "transpile"]
    shot = artifacts(tmp_path) / "demo-leaderboard.png"
    tab.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}")
    tab.get_by_role("link", name="transpile", exact=True).first.click()
    tab.wait_for_load_state()
    assert tab.inner_text("h1") == "transpile"
    assert "duckdb" in tab.inner_text("body")
    assert errors == []


# --- every page: fits 1,400 px, no raw null ------------------------------------------------------

def _rewrite_ledger(folder: Path) -> Path:
    """A ledger with a method that never produced a consistent rewrite: its speedup and
    CGOQ@Valid do not exist."""
    timing = Timing(input_runs=[2.0] * 3, rewrite_runs=[1.0] * 3, warmup=1)
    cases = [
        CaseOutcome(case_id="c1", pool="p", engine="duckdb", dialect="duckdb",
                    method="sqlglot-optimize", outcome="performance_gain", timing=timing,
                    cgoq=76.0, consistent=True, scs_input=10),
        CaseOutcome(case_id="c1", pool="p", engine="duckdb", dialect="duckdb",
                    method="never-consistent", outcome="unsafe_rewrite", consistent=False,
                    scs_input=10),
    ]
    return write_ledger(cases, folder)[1]


@pytest.fixture(scope="module")
def edge_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Regular bundles plus an n=0 cell, a model missing an engine, a very long model name and
    a rewrite page with values that do not exist."""
    root = tmp_path_factory.mktemp("edge-site")
    bundles = make_bundles(root / "bundles") + make_edge_bundles(root / "edge")
    build_site(bundles, root / "site", rewrite_ledgers=[_rewrite_ledger(root / "rewrite")])
    return root / "site"


# Text nodes shown as a whole "null" (or alike), tooltips naming one, dashes without a reason,
# and how wide the page is against the window.
_INSPECT = """() => {
  const raw = new Set(["null", "None", "NaN", "undefined"]);
  const bad = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (parent.closest("script, style")) { continue; }
    if (raw.has(node.textContent.trim())) { bad.push(parent.outerHTML.slice(0, 120)); }
  }
  for (const el of document.querySelectorAll("[title]")) {
    if (/\\b(null|None|NaN|undefined)\\b/.test(el.title)) { bad.push("title: " + el.title); }
  }
  for (const el of document.querySelectorAll(".missing")) {
    if (!el.title) { bad.push("a dash without its reason: " + el.parentElement.outerHTML); }
  }
  return {bad: bad, scroll: document.documentElement.scrollWidth, width: window.innerWidth};
}"""


def _inspect(tab: Any, where: str) -> None:
    found = tab.evaluate(_INSPECT)
    assert found["bad"] == [], where
    assert found["scroll"] <= found["width"], f"{where}: page is {found['scroll']} px wide"


def _check_every_page(tab: Any, site: Path) -> list[str]:
    """Every page of ``site`` (and every dataset view of the index) fits and shows no null."""
    seen = []
    for page in sorted(site.rglob("*.html")):
        tab.goto(page.as_uri())
        tab.wait_for_load_state()
        name = str(page.relative_to(site))
        seen.append(name)
        if page.name == "index.html":
            tab.wait_for_selector("#leaderboard tbody tr")
            for view in tab.eval_on_selector_all("#dataset-filter option",
                                                 "options => options.map(o => o.value)"):
                tab.select_option("#dataset-filter", view)
                _inspect(tab, f"{name} ({view})")
        else:
            _inspect(tab, name)
    return seen


def test_every_page_fits_the_window_and_shows_no_null(page: tuple[Any, list[str]],
                                                      edge_site: Path, tmp_path: Path) -> None:
    tab, errors = page
    seen = _check_every_page(tab, edge_site)
    assert {"index.html", "significance.html", "rewrite.html",
            f"models/{model_slug(LONG_MODEL)}.html", "models/gamma.html"} <= set(seen)

    tab.goto((edge_site / "index.html").as_uri())
    tab.select_option("#dataset-filter", "dataset:demo")
    # n=0: a dash whose tooltip says why, and the count it is over
    zero = '#leaderboard tr[data-model="gamma"] td[data-engine="pg16"]'
    assert "n=0" in str(tab.get_attribute(f"{zero} .missing", "title"))
    assert tab.inner_text(zero).split() == ["—", "n=0"]
    # never run there: the dash says so
    never = f'#leaderboard tr[data-model="{LONG_MODEL}"] td[data-engine="pg16"] .missing'
    assert "no records" in str(tab.get_attribute(never, "title"))
    # the long name wraps inside its column instead of widening the table past its box
    wrap = tab.evaluate("""() => { const w = document.querySelector("#leaderboard").parentElement;
                                   return [w.scrollWidth, w.clientWidth]; }""")
    assert wrap[0] <= wrap[1], wrap
    tab.screenshot(path=str(artifacts(tmp_path) / "edge-leaderboard.png"), full_page=True)
    tab.goto((edge_site / "models" / f"{model_slug(LONG_MODEL)}.html").as_uri())
    tab.screenshot(path=str(artifacts(tmp_path) / "edge-model.png"), full_page=True)
    assert errors == []


def test_demo_site_fits_the_window_and_shows_no_null(page: tuple[Any, list[str]],
                                                     demo_site: Path) -> None:
    tab, errors = page
    seen = _check_every_page(tab, demo_site)
    assert {"index.html", "significance.html", "models/gold.html",
            "models/transpile.html"} <= set(seen)
    assert errors == []
