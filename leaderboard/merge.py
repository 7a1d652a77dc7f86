"""Several submission bundles as one leaderboard, with every clash resolved on purpose.

Two bundles that both hold results for the same (dataset, predictor, engine) are two submissions
under one name -- often two different systems that both call themselves ``transpile``. Merging
them record by record would let one silently replace the other, so such a clash is an error until
the user says what they mean:

* ``--as BUNDLE:PREDICTOR=NEWNAME`` shows PREDICTOR of BUNDLE under NEWNAME (both stay on the
  board). BUNDLE is the bundle as given on the command line, its resolved path, or its file name
  when that is unique; the bundle part matters because several bundles usually share predictor
  names. Repeat the flag per predictor.
* ``--prefer BUNDLE`` lets that bundle win every clash it is part of; the results it overrides
  are reported (:attr:`Merge.overrides`), never dropped silently. Repeated, an earlier
  ``--prefer`` wins over a later one.

Renames apply first, so ``--as b.zip:transpile=transpile-b --prefer a.zip`` keeps both
``transpile`` systems and takes the shared ``gold`` results from ``a.zip``. The same bundle given
twice is refused outright: it would clash with itself on every result.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polysql.core.errors import BundleError, ConfigError
from polysql.leaderboard.bundle import (
    Bundle,
    Problem,
    _archive_root,
    _listing,
    is_valid,
    read_bundle,
    validate_bundle,
)
from polysql.normalizers.policy import changed_options, options_text

__all__ = ["Claim", "Clash", "Merge", "Override", "Rename", "load_merged", "merge_bundles",
           "override_messages", "set_problems", "validate_bundles"]

Claim = tuple[str, str, str]  # (dataset, predictor, engine)


@dataclass(frozen=True, slots=True)
class Rename:
    bundle: str  # the bundle's label (its path as given)
    predictor: str
    new_name: str


@dataclass(frozen=True, slots=True)
class Clash:
    """Two bundles holding results for the same claims."""

    first: str
    second: str
    claims: tuple[Claim, ...]
    same_records: bool = False  # the two bundles hold byte-identical records (a copy)


@dataclass(frozen=True, slots=True)
class Score:
    correct: int
    total: int  # questions whose gold ran

    def __str__(self) -> str:
        if self.total == 0:
            return "n=0"
        return f"{100 * self.correct / self.total:.1f}% ({self.correct}/{self.total})"


@dataclass(frozen=True, slots=True)
class Override:
    """Results of ``loser`` for ``claim`` left out because ``winner`` was preferred."""

    claim: Claim
    winner: str
    loser: str
    kept: Score
    dropped: Score
    records: int  # how many records of the loser were left out


@dataclass(slots=True)
class Merge:
    """The bundles to build from: renamed, overridden results taken out, nothing else changed."""

    bundles: list[Bundle]
    renames: list[Rename] = field(default_factory=list)
    overrides: list[Override] = field(default_factory=list)

    def report(self) -> list[str]:
        """One line per rename and per (winner, loser) pair of overrides, for the user."""
        lines = [f"renamed: {r.bundle}:{r.predictor} is shown as {r.new_name}"
                 for r in self.renames]
        return lines + override_messages(self.overrides)


def label(bundle: Bundle) -> str:
    """How messages name a bundle: its path as the user gave it."""
    return str(bundle.source)


def claims_of(records: Iterable[dict[str, Any]]) -> dict[Claim, list[dict[str, Any]]]:
    claims: dict[Claim, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        claims[(str(record["dataset"]), record["predictor"], record["engine"])].append(record)
    return dict(claims)


def _score(records: Sequence[dict[str, Any]]) -> Score:
    scored = [r for r in records if r["status"] != "invalid_gold"]
    return Score(sum(r["status"] == "match" for r in scored), len(scored))


# -- naming bundles on the command line -----------------------------------------------------------
def _matches(ref: str, bundles: Sequence[Bundle]) -> list[int]:
    """Bundles ``ref`` names: as given, else by resolved path, else by file name."""
    for test in (lambda b: label(b) == ref,
                 lambda b: Path(b.source).resolve() == Path(ref).resolve(),
                 lambda b: Path(b.source).name == ref):
        found = [i for i, bundle in enumerate(bundles) if test(bundle)]
        if found:
            return found
    return []


def _given(bundles: Sequence[Bundle]) -> str:
    return ", ".join(label(b) for b in bundles)


def find_bundle(ref: str, bundles: Sequence[Bundle], flag: str) -> int:
    found = _matches(ref, bundles)
    if len(found) == 1:
        return found[0]
    if not found:
        raise ConfigError(f"{flag} {ref}: no such bundle among those given ({_given(bundles)}); "
                          "name it as on the command line")
    raise ConfigError(f"{flag} {ref}: several bundles have that name "
                      f"({', '.join(label(bundles[i]) for i in found)}); give its path as on the "
                      "command line")


def _predictors(bundle: Bundle) -> set[str]:
    named = {p.get("name") for p in bundle.manifest.get("predictors") or [] if isinstance(p, dict)}
    return {r["predictor"] for r in bundle.records} | {n for n in named if isinstance(n, str)}


def parse_renames(specs: Sequence[str], bundles: Sequence[Bundle]) -> list[tuple[int, Rename]]:
    """``BUNDLE:PREDICTOR=NEWNAME`` flags, checked against the bundles.

    Bundle paths and predictor names may both hold ``:`` (``llm:gpt-4o``), so every split is
    tried and the one naming a given bundle and one of its predictors is taken."""
    parsed: list[tuple[int, Rename]] = []
    seen: dict[tuple[int, str], str] = {}
    for spec in specs:
        left, equals, new_name = spec.rpartition("=")
        new_name = new_name.strip()
        if not equals or ":" not in left or not new_name:
            raise ConfigError(f"--as {spec}: expected BUNDLE:PREDICTOR=NEWNAME, e.g. "
                              "--as b.zip:transpile=transpile-b")
        options = []
        for at in (i for i, char in enumerate(left) if char == ":"):
            ref, predictor = left[:at], left[at + 1:]
            found = _matches(ref, bundles)
            if len(found) == 1 and predictor in _predictors(bundles[found[0]]):
                options.append((found[0], predictor))
        if not options:
            holders = "; ".join(f"{label(b)}: {', '.join(sorted(_predictors(b)))}" for b in bundles)
            raise ConfigError(f"--as {spec}: names no predictor of a given bundle (bundles and "
                              f"their predictors: {holders}); write BUNDLE:PREDICTOR=NEWNAME")
        if len(options) > 1:
            raise ConfigError(f"--as {spec}: can be read as "
                              f"{' or '.join(f'{label(bundles[i])} : {p}' for i, p in options)}; "
                              "give the bundle's full path")
        index, predictor = options[0]
        if (index, predictor) in seen:
            raise ConfigError(f"--as {spec}: {label(bundles[index])}:{predictor} is already "
                              f"renamed to {seen[(index, predictor)]}; rename it once")
        if new_name != predictor and new_name in _predictors(bundles[index]):
            raise ConfigError(f"--as {spec}: {label(bundles[index])} already has a predictor "
                              f"{new_name!r}; choose another name")
        seen[(index, predictor)] = new_name
        parsed.append((index, Rename(label(bundles[index]), predictor, new_name)))
    for index in {i for i, _ in parsed}:
        targets = [r.new_name for i, r in parsed if i == index]
        twice = sorted({t for t in targets if targets.count(t) > 1})
        if twice:
            raise ConfigError(f"--as gives two predictors of {label(bundles[index])} the name "
                              f"{twice[0]!r}; give each its own name")
    return parsed


def _renamed(bundle: Bundle, names: dict[str, str]) -> Bundle:
    """The bundle with predictors shown under new names (records, predictor list, aggregates)."""
    if not names:
        return bundle
    manifest = copy.deepcopy(bundle.manifest)
    for entry in manifest.get("predictors") or []:
        if isinstance(entry, dict) and entry.get("name") in names:
            entry["renamed_from"] = entry["name"]
            entry["name"] = names[entry["name"]]
    for entry in manifest.get("aggregates") or []:
        if isinstance(entry, dict) and entry.get("predictor") in names:
            entry["predictor"] = names[entry["predictor"]]
    records = [dict(r, predictor=names[r["predictor"]]) if r["predictor"] in names else r
               for r in bundle.records]
    return Bundle(manifest=manifest, records=records, source=bundle.source,
                  records_sha256=bundle.records_sha256)


def _without(bundle: Bundle, lost: set[Claim]) -> Bundle:
    """The bundle without the results of ``lost`` (overridden by a preferred bundle)."""
    if not lost:
        return bundle
    records = [r for r in bundle.records
               if (str(r["dataset"]), r["predictor"], r["engine"]) not in lost]
    left = {r["predictor"] for r in records}
    manifest = copy.deepcopy(bundle.manifest)
    dataset = str((manifest.get("dataset") or {}).get("name"))
    manifest["predictors"] = [p for p in manifest.get("predictors") or []
                              if not isinstance(p, dict) or p.get("name") in left]
    manifest["aggregates"] = [a for a in manifest.get("aggregates") or []
                              if not isinstance(a, dict)
                              or (dataset, a.get("predictor"), a.get("engine")) not in lost]
    return Bundle(manifest=manifest, records=records, source=bundle.source,
                  records_sha256=bundle.records_sha256)


# -- clashes --------------------------------------------------------------------------------------
def _given_twice(bundles: Sequence[Bundle]) -> tuple[str, str] | None:
    seen: dict[Path, str] = {}
    for bundle in bundles:
        where = Path(bundle.source).resolve()
        if where in seen:
            return seen[where], label(bundle)
        seen[where] = label(bundle)
    return None


def _disagreements(bundles: Sequence[Bundle], read: Callable[[Bundle], tuple[str, Any] | None],
                   ) -> list[tuple[str, Bundle, Any, Bundle, Any]]:
    """Per bundle whose value (``read`` gives its dataset name and the value) differs from the
    first bundle of the same dataset: (dataset, that first bundle, its value, bundle, value)."""
    first: dict[str, tuple[Any, Bundle]] = {}
    found = []
    for bundle in bundles:
        named = read(bundle)
        if named is None:
            continue  # a malformed manifest: validate_bundle says so
        name, value = named
        seen = first.setdefault(name, (value, bundle))
        if seen[0] != value:
            found.append((name, seen[1], seen[0], bundle, value))
    return found


def _fingerprint(bundle: Bundle) -> tuple[str, str] | None:
    dataset = bundle.manifest.get("dataset") or {}
    name, fingerprint = dataset.get("name"), dataset.get("fingerprint")
    return (name, fingerprint) if isinstance(name, str) and isinstance(fingerprint, str) else None


def _dataset_versions(bundles: Sequence[Bundle]) -> list[str]:
    """One line per pair of bundles that name the same dataset but were run on different
    versions of it (different fingerprints): their numbers are not comparable on one board."""
    return [f"bundles {label(one)} and {label(other)} both report dataset {name!r} but with "
            f"different fingerprints ({was} and {now}): they were run on different versions of "
            "it, so their numbers are not comparable side by side; build them as separate "
            "boards, or re-run one sweep on the other's dataset"
            for name, one, was, other, now in _disagreements(bundles, _fingerprint)]


def _changed_policy(bundle: Bundle) -> tuple[str, dict[str, Any]] | None:
    name = (bundle.manifest.get("dataset") or {}).get("name")
    if not isinstance(name, str):
        return None  # a malformed manifest: validate_bundle says so
    return name, changed_options((bundle.manifest.get("settings") or {}).get("policy"))


def _policy_versions(bundles: Sequence[Bundle]) -> list[str]:
    """One line per bundle whose sweep judged a dataset under other comparison policy options
    than the first bundle of that dataset (``--policy``, say rows as sets against bags): the
    same answers would score differently, so the numbers are not comparable on one board."""
    return [f"bundles {label(one)} and {label(other)} judged dataset {name!r} under different "
            f"comparison policies ({options_text(was) or 'the defaults'} and "
            f"{options_text(now) or 'the defaults'}), so their numbers are not comparable side "
            "by side; build them as separate boards, or re-run one sweep with the other's "
            "--policy options"
            for name, one, was, other, now in _disagreements(bundles, _changed_policy)]


def _contracts(bundle: Bundle) -> tuple[str, str] | None:
    """The bundle's dataset and the comparison contract(s) its records were judged under; None
    when its records do not say (bundles packed before records carried their inputs)."""
    name = (bundle.manifest.get("dataset") or {}).get("name")
    found = {inputs.get("contract") for record in bundle.records
             if isinstance(inputs := record.get("inputs"), dict)} - {None}
    if not isinstance(name, str) or not found:
        return None
    return name, ", ".join(sorted(map(str, found)))


def _contract_versions(bundles: Sequence[Bundle]) -> list[str]:
    """One line per bundle whose records were judged under another version of the comparison
    contract than the first bundle of that dataset (a polysql release that changed what counts
    as equal): the same answers may score differently."""
    return [f"bundles {label(one)} and {label(other)} judged dataset {name!r} under different "
            f"versions of the comparison contract ({was} and {now}), so their numbers are not "
            "comparable side by side; re-run the older sweep with this polysql (its verdicts are "
            "judged again from the execution cache) and pack it again"
            for name, one, was, other, now in _disagreements(bundles, _contracts)]


def _twice_message(first: str, second: str) -> str:
    given = f"{first} is given twice" + (f" (as {first} and {second})" if first != second else "")
    return f"{given}: it would clash with itself on every result; give each bundle once"


def clash_message(clash: Clash) -> str:
    """What clashes, where, and the two ways out, as one line."""
    copy_note = (f" ({clash.second} holds the very records of {clash.first}: give it once)"
                 if clash.same_records else "")
    predictor = clash.claims[0][1]
    stem = _archive_root(Path(clash.second))
    return (f"bundles {clash.first} and {clash.second} both hold results for the same "
            f"(dataset/predictor/engine): {_listing(clash.claims)}{copy_note}; merged, one would "
            f"silently replace the other. Rename a predictor of one bundle "
            f"(--as {clash.second}:{predictor}={predictor}-{stem}, once per predictor) or say "
            f"which wins (--prefer {clash.first} or --prefer {clash.second})")


def override_messages(overrides: Sequence[Override]) -> list[str]:
    by_pair: dict[tuple[str, str], list[Override]] = defaultdict(list)
    for override in overrides:
        by_pair[(override.winner, override.loser)].append(override)
    lines = []
    for (winner, loser), group in by_pair.items():
        shown = ", ".join(f"{'/'.join(o.claim)} ({loser}'s {o.dropped} replaced by {winner}'s "
                          f"{o.kept})" for o in group[:5])
        more = f" and {len(group) - 5} more" if len(group) > 5 else ""
        lines.append(f"overridden: {winner} wins over {loser} (--prefer {winner}) on "
                     f"{len(group)} result(s): {shown}{more}; "
                     f"{sum(o.records for o in group)} records of {loser} are left out")
    return lines


def _resolve(bundles: Sequence[Bundle], renames: Sequence[str],
             prefer: Sequence[str]) -> tuple[Merge, list[Clash]]:
    """The merge as far as the flags decide it, and the clashes they leave open."""
    parsed = parse_renames(renames, bundles)
    names: dict[int, dict[str, str]] = defaultdict(dict)
    for index, rename in parsed:
        names[index][rename.predictor] = rename.new_name
    renamed = [_renamed(b, names.get(i, {})) for i, b in enumerate(bundles)]
    rank: dict[int, int] = {}
    for order, ref in enumerate(prefer):
        rank.setdefault(find_bundle(ref, bundles, "--prefer"), order)

    claimed = [claims_of(b.records) for b in renamed]
    holders: dict[Claim, list[int]] = defaultdict(list)
    for index, claims in enumerate(claimed):
        for claim in claims:
            holders[claim].append(index)
    lost: dict[int, set[Claim]] = defaultdict(set)
    overrides: list[Override] = []
    open_claims: dict[tuple[int, int], list[Claim]] = defaultdict(list)
    for claim, indexes in sorted(holders.items()):
        if len(indexes) < 2:
            continue
        preferred = [i for i in indexes if i in rank]
        if not preferred:
            for at, first in enumerate(indexes):
                for second in indexes[at + 1:]:
                    open_claims[(first, second)].append(claim)
            continue
        winner = min(preferred, key=rank.__getitem__)
        for loser in indexes:
            if loser != winner:
                lost[loser].add(claim)
                overrides.append(Override(claim, label(bundles[winner]), label(bundles[loser]),
                                          _score(claimed[winner][claim]),
                                          _score(claimed[loser][claim]),
                                          len(claimed[loser][claim])))
    clashes = [_clash(bundles, i, j, open_claims[(i, j)]) for i, j in sorted(open_claims)]
    merged = [_without(b, lost.get(i, set())) for i, b in enumerate(renamed)]
    return Merge(merged, [r for _, r in parsed], overrides), clashes


def _clash(bundles: Sequence[Bundle], i: int, j: int, claims: list[Claim]) -> Clash:
    same = bool(bundles[i].records_sha256) and (
        bundles[i].records_sha256 == bundles[j].records_sha256)
    return Clash(label(bundles[i]), label(bundles[j]), tuple(sorted(claims)), same)


def merge_bundles(bundles: Sequence[Bundle], *, renames: Sequence[str] = (),
                  prefer: Sequence[str] = ()) -> Merge:
    """Apply ``--as`` renames, then let ``--prefer`` bundles win the clashes they are part of.

    Raises BundleError naming both bundles when a clash is left (or a bundle is given twice) and
    ConfigError when a flag names no bundle or predictor. Bundles are not changed on disk; the
    returned ones are copies where anything changed."""
    twice = _given_twice(bundles)
    if twice is not None:
        raise BundleError(_twice_message(*twice))
    versions = (_dataset_versions(bundles) + _policy_versions(bundles)
                + _contract_versions(bundles))
    if versions:
        raise BundleError("; ".join(versions))
    merge, clashes = _resolve(bundles, renames, prefer)
    if clashes:
        raise BundleError("; ".join(clash_message(c) for c in clashes))
    return merge


def set_problems(bundles: Sequence[Bundle], *, renames: Sequence[str] = (),
                 prefer: Sequence[str] = ()) -> list[Problem]:
    """What is wrong with building these bundles together (each may be valid alone):
    ``duplicate_bundle``, ``dataset_versions`` (one dataset name, two fingerprints),
    ``policy_versions`` (one dataset judged under two comparison policies),
    ``contract_versions`` (one dataset judged under two versions of the contract), ``clash``
    (one per clashing pair), and ``warn_overridden`` for the results ``--prefer`` overrides.
    Flags naming no bundle or predictor raise ConfigError."""
    twice = _given_twice(bundles)
    if twice is not None:
        return [Problem("duplicate_bundle", _twice_message(*twice))]
    merge, clashes = _resolve(bundles, renames, prefer)
    return ([Problem("dataset_versions", line) for line in _dataset_versions(bundles)]
            + [Problem("policy_versions", line) for line in _policy_versions(bundles)]
            + [Problem("contract_versions", line) for line in _contract_versions(bundles)]
            + [Problem("clash", clash_message(c)) for c in clashes]
            + [Problem("warn_overridden", line.removeprefix("overridden: "))
               for line in override_messages(merge.overrides)])


# -- entry points of `polysql leaderboard validate | build` ---------------------------------------
def validate_bundles(paths: Sequence[str | Path], *, check_dataset: bool = True,
                     renames: Sequence[str] = (), prefer: Sequence[str] = (),
                     ) -> tuple[list[tuple[Path, list[Problem]]], list[Problem]]:
    """The problems of each bundle alone, then those of the set (:func:`set_problems`, over the
    readable bundles). Everything is valid when :func:`is_valid` holds for all of them."""
    each: list[tuple[Path, list[Problem]]] = []
    readable: list[Bundle] = []
    for path in map(Path, paths):
        try:
            bundle = read_bundle(path)
        except BundleError as exc:
            each.append((path, [Problem("unreadable", str(exc))]))
            continue
        readable.append(bundle)
        each.append((path, validate_bundle(bundle, check_dataset=check_dataset)))
    together = set_problems(readable, renames=renames, prefer=prefer) if readable else []
    return each, together


def load_merged(paths: Sequence[str | Path], *, check_dataset: bool = True,
                renames: Sequence[str] = (), prefer: Sequence[str] = ()) -> Merge:
    """Read and validate every bundle, then merge them; BundleError on the first invalid bundle
    or on a clash the flags leave open, so no site is built from a set that is not sound."""
    loaded = []
    for path in map(Path, paths):
        bundle = read_bundle(path)
        problems = validate_bundle(bundle, check_dataset=check_dataset)
        if not is_valid(problems):
            listing = "; ".join(f"{p.code}: {p.message}" for p in problems)
            raise BundleError(f"bundle {path} is invalid, so no site was built: {listing} "
                              "(see `polysql leaderboard validate`)")
        loaded.append(bundle)
    return merge_bundles(loaded, renames=renames, prefer=prefer)
