"""Overlap audit benchmark: index RC_sample_1M.zst, then score the WSC-273, DPR test and WinoGrande dev
items against it, each against a baseline measured in the same run.

    .venv/bin/python benchmarks/bench_overlap.py [--input FILE] [--workers 2]

Indexing baseline: the same reading, cleaning and sentence splitting with the same workers, without
the index (what indexing adds on top of the project's reader and splitter). Query baseline: parsing
the items (spaCy tagging and the predicate rules) without searching. Results go to
output/bench-overlap/ (index/, benchmarks/{report.json, <set>.parquet, overlap.png}, bench.json);
the figure is copied to docs/overlap-benchmarks.png, which the README shows.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from knowref60k.core.console import make_console
from knowref60k.extract.nlp import Pipeline, resolve_model_name
from knowref60k.ingest.readers import detect_format, iter_line_chunks, open_input
from knowref60k.overlap.audit import OverlapAudit, write_benchmark_scores
from knowref60k.overlap.benchmarks import TEST_SETS
from knowref60k.overlap.corpus import CorpusIndexer

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
DEFAULT_INPUT = SHARED / "data" / "reddit" / "RC_sample_1M.zst"
BENCHMARKS = SHARED / "data" / "benchmarks"
OUT = REPO / "output" / "bench-overlap"
FIGURE = REPO / "docs" / "overlap-benchmarks.png"
console = make_console()


def split_only(path: Path, model_name: str, workers: int, scratch: Path) -> tuple[int, float]:
    """Sentences and seconds of reading + cleaning + splitting the whole file, nothing indexed."""
    started = time.perf_counter()
    sentences = 0
    with CorpusIndexer(scratch, model_name, workers) as splitter, open_input(path) as (_raw, stream):
        for chunk in splitter.split_chunks(detect_format(path), iter_line_chunks(stream, path.name)):
            sentences += len(chunk.sentences)
    return sentences, time.perf_counter() - started


def build_index(path: Path, model_name: str, workers: int, directory: Path) -> tuple[int, int, float]:
    """(sentences split, sentences indexed, seconds) of indexing the file into a fresh index."""
    shutil.rmtree(directory, ignore_errors=True)
    started = time.perf_counter()
    with CorpusIndexer(directory, model_name, workers) as indexer:
        report = indexer.add_file(path)
    return report.sentences, report.indexed, time.perf_counter() - started


def parse_only(audit: OverlapAudit) -> dict[str, float]:
    """Items/s of parsing each test set without searching (after a warm-up on other items)."""
    audit.parser.parse([item.marked() for item in audit.benchmarks["dpr-train"]])
    rates = {}
    for name in TEST_SETS:
        items = audit.benchmarks[name]
        started = time.perf_counter()
        audit.parser.parse([item.marked() for item in items])
        rates[name] = len(items) / (time.perf_counter() - started)
    return rates


def folder_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def query_results(report: dict[str, Any], parse_rates: dict[str, float]) -> dict[str, Any]:
    """Each test set's query speed against parsing alone, and its shares of overlapping items."""
    return {
        name: {
            "items": entry["items"],
            "parsed": entry["parsed"],
            "items_per_second": entry["items_per_second"],
            "baseline_parse_only_items_per_second": round(parse_rates[name], 1),
            "ratio_to_baseline": round(entry["items_per_second"] / parse_rates[name], 3),
            **{key: entry[key] for key in ("share_above_0", "share_above_25", "share_above_35")},
        }
        for name, entry in report["sets"].items()
    }


def print_result(result: dict[str, Any]) -> None:
    index = result["index"]
    console.print(
        f"index: {index['sentences']:,} sentences ({index['indexed']:,} indexed) in {index['seconds']} s = "
        f"{index['sentences_per_second']:,}/s; "
        f"split only {index['baseline_split_only_sentences_per_second']:,}/s "
        f"(ratio {index['ratio_to_baseline']}); {index['index_bytes'] / 1024**2:.0f} MiB on disk"
    )
    for name, entry in result["query"].items():
        console.print(
            f"{name}: {entry['items']} items ({entry['parsed']} parsed), {entry['items_per_second']}/s "
            f"(parse only {entry['baseline_parse_only_items_per_second']}/s, "
            f"ratio {entry['ratio_to_baseline']}); "
            f"> 0: {entry['share_above_0']:.1%}, > 25: {entry['share_above_25']:.1%}, "
            f"> 35: {entry['share_above_35']:.1%}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, default=DEFAULT_INPUT)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    for needed in (args.input, BENCHMARKS):
        if not needed.exists():
            console.print(f"missing {needed} (expected ../shared beside the repository)", style="red")
            return 2
    model_name = resolve_model_name(None)
    OUT.mkdir(parents=True, exist_ok=True)
    console.print(f"baseline: read + clean + split {args.input.name} with {args.workers} workers ...")
    base_sentences, base_seconds = split_only(args.input, model_name, args.workers, OUT / "split-only")
    shutil.rmtree(OUT / "split-only", ignore_errors=True)
    console.print(f"indexing {args.input.name} with {args.workers} workers ...")
    sentences, indexed, seconds = build_index(args.input, model_name, args.workers, OUT / "index")
    assert sentences == base_sentences, (sentences, base_sentences)

    audit = OverlapAudit(OUT / "index", BENCHMARKS, Pipeline(model_name))
    parse_rates = parse_only(audit)
    report = write_benchmark_scores(audit.score_benchmarks(TEST_SETS), audit, OUT / "benchmarks")
    FIGURE.parent.mkdir(exist_ok=True)
    shutil.copyfile(OUT / "benchmarks" / "overlap.png", FIGURE)

    result = {
        "input": args.input.name,
        "workers": args.workers,
        "index": {
            "sentences": sentences,
            "indexed": indexed,
            "seconds": round(seconds, 1),
            "sentences_per_second": round(sentences / seconds),
            "baseline_split_only_sentences_per_second": round(base_sentences / base_seconds),
            "ratio_to_baseline": round(base_seconds / seconds, 3),
            "index_bytes": folder_bytes(OUT / "index"),
        },
        "query": query_results(report, parse_rates),
    }
    (OUT / "bench.json").write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2) + b"\n")
    print_result(result)
    console.print(f"Results in {OUT / 'bench.json'}; figure {FIGURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
