"""Settle one task after a vote: decide it from its own votes, set the annotators it admits (its overlap)
to what its rule can still use or close it, and send an item screening accepted on to resolution.

The webhook receiver calls this for each vote as it arrives; the demo's and benchmark's simulated
annotators go through the receiver too. The periodic collect (`collect.py`) applies the same
queue states to every task, and so repairs whatever a settle missed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowref60k.core.errors import ServiceUnavailable, UserError
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.controls import load_controls
from knowref60k.labelling.decisions import RESOLUTION, SCREENED_VALID, SCREENING, STAGES, decide
from knowref60k.labelling.quality import is_control
from knowref60k.labelling.separation import ROLE_STAGES
from knowref60k.labelling.slots import QueueState

from .client import LabelStudioClient, read_items
from .control_tasks import with_controls
from .ledger import VoteLedger
from .pauses import Pauses, by_annotator
from .roster import roles
from .settings import state_lock
from .tasks import CAREFUL, ORDER_SEED
from .votes import account_id, votes_from_export

log = logging.getLogger(__name__)
CLOSED, RAISED, UNCHANGED = "closed", "raised", "unchanged"
# What a settle did with an event whose task is not in its stage's project (forged, or since deleted).
NOT_OURS = "not_in_project"


def promotion_lock(client: LabelStudioClient) -> AbstractContextManager[None]:
    """One promotion at a time per server, across processes (the receiver and the periodic sync): the
    presence check and the import must not interleave, or an item is imported twice."""
    return state_lock(client.settings, "promotion")


@dataclass
class ItemIndex:
    """Each item's row, from the *.items.parquet files of some folders; read again when an item is not
    found and the files have changed since (new items appear as dumps are processed)."""

    folders: tuple[Path, ...]
    _rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    _read: tuple[tuple[str, float], ...] = ()

    def get(self, item_id: str) -> dict[str, Any] | None:
        if item_id not in self._rows:
            paths = sorted(path for folder in self.folders for path in folder.glob("*.items.parquet"))
            files = tuple((str(path), path.stat().st_mtime) for path in paths)
            if files != self._read:
                self._rows = {row["candidate_id"]: row for row in read_items(paths)}
                self._read = files
        return self._rows.get(item_id)


class Settler:
    """Applies votes to their tasks on one Label Studio server, with the labelling config's rules."""

    def __init__(
        self, client: LabelStudioClient, config: LabellingConfig, items: Iterable[Path] = ()
    ) -> None:
        self.client = client
        self.config = config
        self.items = ItemIndex(tuple(items))
        self.projects: dict[int, str] = {}
        self.role_of: dict[int, str | None] = {}
        self.email_of: dict[int, str] = {}
        self.ledger = VoteLedger(client.settings)
        self.pauses = Pauses(client.settings)
        self.controls = [row for path in config.controls for row in load_controls(Path(path))]
        self.control_answers = {row["candidate_id"]: row["answer"] for row in self.controls}
        # Where a task to settle again goes (the receiver sets its queue); None: settled at once.
        self.requeue: Callable[[int, str], None] | None = None

    def stage_of(self, project: int) -> str | None:
        """The stage of one of our projects; None for a project of someone else."""
        if project not in self.projects:
            found = {stage: self.client.find_project(stage) for stage in STAGES}
            self.projects = {int(p.id): stage for stage, p in found.items() if p is not None}
        return self.projects.get(project)

    def role(self, annotator: int) -> str | None:
        if annotator not in self.role_of:
            by_email = roles(self.client.settings)
            self.email_of = {user["id"]: user["email"] for user in self.client.users()}
            self.role_of = {uid: by_email.get(email) for uid, email in self.email_of.items()}
        return self.role_of.get(annotator)

    def counted(
        self, votes: list[dict[str, Any]], stage: str, project: int, item_id: str
    ) -> list[dict[str, Any]]:
        """The votes that count: their annotators have the stage's role and are not paused. A control's
        votes may pause their annotators first."""
        allowed = [vote for vote in votes if ROLE_STAGES.get(self.role(vote["annotator_id"]) or "") == stage]
        if is_control(item_id):
            self.pause_if_due(project, stage, {vote["annotator_id"] for vote in allowed})
        paused = self.pauses.paused()
        return [vote for vote in allowed if self.email_of.get(vote["annotator_id"]) not in paused]

    def pause_if_due(self, project: int, stage: str, annotators: set[int]) -> None:
        """Pause those of `annotators` whose control votes in the project (as first seen) call for it, and
        have every task they voted on settled again without them."""
        votes = by_annotator(seen_control_votes(self.client, self.ledger, stage, project))
        for annotator in annotators:
            email = self.email_of.get(annotator)
            own = votes.get(annotator, [])
            if email and self.pauses.pause_if_due(email, annotator, own, self.control_answers, self.config):
                self.settle_again(project, stage, annotator)
                try:
                    self.client.set_paused([annotator], True)
                except (ServiceUnavailable, UserError) as error:  # every collect tells the gate again
                    log.warning("the access gate was not told that %s is paused: %s", email, error)

    def settle_again(self, project: int, stage: str, annotator: int) -> None:
        """Every task of the project the account voted on, to be settled again now that its votes no
        longer count (an item it helped decide goes back to the queue for the vote it lacks): handed to
        `requeue` (the receiver's queue, one worker per task), else settled here."""
        for task_id, firsts in self.ledger.seen(project).first_by_task.items():
            if any(account_id(first.get("completed_by")) == annotator for first in firsts):
                if self.requeue is not None:
                    self.requeue(task_id, stage)
                else:
                    self.settle(task_id, stage)

    def settle(self, task_id: int, stage: str, claimed: QueueState | None = None) -> str:
        """Settle a task after a webhook named it: read its annotations from Label Studio with the pipeline's
        token and add them to the ledger, decide it from the votes as first seen that its annotators' roles
        allow, promote it when screening accepted it, then close it or set its overlap to its votes plus the
        further votes its rule can still use. Returns what changed. The event is only a hint: the task's
        project, item and answers are the pipeline's records, its annotations are read back, so a forged or
        replayed event costs a read and changes nothing the stored votes do not call for. `claimed`, the
        task's state as the event gives it, only spares a write that would change nothing."""
        project = self.project_of(stage)
        stored = None if project is None else self.client.records.task(project, task_id)
        if stored is None:
            return NOT_OURS
        now = self.client.annotations(task_id)
        self.ledger.observe(stored.project, [(task_id, now)])
        first = self.ledger.seen(stored.project, [task_id]).first_by_task.get(task_id, [])
        votes = votes_from_export([stored.with_annotations(first)], stage, frozenset()).votes
        item_id, careful = stored.item_id, bool(stored.data.get(CAREFUL))
        allowed = self.counted(votes, stage, stored.project, item_id)
        decision = decide(item_id, allowed, self.config.rule(stage, careful))
        if stage == SCREENING and decision.status == SCREENED_VALID and not is_control(item_id):
            self.promote(item_id)
        choices = [vote["choice"] for vote in (*decision.votes, *decision.late)]
        held = sum(not annotation.get("was_cancelled") for annotation in now)
        state = self.config.queue_state(stage, item_id, choices, held, careful)
        if state == claimed:
            return UNCHANGED
        self.client.set_queue_state(task_id, state.overlap, state.closed)
        return CLOSED if state.closed else RAISED

    def project_of(self, stage: str) -> int | None:
        return next((project for project, named in self.projects.items() if named == stage), None)

    def promote(self, item_id: str) -> bool:
        """Import the item into resolution unless it is there, with the controls its share calls for;
        False when it is there or its row is not found (the periodic sync promotes it from the items files
        it is given)."""
        row = self.items.get(item_id)
        if row is None:
            return False
        overlap = self.config.initial_overlap(RESOLUTION)
        project = self.client.ensure_project(RESOLUTION, overlap)
        with promotion_lock(self.client):
            if self.client.has_item(project, item_id):
                return False
            rows = with_controls(
                self.client, RESOLUTION, project, [row], self.controls, self.config.control_share
            )
            self.client.push(rows, RESOLUTION, overlap, ORDER_SEED)
        log.info("promoted %s to resolution", item_id)
        return True


def seen_control_votes(
    client: LabelStudioClient, ledger: VoteLedger, stage: str, project: int
) -> list[dict[str, Any]]:
    """The votes on the project's control tasks as the pipeline first saw them (only their authors')."""
    recorded = {
        tid: task for tid, task in client.records.tasks_of(project).items() if is_control(task.item_id)
    }
    seen = ledger.seen(project, recorded)
    tasks = [recorded[task_id].with_annotations(firsts) for task_id, firsts in seen.first_by_task.items()]
    return votes_from_export(tasks, stage, frozenset()).votes
