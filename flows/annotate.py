"""Prefect flows of the labelling loop: push items to screening, keep the loop moving, collect votes.

knowref60k flow annotate push output/run/items/*.items.parquet
knowref60k flow annotate sync --items output/run/items --out output/annotation
knowref60k flow annotate collect --out output/annotation

`sync` collects both stages, closes every decided task and pushes the items screening accepted to
resolution; `make serve` runs it every few minutes, so annotators are rarely served a decided task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from knowref60k.core.console import make_console, print_error
from knowref60k.core.errors import UserError
from knowref60k.settings.effective import labelling_settings
from knowref60k_annotation.settings import load_settings
from knowref60k_flows.labelling import collect_votes, promote, push


@flow(name="push-items")
def push_flow(items: list[str], config_path: str | None = None) -> dict[str, Any]:
    return push(load_settings(), items, labelling_settings(Path(config_path) if config_path else None))


@flow(name="labelling-sync")
def sync_flow(
    items_dir: str, out_dir: str = "output/annotation", config_path: str | None = None
) -> dict[str, Any]:
    """Collect and close, then promote what screening accepted; the promotion's new tasks show in the
    next collect."""
    settings = load_settings()
    config = labelling_settings(Path(config_path) if config_path else None)
    collected = collect_votes(settings, out_dir, config)
    items = sorted(str(path) for path in Path(items_dir).glob("*.items.parquet"))
    promoted = promote(settings, items, collected["votes_path"], config) if items else None
    return {"collected": collected, "promoted": promoted}


@flow(name="collect-votes")
def collect_flow(out_dir: str = "output/annotation", config_path: str | None = None) -> dict[str, Any]:
    config = labelling_settings(Path(config_path) if config_path else None)
    return collect_votes(load_settings(), out_dir, config)


def push_main(items: list[str], config: Path | None) -> int:
    """`knowref60k flow annotate push`; the exit code."""
    console = make_console()
    try:
        report = push_flow(items, str(config) if config else None)
    except UserError as error:
        print_error(console, error)
        return 2
    console.print(
        f"{report['stage']}: {report['pushed']:,} imported, {report['already_there']:,} already there"
    )
    return 0


def sync_main(items: Path, out: Path, config: Path | None) -> int:
    """`knowref60k flow annotate sync`; the exit code."""
    console = make_console()
    try:
        report = sync_flow(str(items), str(out), str(config) if config else None)
    except UserError as error:
        print_error(console, error)
        return 2
    console.print(f"{report['collected']['votes']:,} votes; promoted: {report['promoted']}")
    return 0


def collect_main(out: Path, config: Path | None) -> int:
    """`knowref60k flow annotate collect`; the exit code."""
    console = make_console()
    try:
        report = collect_flow(str(out), str(config) if config else None)
    except UserError as error:
        print_error(console, error)
        return 2
    console.print(f"{report['votes']:,} votes ({report['new_votes']:,} new) -> {report['votes_path']}")
    return 0
