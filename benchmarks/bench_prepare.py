"""Throughput of de-duplication + perturbation, and the share of candidates removed as duplicates.

    .venv/bin/python benchmarks/bench_prepare.py

Inputs: the candidates `make bench` extracted from RC_sample_1M.zst (output/bench/candidates/), and,
for a larger sample of real candidates, those extracted from the 5,220 KnowRef (2019) sentences.
Each runs against a fresh de-duplication index. Results go to output/bench/prepare.json.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from knowref60k.core.config import ExtractConfig
from knowref60k.core.console import make_console
from knowref60k.core.io import CANDIDATE_SCHEMA
from knowref60k.extract.nlp import resolve_model_name
from knowref60k.prepare.preparer import Preparer
from knowref60k.quality.evaluation import extract_sentences, load_reference
from knowref60k.settings.effective import RunConfig

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "output" / "bench"
KNOWREF = REPO.parent / "shared" / "data" / "knowref2019" / "knowref2019_reddit_items.json"
console = make_console()


def knowref_candidates(target: Path) -> Path:
    """Candidates extracted (with the default config) from the reference sentences, one per line."""
    items = load_reference(KNOWREF)
    config = ExtractConfig()
    sentences = [item.sentence for item in items]
    rows = extract_sentences("knowref2019.txt", sentences, config, resolve_model_name(config.model)).rows
    pq.write_table(pa.Table.from_pylist(rows, schema=CANDIDATE_SCHEMA), target)
    return target


def measure(candidates: Path, work: Path) -> dict[str, object]:
    with Preparer(RunConfig.load().prepare, work / "index.sqlite") as preparer:
        started = time.perf_counter()
        report = preparer.prepare_file(candidates, work)
        seconds = time.perf_counter() - started
    dedup = report.stats["dedup"]
    candidates_in = report.stats["validate"].total
    return {
        "file": candidates.name,
        "candidates": candidates_in,
        "dropped_before_dedup": candidates_in - dedup.total,
        "items": report.rows,
        "seconds": round(seconds, 3),
        "items_per_second": round(candidates_in / seconds),
        "exact_duplicates": dedup.dropped["exact_duplicate"],
        "near_duplicates": dedup.dropped["near_duplicate"],
        "exact_share": round(dedup.dropped["exact_duplicate"] / max(dedup.total, 1), 4),
        "near_share": round(dedup.dropped["near_duplicate"] / max(dedup.total, 1), 4),
    }


def main() -> int:
    sample = BENCH / "candidates" / "RC_sample_1M.candidates.parquet"
    if not sample.is_file():
        console.print(f"missing {sample}: run benchmarks/bench_extract.py (make bench) first", style="red")
        return 2
    if not KNOWREF.is_file():
        console.print(f"missing {KNOWREF} (expected ../shared beside the repo)", style="red")
        return 2
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        results.append(measure(sample, work / "sample"))
        results.append(measure(knowref_candidates(work / "knowref2019.candidates.parquet"), work / "knowref"))
    for result in results:
        console.print(
            f"prepare {result['file']}: {result['candidates']:,} candidates -> {result['items']:,} items "
            f"({result['dropped_before_dedup']} invalid or with a dangling pronoun) in "
            f"{result['seconds']} s = {result['items_per_second']:,} candidates/s; exact duplicates "
            f"{result['exact_duplicates']} ({result['exact_share']:.1%}), near duplicates "
            f"{result['near_duplicates']} ({result['near_share']:.1%})"
        )
    (BENCH / "prepare.json").write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2))
    console.print(f"Results in {(BENCH / 'prepare.json').resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
