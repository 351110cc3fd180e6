"""Prefect tasks of the labelling loop, shared by the run, the demo and the scheduled flows. Each is a
thin wrapper of the Label Studio side (`operations`, `collect`; paths and counts in and out)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import task

from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.decisions import RESOLUTION
from knowref60k_annotation import operations
from knowref60k_annotation.accounts import ensure_accounts
from knowref60k_annotation.client import LabelStudioClient
from knowref60k_annotation.collect import collect
from knowref60k_annotation.receiver import ReceiverProcess
from knowref60k_annotation.server import Server
from knowref60k_annotation.settings import Settings
from knowref60k_flows.common import RETRIES


@task
def start_label_studio(settings: Settings, config: LabellingConfig, items_dirs: list[str]) -> str:
    """Label Studio and its vote receiver, which settles each vote as it arrives (promoting screened-valid
    items from the *.items.parquet files of `items_dirs`)."""
    started = Server(settings).start()
    return f"{started}; {ReceiverProcess(settings).start(config, [Path(d) for d in items_dirs])}"


@task(**RETRIES, retry_delay_seconds=30)
def push(settings: Settings, items: list[str], config: LabellingConfig) -> dict[str, Any]:
    """New items (and their share of control items) into the first stage."""
    with LabelStudioClient(settings) as client:
        reports = operations.push_new(client, [Path(p) for p in items], config)
    first = reports[operations.first_stage(config)]
    return {
        "stage": operations.first_stage(config),
        "pushed": first.pushed,
        "already_there": first.already_there,
        "tasks": first.tasks_in_project,
        "unscreened": reports[RESOLUTION].pushed if RESOLUTION in reports else 0,
    }


@task(**RETRIES, retry_delay_seconds=30)
def collect_votes(settings: Settings, out_dir: str, config: LabellingConfig) -> dict[str, Any]:
    """Both stages' votes into OUT_DIR, decided tasks closed."""
    with LabelStudioClient(settings) as client:
        report = collect(client, Path(out_dir), config)
    return {"votes_path": str(Path(out_dir) / "votes.parquet"), **report}


@task(**RETRIES, retry_delay_seconds=30)
def promote(settings: Settings, items: list[str], votes_path: str, config: LabellingConfig) -> dict[str, Any]:
    with LabelStudioClient(settings) as client:
        return operations.promote(client, [Path(p) for p in items], Path(votes_path), config)


@task
def ensure_annotators(settings: Settings, role: str, count: int) -> list[dict[str, Any]]:
    """`count` logins of `role`: those made before (in the state folder's annotators.json), plus new."""
    with LabelStudioClient(settings) as client:
        accounts = ensure_accounts(client, role, count)
    return [{"email": a.email, "password": a.password, "role": a.role} for a in accounts]


@task
def simulate(
    settings: Settings,
    stage: str,
    annotators: int,
    accuracy: float,
    config: LabellingConfig,
    truth: dict[str, str] | None = None,
    seed: int = 0,
    clickers: int = 0,
) -> dict[str, dict[str, Any]]:
    """FOR DEMOS AND TESTS: simulated annotators work through a stage (`operations.simulate`): the votes
    each cast, and each one's accuracy (resolvers)."""
    with LabelStudioClient(settings) as client:
        work = operations.simulate(client, stage, annotators, accuracy, config, truth, seed, clickers)
    return {"votes": work.votes, "accuracy": work.accuracy}
