"""Prefect flows: push items to Label Studio, and collect votes from it.

python -m flows.annotate push output/run/items/*.items.parquet
python -m flows.annotate collect --out output/annotation
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task

from annotation.client import LabelStudioClient, read_items
from annotation.settings import Settings, load_settings
from annotation.tasks import ORDER_SEED
from flows.common import RETRIES
from knowref60k.core.console import make_console, print_error
from knowref60k.core.errors import UserError


@task(**RETRIES, retry_delay_seconds=30, task_run_name="push {items_path}")
def push_items(items_path: str, seed: int = ORDER_SEED) -> dict[str, Any]:
    """One items file into the project; retried pushes import only what is missing."""
    with LabelStudioClient(load_settings()) as client:
        report = client.push(read_items([Path(items_path)]), seed)
    get_run_logger().info(
        "%s: %d imported, %d already there", items_path, report.pushed, report.already_there
    )
    return {"items_path": items_path, "pushed": report.pushed, "already_there": report.already_there}


@flow(name="push-items")
def push_flow(items: list[str], seed: int = ORDER_SEED) -> list[dict[str, Any]]:
    return [push_items(path, seed) for path in items]


@task(**RETRIES, retry_delay_seconds=30)
def collect_votes(out_dir: str, settings: Settings | None = None) -> dict[str, Any]:
    with LabelStudioClient(settings or load_settings()) as client:
        votes_path, report = client.collect(Path(out_dir))
    return {"votes_path": str(votes_path), **report}


@flow(name="collect-votes")
def collect_flow(out_dir: str = "output/annotation") -> dict[str, Any]:
    return collect_votes(out_dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Push items to / collect votes from Label Studio under Prefect."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    push = commands.add_parser("push")
    push.add_argument("items", nargs="+")
    collect = commands.add_parser("collect")
    collect.add_argument("--out", default="output/annotation")
    args = parser.parse_args(argv)
    console = make_console()
    try:
        if args.command == "push":
            for report in push_flow(args.items):
                console.print(
                    f"{report['items_path']}: {report['pushed']:,} imported, "
                    f"{report['already_there']:,} already there"
                )
        else:
            report = collect_flow(args.out)
            console.print(
                f"{report['votes']:,} votes ({report['new_votes']:,} new) -> {report['votes_path']}"
            )
    except UserError as error:
        print_error(console, error)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
