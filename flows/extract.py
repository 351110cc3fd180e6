"""Prefect flow: extract candidates from dumps, one task per input file (`knowref60k run` runs it).

A file already extracted with the same config and code is skipped by the library's completion marker
(its stats file), so a rerun does no new work and writes no duplicates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task

from knowref60k.core.config import ExtractConfig
from knowref60k.core.io import write_json_atomic
from knowref60k.core.stats import merge_stats
from knowref60k.extract.extractor import Extractor, check_distinct_outputs
from knowref60k_flows.common import RETRIES


@task(**RETRIES, retry_delay_seconds=10, task_run_name="extract {path}")
def extract_file(
    path: str, out_dir: str, settings: ExtractConfig, workers: int, input_format: str
) -> dict[str, Any]:
    """Extract one file with the library; returns paths and counts only (never the rows)."""
    logger = get_run_logger()
    with Extractor(settings, workers=workers) as extractor:
        report = extractor.extract_file(Path(path), Path(out_dir), input_format)
    state = "skipped: already done with this config" if report.skipped else f"{report.seconds:.1f} s"
    logger.info("%s: %d candidates (%s)", Path(path).name, report.rows, state)
    return {
        "source": str(report.source),
        "candidates": report.rows,
        "candidates_path": str(report.rows_path),
        "stats_path": str(report.report_path),
        "quarantine_path": str(report.quarantine_path),
        "quarantined": report.stats.quarantined,
        "skipped": report.skipped,
    }


@flow(name="extract-candidates", log_prints=False)
def extract_flow(
    inputs: list[str],
    out_dir: str,
    config: ExtractConfig | None = None,
    workers: int = 2,
    input_format: str = "auto",
) -> dict[str, Any]:
    """Extract every input file in turn (each task already uses all worker processes)."""
    check_distinct_outputs([Path(path) for path in inputs])
    settings = config or ExtractConfig()
    reports = [extract_file(path, out_dir, settings, workers, input_format) for path in inputs]
    funnel = merge_stats(Path(report["stats_path"]) for report in reports)
    funnel_path = Path(out_dir) / "funnel.json"
    write_json_atomic(funnel_path, {"inputs": [r["source"] for r in reports], "stats": funnel.to_dict()})
    return {"files": reports, "funnel_path": str(funnel_path), "stats": funnel.to_dict()}
