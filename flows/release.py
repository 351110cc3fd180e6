"""Prefect flow: collect the votes, then cut a release.

knowref60k flow release --version 2026.11 [--run output/run] [--votes-dir output/annotation]
                        [--overlap-index output/overlap] [--debias ngrams|encoder]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from prefect import flow, task

from knowref60k.core.console import make_console, print_error
from knowref60k.core.errors import UserError
from knowref60k.labelling.config import LabellingConfig, load_labelling_config
from knowref60k.labelling.cost_model import CostConfig, load_cost_config
from knowref60k.release.build import build_release
from knowref60k.release.config import ReleaseConfig
from knowref60k_annotation.settings import load_settings
from knowref60k_flows.labelling import collect_votes


@task
def cut_release(
    run_dir: str,
    votes_path: str,
    version: str,
    releases_dir: str,
    overlap_index: str | None = None,
    debias: str | None = None,
    labelling: LabellingConfig | None = None,
    cost: CostConfig | None = None,
) -> dict[str, Any]:
    audit = None
    if overlap_index:
        from knowref60k.overlap.audit import OverlapAudit

        audit = OverlapAudit.load(Path(overlap_index))
    config = ReleaseConfig(labelling or LabellingConfig(), debias=debias, cost=cost or CostConfig())
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
) -> dict[str, Any]:
    """With `overlap_index`, items get overlap scores and the card the overlap report; with `debias`
    (AFLite's features: ngrams or encoder; off by default), AFLite's columns and a `debiased` config."""
    path = Path(config_path) if config_path else None
    labelling = load_labelling_config(path)
    collected = collect_votes(load_settings(), votes_dir, labelling)
    return cut_release(
        run_dir,
        collected["votes_path"],
        version,
        releases_dir,
        overlap_index,
        debias,
        labelling,
        load_cost_config(path),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Collect votes and cut a release under Prefect.")
    parser.add_argument("--version", required=True)
    parser.add_argument("--run", default="output/run")
    parser.add_argument("--votes-dir", default="output/annotation")
    parser.add_argument("--out", default="data/releases")
    parser.add_argument("--config", default=None, help="TOML file with a [labelling] table.")
    parser.add_argument("--overlap-index", default=None, help="Folder of an overlap index (optional).")
    parser.add_argument(
        "--debias", choices=["ngrams", "encoder"], default=None, help="Add AFLite's debiased config."
    )
    args = parser.parse_args(argv)
    console = make_console()
    try:
        made = release_flow(
            args.version, args.run, args.votes_dir, args.out, args.overlap_index, args.debias, args.config
        )
    except UserError as error:
        print_error(console, error)
        return 2
    console.print(f"release {args.version}: {made['splits']} -> {made['path']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
