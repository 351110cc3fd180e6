"""What an operator (or a flow) does with the labelling loop: push new items to screening with their
share of control items, promote the items screening accepted to resolution, and run simulated annotators
for demos and tests. The command line and the Prefect flows both call these."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.controls import control_answers, load_controls
from knowref60k.labelling.decisions import CHOICES, RESOLUTION, SCREENED_VALID, SCREENING, VALID, decide_stage
from knowref60k.labelling.separation import STAGE_ROLES

from .accounts import SIMULATED_PREFIX, ensure_accounts
from .client import STAGE_PROJECTS, LabelStudioClient, PushReport, read_items
from .control_tasks import with_controls
from .receiver import ReceiverProcess
from .settle import promotion_lock
from .simulate import (
    AnnotatorSession,
    Work,
    account_accuracies,
    clicker,
    resolver,
    screener,
    with_clickers,
    work_through,
)
from .tasks import CAREFUL, ORDER_SEED, simulated_truth


def first_stage(config: LabellingConfig) -> str:
    return SCREENING if config.screening else RESOLUTION


def push_new(
    client: LabelStudioClient, item_paths: Iterable[Path], config: LabellingConfig
) -> dict[str, PushReport]:
    """New items into the first stage (screening, unless it is off), with control items making up
    `control_share` of the tasks (drawn the same way on every push, so a repeated push adds none). Items
    whose validity score is high enough to skip screening go straight to resolution; those scored below
    the careful level are marked to be screened by the careful rule."""
    # Each item once, whichever files hold it: the counts and the share of control items follow.
    items = list({row["candidate_id"]: row for row in read_items(item_paths)}.values())
    skipping: list[dict[str, Any]] = []
    screened: list[dict[str, Any]] = []
    for row in items:
        score = row.get("validity_score")
        if config.skips_screening(score):
            skipping.append(row)
        else:
            screened.append({**row, CAREFUL: config.screens_carefully(score)})
    reports = {first_stage(config): push_with_controls(client, screened, first_stage(config), config)}
    if skipping:
        reports[RESOLUTION] = push_with_controls(client, skipping, RESOLUTION, config)
    return reports


def push_with_controls(
    client: LabelStudioClient, items: Iterable[Mapping[str, Any]], stage: str, config: LabellingConfig
) -> PushReport:
    """Items into the stage, with the controls that keep its tasks `control_share` controls, in one import."""
    overlap = config.initial_overlap(stage)
    project = client.ensure_project(stage, overlap)  # the server answers: then lock
    controls = [row for path in config.controls for row in load_controls(Path(path))]
    with promotion_lock(client):
        rows = with_controls(client, stage, project, items, controls, config.control_share)
        return client.push(rows, stage, overlap, ORDER_SEED)


def screened_valid(votes_path: Path, config: LabellingConfig, scores: Mapping[str, float | None]) -> set[str]:
    """The items screening accepted, each by its rule (careful below the level, by the items' `scores`)."""
    votes = pq.read_table(votes_path).to_pylist() if votes_path.exists() else []
    decisions = decide_stage(
        votes,
        SCREENING,
        config.screening_rule,
        rules=config.screening_rules(scores),
    )
    return {item_id for item_id, decision in decisions.items() if decision.status == SCREENED_VALID}


def promote(
    client: LabelStudioClient, item_paths: Iterable[Path], votes_path: Path, config: LabellingConfig
) -> dict[str, Any]:
    """Push to resolution every item that screening accepted, by the votes last collected (idempotent:
    items already there, promoted by the vote receiver or an earlier sync, are not pushed again)."""
    items = {row["candidate_id"]: row for row in read_items(item_paths)}
    scores = {item_id: row.get("validity_score") for item_id, row in items.items()}
    accepted = screened_valid(votes_path, config, scores)
    rows = (row for item_id, row in items.items() if item_id in accepted)
    report = push_with_controls(client, rows, RESOLUTION, config)
    return {"screened_valid": len(accepted), "pushed": report.pushed, "tasks": report.tasks_in_project}


# How long the simulated annotators wait, all idle, for a vote's event that never reaches the receiver
# (Label Studio gives a webhook up after a second): the sync settles such a vote, as in production.
LOST_EVENT_SECONDS = 30.0


def received_and_settled(receiver: ReceiverProcess) -> Callable[[int], bool]:
    """Whether the receiver has received this simulation's votes (as many events as votes cast, beyond
    those it had before) and settled them all: an annotator's vote returns before its webhook may have
    reached the receiver. After LOST_EVENT_SECONDS of waiting for missing events, settled is enough."""
    before = int((receiver.health() or {}).get("queued", 0))
    waiting: dict[int, float] = {}  # votes cast -> when the receiver was first found short of them

    def settled(cast: int) -> bool:
        since = waiting.setdefault(cast, time.monotonic())
        if time.monotonic() - since > LOST_EVENT_SECONDS:
            return receiver.settled()
        return receiver.settled(before + cast)

    return settled


def simulate(
    client: LabelStudioClient,
    stage: str,
    annotators: int,
    accuracy: float,
    config: LabellingConfig,
    truth: Mapping[str, str] | None = None,
    seed: int = 0,
    clickers: int = 0,
) -> Work:
    """FOR DEMOS AND TESTS: simulated accounts of the stage's role work through its labelling stream at
    the same time, as people do; each vote is settled by the vote receiver, as in production (the one
    running, else one started here). Screeners answer `truth` (item -> valid or a reason; "valid" where it
    has none); resolvers answer `truth` (item -> a name, "neither" or "unclear"; a seeded coin between the
    names where it has none), each with an accuracy of its own around `accuracy`; the last `clickers`
    accounts answer at random."""
    # The simulation runs beside the pipeline, which knows the controls' answers.
    known = {**control_answers(config.controls), **(truth or {})}
    accounts = ensure_accounts(client, STAGE_ROLES[stage], annotators, SIMULATED_PREFIX)
    honest = [account.email for account in accounts[: max(0, annotators - clickers)]]
    accuracies: dict[str, float | None] = {account.email: None for account in accounts}
    if stage == SCREENING:
        answer = screener(lambda item_id: known.get(item_id, VALID), accuracy, seed)
        accuracies.update({email: accuracy for email in honest})
    else:
        coin = simulated_truth(seed)
        drawn = account_accuracies(honest, accuracy, seed)
        answer = resolver(lambda item_id: known.get(item_id) or coin(item_id), drawn.__getitem__, seed)
        accuracies.update(drawn)
    answer = with_clickers(answer, set(honest), clicker(seed, CHOICES[stage]))
    project = client.existing_project(stage)
    receiver = ReceiverProcess(client.settings)
    if not receiver.healthy():  # (it promotes nothing: it is given no items; `promote` does that)
        receiver.start(config, [])
    sessions = [AnnotatorSession(client.settings, account) for account in accounts]
    settled = received_and_settled(receiver)

    def item_of(task: Mapping[str, Any]) -> str:
        recorded = client.records.task(project, int(task["id"]))
        return recorded.item_id if recorded is not None else str(task["data"]["item_id"])

    try:
        work = work_through(sessions, project, STAGE_PROJECTS[stage].from_name, answer, settled, item_of)
    finally:
        for session in sessions:
            session.close()
    work.accuracy = accuracies
    return work
