"""Prefect flow: de-duplicate and perturb candidate files, one task per file, sharing one index.

Tasks run one after another: every file is checked against the items kept from the files before it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task

from knowref60k.core.config import PrepareConfig
from knowref60k.core.io import write_json_atomic
from knowref60k.prepare.preparer import Preparer, candidate_files, prepare_stats
from knowref60k_flows.common import RETRIES


@task(**RETRIES, retry_delay_seconds=10, task_run_name="prepare {candidates_path}")
def prepare_file(
    candidates_path: str, out_dir: str, index_path: str, settings: PrepareConfig
) -> dict[str, Any]:
    """Items of one candidates file; returns paths and counts only."""
    with Preparer(settings, Path(index_path)) as preparer:
        report = preparer.prepare_file(Path(candidates_path), Path(out_dir))
    state = "skipped: already done" if report.skipped else f"{report.seconds:.1f} s"
    get_run_logger().info("%s: %d items (%s)", Path(candidates_path).name, report.rows, state)
    return {
        "source": str(report.source),
        "items": report.rows,
        "items_path": str(report.rows_path),
        "report_path": str(report.report_path),
        "skipped": report.skipped,
        "stats": report.stats.to_dict(),
    }


@flow(name="prepare-items")
def prepare_flow(
    candidates: list[str], out_dir: str, index_path: str | None, settings: PrepareConfig
) -> dict[str, Any]:
    """`settings`: concrete, as the caller's RunConfig resolved them (the flow reads no config file);
    `index_path` None: OUT_DIR/dedup-index.sqlite."""
    index = index_path or str(Path(out_dir) / "dedup-index.sqlite")
    candidates = [str(path) for path in candidate_files(Path(path) for path in candidates)]
    reports = [prepare_file(path, out_dir, index, settings) for path in candidates]
    total = prepare_stats()
    for report in reports:
        total.merge(type(total).from_dict(report["stats"]))
    summary_path = Path(out_dir) / "prepare.json"
    write_json_atomic(summary_path, {"inputs": candidates, "index": index, "stats": total.to_dict()})
    return {"files": reports, "index": index, "summary_path": str(summary_path), "stats": total.to_dict()}
