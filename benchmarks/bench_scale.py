"""Scale-out: the 1M-comment benchmark on a local Dask cluster with 1 worker vs 2 workers.

    .venv/bin/python benchmarks/bench_scale.py

Splits RC_sample_1M.zst into 2 shards, starts (or reuses) the local Prefect server on 127.0.0.1:4200,
and runs the sharded extraction flow twice. Results go to output/bench/scale.json.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import orjson

from flows.serve import API, start_prefect_server
from knowref60k.core.console import make_console
from knowref60k.ingest.slicing import split_dump

REPO = Path(__file__).resolve().parent.parent
DUMP = REPO.parent / "shared" / "data" / "reddit" / "RC_sample_1M.zst"
console = make_console()


def main() -> int:
    if not DUMP.is_file():
        console.print(f"missing {DUMP}", style="red")
        return 2
    start_prefect_server()
    os.environ["PREFECT_API_URL"] = API
    from flows.scale import dask_runner, sharded_flow

    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        started = time.perf_counter()
        shards = [str(p) for p in split_dump(DUMP, work / "shards", 2)]
        results["split_seconds"] = round(time.perf_counter() - started, 1)
        for workers in (1, 2):
            started = time.perf_counter()
            result = sharded_flow(shards, str(work / f"out-{workers}"), None, dask_runner(workers, None))
            seconds = time.perf_counter() - started
            candidates = sum(f["candidates"] for f in result["files"])
            results[f"workers_{workers}"] = {"seconds": round(seconds, 1), "candidates": candidates}
            console.print(f"{workers} Dask worker(s): {seconds:.1f} s, {candidates} candidates")
    one, two = results["workers_1"], results["workers_2"]
    results["speed_up"] = round(one["seconds"] / two["seconds"], 2)  # type: ignore[index]
    console.print(
        f"split into 2 shards: {results['split_seconds']} s; speed-up 1 -> 2 workers: {results['speed_up']}x"
    )
    out = REPO / "output" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.json").write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
