"""Collect both stages from Label Studio: every vote, the tasks' state, the votes the roles refuse; close
every task whose outcome is decided, so that nobody is served it again; and keep the projects' webhooks as
the pipeline set them (webhooks.py).

Writes into OUT: `votes.parquet` (the accepted votes of both stages), `tasks.parquet` (every task with its
state after closing), `refused-votes.jsonl` (each refused vote with its reason) and `collect.json`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from knowref60k.core.errors import UserError
from knowref60k.core.io import atomic_path, write_json_atomic
from knowref60k.labelling.config import LabellingConfig
from knowref60k.labelling.controls import control_answers
from knowref60k.labelling.decisions import STAGES, distinct_votes
from knowref60k.labelling.separation import explain, separate

from .accounts import SIMULATED_PREFIX
from .client import LabelStudioClient
from .ledger import VoteLedger
from .pauses import Pauses, by_annotator
from .roster import roles
from .tasks import CAREFUL
from .trusted import trusted_votes
from .votes import VOTE_SCHEMA, VoteCounts

TASK_SCHEMA = pa.schema(
    [
        pa.field("stage", pa.string(), nullable=False),
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("task_id", pa.int64(), nullable=False),
        pa.field("is_labeled", pa.bool_(), nullable=False),
        pa.field("overlap", pa.int64(), nullable=False),
        pa.field("annotators", pa.int64(), nullable=False),
        pa.field("careful", pa.bool_(), nullable=False),
    ]
)


def collect(client: LabelStudioClient, out_dir: Path, config: LabellingConfig) -> dict[str, Any]:
    """Everything above, in one pass; returns the report also written to `collect.json`, with the lines
    explaining each refused vote under `refused_lines`."""
    emails = {user["id"]: user["email"] for user in client.users()}
    simulated = frozenset(uid for uid, email in emails.items() if email.startswith(SIMULATED_PREFIX))
    live = {stage: int(found.id) for stage in STAGES if (found := client.find_project(stage)) is not None}
    gone = [(stage, project) for stage in STAGES for project in client.gone_projects(stage, stage in live)]
    if not live and not gone:
        raise UserError(
            f"no knowref60k project at {client.settings.url} named {client.settings.project!r}; "
            "push items first: knowref60k annotate push ITEMS..."
        )
    try:
        webhooks = client.review_webhooks(list(live.values()))
    except UserError as error:  # the votes come first: the next sync reviews them again
        webhooks = [f"webhooks not reviewed: {error}"]
    exported = {stage: client.export(project) for stage, project in live.items()}
    states = {stage: task_states(client, project, stage) for stage, project in live.items()}
    counts, votes, malformed, differences = read_votes(client, live, gone, exported, simulated)
    paused = pause_accounts(client, config, votes, emails)
    role_by_email = roles(client.settings)
    paused_ids = {uid for uid, email in emails.items() if email in paused}
    separated = separate(votes, {uid: role_by_email.get(email) for uid, email in emails.items()}, paused_ids)
    separated.refused[:0] = malformed
    closed = {
        stage: apply_queue_states(
            client, states[stage], separated.accepted, config, annotated(exported[stage])
        )
        for stage in states
    }
    changes = _changes(out_dir / "votes.parquet", separated.accepted)
    _write(out_dir, separated.accepted, [row for rows in states.values() for row in rows])
    refused_lines = [
        explain(vote, reason, emails.get(vote["annotator_id"], "?")) for vote, reason in separated.refused
    ]
    _write_refused(out_dir / "refused-votes.jsonl", separated.refused, emails)
    report = {
        "collected_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "projects": {stage: project for stage, project in live.items()},
        "projects_gone": {stage: [p for named, p in gone if named == stage] for stage, _ in gone},
        "lookalike_projects": {stage: ids for stage in STAGES if (ids := client.lookalikes(stage))},
        "differences": dict(sorted(differences.items())),
        **counts.to_dict(),
        "votes": len(separated.accepted),
        "votes_by_stage": {
            stage: sum(v["stage"] == stage for v in separated.accepted)
            for stage in STAGES
            if stage in live or any(stage == named for named, _ in gone)
        },
        "refused_votes": separated.counts(),
        "closed_tasks": closed,
        **changes,
        "simulated_votes": sum(v["simulated"] for v in separated.accepted),
        "emails": {str(uid): emails.get(uid, "?") for uid in sorted({v["annotator_id"] for v in votes})},
        "webhook_changes": webhooks,
        "paused_accounts": paused,
    }
    write_json_atomic(out_dir / "collect.json", report)
    return {**report, "refused_lines": refused_lines}


def read_votes(
    client: LabelStudioClient,
    live: Mapping[str, int],
    gone: list[tuple[str, int]],
    exported: Mapping[str, list[dict[str, Any]]],
    simulated: frozenset[int],
) -> tuple[VoteCounts, list[dict[str, Any]], list[tuple[dict[str, Any], str]], Counter[str]]:
    """Every project's votes as first seen, what was refused before they were votes, and how Label Studio
    differs from the records; a gone project's from the ledger."""
    counts, votes, refused, differences = VoteCounts(), [], [], Counter[str]()
    ledger = VoteLedger(client.settings)
    for stage, project in [*live.items(), *gone]:
        export = exported.get(stage) if live.get(stage) == project else None
        found = trusted_votes(client.records, ledger, stage, project, export, simulated)
        votes += found.read.votes
        refused += found.read.refused
        counts.add(found.read.counts)
        differences.update({f"{stage}.{kind}": n for kind, n in found.differences.items()})
    return counts, votes, refused, differences


def pause_accounts(
    client: LabelStudioClient, config: LabellingConfig, votes: list[dict[str, Any]], emails: Mapping[int, str]
) -> dict[str, dict[str, Any]]:
    """Pause every account whose control votes call for it, hold every paused account paused at the access
    gate (again at each collect), and return every paused account with why."""
    pauses, answers = Pauses(client.settings), control_answers(config.controls)
    for annotator, own in by_annotator(votes).items():
        if annotator in emails:
            pauses.pause_if_due(emails[annotator], annotator, own, answers, config)
    paused = pauses.paused()
    client.set_paused([found["user_id"] for found in paused.values()], True)
    return paused


def task_states(client: LabelStudioClient, project: int, stage: str) -> list[dict[str, Any]]:
    """Every task of the project the pipeline recorded, with its queue state (the export does not carry
    it); item and careful flag from the records."""
    recorded = client.records.tasks_of(project)
    listed: list[Any] = client.call(
        lambda: list(client.sdk.tasks.list(project=project, fields="task_only", page_size=1000))
    )
    return [
        {
            "stage": stage,
            "item_id": known.item_id,
            "task_id": int(task.id),
            "is_labeled": bool(task.is_labeled),
            "overlap": int(task.overlap or 0),
            "annotators": int(task.total_annotations or 0),
            "careful": bool(known.data.get(CAREFUL)),
        }
        for task in listed
        if (known := recorded.get(int(task.id))) is not None
    ]


def annotated(tasks: Iterable[Mapping[str, Any]]) -> dict[int, int]:
    """task -> the annotations (skips left out) an export holds of it."""
    return {
        int(task["id"]): sum(not a.get("was_cancelled") for a in task.get("annotations") or [])
        for task in tasks
    }


def apply_queue_states(
    client: LabelStudioClient,
    tasks: list[dict[str, Any]],
    votes: Iterable[Mapping[str, Any]],
    config: LabellingConfig,
    exported: Mapping[int, int],
) -> dict[str, int]:
    """Set every task to the queue state its accepted votes call for: closed once decided (an audit item
    once it has all its votes), else admitting its votes plus the further votes its rule can still use.
    The receiver does this per vote; here it is done for every task, which repairs whatever the receiver
    missed. The annotations that hold a task's slots are those the export holds (`exported`; a task's own
    counter can lag after a crash); a task voted on between the export and the listing of the tasks (its
    counter above the export's) is left to the receiver: its votes here are not all of them. The task rows are
    updated to their new state; returns how many were closed, reopened (closed by Label Studio itself on
    refused votes, or after a vote was withdrawn), given another overlap, or left as moving."""
    by_item: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    stages = {task["stage"] for task in tasks}
    for vote in votes:
        if vote["stage"] in stages:
            by_item[vote["item_id"]].append(vote)
    changed = {"closed": 0, "reopened": 0, "overlap_set": 0}
    for task in tasks:
        held = exported.get(task["task_id"], 0)
        if task["annotators"] > held:
            changed["moving"] = changed.get("moving", 0) + 1
            continue
        choices = [vote["choice"] for vote in distinct_votes(by_item.get(task["item_id"], []))]
        state = config.queue_state(task["stage"], task["item_id"], choices, held, task["careful"])
        if (state.overlap, state.closed) == (task["overlap"], task["is_labeled"]):
            continue
        kind = (
            "overlap_set" if state.closed == task["is_labeled"] else "closed" if state.closed else "reopened"
        )
        changed[kind] += 1
        task["overlap"], task["is_labeled"] = state.overlap, state.closed
        client.set_queue_state(task["task_id"], state.overlap, state.closed)
    return changed


def _write(out_dir: Path, votes: list[dict[str, Any]], tasks: list[dict[str, Any]]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    votes = sorted(votes, key=lambda v: (v["stage"], v["item_id"], v["annotator_id"]))
    for name, rows, schema in (("votes", votes, VOTE_SCHEMA), ("tasks", tasks, TASK_SCHEMA)):
        rows = sorted(rows, key=lambda r: (r["stage"], r["item_id"])) if name == "tasks" else rows
        with atomic_path(out_dir / f"{name}.parquet") as temporary:
            pq.write_table(pa.Table.from_pylist(rows, schema=schema), temporary, compression="zstd")


def _write_refused(path: Path, refused: list[tuple[dict[str, Any], str]], emails: Mapping[int, str]) -> None:
    with atomic_path(path) as temporary:
        temporary.write_bytes(
            b"".join(
                orjson.dumps({"reason": reason, "email": emails.get(vote["annotator_id"]), **vote}) + b"\n"
                for vote, reason in refused
            )
        )


def _changes(votes_path: Path, votes: list[dict[str, Any]]) -> dict[str, int]:
    """How the new votes differ from the last collect: new, updated, unchanged, withdrawn."""
    before: dict[tuple[str, str, int], tuple[int, Any]] = {}
    if votes_path.exists():
        columns = ["stage", "item_id", "annotator_id", "annotation_id", "updated_at"]
        if set(columns) <= set(pq.read_schema(votes_path).names):
            for row in pq.read_table(votes_path, columns=columns).to_pylist():
                before[(row["stage"], row["item_id"], row["annotator_id"])] = (
                    row["annotation_id"],
                    row["updated_at"],
                )
    now = {
        (v["stage"], v["item_id"], v["annotator_id"]): (v["annotation_id"], v["updated_at"]) for v in votes
    }
    return {
        "new_votes": sum(1 for key in now if key not in before),
        "updated_votes": sum(1 for key, value in now.items() if key in before and before[key] != value),
        "unchanged_votes": sum(1 for key, value in now.items() if before.get(key) == value),
        "withdrawn_votes": sum(1 for key in before if key not in now),
    }
