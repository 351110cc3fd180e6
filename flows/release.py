"""Prefect flow: collect the votes, then cut a release.

knowref60k flow release --version 2026.11 [--run output/run] [--votes-dir output/annotation]
                        [--overlap-index output/overlap --benchmarks DIR] [--debias ngrams|encoder]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, task

from knowref60k.core.console import make_console, print_error
from knowref60k.core.errors import UserError
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.cost_model import CostConfig, load_cost_config
from knowref60k.release.build import build_release
from knowref60k.release.config import ReleaseConfig
from knowref60k.settings.effective import labelling_settings
from knowref60k_annotation.settings import load_settings
from knowref60k_flows.labelling import collect_votes


@task
def cut_release(
    run_dir: str,
    votes_path: str,
    version: str,
    releases_dir: str,
    labelling: LabellingConfig,
    cost: CostConfig,
    overlap_index: str | None = None,
    debias: str | None = None,
    benchmarks: str | None = None,
) -> dict[str, Any]:
    audit = None
    if overlap_index:
        from knowref60k.overlap.audit import OverlapAudit

        if not benchmarks:
            raise UserError("the overlap audit needs the folder of the known benchmarks (--benchmarks)")
        audit = OverlapAudit.load(Path(overlap_index), Path(benchmarks))
    config = ReleaseConfig(labelling, debias=debias, cost=cost)
    made = build_release(Path(run_dir), Path(votes_path), version, Path(releases_dir), config, audit)
    return {
        "path": str(made.path),
        "splits": made.splits,
        "simulated": made.simulated,
        "agreement": made.report.summary(),
        "labelling": made.labelled.summary(),
    }


@flow(name="release")
def release_flow(
    version: str,
    run_dir: str = "output/run",
    votes_dir: str = "output/annotation",
    releases_dir: str = "data/releases",
    overlap_index: str | None = None,
    debias: str | None = None,
    config_path: str | None = None,
    benchmarks: str | None = None,
) -> dict[str, Any]:
    """With `overlap_index`, items get overlap scores and the card the overlap report; with `debias`
    (AFLite's features: ngrams or encoder; off by default), AFLite's columns and a `debiased` config."""
    path = Path(config_path) if config_path else None
    labelling = labelling_settings(path)
    collected = collect_votes(load_settings(), votes_dir, labelling)
    return cut_release(
        run_dir,
        collected["votes_path"],
        version,
        releases_dir,
        labelling,
        load_cost_config(path),
        overlap_index,
        debias,
        benchmarks,
    )


def main(
    version: str,
    run_dir: Path,
    votes_dir: Path,
    releases_dir: Path,
    config: Path | None = None,
    overlap_index: Path | None = None,
    benchmarks: Path | None = None,
    debias: str | None = None,
) -> int:
    """`knowref60k flow release`; the exit code."""
    console = make_console()
    try:
        made = release_flow(
            version,
            str(run_dir),
            str(votes_dir),
            str(releases_dir),
            str(overlap_index) if overlap_index else None,
            debias,
            str(config) if config else None,
            str(benchmarks) if benchmarks else None,
        )
    except UserError as error:
        print_error(console, error)
        return 2
    console.print(f"release {version}: {made['splits']} -> {made['path']}")
    return 0
