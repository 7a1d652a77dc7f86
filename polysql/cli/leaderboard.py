"""``polysql leaderboard``: submission bundles and the static leaderboard site."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape

from polysql.cli.console import console, stdout
from polysql.cli.main import EXIT_DATA
from polysql.core.errors import BundleError, ConfigError
from polysql.leaderboard.bundle import is_valid, pack_bundle, validate_bundle
from polysql.leaderboard.merge import load_merged, validate_bundles
from polysql.sweep.freshness import check_freshness


@click.group("leaderboard")
def leaderboard_group() -> None:
    """Submission bundles and the static leaderboard site."""


@leaderboard_group.command("pack")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--out", "-o", type=click.Path(path_type=Path), required=True,
              help="Bundle to write: a folder, or an archive ending in .zip or .tar.gz.")
@click.option("--dataset", "dataset_spec", default=None,
              help="Dataset spec the sweep used, for runs that did not record it.")
def leaderboard_pack(run_dir: Path, out: Path, dataset_spec: str | None) -> None:
    """Bundle a finished sweep (every question x predictor x engine) for submission."""
    # A bundle publishes the records' numbers: none may describe inputs changed since.
    freshness = check_freshness(run_dir)
    if freshness.stale:
        raise BundleError(f"refusing to pack stale records: {freshness.message()}")
    if freshness.problem is not None:
        console.print(f"[yellow]note:[/] {escape(str(freshness.message()))}", highlight=False)
    path = pack_bundle(run_dir, out, dataset_spec=dataset_spec)
    problems = validate_bundle(path)
    for problem in problems:
        console.print(f"[yellow]{escape(problem.code)}:[/] {escape(problem.message)}", highlight=False)
    console.print(f"wrote {escape(str(path))}")


@leaderboard_group.command("validate")
@click.argument("bundles", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--no-dataset-check", is_flag=True,
              help="Do not load the dataset to check its fingerprint (e.g. it is not available here).")
@click.option("--as", "renames", multiple=True, metavar="BUNDLE:PREDICTOR=NEWNAME",
              help="Show PREDICTOR of BUNDLE as NEWNAME, so same-named predictors of two bundles "
                   "both stay (repeatable; BUNDLE as given, or its file name).")
@click.option("--prefer", multiple=True, metavar="BUNDLE",
              help="BUNDLE wins every clash it is part of; what it overrides is reported "
                   "(repeatable: an earlier --prefer wins over a later one).")
def leaderboard_validate(bundles: tuple[Path, ...], no_dataset_check: bool,
                         renames: tuple[str, ...], prefer: tuple[str, ...]) -> None:
    """Recompute every aggregate from the records and check hashes, completeness and dataset,
    then check the bundles can be built together (no two claim the same dataset x predictor x
    engine, unless --as/--prefer say how). Exit 0 when all is valid, 4 when anything is not."""
    each, together = validate_bundles(bundles, check_dataset=not no_dataset_check,
                                      renames=renames, prefer=prefer)
    sets = [("together", together)] if len(bundles) > 1 or together else []
    failed = 0
    for name, problems in [(str(path), found) for path, found in each] + sets:
        valid = is_valid(problems)
        failed += not valid
        verdict = "[green]valid[/]" if valid else "[bold red]invalid[/]"
        stdout.print(f"{escape(name)}: {verdict}", highlight=False)
        for problem in problems:
            stdout.print(f"  {escape(problem.code)}: {escape(problem.message)}", highlight=False)
    if failed:
        sys.exit(EXIT_DATA)


@leaderboard_group.command("build")
@click.argument("bundles", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "-o", type=click.Path(path_type=Path), default=Path("site"), show_default=True,
              help="Folder for the static site.")
@click.option("--no-dataset-check", is_flag=True, help="Do not load datasets to check fingerprints.")
@click.option("--rewrite-ledger", "rewrite_ledgers", multiple=True, type=click.Path(path_type=Path),
              help="ledger.json of `polysql rewrite run` to show on a Rewriting page (repeatable).")
@click.option("--as", "renames", multiple=True, metavar="BUNDLE:PREDICTOR=NEWNAME",
              help="Show PREDICTOR of BUNDLE as NEWNAME, so same-named predictors of two bundles "
                   "both stay (repeatable; BUNDLE as given, or its file name).")
@click.option("--prefer", multiple=True, metavar="BUNDLE",
              help="BUNDLE wins every clash it is part of; what it overrides is reported "
                   "(repeatable: an earlier --prefer wins over a later one).")
def leaderboard_build(bundles: tuple[Path, ...], out: Path, no_dataset_check: bool,
                      rewrite_ledgers: tuple[Path, ...], renames: tuple[str, ...],
                      prefer: tuple[str, ...]) -> None:
    """Validate the bundles and write the static leaderboard site (works from file://).
    Two bundles claiming the same dataset x predictor x engine stop the build unless --as or
    --prefer say how to merge them."""
    # imported when the command runs, not when `polysql --help` lists it: scipy and
    # matplotlib take seconds to import
    from polysql.leaderboard.site.build import build_site

    merged = load_merged(bundles, check_dataset=not no_dataset_check, renames=renames,
                         prefer=prefer)
    for line in merged.report():
        console.print(f"[yellow]{escape(line)}[/]", highlight=False)
    paths = build_site(merged.bundles, out, rewrite_ledgers=list(rewrite_ledgers),
                       overrides=merged.overrides)
    console.print(f"wrote {len(paths)} files to {escape(str(out))}; open {escape(str(out / 'index.html'))} "
                  "or run `polysql leaderboard serve`")


@leaderboard_group.command("serve")
@click.argument("site_dir", type=click.Path(path_type=Path), default=Path("site"))
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True)
def leaderboard_serve(site_dir: Path, host: str, port: int) -> None:
    """Serve a built site locally until Ctrl-C."""
    # imported when the command runs, not when `polysql --help` lists it: scipy and
    # matplotlib take seconds to import
    from polysql.leaderboard.site.build import serve_site

    if not (site_dir / "index.html").is_file():
        raise ConfigError(f"{site_dir} holds no index.html: build it first with "
                          f"`polysql leaderboard build BUNDLE... --out {site_dir}`")
    server = serve_site(site_dir, host=host, port=port)
    console.print(f"serving {escape(str(site_dir))} at http://{host}:{server.server_address[1]}/ (Ctrl-C stops)")
    try:
        server.serve_forever()
    finally:
        server.server_close()
