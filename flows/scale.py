"""Extraction of one large dump on a Dask cluster: split it into shards, one task per shard.

    knowref60k flow scale DUMP --shards 8 --out output/scale [--workers 4 | --address tcp://host:8786]

A local cluster (`--workers` processes, one thread each) by default, or an existing Dask scheduler
(`--address`). Dask workers report to the Prefect server named by PREFECT_API_URL (start one with
`make serve`): against Prefect's temporary server every worker would start its own.

Ray instead of Dask: `pip install prefect-ray` and pass `task_runner=RayTaskRunner(address=...)`
to the same flow; the tasks take file paths and return counts, so nothing else changes.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import dask.config
from distributed import LocalCluster
from prefect import flow, task
from prefect_dask import DaskTaskRunner

from knowref60k.core.config import ExtractConfig, load_config
from knowref60k.core.console import make_console, render_funnel
from knowref60k.core.parallel import settle_garbage_collector
from knowref60k.core.stats import merge_stats
from knowref60k.extract.extractor import Extractor
from knowref60k.ingest.slicing import split_dump
from knowref60k_flows.common import RETRIES


@functools.cache
def worker_extractor(settings: ExtractConfig) -> Extractor:
    """One extractor per Dask worker process, kept for every shard the worker runs: the model loads once
    per worker, not once per shard. It lives as long as the worker process, whose garbage collector is
    then settled as in the extractor's own worker processes (a Dask worker runs nothing but shards)."""
    extractor = Extractor(settings, workers=1)
    extractor.load_here()
    settle_garbage_collector()
    return extractor


@task(**RETRIES, retry_delay_seconds=10, task_run_name="extract shard {shard}")
def extract_shard(shard: str, out_dir: str, config_path: str | None) -> dict[str, Any]:
    """One shard on one Dask worker, in its own process (the worker is the unit of parallelism)."""
    extractor = worker_extractor(load_config(Path(config_path) if config_path else None))
    report = extractor.extract_file(Path(shard), Path(out_dir))
    return {
        "shard": shard,
        "candidates": report.rows,
        "stats_path": str(report.report_path),
        "seconds": report.seconds,
        "skipped": report.skipped,
    }


# A local cluster runs nothing but batch shards, and two of Dask's defaults cost them time (measured in
# docs/measurements.md, "Scale-out"):
# - the statistical profiler samples the task thread for the dashboard, taking the GIL;
# - nannies start workers with MALLOC_TRIM_THRESHOLD_=65536, so that freed memory goes back to the system
#   at once: with the extractor's short-lived objects, many more page faults and more system time.
BATCH_SETTINGS = {
    "distributed.worker.profile.enabled": False,
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,  # None: not set at all
}


def dask_runner(workers: int, address: str | None) -> DaskTaskRunner:
    if address:
        return DaskTaskRunner(address=address)
    return DaskTaskRunner(cluster_class=batch_cluster, cluster_kwargs=local_cluster_kwargs(workers))


def local_cluster_kwargs(workers: int) -> dict[str, Any]:
    """Worker processes of one thread each: the worker is the unit of parallelism."""
    return {"n_workers": workers, "threads_per_worker": 1, "processes": True}


def batch_cluster(**cluster_kwargs: Any) -> LocalCluster:
    """A LocalCluster with BATCH_SETTINGS: its nannies read them when they are created, and hand them on
    to their workers."""
    with dask.config.set(BATCH_SETTINGS):
        return LocalCluster(**cluster_kwargs)


def sharded_flow(
    shards: list[str], out_dir: str, config_path: str | None, runner: DaskTaskRunner
) -> dict[str, Any]:
    @flow(name="extract-sharded", task_runner=runner)
    def run() -> list[dict[str, Any]]:
        futures = [extract_shard.submit(shard, out_dir, config_path) for shard in shards]
        return [future.result() for future in futures]

    reports = run()
    return {"files": reports, "stats": merge_stats(Path(r["stats_path"]) for r in reports).to_dict()}


def main(dump: Path, shards: int, out: Path, workers: int, address: str | None, config: Path | None) -> int:
    """`knowref60k flow scale`: cut `dump` into `shards` under OUT/shards, extract them on Dask into
    OUT/candidates; the exit code."""
    console = make_console()
    cut = split_dump(dump, out / "shards", shards)
    result = sharded_flow(
        [str(s) for s in cut],
        str(out / "candidates"),
        str(config) if config else None,
        dask_runner(workers, address),
    )
    from knowref60k.core.stats import PipelineStats

    console.print(render_funnel(PipelineStats.from_dict(result["stats"]), f"Funnel over {len(cut)} shards"))
    console.print(f"Candidates in {out / 'candidates'}")
    return 0
