"""What trusting only the pipeline's own records costs a collect: 10,000 recorded tasks x 5 annotations read
through the records and the ledger of votes seen (annotation/trusted.py), the first time (every
annotation added to the ledger) and again (all seen), against reading the same export as it is
(votes.py alone), in the same run. No server: the export is made here.

    .venv/bin/python benchmarks/bench_ledger.py [--tasks 10000]

Results go to output/bench/ledger.json; exits 1 when a collect's added time passes the target.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from knowref60k.core.io import write_json_atomic
from knowref60k.labelling.decisions import RESOLUTION
from knowref60k_annotation.ledger import VoteLedger
from knowref60k_annotation.records import Records
from knowref60k_annotation.settings import Settings
from knowref60k_annotation.trusted import trusted_votes
from knowref60k_annotation.votes import votes_from_export

VOTERS = 5
# Per 50,000 annotations: a collect of them takes some 40 s against the server.
ADDED_SECONDS_TARGET = 5.0


def task_data(number: int) -> dict[str, Any]:
    options = [{"value": "Ann"}, {"value": "Bea"}, {"value": "Neither / can't tell"}]
    identity = {"Ann": "antecedent1", "Bea": "antecedent2", "Neither / can't tell": "neither"}
    sentence = f"Ann called Bea on day {number} because she was bored."
    return {
        "item_id": f"item-{number}",
        "sentence_html": f"<div>{sentence}</div>",
        "sentence": sentence,
        "options": options,
        "answer_identity": identity,
        "source_file": "RC_2099-01.zst",
    }


def annotation(number: int, voter: int) -> dict[str, Any]:
    time_ = "2026-01-01T00:00:00Z"
    result = [
        {"from_name": "referent", "to_name": "sentence", "type": "choices", "value": {"choices": ["Ann"]}}
    ]
    return {
        "id": number * VOTERS + voter,
        "completed_by": voter + 2,
        "updated_by": voter + 2,
        "was_cancelled": False,
        "result": result,
        "created_at": time_,
        "updated_at": time_,
        "lead_time": 5.0,
    }


def timed(function: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    found = function()
    return time.perf_counter() - started, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    args = parser.parse_args(argv)
    settings = Settings("http://127.0.0.1:9", "u", "p", "k", state_dir=Path(tempfile.mkdtemp()))
    Records(settings).record_tasks(
        1, RESOLUTION, [(n, task_data(n), task_data(n)["item_id"], None) for n in range(args.tasks)]
    )
    export = [
        {"id": n, "data": task_data(n), "annotations": [annotation(n, v) for v in range(VOTERS)]}
        for n in range(args.tasks)
    ]
    plain, _ = timed(lambda: votes_from_export(export, RESOLUTION, frozenset()))
    results: dict[str, Any] = {"annotations": args.tasks * VOTERS, "as_exported_seconds": round(plain, 3)}
    for round_ in ("first", "again"):
        seconds, found = timed(
            lambda: trusted_votes(Records(settings), VoteLedger(settings), RESOLUTION, 1, export, frozenset())
        )
        assert len(found.read.votes) == args.tasks * VOTERS and not found.differences
        results[f"trusted_{round_}_seconds"] = round(seconds, 3)
        results[f"trusted_{round_}_ratio"] = round(seconds / plain, 1)
    ledger = settings.state_dir / "records" / "annotations.jsonl"
    results["ledger_bytes_per_annotation"] = round(ledger.stat().st_size / (args.tasks * VOTERS))
    added = max(results["trusted_first_seconds"], results["trusted_again_seconds"]) - plain
    per_50k = added * 50_000 / (args.tasks * VOTERS)
    results["added_seconds_per_50k_annotations"] = round(per_50k, 2)
    out = Path("output/bench/ledger.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out, results)
    met = per_50k <= ADDED_SECONDS_TARGET
    print(results)
    verdict = "MET   " if met else "MISSED"
    print(f"{verdict} added time per 50,000 annotations <= {ADDED_SECONDS_TARGET} s: {per_50k:.2f} s")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
