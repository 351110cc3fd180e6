"""Label Studio on PostgreSQL with a database connection per request against connections kept open.

    .venv/bin/python benchmarks/bench_connections.py [--requests 300] [--rounds 2]

Each round starts a Label Studio of its own on a PostgreSQL of its own (gunicorn, as `make serve` runs it
for teams) twice, with `KNOWREF60K_DB_CONN_MAX_AGE=0` (Django's default: one connection per request) and
then with the default (kept), pushes 20 resolution tasks, and sends `--requests` requests one after
another to two views every vote brings: a task, and the next task. One client, no queue, so the time of a
request is its cost: wall-clock milliseconds per request and the machine's busy CPU milliseconds per
request (/proc/stat: Label Studio, PostgreSQL and this client together). With kept connections it also
sends the same two requests without their trailing slash, as Label Studio's labelling frontend does,
alternating with the slashed ones. Results in output/bench/connections.json; the targets: the kept
connections' CPU per request at most 85% of the per-request connections' in the same run, and a slash-less
request's time at most 105% of the slashed one's (Label Studio alone runs it twice, to a 404 and again).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
from bench_annotation import REPO, bench_settings, console, item

from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.decisions import RESOLUTION
from knowref60k_annotation.client import LabelStudioClient
from knowref60k_annotation.database import POSTGRES_PORT_OFFSET, LocalPostgres
from knowref60k_annotation.server import CONNECTION_MAX_AGE, DEFAULT_CONNECTION_MAX_AGE, Server

TARGET_RATIO = 0.85
SLASHLESS_TARGET_RATIO = 1.05
WARM_UP = 10
VIEWS = ("task", "next_task")


def busy_seconds() -> float:
    """CPU seconds the machine has spent busy (user, nice, system, irq, softirq) since it booted."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    return sum(int(fields[index]) for index in (0, 1, 2, 5, 6)) / os.sysconf("SC_CLK_TCK")


def timed(http: httpx.Client, path: str, requests: int) -> dict[str, float]:
    for _ in range(WARM_UP):
        http.get(path).raise_for_status()
    started, busy = time.perf_counter(), busy_seconds()
    for _ in range(requests):
        http.get(path).raise_for_status()
    return {
        "wall_ms": round(1000 * (time.perf_counter() - started) / requests, 1),
        "cpu_ms": round(1000 * (busy_seconds() - busy) / requests, 1),
    }


def alternated(http: httpx.Client, slashed: str, requests: int) -> dict[str, float]:
    """Wall-clock milliseconds per request of `slashed` and of it without its slash, sent in turns (each
    first every other time) so that both see the same state of the machine."""
    spent = {"slashed_ms": 0.0, "slashless_ms": 0.0}
    for _ in range(WARM_UP):
        http.get(slashed.rstrip("/")).raise_for_status()
    pair = [("slashed_ms", slashed), ("slashless_ms", slashed.rstrip("/"))]
    for number in range(requests):
        for key, path in pair if number % 2 else pair[::-1]:
            started = time.perf_counter()
            http.get(path).raise_for_status()
            spent[key] += time.perf_counter() - started
    return {key: round(1000 * total / requests, 1) for key, total in spent.items()}


def measure(max_age: int, requests: int, scratch: Path) -> dict[str, dict[str, float]]:
    """Per-request cost of the two views on a fresh server whose connections live `max_age` seconds."""
    os.environ[CONNECTION_MAX_AGE] = str(max_age)
    settings = bench_settings(scratch / f"age-{max_age}", "postgresql", "bench connections")
    server = Server(settings)
    try:
        server.start()
        with LabelStudioClient(settings) as client:
            client.push(
                [item(number) for number in range(20)],
                RESOLUTION,
                LabellingConfig().initial_overlap(RESOLUTION),
                seed=0,
            )
            project = client.existing_project(RESOLUTION)
            task = next(iter(client.sdk.tasks.list(project=project))).id
        with httpx.Client(
            base_url=settings.url, headers={"Authorization": f"Token {settings.api_key}"}
        ) as http:
            paths = {"task": f"/api/tasks/{task}/", "next_task": f"/api/projects/{project}/next/"}
            costs = {view: timed(http, path, requests) for view, path in paths.items()}
            if max_age:
                costs |= {f"{view}_slash": alternated(http, path, requests) for view, path in paths.items()}
            return costs
    finally:
        server.stop()
        LocalPostgres(settings.state_dir, settings.port + POSTGRES_PORT_OFFSET).remove()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        for number in range(args.rounds):
            console.print(f"round {number + 1} of {args.rounds}: per-request connections, then kept ...")
            per_request = measure(0, args.requests, Path(scratch))
            kept = measure(DEFAULT_CONNECTION_MAX_AGE, args.requests, Path(scratch))
            rounds.append({"per_request": per_request, "kept": kept})
    return report(rounds, args.requests)


def report(rounds: list[dict[str, Any]], requests: int) -> int:
    ratios = {
        view: statistics.median(
            one["kept"][view]["cpu_ms"] / one["per_request"][view]["cpu_ms"] for one in rounds
        )
        for view in VIEWS
    }
    slashless = {
        view: statistics.median(
            one["kept"][f"{view}_slash"]["slashless_ms"] / one["kept"][f"{view}_slash"]["slashed_ms"]
            for one in rounds
        )
        for view in VIEWS
    }
    results = {
        "requests": requests,
        "rounds": rounds,
        "cpu_ratio_kept_to_per_request": ratios,
        "time_ratio_slashless_to_slashed": slashless,
    }
    out = REPO / "output" / "bench" / "connections.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    for number, one in enumerate(rounds, 1):
        for mode in ("per_request", "kept"):
            console.print(f"round {number}, connections {mode}: {one[mode]}")
    kept = "CPU per request with kept connections {:.2f}x the per-request connections'"
    slash = "time of a request without its trailing slash {:.2f}x the slashed one's"
    missed = verdicts(ratios, TARGET_RATIO, kept) + verdicts(slashless, SLASHLESS_TARGET_RATIO, slash)
    console.print(f"results: {out}")
    return 1 if missed else 0


def verdicts(ratios: dict[str, float], target: float, what: str) -> int:
    """Print MET or MISSED for each view's ratio against `target`; returns how many missed."""
    missed = 0
    for view, ratio in ratios.items():
        met = ratio <= target
        missed += not met
        verdict = "MET   " if met else "MISSED"
        console.print(f"{verdict} {view}: {what.format(ratio)} (median of rounds; target <= {target})")
    return missed


if __name__ == "__main__":
    sys.exit(main())
