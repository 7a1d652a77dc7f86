"""``polysql sweep --timings``: where a real sweep's time went, per engine and stage."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from polysql_testkit.cli_runs import run_sweep as sweep

from polysql.sweep.timings import STAGES, SweepTimings

pytestmark = pytest.mark.usefixtures("isolated_cache")


def test_timings_name_every_stage_and_lane_and_add_up(tmp_path: Path) -> None:
    run = tmp_path / "run"
    code, output = sweep("--out", str(run), "--limit", "6", "--engines", "sqlite,duckdb",
                         "--timings")
    assert code == 0, output
    assert "where the time went" in output
    for stage in ("load", "gold", "predict", "execute", "cache", "compare", "record"):
        assert stage in output
    for lane in ("gold", "sqlite", "duckdb", "all"):
        assert lane in output
    assert "wall time" in output and "polysql/engine" in output

    timings = json.loads((run / "timings.json").read_text())
    wall = timings["wall"]
    assert wall > 0
    lanes = timings["lanes"]
    assert {"gold", "sqlite", "duckdb", "sweep"} <= set(lanes)
    for name, lane in lanes.items():
        assert set(lane["stages"]) <= set(STAGES)
        parts = sum(lane["stages"].values())
        assert parts == pytest.approx(lane["total"], abs=1e-5), name
        # a lane's threads (an engine's workers) each work within the run
        assert lane["threads"] >= 1 and lane["total"] <= wall * lane["threads"] + 1e-6, name
        assert lane["engine"] + lane["load"] + lane["model"] + lane["polysql"] == \
            pytest.approx(lane["total"], abs=1e-5)
    # six gold statements ran on the gold lane; each engine ran 2 predictors x 6 questions,
    # some of them served by the cache (sqlite's gold predictions are the gold statements)
    assert lanes["gold"]["counts"]["gold"] == 6
    assert lanes["duckdb"]["counts"]["execute"] >= 6
    assert lanes["duckdb"]["counts"]["compare"] == 12
    assert lanes["duckdb"]["counts"]["record"] == 12
    # the first sweep loaded the demo database into DuckDB
    assert lanes["duckdb"]["rows_loaded"] > 0
    every = timings["all"]
    assert every["total"] == pytest.approx(sum(lane["total"] for lane in lanes.values()), abs=1e-4)
    assert every["engine"] <= every["total"]


def test_a_warm_rerun_executes_nothing_and_loads_nothing(tmp_path: Path) -> None:
    assert sweep("--out", str(tmp_path / "one"), "--limit", "4", "--engines", "sqlite,duckdb")[0] == 0
    code, output = sweep("--out", str(tmp_path / "two"), "--limit", "4", "--engines",
                         "sqlite,duckdb", "--timings")
    assert code == 0, output
    lanes = json.loads((tmp_path / "two" / "timings.json").read_text())["lanes"]
    for name in ("gold", "sqlite", "duckdb"):
        assert "execute" not in lanes[name]["counts"], name  # every result from the cache
        assert lanes[name]["counts"]["cache"] > 0
        assert lanes[name]["rows_loaded"] == 0  # the copies were there already
    # without --timings nothing is printed, but the file is still written
    code, output = sweep("--out", str(tmp_path / "three"), "--limit", "1", "--engines", "sqlite")
    assert code == 0 and "where the time went" not in output
    assert (tmp_path / "three" / "timings.json").exists()


def test_nested_stages_are_counted_once_and_threads_keep_their_lanes() -> None:
    timings = SweepTimings()

    def work(lane: str) -> None:
        with timings.lane(lane):
            for _ in range(50):
                with timings.stage("compare"), timings.stage("execute"), timings.stage("cache"):
                    pass

    threads = [threading.Thread(target=work, args=(f"engine{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lanes = timings.lanes()
    assert set(lanes) == {f"engine{n}" for n in range(4)}
    for lane in lanes.values():
        assert lane.counts == {"compare": 50, "execute": 50, "cache": 50, "other": 1}
        assert all(seconds >= 0 for seconds in lane.seconds.values())
        assert lane.engine + lane.load + lane.polysql == pytest.approx(lane.total)
    with timings.stage("plan"):  # a thread that named no lane counts into the main one
        pass
    assert timings.lanes()["sweep"].counts == {"plan": 1}


def test_a_worker_waiting_for_the_lanes_other_workers_counts_the_wait_nowhere() -> None:
    """Two workers in one lane: one executes for a while, the other has nothing left to do and
    waits for it. The wait is not polysql's time (nor anything else's): only the work is."""
    timings = SweepTimings()
    started = threading.Event()

    def busy() -> None:
        with timings.lane("duckdb"), timings.stage("execute"):
            started.set()
            time.sleep(0.3)

    with timings.lane("duckdb"):
        helper = threading.Thread(target=busy)
        helper.start()
        started.wait()
        with timings.idle():
            helper.join()
    lane = timings.lanes()["duckdb"]
    assert lane.engine == pytest.approx(0.3, abs=0.1)
    assert lane.polysql < 0.05, lane.seconds
    assert lane.threads == 2


def test_a_prediction_that_is_the_gold_sql_on_the_gold_engine_reuses_its_execution(
        tmp_path: Path) -> None:
    """The gold lane and the SQLite lane read the same copy with the same engine: a prediction
    whose SQL is the gold's is served by the gold's execution, not run a second time."""
    run = tmp_path / "run"
    code, output = sweep("--out", str(run), "--limit", "5", "--engines", "sqlite",
                         "--predictor", "gold")
    assert code == 0, output
    lanes = json.loads((run / "timings.json").read_text())["lanes"]
    assert lanes["gold"]["counts"]["execute"] >= 5
    assert "execute" not in lanes["sqlite"]["counts"], lanes["sqlite"]
    assert "5 execution cache hits" in " ".join(output.split())
    # however the URL spells "no database", it is the same engine
    again = tmp_path / "again"
    code, output = sweep("--out", str(again), "--limit", "5", "--engines", "sqlite:///",
                         "--predictor", "gold")
    assert code == 0, output
    assert "execute" not in json.loads((again / "timings.json").read_text())["lanes"]["sqlite"][
        "counts"]
