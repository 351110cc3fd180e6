"""The candidates, funnel and quarantine of whole sample dumps against the ones recorded: a change meant
only to make extraction faster must leave them as they were, byte for byte (`make bench` runs it).

    .venv/bin/python benchmarks/candidate_digests.py           # compare with the recorded (.json beside it)
    .venv/bin/python benchmarks/candidate_digests.py --write   # record what this code gives

The candidates are digested row by row (the Parquet file's own bytes also hold the writer's metadata);
the funnel is recorded whole, so that a difference shows which stage and reason moved.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq

from knowref60k.core.config import ExtractConfig
from knowref60k.core.console import make_console
from knowref60k.extract.extractor import Extractor

REPO = Path(__file__).resolve().parent.parent
REDDIT = REPO.parent / "shared" / "data" / "reddit"
SAMPLES = ("RC_sample_1M.zst", "RC_sample_B.zst")
RECORDED = Path(__file__).with_suffix(".json")
console = make_console()


def digests_of(dump: Path, workers: int) -> dict[str, Any]:
    """One extraction of `dump` with the default settings: its candidates' digest and count, the digest of
    its quarantine file, and its funnel (which counts the quarantined lines)."""
    with tempfile.TemporaryDirectory() as scratch, Extractor(ExtractConfig(), workers=workers) as extractor:
        report = extractor.extract_file(dump, Path(scratch))
        rows = pq.read_table(report.rows_path).to_pylist()
        kept = report.quarantine_path
        quarantine = kept.read_bytes() if kept is not None and kept.is_file() else b""
    return {
        "candidates": len(rows),
        "candidates_sha256": hashlib.sha256(orjson.dumps(rows, option=orjson.OPT_SORT_KEYS)).hexdigest(),
        "quarantine_sha256": hashlib.sha256(quarantine).hexdigest(),
        "funnel": report.stats.to_dict(),
    }


def differences(found: dict[str, Any], recorded: dict[str, Any]) -> list[str]:
    """Each recorded sample whose figures differ, with the fields that do."""
    lines = []
    for sample, expected in recorded.items():
        here = found.get(sample)
        if here is None:
            continue
        changed = [field for field in expected if here.get(field) != expected[field]]
        if changed:
            lines.append(f"{sample}: {', '.join(changed)} differ from the recorded")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record this code's figures")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    missing = [name for name in SAMPLES if not (REDDIT / name).is_file()]
    if missing:
        console.print(f"benchmark input missing: {REDDIT / missing[0]} (expected ../shared beside the repo)")
        return 2
    found = {}
    for name in SAMPLES:
        console.print(f"extraction of {name} with {args.workers} workers ...")
        found[name] = digests_of(REDDIT / name, args.workers)
    if args.write:
        RECORDED.write_bytes(orjson.dumps(found, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
        console.print(f"recorded -> {RECORDED}")
        return 0
    different = differences(found, orjson.loads(RECORDED.read_bytes()))
    for name in SAMPLES:
        if any(line.startswith(name) for line in different):
            console.print(f"MISSED {name}: DIFFERENT")
        else:
            console.print(f"MET    {name}: as recorded")
    for line in different:
        console.print(line, style="red")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
