"""Label Studio at scale and under load, on a fresh server of its own (loopback, free port, throw-away
SQLite data):

1. push 10,000 items, and push them again (nothing new);
2. collect 50,000 annotations (10,000 tasks x 5 resolvers), loaded with Label Studio's import of
   pre-annotated tasks (posting them one by one would take hours);
3. load: 20 simulated resolvers, each in a thread of its own with its own login, take tasks through the
   next-task API and vote for a few minutes, while the pipeline collects and closes decided tasks every
   few seconds; then a last collect. Checked: no vote lost (every annotation a resolver posted is in the
   votes), every decided task closed; the votes cast after a task was decided (SQLite selects tasks
   without a transaction, so some overshoot is expected) are counted and reported.

    .venv/bin/python benchmarks/bench_annotation.py [--items 10000] [--load-seconds 180]

Results go to output/bench/annotation.json; exits 1 when a target or a check is missed.
"""

from __future__ import annotations

import argparse
import dataclasses
import secrets
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq

from annotation.accounts import create_accounts
from annotation.client import LabelStudioClient
from annotation.collect import collect
from annotation.server import Server
from annotation.settings import Settings
from annotation.simulate import AnnotatorSession, resolver
from annotation.tasks import resolution_task, simulated_truth
from knowref60k.core.console import make_console
from knowref60k.core.errors import ServiceUnavailable
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.decisions import RESOLUTION, decide_stage

REPO = Path(__file__).resolve().parent.parent
console = make_console()
CONFIG = LabellingConfig(controls=())
RULE = CONFIG.resolution_rule
NAMES = [("Paul", "Mary"), ("Susan", "Linda"), ("James", "Robert"), ("Karen", "Betty")]


def item(number: int) -> dict[str, Any]:
    """An item as `prepare` writes it (the renamed sentence is the original here)."""
    name1, name2 = NAMES[number % len(NAMES)]
    sentence = f"{name1} called {name2} on day {number} because she was bored."
    start = sentence.index(" she ") + 1
    second = sentence.index(name2)
    return {
        "candidate_id": f"bench-{number:06d}",
        "source_file": "bench",
        "sentence": sentence,
        "antecedent1_start": 0,
        "antecedent1_end": len(name1),
        "antecedent2_start": second,
        "antecedent2_end": second + len(name2),
        "pronoun_start": start,
        "pronoun_end": start + 3,
        "perturbed_sentence": sentence,
        "name1": name1,
        "name2": name2,
        "perturbed_pronoun_start": start,
        "perturbed_pronoun_end": start + 3,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def annotated_task(number: int, annotators: list[int]) -> dict[str, Any]:
    task = resolution_task(item(number), seed=0)
    label = task["data"]["options"][number % 3]["value"]
    result = [
        {"from_name": "referent", "to_name": "sentence", "type": "choices", "value": {"choices": [label]}}
    ]
    task["annotations"] = [{"completed_by": user, "result": result, "lead_time": 4.2} for user in annotators]
    return task


def push_and_collect(settings: Settings, items: int, scratch: Path) -> dict[str, Any]:
    results: dict[str, Any] = {"items": items}
    with LabelStudioClient(settings) as client:
        rows = [item(n) for n in range(items)]
        started = time.perf_counter()
        report = client.push(rows, RESOLUTION, RULE.limit, seed=0)
        results["push_seconds"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        again = client.push(rows, RESOLUTION, RULE.limit, seed=0)
        results["repeat_push_seconds"] = round(time.perf_counter() - started, 2)
        assert report.pushed == items and again.pushed == 0
    votes_settings = dataclasses.replace(settings, project="bench collect")
    with LabelStudioClient(votes_settings) as client:
        project = client.ensure_project(RESOLUTION, RULE.limit)
        users = [a.user_id for a in create_accounts(client, "resolver", 5, "bench-")]
        for start in range(0, items, 1000):
            batch = [annotated_task(n, users) for n in range(start, min(start + 1000, items))]
            client.call(client.sdk.projects.import_tasks, project, request=batch)
        started = time.perf_counter()
        collected = collect(client, scratch / "collect", CONFIG)
        results["collect_seconds"] = round(time.perf_counter() - started, 2)
        results["collected_votes"] = collected["votes"]
        assert collected["votes"] == items * 5
    return results


def annotator_loop(
    session: AnnotatorSession, project: int, deadline: float, posted: list[int], timeouts: list[str]
) -> None:
    """Next task, vote, until the stream serves nothing or time is up; every posted annotation's id kept.
    A request the busy server does not answer in time is counted and tried again, as a person would
    reload the page (a vote whose answer never came may or may not be stored: counted apart)."""
    answer = resolver(simulated_truth(0), 0.9, 0)
    while time.monotonic() < deadline:
        try:
            task = session.next_task(project)
        except ServiceUnavailable:
            timeouts.append("next")
            continue
        if task is None:
            return
        choice = answer(task["data"]["item_id"], len(posted))  # any index: the load needs no reproducibility
        try:
            posted.append(session.vote(task, choice, "referent"))
        except ServiceUnavailable:
            timeouts.append("vote")


def load(
    settings: Settings, annotators: int, tasks: int, seconds: float, every: float, scratch: Path
) -> dict[str, Any]:
    settings = dataclasses.replace(settings, project="bench load")
    out = scratch / "load"
    with LabelStudioClient(settings) as client:
        client.push([item(n) for n in range(tasks)], RESOLUTION, RULE.limit, seed=0)
        project = client.existing_project(RESOLUTION)
        accounts = create_accounts(client, "resolver", annotators, "load-")
    sessions = [AnnotatorSession(settings, account) for account in accounts]
    posted: list[list[int]] = [[] for _ in sessions]
    timeouts: list[str] = []
    deadline = time.monotonic() + seconds
    threads = [
        threading.Thread(target=annotator_loop, args=(s, project, deadline, p, timeouts))
        for s, p in zip(sessions, posted, strict=True)
    ]
    for thread in threads:
        thread.start()
    collects, closed = 0, 0
    with LabelStudioClient(settings) as client:
        while any(thread.is_alive() for thread in threads):
            time.sleep(every)
            closed += collect(client, out, CONFIG)["closed_tasks"][RESOLUTION]["closed"]
            collects += 1
        for thread in threads:
            thread.join()
        final = collect(client, out, CONFIG)
        closed += final["closed_tasks"][RESOLUTION]["closed"]
    for session in sessions:
        session.close()
    return {**check_load(out, posted, final, collects, closed, seconds), "timeouts": dict(Counter(timeouts))}


def check_load(
    out: Path, posted: list[list[int]], final: dict[str, Any], collects: int, closed: int, seconds: float
) -> dict[str, Any]:
    votes = pq.read_table(out / "votes.parquet").to_pylist()
    tasks = {row["item_id"]: row for row in pq.read_table(out / "tasks.parquet").to_pylist()}
    decisions = decide_stage(votes, RESOLUTION, RULE)
    decided = [d for d in decisions.values() if d.decided]
    cast = {annotation for annotator in posted for annotation in annotator}
    collected = {vote["annotation_id"] for vote in votes}
    return {
        "seconds": seconds,
        "annotators": len(posted),
        "votes_posted": len(cast),
        "votes_collected": len(collected),
        "votes_lost": len(cast - collected),
        # Collected but never confirmed to their annotator: the answer to the vote timed out.
        "votes_unconfirmed": len(collected - cast),
        "refused": final["refused_votes"],
        "collects_while_voting": collects,
        "tasks_closed_by_the_pipeline": closed,
        "decided": len(decided),
        "decided_but_open": sum(1 for d in decided if not tasks[d.item_id]["is_labeled"]),
        "late_votes": sum(len(d.late) for d in decided),
        "votes_per_decided_item": round(sum(len(d.votes) for d in decided) / len(decided), 2)
        if decided
        else None,
        "votes_per_second": round(len(cast) / seconds, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--load-annotators", type=int, default=20)
    parser.add_argument("--load-tasks", type=int, default=600)
    parser.add_argument("--load-seconds", type=float, default=180)
    parser.add_argument("--collect-every", type=float, default=10, help="seconds between collects under load")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        settings = Settings(
            f"http://127.0.0.1:{free_port()}",
            "admin@bench.local",
            secrets.token_urlsafe(12),
            secrets.token_hex(20),
            "bench push",
            state_dir=Path(scratch),
        )
        server = Server(settings)
        started = time.perf_counter()
        console.print(server.start())
        results: dict[str, Any] = {"server_start_seconds": round(time.perf_counter() - started, 1)}
        try:
            results |= push_and_collect(settings, args.items, Path(scratch))
            results["load"] = load(
                settings,
                args.load_annotators,
                args.load_tasks,
                args.load_seconds,
                args.collect_every,
                Path(scratch),
            )
        finally:
            console.print(server.stop())
    return report(results)


def report(results: dict[str, Any]) -> int:
    out = REPO / "output" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "annotation.json").write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    console.print(
        f"push of {results['items']:,} items: {results['push_seconds']} s (again, nothing new: "
        f"{results['repeat_push_seconds']} s); collect of {results['collected_votes']:,} annotations: "
        f"{results['collect_seconds']} s; server start {results['server_start_seconds']} s"
    )
    loaded = results["load"]
    console.print(f"load: {loaded}")
    checks = [
        ("push 10k < 60 s", results["push_seconds"] < 60, f"{results['push_seconds']} s"),
        ("collect 50k < 60 s", results["collect_seconds"] < 60, f"{results['collect_seconds']} s"),
        ("no vote lost under load", loaded["votes_lost"] == 0, f"{loaded['votes_lost']} lost"),
        ("every decided task closed", loaded["decided_but_open"] == 0, f"{loaded['decided_but_open']} open"),
    ]
    for name, met, value in checks:
        console.print(f"{'MET   ' if met else 'MISSED'} {name}: {value}")
    console.print(
        f"votes cast after their task was decided (counted, not used): {loaded['late_votes']:,} of "
        f"{loaded['votes_collected']:,}; {loaded['votes_per_decided_item']} votes per decided item"
    )
    return 0 if all(met for _, met, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
