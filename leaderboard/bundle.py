"""Leaderboard submission bundles (format v1): pack a finished sweep, read one back, validate it.

A bundle is a folder (or a .zip / .tar.gz of one) holding ``manifest.json`` and ``records.jsonl``;
see :func:`pack_bundle` for what the manifest holds. Validation recomputes
everything the manifest claims from the records (and, when the dataset is available locally,
from the dataset itself) so a bundle cannot report numbers its records do not support.

Problems whose code starts with ``warn_`` are warnings: they are reported but do not make a bundle
invalid (``warn_dataset_unavailable``: the dataset could not be loaded here, so its fingerprint
was not checked). Use :func:`is_valid` rather than ``not problems``.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import shutil
import tarfile
import tempfile
import zipfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from polysql.analysis.summary import STATUSES, summarize
from polysql.core.errors import BundleError, ComparisonError, PolysqlError
from polysql.core.store import RUN_FILE, ResultsStore, sweep_folder
from polysql.core.version import __version__
from polysql.datasets.base import Dataset
from polysql.datasets.registry import get_dataset, spec_in
from polysql.leaderboard.fingerprint import dataset_fingerprint
from polysql.normalizers.policy import ComparePolicy

FORMAT = "polysql-bundle"
FORMAT_VERSION = 1
MANIFEST_FILE = "manifest.json"
RECORDS_FILE = "records.jsonl"
WARNING_PREFIX = "warn_"
_SHOWN = 5  # how many missing/duplicate keys a message lists before giving the count

BundleKey = tuple[str, str, str]  # (question_id, predictor, engine)


@dataclass(slots=True)
class Bundle:
    manifest: dict[str, Any]
    records: list[dict[str, Any]]
    source: Path
    records_sha256: str = ""  # digest of the records.jsonl bytes as read


@dataclass(frozen=True, slots=True)
class Problem:
    code: str
    message: str

    @property
    def is_warning(self) -> bool:
        return self.code.startswith(WARNING_PREFIX)


def is_valid(problems: Iterable[Problem]) -> bool:
    """True when every problem is only a warning (``warn_*``)."""
    return all(problem.is_warning for problem in problems)


# -- shared by pack and validate ------------------------------------------------------------------
def bundle_key(record: dict[str, Any]) -> BundleKey:
    return (str(record["question_id"]), record["predictor"], record["engine"])


def serialize_record(record: dict[str, Any]) -> str:
    """One record as a single canonical JSON line (sorted keys, no spacing), without newline."""
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def records_bytes(records: Iterable[dict[str, Any]]) -> bytes:
    ordered = sorted(records, key=bundle_key)
    return "".join(serialize_record(r) + "\n" for r in ordered).encode("utf-8")


def compute_aggregates(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """correct/total/accuracy per (predictor, engine); total leaves out invalid_gold records."""
    return [{"predictor": c.predictor, "engine": c.engine, "correct": c.correct, "total": c.total,
             "accuracy": c.accuracy} for c in summarize(records).cells]


def compute_engines(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Dialect and version per engine as the records report them. A run resumed across an engine
    upgrade has several versions; they are then listed (sorted) instead of hidden."""
    dialects: dict[str, set[str]] = {}
    versions: dict[str, set[str]] = {}
    for record in records:
        engine = record["engine"]
        dialects.setdefault(engine, set()).add(str(record.get("dialect")))
        versions.setdefault(engine, set()).add(str(record.get("engine_version")))
    return {engine: {"dialect": _one_or_list(dialects[engine]),
                     "version": _one_or_list(versions[engine])} for engine in sorted(dialects)}


def _one_or_list(values: set[str]) -> str | list[str]:
    return next(iter(values)) if len(values) == 1 else sorted(values)


def _listing(keys: Iterable[Any]) -> str:
    keys = sorted(keys)
    shown = ", ".join("/".join(k) if isinstance(k, tuple) else str(k) for k in keys[:_SHOWN])
    more = f" and {len(keys) - _SHOWN} more" if len(keys) > _SHOWN else ""
    return f"{len(keys)} ({shown}{more})"


# -- pack -----------------------------------------------------------------------------------------
def pack_bundle(run_dir: str | Path, out_path: str | Path, *, dataset_spec: str | None = None) -> Path:
    """Bundle a finished sweep run folder. ``out_path`` ending in .zip or .tar.gz gives an archive,
    anything else a new directory. The dataset spec defaults to the one run.json recorded (runs
    from before it was recorded hold only the dataset's name: folder datasets need ``dataset_spec``).

    Refuses runs that miss any (question, predictor, engine) record: a leaderboard entry always
    counts every question of the dataset.
    """
    run_dir, out_path = Path(run_dir), Path(out_path)
    run_info = _read_run_info(run_dir)
    settings = run_info.get("settings") or {}
    spec = dataset_spec or run_info.get("dataset_spec") or settings.get("dataset")
    if not spec:
        raise BundleError(f"{run_dir / RUN_FILE} names no dataset; pass dataset_spec")
    # run.json's spec is as the sweep was given it: relative paths from the folder it ran in
    read = spec if dataset_spec is not None else spec_in(sweep_folder(run_info), spec)
    try:
        dataset = get_dataset(read)
        fingerprint = dataset_fingerprint(dataset)
    except PolysqlError as exc:
        raise BundleError(f"cannot load dataset {spec!r} of run {run_dir}: {exc}; "
                          "pass the dataset spec the sweep used (dataset_spec)") from exc
    records = ResultsStore(run_dir).latest_records()
    if not records:
        raise BundleError(f"{run_dir} holds no sweep records; run `polysql sweep --out {run_dir}` first")
    _check_run_covers_dataset(run_dir, run_info, records, dataset)

    predictor_names = sorted({r["predictor"] for r in records})
    described = {p.get("name"): p for p in run_info.get("predictors", []) if isinstance(p, dict)}
    data = records_bytes(records)
    question_ids = sorted(q.id for q in dataset.questions)
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "polysql": run_info.get("polysql", __version__),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "dataset": {"spec": spec, "name": dataset.name, "fingerprint": fingerprint,
                    "questions": len(question_ids), "question_ids": question_ids},
        "settings": {k: v for k, v in settings.items() if k != "dataset"},
        "predictors": [described.get(name, {"name": name}) for name in predictor_names],
        "engines": compute_engines(records),
        "aggregates": compute_aggregates(records),
        "records_sha256": hashlib.sha256(data).hexdigest(),
    }
    return _write(out_path, manifest, data)


def _read_run_info(run_dir: Path) -> dict[str, Any]:
    path = run_dir / RUN_FILE
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BundleError(f"{run_dir} is not a sweep run folder: {RUN_FILE} is missing") from exc
    except (OSError, json.JSONDecodeError) as exc:
        raise BundleError(f"{path} is unreadable: {exc}") from exc
    if not isinstance(info, dict):
        raise BundleError(f"{path} is not a JSON object")
    return info


def _check_run_covers_dataset(run_dir: Path, run_info: dict[str, Any],
                              records: list[dict[str, Any]], dataset: Dataset) -> None:
    other = sorted({r["dataset"] for r in records} - {dataset.name})
    if other:
        raise BundleError(f"{run_dir} holds records of dataset(s) {other}, not {dataset.name!r}")
    question_ids = {q.id for q in dataset.questions}
    unknown = {str(r["question_id"]) for r in records} - question_ids
    if unknown:
        raise BundleError(f"{run_dir} has records for questions not in {dataset.name!r}: "
                          f"{_listing(unknown)}; pass the dataset spec the sweep used")
    # Engines and predictors of earlier invocations stay in the folder, so both sources count.
    predictors = {r["predictor"] for r in records} | {
        p["name"] for p in run_info.get("predictors", []) if isinstance(p, dict) and "name" in p}
    engines = {r["engine"] for r in records} | set(run_info.get("engines") or {})
    have = {bundle_key(r) for r in records}
    missing = {(q, p, e) for q in question_ids for p in predictors for e in engines} - have
    if missing:
        raise BundleError(
            f"{run_dir} is incomplete: {len(missing)} of "
            f"{len(question_ids) * len(predictors) * len(engines)} (question, predictor, engine) "
            f"records are missing, e.g. {_listing(missing)}. A bundle counts every question of "
            f"{dataset.name!r} ({len(question_ids)}); re-run `polysql sweep` with the same --out to "
            f"finish it (without --limit or --question)")


def _archive_kind(path: Path) -> str | None:
    name = path.name.lower()
    if name.endswith(".zip"):
        return "zip"
    if name.endswith(".tar.gz") or name.endswith(".tgz"):
        return "tar.gz"
    return None


def _archive_root(path: Path) -> str:
    name = path.name
    for suffix in (".tar.gz", ".tgz", ".zip"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)] or "bundle"
    return name


def _write(out_path: Path, manifest: dict[str, Any], data: bytes) -> Path:
    files = {MANIFEST_FILE: (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode(),
             RECORDS_FILE: data}
    if out_path.exists() and (not out_path.is_dir() or any(out_path.iterdir())):
        raise BundleError(f"{out_path} already exists; choose a new path or remove it")
    kind = _archive_kind(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    if kind is None:
        # write beside the target and rename, so a failure never leaves half a bundle
        staging = Path(tempfile.mkdtemp(prefix=f".{out_path.name}-", dir=out_path.parent))
        try:
            for name, content in files.items():
                (staging / name).write_bytes(content)
            if out_path.exists():
                out_path.rmdir()
            staging.rename(out_path)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return out_path
    root = _archive_root(out_path)
    if kind == "zip":
        with zipfile.ZipFile(out_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, content in files.items():
                archive.writestr(f"{root}/{name}", content)
    else:
        with tarfile.open(out_path, "w:gz") as archive:
            for name, content in files.items():
                info = tarfile.TarInfo(f"{root}/{name}")
                info.size = len(content)
                info.mode = 0o644
                archive.addfile(info, io.BytesIO(content))
    return out_path


# -- read -----------------------------------------------------------------------------------------
def read_bundle(path: str | Path) -> Bundle:
    """A bundle from a directory, .zip or .tar.gz; BundleError says what is wrong and where."""
    path = Path(path)
    if path.is_dir():
        files = {name: _read_file(path / name, path) for name in (MANIFEST_FILE, RECORDS_FILE)}
    elif path.is_file():
        files = _read_archive(path)
    else:
        raise BundleError(f"bundle not found: {path}")
    manifest = _parse_manifest(path, files[MANIFEST_FILE])
    records = _parse_records(path, files[RECORDS_FILE])
    return Bundle(manifest=manifest, records=records, source=path,
                  records_sha256=hashlib.sha256(files[RECORDS_FILE]).hexdigest())


def _read_file(file: Path, bundle: Path) -> bytes:
    try:
        return file.read_bytes()
    except FileNotFoundError as exc:
        raise BundleError(f"{bundle}: {file.name} is missing") from exc
    except OSError as exc:
        raise BundleError(f"{bundle}: cannot read {file.name}: {exc}") from exc


def _safe_member(path: Path, name: str) -> PurePosixPath:
    member = PurePosixPath(name.replace("\\", "/"))
    if member.is_absolute() or ".." in member.parts or (member.parts and ":" in member.parts[0]):
        raise BundleError(f"{path}: archive member {name!r} points outside the bundle; refusing it")
    return member


def _read_archive(path: Path) -> dict[str, bytes]:
    """The two bundle files of an archive, read in memory (nothing is extracted to disk)."""
    contents: dict[PurePosixPath, bytes] = {}
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist():
                    member = _safe_member(path, info.filename)
                    if not info.is_dir():
                        contents[member] = archive.read(info)
        elif tarfile.is_tarfile(path):
            with tarfile.open(path, "r:*") as archive:
                for info in archive.getmembers():
                    member = _safe_member(path, info.name)
                    if info.issym() or info.islnk():
                        raise BundleError(f"{path}: archive member {info.name!r} is a link; "
                                          "a bundle holds plain files only")
                    if info.isfile():
                        handle = archive.extractfile(info)
                        contents[member] = handle.read() if handle else b""
        else:
            raise BundleError(f"{path} is neither a bundle directory nor a .zip/.tar.gz archive")
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError) as exc:
        raise BundleError(f"{path}: unreadable archive: {exc}") from exc
    contents = {m: data for m, data in contents.items() if m.parts and m.parts != (".",)}
    roots = {m.parts[0] for m in contents}
    if MANIFEST_FILE in roots:
        prefix: tuple[str, ...] = ()
    elif len(roots) == 1 and all(len(m.parts) > 1 for m in contents):
        prefix = (next(iter(roots)),)
    else:
        raise BundleError(f"{path}: expected one bundle folder (or the bundle files) at the "
                          f"archive's root, found several roots: {sorted(roots)}")
    files: dict[str, bytes] = {}
    for name in (MANIFEST_FILE, RECORDS_FILE):
        member = PurePosixPath(*prefix, name)
        if member not in contents:
            raise BundleError(f"{path}: {member} is missing from the archive")
        files[name] = contents[member]
    return files


def _parse_manifest(path: Path, data: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"{path}: {MANIFEST_FILE} is not valid JSON: {exc}") from exc
    if not isinstance(manifest, dict):
        raise BundleError(f"{path}: {MANIFEST_FILE} must hold a JSON object")
    return manifest


def _parse_records(path: Path, data: bytes) -> list[dict[str, Any]]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BundleError(f"{path}: {RECORDS_FILE} is not UTF-8: {exc}") from exc
    records: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BundleError(f"{path}: {RECORDS_FILE} line {number} is not valid JSON: {exc}") from exc
        if not isinstance(record, dict):
            raise BundleError(f"{path}: {RECORDS_FILE} line {number} is not a JSON object")
        records.append(record)
    return records


# -- validate -------------------------------------------------------------------------------------
_RECORD_FIELDS = ("dataset", "question_id", "predictor", "engine", "status")


def validate_bundle(bundle_or_path: Bundle | str | Path, *, check_dataset: bool = True) -> list[Problem]:
    """Every way the bundle disagrees with itself or its dataset; see :func:`is_valid`.

    With ``check_dataset`` the dataset named by the manifest's spec is loaded and fingerprinted;
    when it cannot be loaded here the result carries ``warn_dataset_unavailable`` (not invalid).
    An unreadable bundle gives a single ``unreadable`` problem.
    """
    if isinstance(bundle_or_path, Bundle):
        bundle = bundle_or_path
    else:
        try:
            bundle = read_bundle(bundle_or_path)
        except BundleError as exc:
            return [Problem("unreadable", str(exc))]
    problems = _check_format(bundle)
    if problems:
        return problems  # the rest cannot be interpreted
    manifest, records = bundle.manifest, bundle.records
    if bundle.records_sha256 != manifest["records_sha256"]:
        problems.append(Problem("records_hash", f"{RECORDS_FILE} has sha256 {bundle.records_sha256}, "
                                f"the manifest says {manifest['records_sha256']}"))
    problems += _check_records(manifest, records)
    problems += _check_aggregates(manifest, records)
    engines = compute_engines(records)
    if engines != manifest["engines"]:
        problems.append(Problem("engines_mismatch", f"the records show engines {engines}, "
                                f"the manifest lists {manifest['engines']}"))
    if check_dataset:
        problems += _check_dataset(manifest["dataset"])
    return problems


def _check_format(bundle: Bundle) -> list[Problem]:
    manifest = bundle.manifest
    if manifest.get("format") != FORMAT or manifest.get("format_version") != FORMAT_VERSION:
        return [Problem("format", f"not a {FORMAT} v{FORMAT_VERSION} manifest (format="
                        f"{manifest.get('format')!r}, format_version={manifest.get('format_version')!r})")]
    shapes = {"dataset": dict, "predictors": list, "engines": dict, "aggregates": list,
              "records_sha256": str}
    wrong = [k for k, kind in shapes.items() if not isinstance(manifest.get(k), kind)]
    dataset = manifest.get("dataset") if isinstance(manifest.get("dataset"), dict) else {}
    wrong += [f"dataset.{k}" for k, kind in {"spec": str, "name": str, "fingerprint": str,
                                             "questions": int, "question_ids": list}.items()
              if not isinstance(dataset.get(k), kind)]
    if wrong:
        return [Problem("format", f"manifest fields missing or of the wrong type: {', '.join(wrong)}")]
    problems = _check_policy(manifest.get("settings"))
    ids = [str(q) for q in dataset["question_ids"]]
    if len(set(ids)) != len(ids) or dataset["questions"] != len(ids):
        problems.append(Problem("format", f"dataset.questions is {dataset['questions']} but "
                                f"question_ids holds {len(ids)} entries ({len(set(ids))} distinct)"))
    for number, record in enumerate(bundle.records, start=1):
        absent = [f for f in _RECORD_FIELDS if f not in record]
        if absent:
            problems.append(Problem("format", f"{RECORDS_FILE} line {number} lacks {', '.join(absent)}"))
        elif record["status"] not in STATUSES:
            problems.append(Problem("format", f"{RECORDS_FILE} line {number} has unknown status "
                                    f"{record['status']!r}"))
    return problems


def _check_policy(settings: Any) -> list[Problem]:
    """The sweep settings' comparison policy must be one this polysql can read: a board compares
    bundles by it, and an unreadable one would pass as the default policy."""
    if settings is None:
        return []
    if not isinstance(settings, dict):
        return [Problem("format", f"manifest settings must be an object, got {settings!r}")]
    policy = settings.get("policy")
    if policy is None:
        return []
    if not isinstance(policy, dict):
        return [Problem("format", "manifest settings.policy must be an object of comparison "
                        f"policy options, got {policy!r}")]
    try:
        ComparePolicy().with_options(**policy)
    except ComparisonError as exc:
        return [Problem("format", f"manifest settings.policy: {exc}")]
    return []


def _check_records(manifest: dict[str, Any], records: list[dict[str, Any]]) -> list[Problem]:
    problems: list[Problem] = []
    dataset = manifest["dataset"]
    counts = Counter(bundle_key(r) for r in records)
    duplicates = [k for k, n in counts.items() if n > 1]
    if duplicates:
        problems.append(Problem("duplicate_record", f"keys with more than one record: {_listing(duplicates)}"))
    other = Counter(str(r["dataset"]) for r in records if r["dataset"] != dataset["name"])
    if other:
        problems.append(Problem("dataset_mismatch", f"records of other datasets than "
                                f"{dataset['name']!r}: {dict(other)}"))
    question_ids = {str(q) for q in dataset["question_ids"]}
    unknown = {str(r["question_id"]) for r in records} - question_ids
    if unknown:
        problems.append(Problem("unknown_question", f"records for questions not in the dataset: "
                                f"{_listing(unknown)}"))
    named = {p.get("name") for p in manifest["predictors"] if isinstance(p, dict)}
    predictors = {r["predictor"] for r in records}
    if predictors - named:
        problems.append(Problem("predictors_mismatch", f"records of predictors the manifest does not "
                                f"list: {sorted(predictors - named)}"))
    # the full denominator: every question x every predictor x every engine the bundle mentions
    all_predictors = predictors | {n for n in named if isinstance(n, str)} | {
        a.get("predictor") for a in manifest["aggregates"] if isinstance(a, dict)}
    engines = {r["engine"] for r in records} | set(manifest["engines"]) | {
        a.get("engine") for a in manifest["aggregates"] if isinstance(a, dict)}
    expected = {(q, p, e) for q in question_ids for p in all_predictors for e in engines
                if isinstance(p, str) and isinstance(e, str)}
    missing = expected - set(counts)
    if missing:
        problems.append(Problem("missing_records", f"{len(missing)} of {len(expected)} (question, "
                                f"predictor, engine) records are missing: {_listing(missing)}"))
    return problems


def _check_aggregates(manifest: dict[str, Any], records: list[dict[str, Any]]) -> list[Problem]:
    problems: list[Problem] = []
    claimed: dict[tuple[Any, Any], dict[str, Any]] = {}
    for entry in manifest["aggregates"]:
        if not isinstance(entry, dict):
            problems.append(Problem("aggregate_mismatch", f"aggregate entry is not an object: {entry!r}"))
            continue
        key = (entry.get("predictor"), entry.get("engine"))
        if key in claimed:
            problems.append(Problem("aggregate_mismatch", f"aggregate {key[0]}/{key[1]} is listed twice"))
        claimed[key] = entry
    actual = {(a["predictor"], a["engine"]): a for a in compute_aggregates(records)}
    for key in sorted(set(claimed) | set(actual), key=str):
        predictor, engine = key
        mine, theirs = actual.get(key), claimed.get(key)
        if theirs is None:
            problems.append(Problem("aggregate_mismatch", f"{predictor}/{engine} has records but no "
                                    f"aggregate (records: {mine['correct']}/{mine['total']})"))
        elif mine is None:
            problems.append(Problem("aggregate_mismatch", f"aggregate {predictor}/{engine} "
                                    f"({theirs.get('correct')}/{theirs.get('total')}) has no records"))
        elif not _same_aggregate(mine, theirs):
            problems.append(Problem(
                "aggregate_mismatch",
                f"{predictor}/{engine}: manifest says {theirs.get('correct')}/{theirs.get('total')} "
                f"(accuracy {theirs.get('accuracy')}), the records give {mine['correct']}/"
                f"{mine['total']} (accuracy {mine['accuracy']})"))
    return problems


def _same_aggregate(mine: dict[str, Any], theirs: dict[str, Any]) -> bool:
    accuracy = theirs.get("accuracy")
    if theirs.get("correct") != mine["correct"] or theirs.get("total") != mine["total"]:
        return False
    if mine["total"] == 0:
        # nothing scored (every gold failed): no accuracy, or the 0.0 older bundles recorded
        return accuracy is None or (type(accuracy) in (int, float) and accuracy == 0)
    return (isinstance(accuracy, (int, float)) and not isinstance(accuracy, bool)
            and math.isclose(accuracy, mine["accuracy"], rel_tol=1e-12, abs_tol=1e-12))


def _check_dataset(claimed: dict[str, Any]) -> list[Problem]:
    try:
        dataset = get_dataset(claimed["spec"])
        fingerprint = dataset_fingerprint(dataset)
    except PolysqlError as exc:
        return [Problem(f"{WARNING_PREFIX}dataset_unavailable",
                        f"dataset {claimed['spec']!r} cannot be loaded here ({exc}); its "
                        "fingerprint was not checked")]
    problems: list[Problem] = []
    if dataset.name != claimed["name"]:
        problems.append(Problem("dataset_fingerprint", f"spec {claimed['spec']!r} loads dataset "
                                f"{dataset.name!r}, the manifest names {claimed['name']!r}"))
    ids = {q.id for q in dataset.questions}
    listed = {str(q) for q in claimed["question_ids"]}
    if ids != listed:
        problems.append(Problem("dataset_fingerprint", f"the dataset's question ids differ from the "
                                f"manifest's: not listed {_listing(ids - listed)}, not in the dataset "
                                f"{_listing(listed - ids)}"))
    if fingerprint != claimed["fingerprint"]:
        problems.append(Problem("dataset_fingerprint", f"dataset {claimed['spec']!r} here has "
                                f"fingerprint {fingerprint}, the manifest says {claimed['fingerprint']}"))
    return problems
