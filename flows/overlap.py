"""Prefect flow: index reference corpora for the overlap audit (one task per file), then score the
known benchmarks against the index.

knowref60k flow overlap CORPUS... [--index output/overlap]
                        [--benchmarks-out output/overlap-benchmarks --benchmarks DIR]

Tasks run one after another: an index has one writer. A retried or relaunched task resumes after the
last batch it recorded, and a finished file is skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task

from knowref60k.core.console import make_console, print_error
from knowref60k.core.errors import UserError
from knowref60k.extract.nlp import resolve_model_name
from knowref60k_flows.common import RETRIES


@task(**RETRIES, retry_delay_seconds=10, task_run_name="index {corpus_path}")
def index_corpus_file(corpus_path: str, index_dir: str, workers: int = 2) -> dict[str, Any]:
    from knowref60k.overlap.corpus import CorpusIndexer

    with CorpusIndexer(Path(index_dir), resolve_model_name(None), workers) as indexer:
        report = indexer.add_file(Path(corpus_path))
    get_run_logger().info(
        "%s: %d sentences indexed%s", report.path.name, report.indexed, " (already)" if report.skipped else ""
    )
    return {
        "source": corpus_path,
        "skipped": report.skipped,
        "lines": report.lines,
        "indexed": report.indexed,
    }


@task(task_run_name="score benchmarks against {index_dir}")
def score_benchmarks(index_dir: str, out_dir: str, benchmarks: str) -> dict[str, Any]:
    from knowref60k.overlap.audit import OverlapAudit, write_benchmark_scores
    from knowref60k.overlap.benchmarks import TEST_SETS

    audit = OverlapAudit.load(Path(index_dir), Path(benchmarks))
    report = write_benchmark_scores(audit.score_benchmarks(TEST_SETS), audit, Path(out_dir))
    return {"report_path": str(Path(out_dir) / "report.json"), "sets": report["sets"]}


@flow(name="overlap-index")
def overlap_flow(
    corpus: list[str],
    index_dir: str = "output/overlap",
    benchmarks_out: str | None = None,
    benchmarks: str | None = None,
) -> dict[str, Any]:
    """Index `corpus`; with `benchmarks_out`, score the known benchmarks (the folder `benchmarks`)."""
    if benchmarks_out and not benchmarks:
        raise UserError("scoring the benchmarks needs their folder (--benchmarks)")
    files = [index_corpus_file(path, index_dir) for path in corpus]
    scored = None
    if benchmarks_out and benchmarks:
        scored = score_benchmarks(index_dir, benchmarks_out, benchmarks)
    return {"index": index_dir, "files": files, "benchmarks": scored}


def main(corpus: list[str], index: Path, benchmarks_out: Path | None, benchmarks: Path | None) -> int:
    """`knowref60k flow overlap`; the exit code."""
    console = make_console()
    try:
        result = overlap_flow(
            corpus,
            str(index),
            str(benchmarks_out) if benchmarks_out else None,
            str(benchmarks) if benchmarks else None,
        )
    except UserError as error:
        print_error(console, error)
        return 2
    for report in result["files"]:
        console.print(f"{report['source']}: {report['indexed']:,} sentences indexed")
    console.print(f"Index in {index.resolve()}")
    if result["benchmarks"]:
        console.print(f"Benchmark scores in {result['benchmarks']['report_path']}")
    return 0
