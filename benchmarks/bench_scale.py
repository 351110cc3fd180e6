"""Scale-out: the 1M-comment benchmark on a local Dask cluster with 1 worker vs 2 workers, against the
in-process extractor (2 worker processes) measured in the same run.

    .venv/bin/python benchmarks/bench_scale.py [--repeat 3]

Splits RC_sample_1M.zst into 2 shards, starts (or reuses) the local Prefect server on 127.0.0.1:4200,
and runs, `--repeat` times in turn: the sharded extraction flow with 1 Dask worker, with 2, and the
in-process extractor on the whole file. Each Dask run starts its own cluster (the time includes the
workers' start and the model load, as for a user's `knowref60k flow scale`), not the split. The machine's
speed varies, so best and median are reported, and the targets judged on the best of each. For comparison
(not judged), the same flow on a cluster already running with its workers' models loaded, as with
`--address`: the shards' time without the start-up. Results go to output/bench/scale.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

import orjson

from knowref60k.core.config import ExtractConfig, load_config
from knowref60k.core.console import make_console
from knowref60k.extract.extractor import Extractor
from knowref60k.ingest.slicing import split_dump
from knowref60k_flows.serve import API, start_prefect_server

REPO = Path(__file__).resolve().parent.parent
DUMP = REPO.parent / "shared" / "data" / "reddit" / "RC_sample_1M.zst"
# Targets: 1 -> 2 Dask workers at least 1.8x, and 2 Dask workers at most 25% slower than in-process.
TARGET_SPEED_UP = 1.8
TARGET_SLOWDOWN = 1.25
console = make_console()


def dask_run(shards: list[str], out: Path, workers: int, address: str | None = None) -> tuple[float, int]:
    """The sharded flow on a local cluster it starts, or on the running one at `address`."""
    from knowref60k_flows.scale import dask_runner, sharded_flow

    shutil.rmtree(out, ignore_errors=True)  # measure a real run, not a skip
    started = time.perf_counter()
    result = sharded_flow(shards, str(out), None, dask_runner(workers, address))
    return time.perf_counter() - started, sum(f["candidates"] for f in result["files"])


def preload_extractor() -> None:
    from knowref60k_flows.scale import worker_extractor

    worker_extractor(load_config(None))  # the call the shard task makes, so its cache serves the task


def warm_dask_run(shards: list[str], out: Path, workers: int) -> tuple[float, int]:
    from distributed import Client

    from knowref60k_flows.scale import batch_cluster, local_cluster_kwargs

    cluster_kwargs = {**local_cluster_kwargs(workers), "dashboard_address": None}
    with batch_cluster(**cluster_kwargs) as cluster, Client(cluster) as client:
        client.run(preload_extractor)
        return dask_run(shards, out, workers, cluster.scheduler_address)


def in_process_run(out: Path) -> tuple[float, int]:
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    with Extractor(ExtractConfig(), workers=2) as extractor:
        report = extractor.extract_file(DUMP, out)
    return time.perf_counter() - started, report.rows


KINDS = (
    "dask_1_worker",
    "dask_2_workers",
    "in_process_2_workers",
    "running_cluster_1_worker",
    "running_cluster_2_workers",
)


def timed_rounds(repeat: int) -> tuple[float, dict[str, list[float]], set[int]]:
    """The split's seconds, each kind's seconds per round (the kinds in turn, so that a slow spell of the
    machine hits all of them) and the candidate counts seen."""
    kinds: dict[str, list[float]] = {kind: [] for kind in KINDS}
    candidates: set[int] = set()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        started = time.perf_counter()
        shards = [str(p) for p in split_dump(DUMP, work / "shards", 2)]
        split_seconds = time.perf_counter() - started
        for round_number in range(1, repeat + 1):
            for kind in kinds:
                workers = 1 if kind.endswith("_1_worker") else 2
                if kind == "in_process_2_workers":
                    seconds, rows = in_process_run(work / kind)
                elif kind.startswith("running_cluster"):
                    seconds, rows = warm_dask_run(shards, work / kind, workers)
                else:
                    seconds, rows = dask_run(shards, work / kind, workers)
                kinds[kind].append(seconds)
                candidates.add(rows)
                console.print(f"round {round_number}, {kind}: {seconds:.1f} s, {rows} candidates")
    return split_seconds, kinds, candidates


def results_of(split_seconds: float, kinds: dict[str, list[float]], candidates: set[int]) -> dict[str, Any]:
    best = {kind: min(runs) for kind, runs in kinds.items()}
    middle = {kind: median(runs) for kind, runs in kinds.items()}
    return {
        "split_seconds": round(split_seconds, 1),
        "runs_seconds": {kind: [round(s, 1) for s in runs] for kind, runs in kinds.items()},
        "best_seconds": {kind: round(s, 1) for kind, s in best.items()},
        "median_seconds": {kind: round(s, 1) for kind, s in middle.items()},
        "speed_up_best": round(best["dask_1_worker"] / best["dask_2_workers"], 2),
        "speed_up_median": round(middle["dask_1_worker"] / middle["dask_2_workers"], 2),
        "dask_2_vs_in_process_best": round(best["dask_2_workers"] / best["in_process_2_workers"], 2),
        "dask_2_vs_in_process_median": round(middle["dask_2_workers"] / middle["in_process_2_workers"], 2),
        "running_cluster_speed_up_best": round(
            best["running_cluster_1_worker"] / best["running_cluster_2_workers"], 2
        ),
        "candidates": sorted(candidates),
    }


def report(results: dict[str, Any]) -> list[tuple[str, bool, str]]:
    """Prints the runs and returns the targets: (name, met, value)."""
    console.print(f"split into 2 shards (not timed below): {results['split_seconds']:.1f} s")
    for kind, runs in results["runs_seconds"].items():
        listed = ", ".join(f"{s:.1f}" for s in runs)
        console.print(
            f"{kind}: best {results['best_seconds'][kind]:.1f} s, "
            f"median {results['median_seconds'][kind]:.1f} s (runs: {listed} s)"
        )
    speed_up, slowdown = results["speed_up_best"], results["dask_2_vs_in_process_best"]
    console.print(
        f"speed-up 1 -> 2 Dask workers: {speed_up:.2f}x best, {results['speed_up_median']}x median; "
        f"2 Dask workers / in-process: {slowdown:.2f} best, {results['dask_2_vs_in_process_median']} median"
    )
    console.print(
        "on a running cluster, models loaded (not judged): speed-up 1 -> 2 workers "
        f"{results['running_cluster_speed_up_best']}x best"
    )
    candidates = results["candidates"]
    return [
        (f"1 -> 2 Dask workers >= {TARGET_SPEED_UP}x", speed_up >= TARGET_SPEED_UP, f"{speed_up:.2f}x"),
        (
            f"2 Dask workers at most {TARGET_SLOWDOWN - 1:.0%} slower than in-process",
            slowdown <= TARGET_SLOWDOWN,
            f"{slowdown - 1:+.0%}",
        ),
        ("the same number of candidates in every run", len(candidates) == 1, str(candidates)),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each kind (default 3)")
    args = parser.parse_args()
    if not DUMP.is_file():
        console.print(f"missing {DUMP}", style="red")
        return 2
    start_prefect_server()
    os.environ["PREFECT_API_URL"] = API
    results = results_of(*timed_rounds(args.repeat))
    out = REPO / "output" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.json").write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    checks = report(results)
    for name, met, value in checks:
        console.print(f"{'MET   ' if met else 'MISSED'} {name}: {value}")
    console.print(f"Results in {(out / 'scale.json').resolve()}")
    return 0 if all(met for _, met, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
