"""Time to push 10,000 items to a real Label Studio, and to collect 50,000 annotations from it.

    .venv/bin/python benchmarks/bench_annotation.py [--items 10000]

Starts its own server (loopback, free port, throw-away data), so it measures a fresh SQLite install.
The 50,000 annotations (10,000 tasks x 5 distinct annotators) are loaded with Label Studio's import of
pre-annotated tasks, because posting them one by one (about 4-10/s) would take hours; collecting is
then the real export + votes-table code path. Results go to output/bench/annotation.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import secrets
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from annotation.client import LabelStudioClient
from annotation.server import Server
from annotation.settings import Settings
from annotation.tasks import task_for
from knowref60k.core.console import make_console

REPO = Path(__file__).resolve().parent.parent
console = make_console()
NAMES = [("Paul", "Mary"), ("Susan", "Linda"), ("James", "Robert"), ("Karen", "Betty")]


def item(number: int) -> dict[str, Any]:
    name1, name2 = NAMES[number % len(NAMES)]
    sentence = f"{name1} called {name2} on day {number} because she was bored."
    start = sentence.index(" she ") + 1
    return {
        "candidate_id": f"bench-{number:06d}",
        "source_file": "bench",
        "perturbed_sentence": sentence,
        "name1": name1,
        "name2": name2,
        "perturbed_pronoun_start": start,
        "perturbed_pronoun_end": start + 3,
    }


def annotated_task(number: int, annotators: list[int]) -> dict[str, Any]:
    task = task_for(item(number), seed=0)
    label = task["data"]["options"][number % 3]["value"]
    result = [
        {"from_name": "referent", "to_name": "sentence", "type": "choices", "value": {"choices": [label]}}
    ]
    task["annotations"] = [{"completed_by": user, "result": result, "lead_time": 4.2} for user in annotators]
    return task


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--annotators", type=int, default=5)
    args = parser.parse_args()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = Settings(
        f"http://127.0.0.1:{port}",
        "admin@bench.local",
        secrets.token_urlsafe(12),
        secrets.token_hex(20),
        "bench push",
    )
    results: dict[str, Any] = {"items": args.items}
    with tempfile.TemporaryDirectory() as scratch:
        server = Server(settings, Path(scratch))
        started = time.perf_counter()
        console.print(server.start())
        results["server_start_seconds"] = round(time.perf_counter() - started, 1)
        try:
            with LabelStudioClient(settings) as client:
                items = [item(n) for n in range(args.items)]
                started = time.perf_counter()
                report = client.push(items, seed=0)
                results["push_seconds"] = round(time.perf_counter() - started, 2)
                started = time.perf_counter()
                again = client.push(items, seed=0)
                results["repeat_push_seconds"] = round(time.perf_counter() - started, 2)
                assert report.pushed == args.items and again.pushed == 0
            votes_settings = dataclasses.replace(settings, project="bench collect")
            with LabelStudioClient(votes_settings) as client:
                project = client.ensure_project()
                users = [a.user_id for a in client.create_annotators(args.annotators, "bench-annotator-")]
                for start in range(0, args.items, 1000):
                    batch = [annotated_task(n, users) for n in range(start, min(start + 1000, args.items))]
                    client.call(client.sdk.projects.import_tasks, project, request=batch)
                started = time.perf_counter()
                _, collected = client.collect(Path(scratch) / "votes")
                results["collect_seconds"] = round(time.perf_counter() - started, 2)
                results["collected_votes"] = collected["votes"]
                assert collected["votes"] == args.items * args.annotators
        finally:
            console.print(server.stop())
    out = REPO / "output" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "annotation.json").write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    console.print(
        f"push of {args.items:,} items: {results['push_seconds']} s (again, nothing new: "
        f"{results['repeat_push_seconds']} s); collect of {results['collected_votes']:,} annotations: "
        f"{results['collect_seconds']} s; server start {results['server_start_seconds']} s"
    )
    missed = 0
    for name, seconds in (
        ("push 10k < 60 s", results["push_seconds"]),
        ("collect 50k < 60 s", results["collect_seconds"]),
    ):
        console.print(f"{'MET   ' if seconds < 60 else 'MISSED'} {name}: {seconds} s")
        missed += seconds >= 60
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
