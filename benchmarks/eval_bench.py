"""Evaluating a predictions file on SQLite: ``polysql sweep`` against a BIRD-style evaluation.

The established way to score a BIRD predictions file is a script that runs, for every question,
the prediction and the gold on the question's SQLite file and compares the two results as sets,
the questions spread over a process per core. This benchmark writes a BIRD-layout dataset (the
sweep benchmark's generated database and questions, repeated to ``--questions``, each gold and
each prediction written differently so that no statement is run twice) and a predictions file
in BIRD's format, then times, as whole processes, one after the other and ``--rounds`` times:

* ``polysql sweep --engines sqlite --predictor model=predict_dev.json`` with an empty cache
  (copies built, every statement executed, records and reports written);
* the baseline: a pool of processes, one per core, each running its share of (prediction, gold)
  pairs with ``sqlite3`` and comparing the results as sets (no ties, no tolerance, no records).

It prints both wall times, best of the rounds, and their ratio. polysql also judges order, ties
and number tolerance, and may re-run a gold (see docs/comparison.md): more work per question,
which the ratio includes.

    python benchmarks/eval_bench.py [--rows 100000] [--questions 400] [--rounds 2]

Timings are wall-clock on this machine; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import as_installed
from figures import Bar, draw_bars, figure_path
from sweep_bench import DB_ID, QUESTIONS, parse_size, size_label, write_database

PREDICTOR = "model"


def write_bird_dataset(folder: Path, rows: int, questions: int) -> Path:
    """dev.json, predict_dev.json and the database; the predictions file is BIRD's format."""
    database = folder / "dev_databases" / DB_ID / f"{DB_ID}.sqlite"
    if not database.exists():
        write_database(database, rows)
    entries, predictions = [], {}
    for index in range(questions):
        text, sql = QUESTIONS[index % len(QUESTIONS)]
        # a trailing comment makes each statement text its own: neither polysql's execution
        # cache nor anything else can serve one question's statement to another
        entries.append({"question_id": index, "db_id": DB_ID, "question": f"{text} (#{index})",
                        "evidence": "", "SQL": f"{sql} -- gold {index}",
                        "difficulty": "moderate"})
        predictions[str(index)] = f"{sql} -- prediction {index}\t----- bird -----\t{DB_ID}"
    (folder / "dev.json").write_text(json.dumps(entries, indent=1), encoding="utf-8")
    (folder / "predict_dev.json").write_text(json.dumps(predictions, indent=1), encoding="utf-8")
    return database


def _pair(task: tuple[str, str, str]) -> int:
    """One question the baseline's way: both statements, results compared as sets."""
    prediction, gold, database = task
    conn = sqlite3.connect(database)
    try:
        predicted = conn.execute(prediction).fetchall()
        expected = conn.execute(gold).fetchall()
    except sqlite3.Error:
        return 0
    finally:
        conn.close()
    return int(set(predicted) == set(expected))


def baseline(folder: Path) -> tuple[float, float]:
    """The BIRD-style evaluation in a process of its own: (wall seconds, accuracy)."""
    command = [sys.executable, __file__, "--baseline-only", str(folder)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, float(done.stdout.strip())


def run_baseline(folder: Path) -> float:
    entries = json.loads((folder / "dev.json").read_text(encoding="utf-8"))
    predictions = json.loads((folder / "predict_dev.json").read_text(encoding="utf-8"))
    tasks = []
    for entry in entries:
        sql, _marker, db_id = predictions[str(entry["question_id"])].split("\t")
        tasks.append((sql, entry["SQL"], str(folder / "dev_databases" / db_id / f"{db_id}.sqlite")))
    with multiprocessing.Pool(processes=os.cpu_count() or 1) as pool:
        scores = pool.map(_pair, tasks)
    return sum(scores) / len(scores)


def polysql_sweep(folder: Path, work: Path) -> tuple[float, float]:
    """``polysql sweep`` on SQLite with an empty cache, as a whole process: (wall, accuracy)."""
    run, cache = Path(tempfile.mkdtemp(dir=work)), Path(tempfile.mkdtemp(dir=work))
    command = [sys.executable, "-m", "polysql.cli", "sweep", "--dataset", f"bird:{folder}",
               "--engines", "sqlite", "--predictor",
               f"{PREDICTOR}={folder / 'predict_dev.json'}", "--out", str(run)]
    env = {**os.environ, "POLYSQL_CACHE": str(cache)}
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"polysql sweep failed with exit code {done.returncode}")
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    (cell,) = summary["cells"]
    return wall, float(cell["accuracy"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="100k", help="rows in the orders table (e.g. 2k, 100k)")
    parser.add_argument("--questions", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=None,
                        help="folder for the dataset and runs (default: a temporary one)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="PNG to draw (default benchmark-figures/eval_bench.png)")
    parser.add_argument("--baseline-only", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline_only is not None:  # the baseline's own process
        print(run_baseline(args.baseline_only))
        return
    as_installed()
    work = args.work or Path(tempfile.mkdtemp(prefix="eval_bench_"))
    try:
        bench(args, work)
    finally:
        if args.work is None:  # the dataset and every run folder: never left behind
            shutil.rmtree(work, ignore_errors=True)


def bench(args: argparse.Namespace, work: Path) -> None:
    rows = parse_size(args.rows)
    folder = work / f"bird_{size_label(rows)}_{args.questions}"
    write_bird_dataset(folder, rows, args.questions)
    print(f"dataset: {args.questions} questions over {rows:,} orders in {folder}; "
          f"{os.cpu_count()} cores")
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(args.rounds):
        wall, accuracy = polysql_sweep(folder, work)
        ours.append(wall)
        base_wall, base_accuracy = baseline(folder)
        theirs.append(base_wall)
        if accuracy != base_accuracy:
            raise SystemExit(f"the accuracies differ: polysql {accuracy}, baseline {base_accuracy}")
    best, base = min(ours), min(theirs)
    print(f"\n{'evaluator':<34} {'seconds':>8}")
    print(f"{'polysql sweep (sqlite, cold)':<34} {best:>8.2f}")
    print(f"{'BIRD-style pool of sqlite3':<34} {base:>8.2f}")
    print(f"ratio polysql / baseline: {best / base:.2f}x (best of {args.rounds}; accuracy "
          f"{accuracy:.3f} both)")
    drawn = draw_bars(figure_path(args.figure, "eval_bench"),
                      "Scoring a BIRD predictions file on SQLite (whole process)",
                      [Bar("polysql sweep", best, f"{best:.2f} s"),
                       Bar("BIRD-style pool", base, f"{base:.2f} s", ours=False)],
                      xlabel="seconds (lower is better)",
                      note=f"{args.questions} questions, {rows:,} orders, {os.cpu_count()} cores")
    print(f"drew {drawn}")


if __name__ == "__main__":
    main()
